import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
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

/** What a signature covers: a job the orchestrator enqueues, its claim on a job it awaits (job-claim.ts), a worker's progress record or its result. */
export type SignedKind = 'agent-job' | 'gate-job' | 'job-claim' | 'progress' | 'agent-result' | 'gate-result';

/** A loaded key: signs and verifies records (objects whose `sig` field carries the signature). */
export interface DispatchKey {
  sign<T extends object>(kind: SignedKind, jobId: string, record: T): T & { sig: string };
  verify(kind: SignedKind, jobId: string, record: unknown): boolean;
}

const fix = `set ${dispatchKeyEnv} (at least ${minKeyLength} characters, e.g. from \`openssl rand -hex 32\`) or ${dispatchKeyFileEnv}=<file> to the SAME key in the environment of the orchestrator and of every worker (a worker also takes --dispatch-key-file <file>); keep it out of Redis, docs/scale-out.md "The dispatch key"`;

/**
 * Outside round A23-37: a key file other users can read is refused (DISPATCH_KEY_EXPOSED, exit 2: every local user could
 * sign jobs, i.e. run commands on every worker of the key); one its group can read is taken with a warning. Both name
 * the file and `chmod 600`. (Against the agents, which run as the same user, only the sandbox protects it: A23-02.)
 */
function checkKeyFileMode(file: string, who: string, warn: (message: string) => void): void {
  if (process.platform === 'win32') return;
  const mode = statSync(file).mode & 0o777;
  const octal = mode.toString(8).padStart(3, '0');
  if ((mode & 0o004) !== 0) {
    throw new PolywaveError({ code: dispatchCodes.keyExposed, message: `${who}: the key file ${file} is readable by every user of this machine (mode ${octal}): whoever reads it can sign jobs that run on every worker of the key; run \`chmod 600 ${file}\` (docs/scale-out.md "The dispatch key")` });
  }
  if ((mode & 0o040) !== 0) warn(`${who}: the key file ${file} is readable by its group (mode ${octal}); every member can sign jobs that run on every worker of the key — \`chmod 600 ${file}\` unless that group is meant to hold it`);
}

/**
 * The dispatch key from `file` (a worker's --dispatch-key-file), else `POLYWAVE_DISPATCH_KEY`, else the file
 * `POLYWAVE_DISPATCH_KEY_FILE` names. None, unreadable or too short: DISPATCH_KEY_MISSING (exit 2), naming the fix —
 * dispatch over Redis does not start without one. Whitespace around the key (the newline `echo` writes to a file, a
 * space or CR from an env file) is no part of it — the same key from the variable or from a file (outside round
 * A23-15: a file was trimmed and the variable was not, so `POLYWAVE_DISPATCH_KEY="$(…)\n"` on one side and a file on
 * the other signed with two keys, every job refused DISPATCH_FORGED); whitespace or a control character INSIDE the
 * key is refused (DISPATCH_KEY_MISSING naming it: a pasted `key1 key2`, a CRLF-split line). A key file other users can
 * read is refused, one its group can read warned about ({@link checkKeyFileMode}; `warn`: stderr by default).
 */
export function loadDispatchKey(options: { env: Readonly<Record<string, string | undefined>>; file?: string; who: string; warn?: (message: string) => void }): DispatchKey {
  let text: string | undefined;
  let source: string;
  const file = options.file ?? (options.env[dispatchKeyEnv]?.trim() ? undefined : options.env[dispatchKeyFileEnv]?.trim() || undefined);
  if (file !== undefined) {
    source = `the key file ${file}`;
    try {
      text = readFileSync(file, 'utf8');
      // A23-02: no sandbox this process makes (agents, gates, setups: the same user) reads it.
      hideFromEverySandbox(file);
    } catch (error) {
      throw new PolywaveError({ code: dispatchCodes.keyMissing, message: `${options.who}: cannot read ${source} (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); ${fix}` });
    }
    checkKeyFileMode(file, options.who, options.warn ?? ((message) => process.stderr.write(`polywave: warning: ${message}\n`)));
  } else {
    source = dispatchKeyEnv;
    text = options.env[dispatchKeyEnv];
  }
  text = text?.trim();
  // (\s and the C0/C1 controls: what a terminal, an env file or a copy may put inside a line)
  // eslint-disable-next-line no-control-regex
  if (text !== undefined && /[\s\u0000-\u001f\u007f-\u009f]/.test(text)) throw new PolywaveError({ code: dispatchCodes.keyMissing, message: `${options.who}: ${source} holds whitespace or a control character inside the key (only the whitespace around it is ignored); ${fix}` });
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
