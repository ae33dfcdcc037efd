import type { Redis } from 'ioredis';
import type { DispatchKey } from './auth.js';
import { dispatchCodes } from './codes.js';
import { readPackageVersion } from '../cli/version.js';

/**
 * Issue 17 (replayed jobs) and version skew: what binds a job a worker takes to an orchestrator that awaits it NOW, and
 * what tells a worker which job format it was given.
 *
 * Replays: a job's signature (A21-43) proves an orchestrator holding the dispatch key made it — once. A Redis writer
 * without the key could re-add an old enqueue's signed data under its id after its run finished, and a worker ran the
 * agent again (never merged: results are bound to their enqueue — but it ran code, spent model money and pushed). Now the
 * orchestrator's claim on the job it awaits (`polywave:awaiting:<job id>`, refreshed every third of its TTL while it
 * awaits, gone soon after it died) is signed with the dispatch key and names the signatures of the enqueues it awaits
 * and the time of Redis when written; a worker runs a job only while such a claim is live: valid signature, naming that
 * job's `sig`, written within its TTL (+ a margin) on Redis's own clock — else DISPATCH_REPLAYED, nothing fetched or run.
 * A Redis writer cannot make a claim (no key), and a copied old one is stale (Redis's clock, which no writer sets).
 *
 * Version skew: each job carries its format (`v`, {@link jobFormat}) and the polywave version that made it (`polywave`),
 * both signed; a worker refuses a format it does not know — DISPATCH_VERSION_SKEW naming both versions — before
 * anything else (the orchestrator reports it as a config failure: escalate, no retry).
 */

/** The job format this polywave makes and runs: 2 = claim-bound jobs (a worker needs the orchestrator's signed claim). */
export const jobFormat = 2;

let version: string | undefined;
/** This polywave's version (package.json), as jobs and worker records carry it. */
export function polywaveVersion(): string {
  if (version === undefined) {
    try {
      version = readPackageVersion();
    } catch {
      version = 'unknown';
    }
  }
  return version;
}

/** The key of the claim of the orchestrator that awaits job `jobId` (agent and gate jobs). */
export const awaitingKey = (jobId: string): string => `polywave:awaiting:${jobId}`;

/** A claim as stored (JSON), signed with the dispatch key (kind `job-claim`, the job id). */
export interface JobClaim {
  v: 1;
  job_id: string;
  /** Who awaits: `<host>:<pid>:<token>` of the orchestrator process. */
  awaiter: string;
  /** The signatures (`sig`) of the enqueues of the job id this orchestrator awaits (its own, and the one it found stored or adopted). */
  sigs: string[];
  /** When written, on Redis's clock (TIME, ms). */
  at: number;
  /** How long it lives without a refresh (ms). */
  ttl_ms: number;
  /**
   * The queue the orchestrator enqueued the job on (outside round A25, known open since A24: a copy of the signed job on
   * another queue of the same Redis ran under the claim, which is keyed by the job id alone). Absent in claims of
   * orchestrators before it (taken as before).
   */
  queue?: string;
  sig?: string;
}

/** How far past its TTL a claim still counts as live (ms): a refresh late by an orchestrator's busy event loop. */
export const claimMarginMs = 4000;

/** Redis's clock now (ms), with the value of `key`, in one round trip. */
async function readWithTime(client: Redis, key: string): Promise<{ value: string | null; now: number }> {
  const replies = await client.multi().get(key).time().exec();
  if (!replies || replies.some(([error]) => error)) throw replies?.find(([error]) => error)?.[0] ?? new Error('no reply');
  const value = replies[0]![1] as string | null;
  const [seconds, micros] = replies[1]![1] as [string, string];
  return { value, now: Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) };
}

/** The orchestrator named in a claim's stored text (`<host>:<pid>:<token>`); a plain string (a claim of an older polywave) is that name. */
export function claimAwaiter(text: string | null): string | undefined {
  if (text === null) return undefined;
  try {
    const parsed = JSON.parse(text) as { awaiter?: unknown };
    if (typeof parsed === 'object' && parsed !== null && typeof parsed.awaiter === 'string') return parsed.awaiter;
  } catch {
    // not JSON: an older polywave's claim, the name itself
  }
  return text;
}

/**
 * Holds the claim of this orchestrator (`awaiter`) on job `jobId` — the A19-13 ownership claim, now signed and naming the
 * enqueues awaited. `name(sig)` adds an enqueue's signature and writes the claim at once (awaited: before the enqueue it
 * names is added, so no worker looks for it in vain); `release()` stops refreshing and deletes it when still this one's.
 * Redis errors are ignored here (the dispatcher's outage watch judges Redis).
 */
export function holdJobClaim(client: Redis, key: DispatchKey, jobId: string, awaiter: string, ttlMs: number, sigs: ReadonlyArray<string | undefined> = [], queue?: string): { name: (sig: string | undefined) => Promise<void>; release: () => void; written: Promise<void> } {
  const named = new Set(sigs.filter((sig): sig is string => typeof sig === 'string'));
  let released = false;
  const write = async (): Promise<void> => {
    if (released) return;
    try {
      const [seconds, micros] = await client.time();
      const at = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      const claim = key.sign('job-claim', jobId, { v: 1, job_id: jobId, awaiter, sigs: [...named].slice(-4), at, ttl_ms: ttlMs, ...(queue !== undefined ? { queue } : {}) } satisfies JobClaim);
      if (!released) await client.set(awaitingKey(jobId), JSON.stringify(claim), 'PX', ttlMs);
    } catch {
      // Redis trouble: the outage watch's business
    }
  };
  const written = write();
  const timer = setInterval(() => void write(), Math.max(50, Math.floor(ttlMs / 3)));
  timer.unref();
  return {
    written,
    name: async (sig) => {
      if (typeof sig !== 'string' || named.has(sig)) return;
      named.add(sig);
      await write();
    },
    release: () => {
      released = true;
      clearInterval(timer);
      void client
        .get(awaitingKey(jobId))
        .then((value) => (claimAwaiter(value) === awaiter ? client.del(awaitingKey(jobId)) : 0))
        .catch(() => undefined);
    },
  };
}

/**
 * Outside round A25-11 (the known ~10 s window): a claim copied back within its lifetime after the orchestrator's last
 * refresh (the job done, the orchestrator gone on) passed a worker's look at the start of a run. A run now also waits —
 * beside its setup, before any of the job's code runs — for the claim to be written again after the run began: an
 * orchestrator that awaits the job refreshes it every third of its lifetime; a copy is never refreshed.
 */
const notRefreshed = 'its claim was not written again since this run began (its orchestrator no longer refreshes it: ended or killed — or the claim was copied back)';

/** When a stored claim says it was written (Redis's clock, ms), or -Infinity. */
function claimWrittenAt(value: string | null): number {
  try {
    const at = (JSON.parse(value ?? 'null') as { at?: unknown } | null)?.at;
    return typeof at === 'number' && Number.isFinite(at) ? at : Number.NEGATIVE_INFINITY;
  } catch {
    return Number.NEGATIVE_INFINITY;
  }
}

/**
 * Why job `jobId` (its enqueue's signature `sig`) is not awaited by a live orchestrator now — no claim, one no
 * orchestrator of this key signed, one naming other enqueues, or a stale one — or undefined when it is. Looked at
 * every `pollMs` for up to `graceMs` (a claim being written, or refreshed late by a busy orchestrator, is waited for).
 * Redis not answering: looked at again until the grace ends (then refused: nothing runs unclaimed).
 */
export async function unclaimedJob(client: Redis, key: DispatchKey, job: { jobId: string; sig: string | undefined; queue?: string }, options: { graceMs?: number; pollMs?: number; refreshedAfter?: number; onLive?: (now: number) => void } = {}): Promise<string | undefined> {
  const deadline = Date.now() + (options.graceMs ?? 15_000);
  let why: string;
  for (;;) {
    try {
      const { value, now } = await readWithTime(client, awaitingKey(job.jobId));
      why = judge(key, job, value, now);
      // A25-11: and, when asked, written after `refreshedAfter` (Redis's clock): refreshed since the run began
      if (why === '' && options.refreshedAfter !== undefined && !(claimWrittenAt(value) > options.refreshedAfter)) why = notRefreshed;
      if (why === '') {
        options.onLive?.(now);
        return undefined;
      }
    } catch (error) {
      why = `its claim could not be read (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
    }
    if (Date.now() >= deadline) return why;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
  }
}

/** '' when `value` is a live claim on the job naming its signature, else why not. */
function judge(key: DispatchKey, job: { jobId: string; sig: string | undefined; queue?: string }, value: string | null, now: number): string {
  if (value === null) return 'no orchestrator awaits it (no claim on it in Redis)';
  let claim: Partial<JobClaim>;
  try {
    claim = JSON.parse(value) as Partial<JobClaim>;
  } catch {
    return 'its claim in Redis is not a signed claim (an orchestrator of an older polywave, or written by someone else)';
  }
  if (!key.verify('job-claim', job.jobId, claim) || claim.job_id !== job.jobId) return 'its claim in Redis carries no valid signature of the dispatch key';
  if (typeof job.sig !== 'string' || !Array.isArray(claim.sigs) || !claim.sigs.includes(job.sig)) return 'the orchestrator that awaits the job id awaits another enqueue of it (this one is an earlier job\'s, replayed)';
  // A25 (the claim bound to its queue): a claim naming the queue its job was enqueued on holds for that queue only — a copy
  // of the signed job a Redis writer put on another queue of the same Redis (another team's, another label set) runs nowhere.
  if (claim.queue !== undefined && job.queue !== undefined && claim.queue !== job.queue) return `the orchestrator that awaits it enqueued it on another queue (${String(claim.queue).slice(0, 160)}), not ${job.queue.slice(0, 160)} (a copy of the job, replayed on another queue)`;
  const ttl = typeof claim.ttl_ms === 'number' && Number.isFinite(claim.ttl_ms) ? Math.min(Math.max(claim.ttl_ms, 0), 600_000) : 0;
  const age = typeof claim.at === 'number' && Number.isFinite(claim.at) ? now - claim.at : Number.POSITIVE_INFINITY;
  if (age > ttl + claimMarginMs) return `its claim was written ${Math.round(age / 1000)} s ago (Redis's clock), longer than it lives: its orchestrator no longer awaits it (ended or killed), or the claim was copied back`;
  return '';
}

/** The coded refusal of an unclaimed job (`what`: `job` or `gate job`). */
export function replayedJobMessage(what: string, jobId: string, why: string): string {
  return `${dispatchCodes.replayed}: ${what} ${jobId.slice(0, 120)} is signed, but ${why}; refused, nothing fetched or run (an orchestrator killed meanwhile: its re-run adopts or enqueues the job again)`;
}

/**
 * Version skew: the coded refusal (DISPATCH_VERSION_SKEW, naming both versions) of a job whose format (`v`) this worker
 * does not run — newer (an orchestrator of a later polywave) or older (one before claim-bound jobs) — else undefined.
 * Looked at before the job's fields are checked (a newer format may have other fields); `signed`: the job's signature is
 * valid with this worker's key.
 */
export function jobFormatSkew(data: unknown, what: string, jobId: string, workerId: string, signed: boolean): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { v, polywave } = data as { v?: unknown; polywave?: unknown };
  if (v === jobFormat) return undefined;
  // (an older format only when signed with the key — else it is a forged job, DISPATCH_FORGED; a newer one whatever its
  // signature: a later polywave may sign otherwise)
  if (!signed && !(typeof v === 'number' && v > jobFormat)) return undefined;
  const theirs = typeof polywave === 'string' ? `polywave ${polywave.slice(0, 40)}` : 'a polywave without a version in its jobs';
  const mine = `job format ${jobFormat} (polywave ${polywaveVersion()})`;
  const format = typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
  if (format !== undefined && format > jobFormat) return `${dispatchCodes.versionSkew}: ${what} ${jobId.slice(0, 120)} has job format ${format} (${theirs}), newer than worker ${workerId} runs: ${mine}; upgrade the worker to the orchestrator's polywave`;
  return `${dispatchCodes.versionSkew}: ${what} ${jobId.slice(0, 120)} has job format ${format ?? JSON.stringify(String(v).slice(0, 20))} (${theirs}), older than worker ${workerId} runs: ${mine}; upgrade the orchestrator to the worker's polywave (or run a worker of its version)`;
}

/**
 * What the orchestrator makes of a worker's DISPATCH_INVALID_JOB about the job's `v` — a worker of a polywave before job
 * format {@link jobFormat} (it knows only format 1) — DISPATCH_VERSION_SKEW naming both sides; other reasons unchanged.
 */
export function explainOldWorker(reason: string): string {
  if (!/^DISPATCH_INVALID_JOB: (gate )?job \S+: v /.test(reason)) return reason;
  return `${dispatchCodes.versionSkew}: a worker of an older polywave (job format 1) took the job and refused it — this orchestrator (polywave ${polywaveVersion()}) sends job format ${jobFormat}; upgrade the workers of the queue (its words: ${reason.slice(0, 200)})`;
}
