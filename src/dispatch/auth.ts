import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PolywaveError } from '../errors/polywave-error.js';
import { dispatchCodes } from './codes.js';
import { canonicalJson } from './job.js';
import { hideFromEverySandbox } from '../sandbox/sandbox-plan.js';

/**
 * Outside round A21-43 (and A21-11's class): what crosses Redis is authenticated with a key the orchestrator and its
 * workers share and Redis never holds. The orchestrator signs each job it enqueues (HMAC-SHA256 over the job's data,
 * its `sig` field); a worker refuses a job without a valid one before it touches anything; a worker signs each
 * progress record and each result it returns, and the orchestrator refuses what it cannot verify. Whoever can only
 * write to the Redis can then no longer run a job on a worker nor decide what an orchestrator merges.
 */

/** The environment variable that holds the key (at least {@link minKeyLength} characters). */
export const dispatchKeyEnv = 'POLYWAVE_DISPATCH_KEY';
/** The environment variable that names a file holding the key (its content, trimmed). */
export const dispatchKeyFileEnv = 'POLYWAVE_DISPATCH_KEY_FILE';
/** The shortest key taken (`openssl rand -hex 32` gives 64). */
export const minKeyLength = 32;

/** What a signature covers: a job the orchestrator enqueues, a worker's progress record or its result. */
export type SignedKind = 'agent-job' | 'gate-job' | 'progress' | 'agent-result' | 'gate-result';

/** A loaded key: signs and verifies records (objects whose `sig` field carries the signature). */
export interface DispatchKey {
  sign<T extends object>(kind: SignedKind, jobId: string, record: T): T & { sig: string };
  verify(kind: SignedKind, jobId: string, record: unknown): boolean;
}

const fix = `set ${dispatchKeyEnv} (at least ${minKeyLength} characters, e.g. from \`openssl rand -hex 32\`) or ${dispatchKeyFileEnv}=<file> to the SAME key in the environment of the orchestrator and of every worker (a worker also takes --dispatch-key-file <file>); keep it out of Redis, docs/scale-out.md "The dispatch key"`;

/**
 * The dispatch key from `file` (a worker's --dispatch-key-file), else `POLYWAVE_DISPATCH_KEY`, else the file
 * `POLYWAVE_DISPATCH_KEY_FILE` names. None, unreadable or too short: DISPATCH_KEY_MISSING (exit 2), naming the fix —
 * dispatch over Redis does not start without one.
 */
export function loadDispatchKey(options: { env: Readonly<Record<string, string | undefined>>; file?: string; who: string }): DispatchKey {
  let text: string | undefined;
  let source: string;
  const file = options.file ?? (options.env[dispatchKeyEnv] ? undefined : options.env[dispatchKeyFileEnv] || undefined);
  if (file !== undefined) {
    source = `the key file ${file}`;
    try {
      text = readFileSync(file, 'utf8').trim();
      // A23-02: no sandbox this process makes (agents, gates, setups: the same user) reads it.
      hideFromEverySandbox(file);
    } catch (error) {
      throw new PolywaveError({ code: dispatchCodes.keyMissing, message: `${options.who}: cannot read ${source} (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); ${fix}` });
    }
  } else {
    source = dispatchKeyEnv;
    text = options.env[dispatchKeyEnv];
  }
  if (text === undefined || text === '') throw new PolywaveError({ code: dispatchCodes.keyMissing, message: `${options.who}: dispatch over Redis needs a dispatch key shared by the orchestrator and its workers (jobs, progress and results are signed with it; outside round A21-43), and none is set; ${fix}` });
  if (text.length < minKeyLength) throw new PolywaveError({ code: dispatchCodes.keyMissing, message: `${options.who}: ${source} holds ${text.length} characters, fewer than ${minKeyLength}; ${fix}` });
  return dispatchKeyOf(text);
}

/** A {@link DispatchKey} of this key text (tests, and {@link loadDispatchKey}). */
export function dispatchKeyOf(text: string): DispatchKey {
  const key = Buffer.from(text, 'utf8');
  const mac = (kind: SignedKind, jobId: string, record: object): Buffer => {
    const { sig: _sig, ...rest } = record as { sig?: unknown };
    // The text the record has once it went through Redis (BullMQ stores JSON): undefined fields dropped, keys sorted.
    const content = canonicalJson(JSON.parse(JSON.stringify(rest)) as unknown);
    return createHmac('sha256', key).update(`polywave-dispatch-v1\0${kind}\0${jobId}\0`).update(content).digest();
  };
  return {
    sign: (kind, jobId, record) => ({ ...record, sig: mac(kind, jobId, record).toString('hex') }),
    verify: (kind, jobId, record) => {
      if (typeof record !== 'object' || record === null || Array.isArray(record)) return false;
      const sig = (record as { sig?: unknown }).sig;
      if (typeof sig !== 'string' || !/^[0-9a-f]{64}$/.test(sig)) return false;
      try {
        return timingSafeEqual(Buffer.from(sig, 'hex'), mac(kind, jobId, record));
      } catch {
        return false;
      }
    },
  };
}
