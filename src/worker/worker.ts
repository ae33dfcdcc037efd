import { existsSync, rmSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { DelayedError, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { defaultAgentLimits, type AgentEvent } from '../agents/contract.js';
import { runAgent } from '../agents/run-agent.js';
import { readAgentCliTemplates } from '../agents/agent-cli-templates.js';
import type { AgentCliTemplate } from '../store/project-config.js';
import { dispatchCodes } from '../dispatch/codes.js';
import { dispatchKeyEnv, loadDispatchKey, type DispatchKey } from '../dispatch/auth.js';
import { jobFormat, jobFormatSkew, polywaveVersion, replayedJobMessage, unclaimedJob } from '../dispatch/job-claim.js';
import { agentJobDataSchema, assertGateJobIdentity, assertJobBaseRef, assertJobBranch, assertJobSize, assertJobIdentity, assertJobModel, workerAllows, checkQueueName, expectedJobId, gateJobDataSchema, givenUpKey, jobRunMarginMs, jobLimits, jobRole, labelSubsets, normalizeLabels, queueNameFor, remoteKey, runCounterKey, runCounterTtlSeconds, worktreeToken, type AgentJobData, type AgentJobReturn, type GateJobReturn } from '../dispatch/job.js';
import { withoutCredentials } from '../agents/credentials.js';
import { runGates } from '../gates/run-gates.js';
import { keepWorkerDirRegistered, registerWorkerDir, releaseWorkerDir, sandboxInstallHint, sandboxStatus, WorkerDirError } from '../sandbox/index.js';
import { confineProjectSandboxSettings, pinSandboxSettings } from '../sandbox/sandbox-settings.js';
import { assertRedisReachable, bullConnectionFromUrl, redactUserinfo, redisOptionsFromUrl } from '../dispatch/redis-url.js';
import { assertRemoteReachable } from '../dispatch/redis-dispatcher.js';
import { claimWorkerId, listWorkers, removeWorkerRecord, servesLabels, workerIdPattern, writeWorkerRecord, type WorkerRecord } from '../dispatch/registry.js';
import { journalPaths } from '../engine/journal.js';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import { offloadGitSpawns } from '../git/spawn-server.js';
import { startProcessReaper } from '../sandbox/piped-spawn.js';
import { packCommits } from '../dispatch/commit-pack.js';
import { createLiveEventOutbox, liveEventsMax, type NumberedEvent } from '../dispatch/live-events.js';
import { createJournalRelay, seedJobJournal, toPortableJournal, withRecoveredContext, type JournalRelay } from './journal-relay.js';
import { buildCompletionReport, type CompletionReportInput } from '../protocol/completion-report.js';
import { setupJobWorktree, worktreeSetupCodes } from '../engine/prepare/worktree-setup.js';
import { distrustSearchRoot } from '../sandbox/search-path.js';

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  redisUrl: string;
  /** The shared git remote (this worker's URL for it: its credentials, its transport). */
  remote: string;
  /** Where the clone and the job worktrees live. */
  dir: string;
  concurrency: number;
  labels: readonly string[];
  /** A named queue (`--queue`): this worker takes the jobs of orchestrators with the same `--dispatch-queue` / `dispatch.queue` only. */
  queue?: string;
  /** The worker's environment: model keys live here and never travel in a job. */
  env: Readonly<Record<string, string | undefined>>;
  id?: string;
  /** BullMQ lock of a running job (ms; a dead worker's job is handed on after it lapses). Default 30 s. */
  lockDurationMs?: number;
  /** How often workers look for stalled jobs (ms). Default 15 s. */
  stalledIntervalMs?: number;
  /** A22-35: how long a graceful stop waits while Redis does not answer before it stops without it (ms; default 10 s). */
  redisGoneStopMs?: number;
  /** Registry heartbeat (ms; the record expires after 3 beats). Default 2 s. */
  heartbeatMs?: number;
  /** How long the start waits for the shared remote to answer `git ls-remote` (ms). Default 20 s, as the orchestrator's check. */
  remoteCheckMs?: number;
  /**
   * How long the start's clone may go without receiving anything (ms) before it is given up (A18-11: a remote that
   * answered `ls-remote`, then went silent, hung the start for ever). Default 120 s: a large repository's server may
   * count and compress for a while before the first byte arrives.
   */
  cloneStallMs?: number;
  /**
   * Run agents and gates without the OS sandbox — this worker's decision, never the job's. Without
   * it, where the sandbox cannot run, model-backed agent jobs and every gate job are refused
   * (SANDBOX_UNAVAILABLE).
   */
  unsafeNoSandbox?: boolean;
  /** A20-16: how often a worker whose `--dir` could not be written tries a probe write (ms). Default 5 s. */
  diskProbeMs?: number;
  /**
   * A21-25/A21-33: how many times one job may go back to the queue for a disk error after which the worker's `--dir` took
   * writes again (the job's own files removed) before it fails as the job's own (DISPATCH_JOB_TOO_LARGE). Default 3.
   */
  diskHandBacks?: number;
  /**
   * Prefixes of job models that name their own endpoint or command (`openai-compatible:<url>#m`,
   * `cli:<template>`) this worker runs anyway (`--model-allow`); others are refused (attack F2).
   */
  modelAllow?: readonly string[];
  /** A21-43: the dispatch key file (`--dispatch-key-file`); default POLYWAVE_DISPATCH_KEY / POLYWAVE_DISPATCH_KEY_FILE of `env`. */
  dispatchKeyFile?: string;
  /** The dispatch key itself (tests); wins over `dispatchKeyFile` and `env`. */
  dispatchKey?: DispatchKey;
  log?: (line: string) => void;
}

/** A running worker. */
export interface RunningWorker {
  id: string;
  /** Finishes the jobs it runs (or, with `force`, aborts their agents and hands them back unpushed — attack F14), then disconnects. */
  close(force?: boolean): Promise<void>;
  /** Resolves when the worker has closed. */
  closed: Promise<void>;
}

/**
 * A20-16: the reason when `error` says this machine's disk failed a write (full, over quota, read-only, I/O error) —
 * git's words or node's codes — else undefined.
 */
export function localDiskTrouble(error: unknown): string | undefined {
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  if (code !== undefined && diskCodes.has(code)) return code;
  const text = error instanceof Error ? error.message : String(error);
  // Outside round A21-33: only where the system's error text stands — last on a line after `: ` (git and most tools
  // print `<what>: <strerror>`), or a node error's message (`ENOSPC: no space left on device, write`) — never the words anywhere: a path of the job's
  // base named "No space left on device" made every worker that took it declare its own disk full.
  const match = /: (No space left on device|Disk quota exceeded|Read-only file system|Input\/output error)\s*$/m.exec(text) ?? /(?:^|: )(?:Error: )?(ENOSPC(?=: no space left on device)|EDQUOT(?=: disk quota exceeded)|EROFS(?=: read-only file system)|EIO(?=: i\/o error))/m.exec(text);
  return match ? match[1] : undefined;
}

/** The errno codes of a disk that cannot be written (full, over quota, read-only, failing). */
const diskCodes = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO']);

/** The agent-only tool events a job result carries back (the text of tool output stays here). */
function keepEvent(event: AgentEvent): AgentEvent | undefined {
  if (event.type === 'turn-end' || event.type === 'tool-call-deny') return event;
  if (event.type === 'tool-call-end') return { ...event, output: '' };
  return undefined;
}

/** The first line of an error, any URL credentials in it redacted (attack F8: git quotes the remote's URL). */
function firstLine(error: unknown): string {
  const text = redactUserinfo(error instanceof Error ? error.message : String(error));
  return text.split('\n').find((line) => line.trim() !== '')?.trim() ?? text;
}

/**
 * Attack F17: one log line per state of the Redis connection instead of every reconnect error
 * (~10 a second during an outage); other errors once per distinct message within `quietMs`.
 */
export function createErrorLog(log: (line: string) => void, options: { quietMs?: number; now?: () => number } = {}): { error: (error: unknown, connected: boolean) => void; connected: () => void } {
  const quietMs = options.quietMs ?? 30_000;
  const now = options.now ?? Date.now;
  let down = false;
  const seen = new Map<string, number>();
  return {
    error: (error, connected) => {
      const line = firstLine(error);
      if (!connected || /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|Connection is closed|connect/i.test(line)) {
        if (!down) log(`Redis unreachable (${line}); waiting for it to come back`);
        down = true;
        return;
      }
      const last = seen.get(line);
      if (last !== undefined && now() - last < quietMs) return;
      seen.set(line, now());
      log(`bullmq: ${line}`);
    },
    connected: () => {
      if (down) log('Redis is back');
      down = false;
    },
  };
}

/** Redis set of the commits runs of a job pushed to its agent branch (F4/F12: a run may push over a commit of another run of the same job only). */
export const pushedKey = (jobId: string): string => `polywave:pushed:${jobId}`;
/** How long that record is kept (a job's runs are over long before). */
const pushedMarkerSeconds = 24 * 3600;

/** The job is being handed back (second signal, attack F14): its processor moves it to wait and stops. */
class HandBack extends Error {}
/** A21-08: the agent failed on a disk error (its message: the words found). */
class DiskTrouble extends Error {}

/**
 * `polywave worker` (issue 17): keeps a clone of the shared remote in `dir`, takes agent jobs of
 * that remote (queues named by its key, attack F6) from the queues of every subset of its labels,
 * and for each: fetches the wave's base, makes a worktree on the agent branch, runs the agent
 * through the same runtime and jail as run-wave, pushes ONLY the agent branch (anything else:
 * DISPATCH_REF_REFUSED) while the job is still its own (attack F12) and returns the report and usage.
 * Registers itself in Redis (heartbeat) for `polywave workers`. Throws DISPATCH_REDIS_UNREACHABLE,
 * DISPATCH_REMOTE_UNREACHABLE, DISPATCH_WORKER_ID_IN_USE or DISPATCH_INVALID_LABEL (exit 2) when
 * it cannot start.
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const log = options.log ?? (() => undefined);
  // Its jobs run at once, each creating a worktree, auditing the agent and pushing: git started by a small
  // helper process keeps this process's event loop (job progress, lease renewals, results) free of forks.
  offloadGitSpawns();
  // A23-54: the helper that kills its agents' processes when this worker dies (SIGKILL included) runs from the start:
  // started with a job's first command, a worker killed while it still started up left that command running.
  startProcessReaper();
  // A20-45: a job's repository never widens this machine's sandbox beyond the job's own checkout.
  confineProjectSandboxSettings();
  // X42-11/12: no host program is looked up where jobs write (the clone, their worktrees).
  distrustSearchRoot(options.dir, { self: true });
  const labels = normalizeLabels(options.labels);
  const subsets = labelSubsets(labels);
  const queue = options.queue === undefined || options.queue === '' ? undefined : checkQueueName(options.queue);
  const id = options.id ?? `${os.hostname()}-${process.pid}`.replace(/[^-A-Za-z0-9._]/g, '-');
  if (!workerIdPattern.test(id)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `worker: --id ${JSON.stringify(id.slice(0, 140))} must match ${workerIdPattern.source}` });
  // A21-43/A21-11: only jobs the orchestrator signed with the shared dispatch key run; progress and results are signed.
  // None: the worker does not start (DISPATCH_KEY_MISSING, exit 2, nothing registered or made).
  const dispatchKey = options.dispatchKey ?? loadDispatchKey({ env: options.env, ...(options.dispatchKeyFile !== undefined ? { file: options.dispatchKeyFile } : {}), who: `worker ${id}` });
  // A21-05: where the OS sandbox cannot run (the answer is the process's, for good) and the operator did not opt out, this
  // worker could run no job at all — it refuses every agent and gate job (A20-19) — yet it registered and took its share of
  // every wave, failing each job fatal while healthy workers idled. It does not start (exit 2, nothing registered).
  if (!options.unsafeNoSandbox) {
    const status = await sandboxStatus({ env: options.env });
    if (!status.available) {
      const install = status.missing.length > 0 ? `install ${status.missing.join(', ')}` : `install the sandbox's packages (Debian/Ubuntu: ${sandboxInstallHint})`;
      throw new PolywaveError({ code: codes.sandboxUnavailable, message: `worker ${id} on ${os.hostname()}: the OS sandbox is unavailable here (${status.detail}), and agent jobs (script agents too) and gate jobs run on a worker only sandboxed — this worker could run none of them, so it does not start (nothing registered); ${install}, or start it with --unsafe-no-sandbox (its jobs then run unsandboxed)`, exitCode: 2 });
    }
  }
  await assertRedisReachable(options.redisUrl, undefined, { keepsKeys: true });
  const dir = path.resolve(options.dir);
  const cloneBase = 'repo.git';
  const clone = path.join(dir, cloneBase);
  // (the key never reaches what this worker runs: a CLI backend gets the environment whole)
  const { [dispatchKeyEnv]: _dispatchKey, ...env } = options.env;
  /** Where every agent's scratch HOME/TMPDIR and the sandbox host go (src/sandbox/scratch-dirs.ts): probed with `--dir`. */
  const scratchParent = os.tmpdir();
  const key = remoteKey(options.remote);
  // F8: messages name the remote without its credentials.
  const shownRemote = redactUserinfo(options.remote);

  const connection = bullConnectionFromUrl(options.redisUrl);
  const client = new Redis(redisOptionsFromUrl(options.redisUrl));
  const errors = createErrorLog(log);
  client.on('error', (error: unknown) => errors.error(error, false));
  client.on('ready', () => errors.connected());
  const current = new Set<string>();
  let done = 0;
  const startedAt = new Date().toISOString();
  const heartbeatMs = options.heartbeatMs ?? 2000;
  const record = (): WorkerRecord => ({ id, host: os.hostname(), pid: process.pid, labels, concurrency: options.concurrency, current: [...current].sort(), done, started_at: startedAt, heartbeat_at: new Date().toISOString(), remote_key: key, ...(queue ? { queue } : {}), version: polywaveVersion(), job_format: jobFormat });
  /**
   * A20-16: why this worker's `--dir` cannot be written now (its disk full, read-only, failing), if so. Meanwhile it
   * takes no jobs and is not in the registry (no orchestrator counts it as a live worker of its labels); a probe
   * write every few seconds brings it back.
   */
  let sick: string | undefined;
  const beat = () => (sick !== undefined ? removeWorkerRecord(client, id, { pid: process.pid, started_at: startedAt }) : writeWorkerRecord(client, record(), heartbeatMs * 3)).catch(() => undefined);

  // F15: one live worker per id (a second `--id same` would share and delete its record).
  if (!(await claimWorkerId(client, record(), heartbeatMs * 3))) {
    client.disconnect();
    throw new PolywaveError({ code: dispatchCodes.workerIdInUse, message: `worker id ${id} is in use by a live worker (polywave workers lists it); choose another --id` });
  }
  const giveUp = async (error: PolywaveError, createdDir: boolean): Promise<never> => {
    await removeWorkerRecord(client, id, { pid: process.pid, started_at: startedAt }).catch(() => undefined);
    client.disconnect();
    // F15: a failed start leaves no directory it made.
    if (createdDir) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  };
  const createdDir = !existsSync(dir);
  await mkdir(dir, { recursive: true });
  // A17-12: every other polywave sandbox of this user on this host (another worker's agents and gates, a local run's)
  // hides this directory whole — its jobs' worktrees, scripts, journals and the clone with their unpushed commits.
  try {
    registerWorkerDir(dir);
  } catch (error) {
    if (error instanceof WorkerDirError && error.reason !== 'registry') await giveUp(new PolywaveError({ code: dispatchCodes.dirInUse, message: `--dir ${error.message}` }), createdDir);
    await giveUp(new PolywaveError({ code: dispatchCodes.dirUnregistered, message: `cannot register --dir ${dir} for other sandboxes of this host to hide: ${firstLine(error)}` }), createdDir);
  }
  const cloneGit = createGit(clone, { env });
  // A17-18: a remote that does not answer (a black-holed host) is a coded refusal within the bound the orchestrator's
  // own check has (20 s, no credential prompt), not a start that hangs for ever; the clone follows only once it answered.
  try {
    await assertRemoteReachable(options.remote, { cwd: dir, env, ...(options.remoteCheckMs !== undefined ? { timeoutMs: options.remoteCheckMs } : {}) });
  } catch (error) {
    await giveUp(PolywaveError.isInstance(error) ? error : new PolywaveError({ code: dispatchCodes.remoteUnreachable, message: `the shared remote ${shownRemote} is unreachable: ${firstLine(error)}` }), createdDir);
  }
  // Outside round A25-08: a shared remote on this machine's disk that denies non-fast-forward updates (what `git init
  // --shared` sets) cannot take a job's re-run (it starts from the base and replaces the agent branch): said at the start.
  const localRemote = /^file:\/\//i.test(options.remote) ? decodeURIComponent(options.remote.replace(/^file:\/\/(localhost)?/i, '')) : path.isAbsolute(options.remote) ? options.remote : undefined;
  if (localRemote !== undefined && existsSync(localRemote)) {
    const denies = await createGit(localRemote, { env }).run(['config', '--bool', '--get', 'receive.denyNonFastForwards'], { allowExitCodes: [0, 1, 128] }).catch(() => ({ stdout: '' }));
    if (denies.stdout.trim() === 'true') log(`warning: the shared remote ${shownRemote} denies non-fast-forward updates (receive.denyNonFastForwards true, as \`git init --shared\` sets it): a job's re-run cannot replace an agent branch an earlier run pushed (${dispatchCodes.remoteNoForce}); run \`git -C ${localRemote} config receive.denyNonFastForwards false\``);
  }
  // A19-16: the start's clone runs into a name of its own (`repo.git.part-<pid>-<random>`) and is renamed to `repo.git`
  // once complete (marked by a `polywave-clone-complete` file): a worker SIGKILLed during it leaves its `git clone`
  // running into that name only — never into the directory the next worker uses. What such a start left (a clone's
  // part, a half-made `repo.git` of a worker from before: no mark and no ref) is removed, not used.
  for (const entry of await readdir(dir).catch(() => [] as string[])) {
    if (entry.startsWith(`${cloneBase}.part-`) || entry.startsWith(`${cloneBase}.stale-`)) await rm(path.join(dir, entry), { recursive: true, force: true }).catch(() => undefined);
  }
  // Outside round A25-09: a complete clone that broke since (its HEAD or config overwritten, its objects lost — a disk
  // fault, a slip) is made again, not used: every job it took failed with git's words, fatal, while healthy workers idled.
  if (existsSync(path.join(clone, cloneCompleteMark))) {
    const broken = await cloneTrouble(cloneGit);
    if (broken !== undefined) {
      log(`${clone}: the clone is broken (${broken}); made again`);
      await rm(path.join(clone, cloneCompleteMark), { force: true }).catch(() => undefined);
      await rm(path.join(clone, 'HEAD'), { force: true }).catch(() => undefined);
    }
  }
  if (existsSync(path.join(clone, 'HEAD')) && !existsSync(path.join(clone, cloneCompleteMark))) {
    // (a clone made before the mark existed: complete when it holds a ref — then marked)
    const refs = await cloneGit.run(['for-each-ref', '--count=1', '--format=%(refname)'], { allowExitCodes: [1, 128] }).catch(() => ({ stdout: '' }));
    if (refs.stdout.trim() !== '') await writeFile(path.join(clone, cloneCompleteMark), '').catch(() => undefined);
  }
  if (!existsSync(path.join(clone, cloneCompleteMark))) {
    const unique = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
    if (existsSync(clone)) {
      log(`${clone}: a clone that never completed (its worker was killed during it); replaced`);
      const stale = path.join(dir, `${cloneBase}.stale-${unique}`);
      await rename(clone, stale).then(() => rm(stale, { recursive: true, force: true }), () => rm(clone, { recursive: true, force: true })).catch(() => undefined);
    }
    const part = path.join(dir, `${cloneBase}.part-${unique}`);
    try {
      await cloneWatched(createGit(dir, { env }), ['clone', '--quiet', '--bare', '--no-tags', options.remote, part], part, options.cloneStallMs ?? 120_000);
      await writeFile(path.join(part, cloneCompleteMark), '');
      await rename(part, clone);
    } catch (error) {
      await rm(part, { recursive: true, force: true }).catch(() => undefined);
      await giveUp(new PolywaveError({ code: dispatchCodes.remoteUnreachable, message: `cannot clone the shared remote ${shownRemote}: ${error instanceof CloneStalled ? error.message : firstLine(error)}` }), createdDir);
    }
  }
  // F13: nothing runs here yet — worktrees and scripts left by a killed run of this worker go, and
  // so does the clone's record of them (a stale one keeps its agent branch checked out).
  for (const sub of ['work', 'scripts', 'journals', 'gates', 'setup-logs']) {
    const entries = await readdir(path.join(dir, sub)).catch(() => [] as string[]);
    await Promise.all(entries.map((entry) => rm(path.join(dir, sub, entry), { recursive: true, force: true })));
  }
  await cloneGit.run(['worktree', 'prune']).catch(() => undefined);

  // How long this process's event loop waits (timers late by): the part of a job's start and of its
  // result's trip that is this process waiting for a CPU (in each result, for bench:dispatch).
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  // (its histogram holds the timer's intervals: the 10 ms resolution is "on time")
  const lateBy = () => ({ p50: Math.max(0, Math.round(loopDelay.percentile(50) / 1e6) - 10), p90: Math.max(0, Math.round(loopDelay.percentile(90) / 1e6) - 10), max: Math.max(0, Math.round(loopDelay.max / 1e6) - 10) });
  // One concurrency budget across the queues of every label subset (F7: never hold a job it cannot start).
  let active = 0;
  let fetching = true;
  let stopping = false;
  const lockDurationMs = options.lockDurationMs ?? 30_000;
  const workers: Worker[] = [];
  /** Full: the BullMQ Workers stop fetching (a job that still arrives is handed back at once); a free slot resumes them. */
  const adjustFetching = () => {
    const full = active >= options.concurrency || sick !== undefined;
    if (full && fetching) {
      fetching = false;
      for (const worker of workers) void worker.pause(true).catch(() => undefined);
    } else if (!full && !fetching && !stopping) {
      fetching = true;
      for (const worker of workers) void worker.resume().catch(() => undefined);
    }
  };

  // Jobs running at once share the clone: its ref and worktree bookkeeping is changed one job at a time.
  let cloneTurn: Promise<unknown> = Promise.resolve();
  const withClone = <T>(work: () => Promise<T>): Promise<T> => {
    const result = cloneTurn.then(work);
    cloneTurn = result.catch(() => undefined);
    return result;
  };
  // A finished job's worktree is deleted after its result went back (never on the result's path):
  // a plain delete of the directory, no git and no turn of the clone; the clone's record of it is
  // pruned by the next job that takes its turn (before `worktree add`).
  const cleanups = new Map<string, Promise<void>>();
  // Bases this clone holds (commits are never removed from it while the worker runs).
  const knownBases = new Set<string>();
  // Agent branches this process has checked out in a job worktree (see the F13 check in the clone's turn).
  const branchesUsed = new Set<string>();
  let pruneNeeded = false;
  const discardWorktree = (worktree: string): void => {
    const done = rm(worktree, { recursive: true, force: true })
      .catch(() => undefined)
      .then(() => {
        pruneNeeded = true;
        if (cleanups.get(worktree) === done) cleanups.delete(worktree);
      });
    cleanups.set(worktree, done);
  };

  // When BullMQ's moveToActive answered for a job (by id), until its processor takes it.
  const activeAt = new Map<string, number>();
  // F12: each job's lease, its agent branch on the remote as the job found it. The jobs that start
  // in the same turn of the event loop (a burst) read theirs with ONE `git ls-remote` started after
  // all of them began: each git spawn holds this process's event loop until the child runs (tens of
  // ms on a loaded machine), and the jobs of the burst still being handed over wait for it.
  let leaseBatch: { branches: Set<string>; heads: Promise<Map<string, string> | Error> } | undefined;
  const remoteHeadAtStart = (branch: string): Promise<string | Error> => {
    if (leaseBatch === undefined) {
      const branches = new Set<string>();
      const heads = new Promise((resolve) => setImmediate(resolve)).then(() => {
        leaseBatch = undefined;
        return cloneGit.run(['ls-remote', '--quiet', options.remote, ...[...branches].map((name) => `refs/heads/${name}`)]).then(
          (result) => {
            const found = new Map<string, string>();
            for (const line of result.stdout.split('\n')) {
              const [commit, ref] = line.trim().split('\t');
              if (commit && ref?.startsWith('refs/heads/') && !found.has(ref)) found.set(ref, commit.trim());
            }
            return found;
          },
          (error: unknown) => new Error(firstLine(error)),
        );
      });
      leaseBatch = { branches, heads };
    }
    leaseBatch.branches.add(branch);
    return leaseBatch.heads.then((heads) => (heads instanceof Error ? heads : (heads.get(`refs/heads/${branch}`) ?? '')));
  };
  // Job journals being deleted (by job directory).
  const journalCleanups = new Map<string, Promise<unknown>>();
  const runningIds = new Set<string>();
  const runningWorktrees = new Set<string>();
  // F14: each running job's abort (the second signal hands the jobs back) and its processor.
  const aborts = new Set<AbortController>();
  const inflight = new Set<Promise<unknown>>();
  /**
   * A21-39: records that this worker refused the job's model and says whether a live worker of its labels (and this
   * worker's remote and queue) has not refused it yet (Redis not answering: no, the job fails as before).
   */
  const othersMayAllow = async (jobId: string, queueName: string, labels: readonly string[]): Promise<boolean> => {
    try {
      const refusedKey = `polywave:model-refused:${queueName}:${jobId}`;
      await client.multi().sadd(refusedKey, id).expire(refusedKey, 3600).exec();
      const refused = new Set(await client.smembers(refusedKey));
      return (await listWorkers(client)).some((worker) => !refused.has(worker.id) && servesLabels(worker, labels, key, queue));
    } catch {
      return false;
    }
  };
  const forgedJob = (what: string, job: Job): string =>
    `${dispatchCodes.forged}: ${what} ${String(job.id).slice(0, 120)} carries no valid signature of the dispatch key (written into Redis by someone other than an orchestrator holding this worker's key); refused, nothing run`;
  const handBack = async (job: Job, token: string | undefined, delayMs: number): Promise<never> => {
    if (delayMs > 0) await job.moveToDelayed(Date.now() + delayMs, token);
    else await job.moveToWait(token).catch(() => undefined);
    throw delayMs > 0 ? new DelayedError() : new WaitingError();
  };

  /**
   * Takes a job into one of this worker's slots, or says in how many ms to hand it back: the same job
   * again while it runs here (its copy was lost from Redis meanwhile and the orchestrator added it again,
   * F4) a second later, so the copies run one after the other — they would share the worktree, and
   * BullMQ tracks a worker's jobs by id; every slot busy (a Worker fetched before the others paused,
   * F7) or stopping: back to the queue at once (a moment's delay, so that this worker does not take it
   * again) for an idle worker.
   */
  const admit = (jobId: string): { controller: AbortController; startedAtMs: number } | { handBackMs: number } => {
    if (runningIds.has(jobId)) return { handBackMs: 1000 };
    if (active >= options.concurrency || stopping || sick !== undefined) return { handBackMs: 250 };
    // (the event-loop delay is measured while this worker is busy: from its first job after idling)
    if (active === 0) loopDelay.reset();
    active += 1;
    adjustFetching();
    runningIds.add(jobId);
    current.add(jobId);
    void beat();
    const controller = new AbortController();
    aborts.add(controller);
    return { controller, startedAtMs: Date.now() };
  };

  /** Gives back the slot {@link admit} took for a job (after its result or failure). */
  const release = (jobId: string, controller: AbortController): void => {
    aborts.delete(controller);
    current.delete(jobId);
    runningIds.delete(jobId);
    active -= 1;
    adjustFetching();
    void beat();
  };

  /**
   * A20-16: a job's setup (the clone's fetch, the worktree) failed as this machine's disk cannot be written — not the
   * remote, not the job. The job goes back to the queue for another worker, and this worker takes no jobs (out of the
   * registry) until a probe write to its `--dir` works again.
   */
  const markSick = (why: string): void => {
    if (sick !== undefined) {
      sick = why;
      return;
    }
    sick = why;
    const where = why.includes(' in the temp directory ') ? 'temp directory' : '--dir';
    log(`worker ${id}: its ${where === '--dir' ? `--dir ${dir}` : where} cannot be written (${why}); taking no jobs until it can`);
    adjustFetching();
    void beat();
    const timer = setInterval(() => {
      void probeWrite().then((trouble) => {
        if (trouble !== undefined || sick === undefined || stopping) return;
        clearInterval(timer);
        sick = undefined;
        log(`worker ${id}: its ${where} can be written again; taking jobs`);
        adjustFetching();
        void beat();
      });
    }, options.diskProbeMs ?? 5000);
    timer.unref();
  };

  /**
   * One probe write of 1 MB to `--dir` and to the temp directory (removed again): undefined when this worker's disk takes
   * writes now, else why not (its code, and which directory). A22-09: the temp directory holds every agent's scratch
   * HOME/TMPDIR and the sandbox host — full there, each job failed as its agent's (`the tool executor did not start in
   * time`) while a probe of `--dir` alone passed.
   */
  const probeWrite = async (): Promise<string | undefined> => {
    const where = [...new Set([dir, scratchParent])];
    for (const directory of where) {
      const probe = path.join(directory, `.polywave-write-probe-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
      try {
        await writeFile(probe, Buffer.alloc(1 << 20));
      } catch (error) {
        const why = localDiskTrouble(error) ?? ((error as NodeJS.ErrnoException).code || firstLine(error));
        return directory === dir ? why : `${why} in the temp directory ${directory}`;
      } finally {
        await rm(probe, { force: true }).catch(() => undefined);
      }
    }
    return undefined;
  };

  /** runAgent, with an error it throws judged like a failed outcome's (A22-10): a disk error, or a probe that fails, is {@link DiskTrouble}. */
  const runAgentJudged = async (input: Parameters<typeof runAgent>[0]): ReturnType<typeof runAgent> => {
    try {
      return await runAgent(input);
    } catch (error) {
      if (input.signal?.aborted) throw error;
      const trouble = localDiskTrouble(error) ?? (await probeWrite());
      throw trouble !== undefined ? new DiskTrouble(trouble) : error;
    }
  };

  /**
   * A21-25: what a failed fetch (or commit) left in the clone's object store — git never removes its temporary objects
   * and packs (`tmp_obj_*`, `tmp_pack_*`, `tmp_idx_*`, quarantine `incoming-*`), so one base that did not fit kept the
   * disk full for ever. Run in the clone's turn (no other job's fetch writes them meanwhile). The bytes removed.
   */
  const removeFetchLeftovers = async (): Promise<number> => {
    const objects = path.join(clone, 'objects');
    let bytes = 0;
    for (const entry of await readdir(objects).catch(() => [] as string[])) {
      const where = path.join(objects, entry);
      if (entry.startsWith('incoming-')) {
        bytes += await bytesUnder(where);
        await rm(where, { recursive: true, force: true }).catch(() => undefined);
      } else if (entry === 'pack' || /^[0-9a-f]{2}$/.test(entry)) {
        for (const file of await readdir(where).catch(() => [] as string[])) {
          if (!file.startsWith('tmp_')) continue;
          bytes += (await stat(path.join(where, file)).catch(() => ({ size: 0 }))).size;
          await rm(path.join(where, file), { recursive: true, force: true }).catch(() => undefined);
        }
      }
    }
    return bytes;
  };

  /**
   * Outside round A25-09: a job's setup failed and the clone itself is broken (see {@link cloneTrouble}): it is made again
   * here, in the clone's turn (moved aside, cloned anew as at the start), and the job goes back to the queue — it failed
   * fatal before, on this worker and every job it took, while healthy workers idled. Undefined when the clone is sound
   * (the job fails with its own error). A clone that cannot be made again (the remote, the disk) pauses this worker as a
   * disk it cannot write does ({@link markSick}).
   */
  const onBrokenClone = async (job: Job, token: string | undefined, data: AgentJobData): Promise<undefined> => {
    const broken = await cloneTrouble(cloneGit);
    if (broken === undefined) return undefined;
    const remade = await withClone(async () => {
      if ((await cloneTrouble(cloneGit)) === undefined) return undefined;
      const unique = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
      const stale = path.join(dir, `${cloneBase}.stale-${unique}`);
      const part = path.join(dir, `${cloneBase}.part-${unique}`);
      try {
        await cloneWatched(createGit(dir, { env }), ['clone', '--quiet', '--bare', '--no-tags', options.remote, part], part, options.cloneStallMs ?? 120_000);
        await writeFile(path.join(part, cloneCompleteMark), '');
        await rename(clone, stale).catch(() => rm(clone, { recursive: true, force: true }));
        await rename(part, clone);
        void rm(stale, { recursive: true, force: true }).catch(() => undefined);
        knownBases.clear();
        branchesUsed.clear();
        return undefined;
      } catch (error) {
        await rm(part, { recursive: true, force: true }).catch(() => undefined);
        return firstLine(error);
      }
    }).catch((error: unknown) => firstLine(error));
    if (remade !== undefined) {
      markSick(`its clone ${clone} is broken (${broken}) and could not be made again: ${remade}`);
      log(`job ${data.job_id}: handed back, this worker's clone is broken (${broken}) and could not be made again (${remade})`);
      return handBack(job, token, 0);
    }
    log(`job ${data.job_id}: handed back, this worker's clone was broken (${broken}); made again from the shared remote`);
    return handBack(job, token, 0);
  };

  const diskHandBacksMax = Math.max(1, options.diskHandBacks ?? 3);
  const megabytes = (bytes: number) => `${(bytes / (1 << 20)).toFixed(1)} MB`;
  /**
   * A20-16, A21-08, A21-25, A21-33: a job's setup failed (the base's fetch, its worktree: git's words for a full disk
   * are not always the disk's — `couldn't write '….lock'`), or it failed later with a disk error (`words`: the agent's
   * writes, its commits, the push's local refs). The failed fetch's leftovers and the job's worktree go first, then a
   * probe write to `--dir` judges the disk (never the error's words alone: A21-33):
   * - the probe fails: this worker's disk is full (or failing) whoever filled it — the job goes back to the queue for
   *   another worker, and this one pauses ({@link markSick}) until its probe works again;
   * - the probe works: the job's own files filled it (a base that does not fit, an agent that writes too much) — the
   *   job goes back to the queue WITHOUT pausing this worker, counted in Redis across workers; after
   *   {@link diskHandBacksMax} such hand-backs it fails as the job's own (DISPATCH_JOB_TOO_LARGE, config), naming its size.
   *   Except without disk words (the setup failed for another reason), or for a failure after the agent (`ownFiles`
   *   false: the push — a remote's full disk speaks the same words): then undefined, and the job fails with its own
   *   error as before.
   */
  const onDiskTrouble = async (job: Job, token: string | undefined, data: AgentJobData, words: string | undefined, phase: 'setup' | 'run', worktree: string, ownFiles: boolean): Promise<undefined> => {
    const leftovers = await withClone(removeFetchLeftovers).catch(() => 0);
    // (a worktree half made by a failed `worktree add` too)
    await rm(worktree, { recursive: true, force: true }).catch(() => undefined);
    const what = phase === 'setup' ? 'its setup' : 'while its agent ran';
    const during = phase === 'setup' ? 'in its setup' : 'while its agent ran';
    const freed = leftovers > 0 ? `; removed the ${megabytes(leftovers)} a failed fetch left in the clone` : '';
    const probed = await probeWrite();
    if (probed !== undefined) {
      const trouble = words ?? probed;
      markSick(trouble);
      log(`job ${data.job_id}: handed back, this worker's disk failed ${what} (${trouble})${freed}`);
      return handBack(job, token, 0);
    }
    if (!ownFiles || words === undefined) return undefined;
    const trouble = words;
    const counterKey = `polywave:disk-handbacks:${data.job_id}`;
    const count = await client.multi().incr(counterKey).expire(counterKey, pushedMarkerSeconds).exec().then((replies) => Number(replies?.[0]?.[1]) || 1, () => 1);
    if (count >= diskHandBacksMax) {
      const free = await statfs(dir).then((fs) => fs.bavail * fs.bsize, () => undefined);
      const size = leftovers > 0 ? `here its base's fetch had written ${megabytes(leftovers)} when the disk filled` : 'here its worktree filled the disk';
      log(`job ${data.job_id}: failed, a disk error (${trouble}) ${during} on ${count} runs, each time the --dir took writes again once the job's files were gone${freed}`);
      throw new UnrecoverableError(`${dispatchCodes.jobTooLarge}: job ${data.job_id} hit a disk error (${trouble}) ${during} on ${count} worker runs in turn, and each worker's --dir took writes again once the job's own files were removed: the job does not fit on the workers of its label(s) (${size}${free !== undefined ? `, ${megabytes(free)} free after the cleanup` : ''}); give those workers more disk, or make the base smaller`);
    }
    log(`job ${data.job_id}: handed back, a disk error (${trouble}) ${during}, but this worker's --dir takes writes once the job's files are gone${freed} (${count} of ${diskHandBacksMax} such hand-backs before the job fails as too large)`);
    return handBack(job, token, 1000);
  };

  /**
   * Where the OS sandbox cannot run and this worker was not started with --unsafe-no-sandbox: the
   * job is refused before anything is checked out (SANDBOX_UNAVAILABLE, naming this worker — the
   * orchestrator shows the reason as it is). Gate jobs (they run the agent branch's code) and every
   * agent job, whatever its model (A20-19: a `script:` job — which any job producer may send — ran
   * unsandboxed here, reading this worker's keys from /proc and writing its home): whether anything
   * runs outside the sandbox is this worker's operator's decision, never the job's.
   */
  const refuseWithoutSandbox = async (what: 'agent' | 'gate', jobId: string): Promise<void> => {
    if (options.unsafeNoSandbox) return;
    const status = await sandboxStatus({ env });
    if (status.available) return;
    log(`${what === 'gate' ? 'gate job' : 'job'} ${jobId}: refused, the OS sandbox is unavailable here (${status.detail})`);
    const install = status.missing.length > 0 ? `install ${status.missing.join(', ')} there` : `install the sandbox's packages there (Debian/Ubuntu: ${sandboxInstallHint})`;
    const why = what === 'gate' ? "gates run the agent branch's code only sandboxed" : 'agent jobs (script agents too) run only sandboxed unless the worker opted out';
    throw new UnrecoverableError(`${codes.sandboxUnavailable}: worker ${id} on ${os.hostname()} refused ${what} job ${jobId}: the OS sandbox is unavailable there (${status.detail}), and ${why}; ${install}, or start that worker with --unsafe-no-sandbox`);
  };

  /**
   * A gate job (`dispatch.gates: "workers"`): the agent branch's tip checked out in a scratch
   * worktree of the clone (`<dir>/gates/<job id>`), the E21 pre-merge gates run there by the same
   * runner as on the orchestrator (no E38 cache: the checkout is new each time), with this worker's
   * environment minus every credential variable; the results go back as the job's result.
   * A gate runs the agent branch's code: where the OS sandbox cannot run, the job is refused
   * (SANDBOX_UNAVAILABLE, naming this worker; nothing checked out or run) unless this worker was
   * started with --unsafe-no-sandbox (outside attack #14: it ran unsandboxed).
   */
  const processGateJob = async (job: Job, token?: string): Promise<GateJobReturn> => {
    const skew = jobFormatSkew(job.data, 'gate job', String(job.id), id, dispatchKey.verify('gate-job', String(job.id), job.data));
    if (skew !== undefined) throw new UnrecoverableError(skew);
    if (!dispatchKey.verify('gate-job', String(job.id), job.data)) throw new UnrecoverableError(forgedJob('gate job', job));
    const parsed = gateJobDataSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`${dispatchCodes.invalidJob}: gate job ${String(job.id).slice(0, 120)}: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const data = parsed.data;
    let scratch: string;
    try {
      assertJobBranch(data);
      assertGateJobIdentity(data, job.id);
      scratch = inside(path.join(dir, 'gates'), data.job_id);
    } catch (error) {
      throw new UnrecoverableError(PolywaveError.isInstance(error) ? `${error.code}: ${error.message}` : String(error));
    }
    // Issue 17 (replays): only while an orchestrator awaits this very enqueue (its signed, live claim; job-claim.ts).
    let claimSeenAt = 0;
    const unclaimed = await unclaimedJob(client, dispatchKey, { jobId: data.job_id, sig: data.sig, queue: job.queueName }, { onLive: (now) => (claimSeenAt = now) });
    if (unclaimed !== undefined) throw new UnrecoverableError(replayedJobMessage('gate job', data.job_id, unclaimed));
    // A25-11: the claim must be written again after this run began (a copy is never refreshed) — looked for beside the
    // checkout, awaited before any gate runs.
    const refreshed = unclaimedJob(client, dispatchKey, { jobId: data.job_id, sig: data.sig, queue: job.queueName }, { refreshedAfter: claimSeenAt });
    await refuseWithoutSandbox('gate', data.job_id);
    const admitted = admit(data.job_id);
    if ('handBackMs' in admitted) return handBack(job, token, admitted.handBackMs);
    const { controller, startedAtMs } = admitted;
    log(`gate job ${data.job_id}: ${data.gates.length} gate(s) of agent ${data.agent} of ${data.slug} wave ${data.wave} at ${data.head.slice(0, 12)}`);
    let added = false;
    let unpinSettings: (() => void) | undefined;
    try {
      await withClone(async () => {
        // A21-11's class for gates: the gated commit must be what the agent branch holds on the shared remote (the
        // orchestrator pushes it there right before it enqueues the job), and the base the gates' sandbox settings come
        // from (A20-44) what the wave's base ref holds there — never just any commit the clone happens to have (a commit of
        // another project, with its committed settings).
        const gatedRef = `refs/polywave/gated/${data.branch}`;
        const baseRef = `refs/polywave/base/${data.slug}/wave${data.wave}`;
        try {
          await cloneGit.run(['-c', 'fetch.unpackLimit=1', 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-auto-maintenance', options.remote, `+refs/heads/${data.branch}:${gatedRef}`, ...(data.base_commit !== undefined ? [`+${baseRef}:${baseRef}`] : [])]);
        } catch (error) {
          throw new UnrecoverableError(`${dispatchCodes.remoteUnreachable}: cannot fetch ${data.branch}${data.base_commit !== undefined ? ` and ${baseRef}` : ''} from the shared remote ${shownRemote}: ${firstLine(error)}`);
        }
        const at = async (ref: string) => (await cloneGit.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { allowExitCodes: [1, 128] })).stdout.trim();
        const tip = await at(gatedRef);
        if (tip !== data.head) throw new UnrecoverableError(`${dispatchCodes.branchMismatch}: ${data.branch} on the shared remote ${shownRemote} is at ${tip.slice(0, 12) || 'nothing'}, not at ${data.head.slice(0, 12)}, the commit gate job ${data.job_id} names; not gated`);
        if (data.base_commit !== undefined && (await at(baseRef)) !== data.base_commit) throw new UnrecoverableError(`${dispatchCodes.baseMissing}: the base ${data.base_commit.slice(0, 12)} gate job ${data.job_id} names is not at ${baseRef} on the shared remote ${shownRemote}; not gated`);
        await Promise.all(cleanups.values());
        await removeWorktree(scratch);
        await cloneGit.run(['worktree', 'add', '--quiet', '--detach', '--force', scratch, data.head]);
        added = true;
      });
      // A20-44: the gates' sandbox settings are the project's committed ones at the wave's base (as finalize-wave's local
      // gates get), confined to the checkout (A20-45) — only a base the gated commit builds on; else the defaults.
      const base = data.base_commit !== undefined && (await cloneGit.run(['merge-base', '--is-ancestor', data.base_commit, data.head], { allowExitCodes: [1, 128] })).exitCode === 0 ? data.base_commit : undefined;
      if (data.base_commit !== undefined && base === undefined) log(`gate job ${data.job_id}: its base ${data.base_commit.slice(0, 12)} is not an ancestor of ${data.head.slice(0, 12)}; the gates get the default sandbox settings`);
      unpinSettings = base !== undefined ? pinSandboxSettings(scratch, base) : undefined;
      const stale = await refreshed;
      if (stale !== undefined) {
        log(`gate job ${data.job_id}: refused, ${stale}`);
        throw new UnrecoverableError(replayedJobMessage('gate job', data.job_id, stale));
      }
      const run = await runGates({
        repoDir: scratch,
        gates: data.gates,
        timing: 'pre-merge',
        noCache: true,
        env: withoutCredentials(env),
        ...(data.default_timeout_ms ? { defaultTimeoutMs: data.default_timeout_ms } : {}),
        docsOnly: data.docs_only,
        configSearchDirs: [scratch],
        signal: controller.signal,
        ...(options.unsafeNoSandbox ? { sandbox: false } : {}),
        // (as for agent jobs: nothing of --dir but its checkout and the clone)
        sandboxHiddenAround: [dir],
      });
      if (controller.signal.aborted) {
        log(`gate job ${data.job_id}: handed back`);
        return await handBack(job, token, 0);
      }
      done += 1;
      log(`gate job ${data.job_id}: ${run.passed ? 'passed' : `${run.required_failures} required gate(s) failed`}`);
      return dispatchKey.sign('gate-result', data.job_id, { v: 1, kind: 'gate', job_id: data.job_id, worker: id, host: os.hostname(), dir: scratch, run, started_at: startedAtMs, finished_at: Date.now(), ...(data.sig ? { job_sig: data.sig } : {}) } satisfies GateJobReturn);
    } finally {
      unpinSettings?.();
      if (added) discardWorktree(scratch);
      release(data.job_id, controller);
    }
  };

  const processJob = async (job: Job, token?: string): Promise<AgentJobReturn | GateJobReturn> => {
    const handedOverAt = activeAt.get(String(job.id));
    activeAt.delete(String(job.id));
    if (job.name === 'gate') return processGateJob(job, token);
    // The job's start, step by step (the worker's clock, ms since the epoch): bench:dispatch's breakdown.
    const steps: Record<string, number> = { ...(handedOverAt !== undefined ? { active: handedOverAt } : {}), processor: Date.now() };
    const step = (name: string) => (steps[name] ??= Date.now());
    // Version skew: a job format this worker does not run is refused naming both versions (job-claim.ts).
    const skew = jobFormatSkew(job.data, 'job', String(job.id), id, dispatchKey.verify('agent-job', String(job.id), job.data));
    if (skew !== undefined) throw new UnrecoverableError(skew);
    // A21-43/A21-11: a job the orchestrator did not sign (written into Redis by someone else) runs nothing here.
    if (!dispatchKey.verify('agent-job', String(job.id), job.data)) throw new UnrecoverableError(forgedJob('job', job));
    const parsed = agentJobDataSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`${dispatchCodes.invalidJob}: job ${String(job.id).slice(0, 120)}: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const data: AgentJobData = parsed.data;
    // Before anything is touched: only the agent's own branch ever leaves this machine; the id the
    // job's directories are named by is the one its content implies (F1); the model sends this
    // worker's keys to no endpoint the job chose (F2).
    let worktree: string;
    let scriptFile: string;
    try {
      assertJobBranch(data);
      assertJobBaseRef(data);
      assertJobSize(data);
      assertJobIdentity(data, job.id);
      worktree = inside(path.join(dir, 'work'), data.job_id);
      scriptFile = inside(path.join(dir, 'scripts'), `${data.job_id}.yaml`);
    } catch (error) {
      throw new UnrecoverableError(PolywaveError.isInstance(error) ? `${error.code}: ${error.message}` : String(error));
    }
    // Issue 17 (replays): a signed job runs only while an orchestrator awaits this very enqueue (its signed, live claim naming
    // the job's sig): an earlier job re-added to a queue by a Redis writer is refused, nothing fetched or run (job-claim.ts).
    let claimSeenAt = 0;
    const unclaimed = await unclaimedJob(client, dispatchKey, { jobId: data.job_id, sig: data.sig, queue: job.queueName }, { onLive: (now) => (claimSeenAt = now) });
    if (unclaimed !== undefined) {
      log(`job ${data.job_id}: refused, ${unclaimed}`);
      throw new UnrecoverableError(replayedJobMessage('job', data.job_id, unclaimed));
    }
    // A25-11: the claim must be written again after this run began (a copy is never refreshed) — looked for beside the
    // job's setup, awaited before any of its code (worktree setup, agent) runs.
    const refreshed = unclaimedJob(client, dispatchKey, { jobId: data.job_id, sig: data.sig, queue: job.queueName }, { refreshedAfter: claimSeenAt });
    try {
      assertJobModel(data, options.modelAllow ?? []);
    } catch (error) {
      // Outside round A21-39: a model only SOME workers allow (--model-allow) was failed fatal by whichever other worker
      // took the job first, while an allowing one idled. It goes back to the queue for another worker; only once every
      // live worker of its labels refused it does it fail (DISPATCH_INVALID_JOB, as before).
      const message = PolywaveError.isInstance(error) ? `${error.code}: ${error.message}` : String(error);
      // (a model no --model-allow can allow — a script path — fails at once)
      const allowable = (() => {
        try {
          assertJobModel(data, [data.model]);
          return true;
        } catch {
          return false;
        }
      })();
      if (!allowable) throw new UnrecoverableError(message);
      if (!(await othersMayAllow(String(job.id), job.queueName, data.labels))) throw new UnrecoverableError(`${message}; no live worker of its label(s) allows it`);
      log(`job ${data.job_id}: handed back, its model is not allowed here (--model-allow); another worker of its labels may run it`);
      return handBack(job, token, 1000);
    }
    step('checked');
    await refuseWithoutSandbox('agent', data.job_id);
    const admitted = admit(data.job_id);
    if ('handBackMs' in admitted) return handBack(job, token, admitted.handBackMs);
    const { controller, startedAtMs } = admitted;
    // Outside round A22-24: a job the orchestrator gave up on (its mark in Redis, looked at every 2 s), or one that ran
    // past the agent's limit + the margin here (a setup bounded only by the project's timeout, up to 24 h), stops now
    // and fails DISPATCH_GIVEN_UP — it held this worker while its relaunch waited, and was then handed back to the queue.
    let givenUp: string | undefined;
    const giveUp = (why: string) => {
      if (givenUp !== undefined || controller.signal.aborted) return;
      givenUp = why;
      controller.abort(new Error(why));
    };
    const jobBoundMs = (data.limits.timeoutMs ?? defaultAgentLimits.timeoutMs) + jobRunMarginMs;
    const boundTimer = setTimeout(() => giveUp(`it ran for more than ${Math.round(jobBoundMs / 1000)} s here (the agent's limit + ${Math.round(jobRunMarginMs / 1000)} s)`), jobBoundMs);
    const givenUpWatch = setInterval(() => {
      void client.exists(givenUpKey(job.queueName, String(job.id))).then((found) => {
        if (found === 1) giveUp('the orchestrator gave up on it (its watch timed out)');
      }, () => undefined);
    }, 2000);
    log(`job ${data.job_id}: agent ${data.agent} of ${data.slug} wave ${data.wave} (attempt ${data.attempt})`);
    // The job's progress is one object (each update replaces it): which run has the job (this worker,
    // published now, so the orchestrator shows where the agent runs before its result), the journal
    // relay's entries (an earlier run's kept until this run's relay replaces them), the agent's live
    // events since the last update and, once the agent reported, its report — which the orchestrator
    // writes at once, as an in-process agent's report is written when it reports.
    const runId = `${id}:${startedAtMs}`;
    // A19-05/A19-03: the run's number, handed out by Redis (one INCR of the job's run counter per run): the orchestrator
    // orders the job's runs by it, never by this worker's clock. (No answer within 5 s: sent without one — such a run
    // never takes "runs on" from a numbered one, its result still counts.)
    const runNo = await numberThisRun(client, runCounterKey(job.queueName, String(job.id)));
    // (an earlier run's journal only from a progress record a worker signed: a forged one would write this run's prompt;
    // and only of this very enqueue of the job — its `job_sig` — not one of an earlier job of the same id replayed)
    const earlier = dispatchKey.verify('progress', data.job_id, job.progress) && data.sig !== undefined && (job.progress as { job_sig?: unknown }).job_sig === data.sig ? job.progress : undefined;
    const earlierJournal = earlier && typeof earlier === 'object' && !Array.isArray(earlier) ? (earlier as { journal?: unknown }).journal : undefined;
    let progress: Record<string, unknown> = { ...(Array.isArray(earlierJournal) ? { journal: earlierJournal } : {}), run: runId, ...(runNo !== undefined ? { run_no: runNo } : {}), ...(data.sig ? { job_sig: data.sig } : {}), queue: job.queueName, worker: id, host: os.hostname() };
    const publish = (patch: Record<string, unknown>) => {
      const { events: _sent, pack: _pack, packed: _packed, ...rest } = progress;
      // (events and a pack travel once: an update without new ones does not repeat the last ones)
      progress = { ...rest, ...patch };
      return job.updateProgress(dispatchKey.sign('progress', data.job_id, progress));
    };
    void publish({}).catch(() => undefined);
    // F12: the agent branch on the remote as this job found it; the push leases it.
    const seenAtStart = remoteHeadAtStart(data.branch);
    let added = false;
    let journalDir: string | undefined;
    // A17-12: the script goes with its job (it was kept for every past job of the worker)
    let scriptWritten = false;
    let relay: JournalRelay | undefined;
    let unpinSettings: (() => void) | undefined;
    try {
      await withClone(async () => {
        step('clone_turn');
        // The base is fetched once per clone (a later wave or retry on the same base finds it here).
        // Outside round A21-11: the base must be what the job's base ref holds on the shared remote (as fetched), not any
        // commit the clone happens to have — a forged job named another project's commit (and its committed sandbox
        // settings) as its base.
        const baseKey = `${data.base_ref}\0${data.base_commit}`;
        const hasBase = async () => knownBases.has(baseKey) || (await cloneGit.run(['rev-parse', '--verify', '--quiet', `${data.base_ref}^{commit}`], { allowExitCodes: [1, 128] })).stdout.trim() === data.base_commit;
        if (!(await hasBase())) {
          try {
            // A21-25: always into a pack (never loose objects: a fetch that fails on a full disk left the base's commit
            // and trees but not its blobs — the clone then "had" the base, and every later job of it failed), so that
            // what a failed fetch leaves is its temporary pack only (removed, see removeFetchLeftovers).
            await cloneGit.run(['-c', 'fetch.unpackLimit=1', 'fetch', '--quiet', '--no-tags', options.remote, `+${data.base_ref}:${data.base_ref}`]);
          } catch (error) {
            throw new UnrecoverableError(`${dispatchCodes.remoteUnreachable}: cannot fetch ${data.base_ref} from the shared remote ${shownRemote}: ${firstLine(error)}`);
          }
          // F18: the ref was moved to another commit meanwhile (another run of the same slug and wave).
          if (!(await hasBase())) throw new UnrecoverableError(`${dispatchCodes.baseMissing}: the base ${data.base_commit.slice(0, 12)} of job ${data.job_id} is not at ${data.base_ref} on the shared remote ${shownRemote} (the ref moved since the job was enqueued)`);
        }
        knownBases.add(baseKey);
        step('base');
        // Deletes still under way finish first (the same agent's branch may be checked out in one).
        await Promise.all(cleanups.values());
        await removeWorktree(worktree);
        // F13: another worktree with the agent branch checked out (a job of the same branch that is
        // not running here any more) goes; one that runs here now keeps it: this job waits its turn.
        // Only a branch this process checked out before can have one (the start removed every worktree
        // of --dir): the first job of a branch here skips `git worktree list` in the clone's turn.
        for (const holder of branchesUsed.has(data.branch) ? await branchHolders(data.branch) : []) {
          if (runningWorktrees.has(holder)) throw new HandBack();
          await rm(holder, { recursive: true, force: true });
          pruneNeeded = true;
        }
        await removeWorktree();
        branchesUsed.add(data.branch);
        step('cleaned');
        await cloneGit.run(['worktree', 'add', '--quiet', '--force', '-B', data.branch, worktree, data.base_commit]);
        runningWorktrees.add(worktree);
        added = true;
      });
      const readyAtMs = step('worktree');
      let model = data.model;
      if (data.script_text !== undefined) {
        await mkdir(path.dirname(scriptFile), { recursive: true });
        await writeFile(scriptFile, data.script_text);
        scriptWritten = true;
        model = `script:${scriptFile}`;
      }
      const localize = (text: string) => text.split(worktreeToken).join(worktree);
      // E23A across machines: this job's journal, seeded with what an earlier run of it (on a worker
      // that died) relayed in the job's progress; relayed there in turn while the agent runs.
      journalDir = inside(path.join(dir, 'journals'), data.job_id);
      const journal = journalPaths(journalDir, data.slug, data.wave, data.agent);
      await journalCleanups.get(journalDir);
      const seeded = await seedJobJournal(journal, earlier, worktree);
      if (seeded.entries > 0) log(`job ${data.job_id}: journal recovered from an earlier run (${seeded.entries} entries)`);
      const prompt = seeded.markdown ? withRecoveredContext(localize(data.prompt), seeded.markdown) : localize(data.prompt);
      // Live events (bounded: liveEventsMax per run, liveBatchMax per update) ride the relay's updates.
      const outbox = createLiveEventOutbox();
      relay = createJournalRelay(journal, (entries) => {
        const events = outbox.take();
        return publish({ journal: toPortableJournal(entries, worktree), ...(events.length > 0 ? { events } : {}) });
      }, { pending: () => outbox.pending() });
      const worktreeGit = createGit(worktree, { env });
      step('seeded');
      /** Pushes `head` to the agent branch — F12: only while the job is still this worker's (a lapsed lock: another worker runs it and its push wins), and only over the branch as `lease` (lease). */
      const pushHead = async (head: string, lease: string): Promise<void> => {
        const ours = token !== undefined && (await job.extendLock(token, lockDurationMs).catch(() => 0)) === 1;
        if (!ours) {
          log(`job ${data.job_id}: its lock was lost (another worker took the job); ${data.branch} not pushed`);
          throw new UnrecoverableError(`${dispatchCodes.lockLost}: job ${data.job_id} lost its lock on ${id} before the push; ${data.branch} was not pushed`);
        }
        // Recorded BEFORE the push: a commit on the branch that a run of this very job pushed (F4: a lost
        // copy of it still running, its Redis key deleted and the job added again), never another job's.
        await client.multi().sadd(pushedKey(data.job_id), head).expire(pushedKey(data.job_id), pushedMarkerSeconds).exec().catch(() => undefined);
        const push = (expect: string) => worktreeGit.run(['push', '--quiet', `--force-with-lease=refs/heads/${data.branch}:${expect}`, options.remote, `${head}:refs/heads/${data.branch}`]);
        try {
          try {
            await push(lease);
          } catch (error) {
            // The lease failed: the branch moved since this run read it. When what is there now was pushed by
            // another run of THIS job (its marker above) and the job is still this run's (its lock, renewed
            // just now), this run pushes over it with the branch as it is now — the lost copy raced this one
            // (F4), and the job's accepted result is this run's. Another job's push (F12: two runs of one
            // agent branch) is never pushed over.
            const text = `${String(error instanceof Error ? error.message : error)}\n${typeof (error as { stderr?: unknown }).stderr === 'string' ? (error as { stderr: string }).stderr : ''}`;
            if (!/stale info|cannot lock ref|but expected [0-9a-f]{40}/i.test(text)) throw error;
            const now = (await cloneGit.run(['ls-remote', '--quiet', options.remote, `refs/heads/${data.branch}`]).catch(() => ({ stdout: '' }))).stdout.split('\t')[0]?.trim() ?? '';
            const sameJob = /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(now) && now !== lease && (await client.sismember(pushedKey(data.job_id), now).catch(() => 0)) === 1;
            if (!sameJob || (await job.extendLock(token!, lockDurationMs).catch(() => 0)) !== 1) throw error;
            log(`job ${data.job_id}: ${data.branch} was pushed by another run of this job (${now.slice(0, 12)}) while this one ran; pushing over it`);
            await push(now);
          }
        } catch (error) {
          // git's own lines (`! [rejected] … (stale info)`, `remote: …`): the message alone may name only the command.
          const stderr = typeof (error as { stderr?: unknown }).stderr === 'string' ? (error as { stderr: string }).stderr : '';
          const text = `${String(error instanceof Error ? error.message : error)}\n${stderr}`;
          const telling = stderr.split('\n').find((line) => /^\s*!|error:|fatal:|remote:/.test(line));
          const message = telling ? redactUserinfo(telling.trim()) : firstLine(error);
          // The lease failed before the push (`stale info`), or the ref moved between the lease check and the update (`cannot lock ref … is at X but expected Y`).
          if (/stale info|cannot lock ref|but expected [0-9a-f]{40}/i.test(text)) {
            log(`job ${data.job_id}: ${data.branch} moved on the remote while the job ran; not pushed`);
            throw new UnrecoverableError(`${dispatchCodes.branchMoved}: ${data.branch} on the shared remote ${shownRemote} moved while job ${data.job_id} ran (another run of it pushed); not pushed over it`);
          }
          // A25-08: a remote that denies non-fast-forward updates (`git init --shared`'s receive.denyNonFastForwards, a
          // branch protection) cannot take a re-run's branch, which starts from the base: named as that, not as the guard.
          if (/denying non-fast-forward|\[remote rejected\][^\n]*\(non-fast-forward\)/i.test(text)) {
            log(`job ${data.job_id}: the shared remote refuses to replace ${data.branch} (it denies non-fast-forward updates); not pushed`);
            throw new UnrecoverableError(`${dispatchCodes.remoteNoForce}: the shared remote ${shownRemote} refuses to replace ${data.branch} (${message}): it denies non-fast-forward updates (receive.denyNonFastForwards, which \`git init --shared\` sets, or a branch protection), and a job's re-run starts from the wave's base, so it must replace what an earlier run of the agent pushed; allow forced updates of refs/heads/polywave/* and refs/polywave/base/* there (a bare repository: \`git config receive.denyNonFastForwards false\`), docs/scale-out.md "The ref guard on the remote"`);
          }
          if (/hook declined|pre-receive|update hook|remote rejected/i.test(text)) throw new UnrecoverableError(`${dispatchCodes.refRefused}: the shared remote ${shownRemote} refused ${data.branch}: ${message}`);
          throw new UnrecoverableError(`${dispatchCodes.remoteUnreachable}: cannot push ${data.branch} to the shared remote ${shownRemote}: ${message}`);
        }
      };
      // When the agent reports, its commits are normally all made: they are pushed then, while the
      // agent finishes, and the pushed head goes into the job's progress, so the orchestrator fetches
      // them before the result (as an in-process agent's commits are in its worktree when it ends).
      // Any failure here is left to the push after the agent (same checks, same errors).
      let earlyPush: Promise<string | undefined> = Promise.resolve(undefined);
      let reportedAt: number | undefined;
      let pushedAt: number | undefined;
      const pushOnReport = () => {
        earlyPush = earlyPush.then(async (before) => {
          if (controller.signal.aborted) return before;
          try {
            const head = (await worktreeGit.headCommit()).trim();
            if (head === data.base_commit || head === before) return before;
            // Small commits also travel in the progress (a pack of what the base lacks), at once and
            // while the push runs: the orchestrator fast-forwards to them without fetching. Should this
            // push fail, the job fails (or another run's result names another head, which the
            // orchestrator moves its worktree to), as for commits fetched early.
            const shipped = packCommits(worktree, env, head, data.base_commit).then((pack) => (pack !== undefined && !controller.signal.aborted ? publish({ packed: head, pack }) : undefined)).catch(() => undefined);
            const seen = await seenAtStart;
            if (seen instanceof Error) return before;
            await pushHead(head, before ?? seen);
            pushedAt = Date.now();
            await shipped;
            void publish({ pushed: head }).catch(() => undefined);
            return head;
          } catch {
            return before;
          }
        });
      };
      const implPath = data.impl_path && existsSync(path.join(worktree, data.impl_path)) ? path.join(worktree, data.impl_path) : undefined;
      let report: Record<string, unknown> | undefined;
      const events: NumberedEvent[] = [];
      let eventChars = 0;
      // F12: the lease is read before the agent starts (its `git ls-remote` began with the job and has
      // normally answered while the worktree was made): a push to the branch once the agent runs (another
      // job's, or a lost copy of this one) is then always one the push's lease sees, however late that
      // read would otherwise answer on a loaded machine.
      await seenAtStart;
      step('lease');
      // The job's sandbox settings are the base commit's (a bare clone has no main checkout to read them from, and
      // the worktree's HEAD is the agent's branch: a retried job's own earlier commit of polywave.config.json, or
      // another job's, must never widen its sandbox).
      unpinSettings = pinSandboxSettings(worktree, data.base_commit);
      const cliTemplates = model.startsWith('cli:') ? workerCliTemplates(await readAgentCliTemplates(worktree, env), options.modelAllow ?? []) : undefined;

      // A20-26: the worktree setup prepare-wave gives a local agent's worktree (the project's `setup`, or the defaults a
      // worker can apply), sandboxed with the base commit's settings (pinned above), before the agent runs.
      const stale = await refreshed;
      if (stale !== undefined) {
        log(`job ${data.job_id}: refused, ${stale}`);
        throw new UnrecoverableError(replayedJobMessage('job', data.job_id, stale));
      }
      if (data.worktree_setup) {
        const setup = await setupJobWorktree({ worktree, commonDir: clone, agent: data.agent, slug: data.slug, wave: data.wave, branch: data.branch, setup: data.worktree_setup, env, git: worktreeGit, signal: controller.signal, hiddenAround: [dir], logDir: path.join(dir, 'setup-logs') });
        if (controller.signal.aborted) throw new HandBack();
        if (!setup.ok) {
          log(`job ${data.job_id}: worktree setup failed: ${setup.error ?? 'failed'}`);
          throw new UnrecoverableError(`${setup.code ?? worktreeSetupCodes.failed}: worker ${id} on ${os.hostname()}: the worktree setup of agent ${data.agent} failed: ${(setup.error ?? 'failed').slice(0, 2000)}${setup.output_tail ? `\n${setup.output_tail.slice(-2000)}` : ''}`);
        }
        if (setup.actions.length > 0) log(`job ${data.job_id}: worktree set up: ${setup.actions.join('; ').slice(0, 1000)}`);
      }
      // A22-10: an error THROWN out of runAgent (its journal's flush on a full --dir, the tool recorder) is judged as a
      // failed outcome is — a disk error (or a failing probe) hands the job back — not as a failure after the agent.
      const run = await runAgentJudged({
        ...(cliTemplates ? { cliTemplates } : {}),
        ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
        agentId: data.agent,
        role: jobRole(data.role),
        wave: data.wave,
        attempt: data.attempt,
        model,
        systemPrompt: localize(data.system_prompt),
        prompt,
        cwd: worktree,
        branch: data.branch,
        baseCommit: data.base_commit,
        ...(implPath ? { implPath } : {}),
        policy: { root: worktree, ownedFiles: data.owned_files, frozenPaths: data.frozen_paths, branch: data.branch, readablePaths: [] },
        // Its sandbox sees nothing of --dir but its own worktree and the clone (whose `worktrees/` shows its own entry
        // only): not the other jobs' worktrees, journals, scripts or gate checkouts, those of jobs started later included.
        sandboxHiddenAround: [dir],
        limits: data.limits,
        env: { ...env, POLYWAVE_REPO_ROOT: worktree },
        signal: controller.signal,
        onEvent: (event) => {
          step('first_event');
          relay?.touch();
          const kept = keepEvent(event);
          if (!kept || events.length >= jobLimits.resultEvents) return;
          // F15: the result stays small (1 MB of events at most).
          const size = JSON.stringify(kept).length;
          if (eventChars + size > 1_000_000) return;
          eventChars += size;
          // Numbered and timed here; relayed live (the relay's next update) and kept for the result.
          events.push(outbox.add(kept));
        },
        journal,
        // The worker only checks the report (same rules as the writer); the orchestrator writes it.
        reportCompletion: async (input) => {
          if (JSON.stringify(input).length > jobLimits.resultReport) return { ok: false, code: 'X001_INVALID_INPUT', message: `the report is larger than ${jobLimits.resultReport} characters` };
          const built = buildCompletionReport(input as CompletionReportInput, { agentId: data.agent });
          const blocking = built.findings.filter((finding) => finding.severity === 'error' || finding.severity === 'fatal');
          if (!built.ok || blocking.length > 0) return { ok: false, code: blocking[0]?.code ?? 'X001_INVALID_INPUT', message: blocking[0]?.message ?? 'invalid report' };
          report = { ...input };
          reportedAt ??= Date.now();
          void publish({ report, run: runId }).catch(() => undefined);
          pushOnReport();
          return { ok: true, status: built.report.status ?? '' };
        },
        hasCompletionReport: async () => report !== undefined,
      });
      const agentEndAt = Date.now();
      await relay?.close();
      // A21-08: the agent failed on a disk error (its writes, its commits — in git's words or not: a probe write says)
      // — judged as one in the job's setup (below). A23-30: by the probe alone, never by the failure's words — the agent
      // writes them (a step that printed `ENOSPC: no space left on device` and exited 1 ran three times and failed
      // DISPATCH_JOB_TOO_LARGE); a disk its writes filled is still full when it fails, and the probe says so.
      if (run.outcome.status === 'failed' && !controller.signal.aborted) {
        const runTrouble = await probeWrite();
        if (runTrouble !== undefined) throw new DiskTrouble(runTrouble);
      }
      if (outbox.capped > 0) log(`job ${data.job_id}: ${outbox.capped} event(s) beyond the live relay's cap (${liveEventsMax}) travel with the result only`);
      // F14: handed back (second signal): nothing is pushed; another worker runs the job.
      if (controller.signal.aborted) throw new HandBack();
      const head = (await worktreeGit.headCommit()).trim();
      // Pushed already when the agent reported (and nothing committed since): no second push.
      const pushedEarly = await earlyPush;
      if (head !== data.base_commit && head !== pushedEarly) {
        const seen = await seenAtStart;
        if (seen instanceof Error) throw new UnrecoverableError(`${dispatchCodes.remoteUnreachable}: cannot read ${data.branch} on the shared remote ${shownRemote}: ${seen.message}`);
        await pushHead(head, pushedEarly ?? seen);
      }
      done += 1;
      log(`job ${data.job_id}: ${run.outcome.status}${report ? ` (report ${String(report.status)})` : ''}`);
      return dispatchKey.sign('agent-result', data.job_id, { v: 1, job_id: data.job_id, worker: id, host: os.hostname(), outcome: { ...run.outcome, text: run.outcome.text.slice(0, jobLimits.resultText) }, ...(report ? { report } : {}), ...(head !== data.base_commit ? { head } : {}), events, ...(job.processedOn ? { fetched_at: job.processedOn } : {}), started_at: startedAtMs, ready_at: readyAtMs, ...(reportedAt ? { reported_at: reportedAt } : {}), ...(pushedAt ? { pushed_at: pushedAt } : {}), agent_end_at: agentEndAt, loop_delay_ms: lateBy(), steps, finished_at: Date.now(), run: runId, ...(runNo !== undefined ? { run_no: runNo } : {}), ...(data.sig ? { job_sig: data.sig } : {}), queue: job.queueName } satisfies AgentJobReturn);
    } catch (error) {
      // A20-16, A21-08: a disk error in the job's setup or later (the agent's writes, a commit, the push's local refs).
      // Any failure of the setup is looked at (a probe write), a later one when it names a disk error.
      const words = error instanceof DiskTrouble ? error.message : error instanceof HandBack ? undefined : localDiskTrouble(error);
      if (words !== undefined || (!added && !(error instanceof HandBack))) await onDiskTrouble(job, token, data, words, added ? 'run' : 'setup', worktree, !added || error instanceof DiskTrouble);
      // A25-09: a setup that failed on a broken clone: made again, the job handed back (not failed fatal here).
      if (!added && !(error instanceof HandBack) && givenUp === undefined) await onBrokenClone(job, token, data);
      if (givenUp !== undefined && (error instanceof HandBack || controller.signal.aborted)) {
        log(`job ${data.job_id}: stopped, ${givenUp} (nothing pushed; not handed back)`);
        throw new UnrecoverableError(`${dispatchCodes.givenUp}: worker ${id} on ${os.hostname()} stopped job ${data.job_id}: ${givenUp}; nothing pushed`);
      }
      if (error instanceof HandBack) {
        if (controller.signal.aborted) {
          log(`job ${data.job_id}: handed back (nothing pushed)`);
          return handBack(job, token, 0);
        }
        return handBack(job, token, 1000);
      }
      log(`job ${data.job_id}: failed (${firstLine(error)})`);
      throw error;
    } finally {
      clearTimeout(boundTimer);
      clearInterval(givenUpWatch);
      unpinSettings?.();
      if (added) discardWorktree(worktree);
      relay?.stop();
      // (off the result's path; a later run of the same job here waits for it before seeding)
      if (journalDir !== undefined) {
        const gone = rm(journalDir, { recursive: true, force: true }).catch(() => undefined);
        journalCleanups.set(journalDir, gone);
        const finished = journalDir;
        void gone.then(() => journalCleanups.get(finished) === gone && journalCleanups.delete(finished));
      }
      // (synchronous: an `await` here would leave a rejected hand-back promise unhandled for a tick, which ends the process)
      if (scriptWritten) {
        try {
          rmSync(scriptFile, { force: true });
        } catch {
          // left for the next start's sweep of scripts/
        }
      }
      // A22-21: its setup log (beside the journals, hidden from every job's sandbox) goes with the job.
      void rm(path.join(dir, 'setup-logs', `${path.basename(worktree)}.log`), { force: true }).catch(() => undefined);
      runningWorktrees.delete(worktree);
      release(data.job_id, controller);
    }
  };
  const tracked = (job: Job, token?: string): Promise<AgentJobReturn | GateJobReturn> => {
    const promise = processJob(job, token);
    const settled = promise.catch(() => undefined);
    inflight.add(settled);
    void settled.then(() => inflight.delete(settled));
    return promise;
  };

  /** `parent/name`, refused (DISPATCH_INVALID_JOB) unless it is a direct child of `parent`. */
  function inside(parent: string, name: string): string {
    const target = path.resolve(parent, name);
    if (path.dirname(target) !== path.resolve(parent) || name.includes('/') || name.includes('\\')) {
      throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job path ${JSON.stringify(name.slice(0, 120))} is not inside ${parent}` });
    }
    return target;
  }

  /** Worktrees of the clone that have `branch` checked out. */
  async function branchHolders(branch: string): Promise<string[]> {
    const listed = await cloneGit.run(['worktree', 'list', '--porcelain']).catch(() => ({ stdout: '' }));
    const holders: string[] = [];
    for (const block of listed.stdout.split('\n\n')) {
      const lines = block.split('\n');
      const where = lines.find((line) => line.startsWith('worktree '))?.slice('worktree '.length);
      if (where && lines.includes(`branch refs/heads/${branch}`) && path.dirname(path.resolve(where)) === path.join(dir, 'work')) holders.push(path.resolve(where));
    }
    return holders;
  }

  /** Inside the clone's turn: `worktree` (a job's earlier copy, left by a killed worker) is gone, and so is the clone's record of deleted ones. */
  async function removeWorktree(worktree?: string): Promise<void> {
    if (worktree !== undefined && existsSync(worktree)) {
      // This worker's own disposable copy: what mattered was pushed (or the job failed).
      await rm(worktree, { recursive: true, force: true });
      pruneNeeded = true;
    }
    if (pruneNeeded) {
      pruneNeeded = false;
      await cloneGit.run(['worktree', 'prune']).catch(() => undefined);
    }
  }

  // The checks every job's start runs first, once on a made-up job before the first real one: the schema's compiled
  // parser and the hashing are built on first use (~5 ms idle, ~50 ms on a loaded machine, measured as the gap between
  // BullMQ's hand-over and the first job's start on each worker in bench:dispatch).
  warmJobChecks();
  const queueNames = subsets.map((subset) => queueNameFor(subset, key, queue));
  for (const name of queueNames) {
    workers.push(
      new Worker(name, tracked, {
        connection,
        concurrency: options.concurrency,
        lockDuration: lockDurationMs,
        stalledInterval: options.stalledIntervalMs ?? 15_000,
        maxStalledCount: 3,
        // After a Redis outage, take jobs again within a second of its return (BullMQ waits 15 s by default).
        runRetryDelay: 1000,
      }),
    );
  }
  for (const worker of workers) {
    worker.on('error', (error) => errors.error(error, client.status === 'ready'));
    // BullMQ handed the job over (its moveToActive answered); the processor may start later.
    worker.on('active', (job) => {
      if (activeAt.size < 1000) activeAt.set(String(job.id), Date.now());
    });
  }
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  await beat();
  // (and the directory stays in the registry of worker directories every sandbox hides: A18-18)
  const timer = setInterval(() => {
    void beat();
    keepWorkerDirRegistered(dir);
  }, heartbeatMs);
  log(`worker ${id} ready: remote ${shownRemote} (key ${key})${queue ? `, queue ${queue}` : ''}, labels [${labels.join(', ')}], concurrency ${options.concurrency}, queues ${queueNames.join(', ')}${options.modelAllow?.length ? `, models also allowed: ${options.modelAllow.join(' ')}` : ''}`);

  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  let closing: Promise<void> | undefined;
  let forced: Promise<void> | undefined;
  // X24-12: what waits on Redis (BullMQ's close, the worker record) never ends while it is gone — bounded when forced.
  const bounded = (work: Promise<unknown>, ms: number): Promise<unknown> => Promise.race([work.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);
  const abortAll = (why: string) => {
    for (const controller of aborts) controller.abort(new Error(why));
  };
  const redisGoneStopMs = options.redisGoneStopMs ?? 10_000;
  /**
   * Outside round A22-35: resolves once Redis has not answered for `ms` on end (the worker's own connection not ready,
   * looked at every 250 ms) — a graceful stop (which waits on BullMQ, whose close needs Redis) then stops without it.
   */
  const redisGoneFor = (ms: number): { gone: Promise<void>; stop: () => void } => {
    let downSince: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    // Outside round A24-06: a hung Redis (SIGSTOPped, a partition that drops packets) keeps the connection "ready" while
    // nothing answers — judged by a bounded probe too (a write, as the orchestrator's A18-15: a Redis pausing writes
    // still answers PING): one unanswered for over a second counts as Redis not answering since it was sent.
    let probeSince: number | undefined;
    const probeKey = `polywave:probe:worker:${id}:${process.pid}`;
    const probe = () => {
      if (probeSince !== undefined || client.status !== 'ready') return;
      const sent = Date.now();
      probeSince = sent;
      const answered = () => {
        if (probeSince === sent) probeSince = undefined;
      };
      client.set(probeKey, String(sent), 'PX', 10_000).then(answered, answered);
    };
    const gone = new Promise<void>((resolve) => {
      timer = setInterval(() => {
        probe();
        const silentSince = probeSince !== undefined && Date.now() - probeSince > 1000 ? probeSince : undefined;
        if (client.status === 'ready' && silentSince === undefined) downSince = undefined;
        else if ((downSince ??= silentSince ?? Date.now()) + ms <= Date.now()) resolve();
      }, 250);
    });
    return { gone, stop: () => clearInterval(timer) };
  };
  const finish = async (force: boolean): Promise<void> => {
    // Forced: the aborted jobs move themselves back to the queue while the connection is still open.
    if (force) await bounded(Promise.all(inflight), 10_000);
    if (force) await bounded(Promise.all(workers.map((worker) => worker.close(true))), 5_000);
    else {
      // A22-35: with Redis gone neither BullMQ's close nor a job's result can finish; hand the running jobs back (their
      // locks lapse and they stall over to another worker, nothing pushed) and stop, bounded, as a second signal does.
      const watch = redisGoneFor(redisGoneStopMs);
      const first = await Promise.race([Promise.all(workers.map((worker) => worker.close(false))).then(() => 'closed' as const), watch.gone.then(() => 'gone' as const)]);
      watch.stop();
      if (first === 'gone') {
        log(`Redis has not answered for ${Math.round(redisGoneStopMs / 1000)} s: stopping without it${aborts.size > 0 ? ` — the running job(s) handed back (nothing pushed; their locks lapse and they stall over to another worker)` : ''}`);
        abortAll('handed back: the worker stops while Redis does not answer');
        return (forced ??= finish(true));
      }
    }
    await (force ? bounded(Promise.all(cleanups.values()), 5_000) : Promise.all(cleanups.values()));
    await (force ? bounded(withClone(() => removeWorktree()), 5_000) : withClone(() => removeWorktree()).catch(() => undefined));
    clearInterval(timer);
    loopDelay.disable();
    await bounded(removeWorkerRecord(client, id, { pid: process.pid, started_at: startedAt }), force ? 2_000 : 10_000);
    releaseWorkerDir(dir);
    client.disconnect();
    if (force) for (const worker of workers) void worker.disconnect().catch(() => undefined);
    resolveClosed();
  };
  return {
    id,
    closed,
    close: (force = false) => {
      stopping = true;
      // F14: the running agents stop now; their jobs go back to the queue unpushed (another worker runs them).
      if (force) abortAll('handed back by a second signal');
      // A second signal while the graceful stop waits (on Redis, perhaps gone: X24-12) stops it, bounded, instead of joining it.
      if (force) return (forced ??= finish(true));
      return (closing ??= finish(false));
    },
  };
}

/** Runs the job checks of a start on a made-up job (its result is dropped): see its call. */
function warmJobChecks(): void {
  const base = '0'.repeat(40);
  const data: AgentJobData = { v: jobFormat, polywave: polywaveVersion(), job_id: '', slug: 'warm-up', wave: 1, agent: 'A', attempt: 1, role: 'wave', model: 'script:', script_text: 'version: 1\n', system_prompt: '', prompt: '', base_commit: base, branch: 'polywave/warm-up/wave1-agent-A', base_ref: 'refs/polywave/base/warm-up/wave1', owned_files: ['a'], frozen_paths: [], limits: {}, labels: [], remote: 'file:///warm-up', enqueued_at: 0 };
  try {
    data.job_id = expectedJobId(data);
    agentJobDataSchema.safeParse(data);
    assertJobBranch(data);
    assertJobBaseRef(data);
    assertJobIdentity(data, data.job_id);
  } catch {
    // a made-up job: only the work matters
  }
}

/** INCR of a job's run counter (kept {@link runCounterTtlSeconds}), or undefined when Redis does not answer within 5 s. */
/**
 * Outside round A25-09: why the worker's bare clone is unusable — git does not take it for a repository (its HEAD or
 * config overwritten), or its first ref names no commit it holds (its objects lost) — else undefined.
 */
async function cloneTrouble(cloneGit: ReturnType<typeof createGit>): Promise<string | undefined> {
  try {
    const refs = await cloneGit.run(['for-each-ref', '--count=1', '--format=%(objectname)'], { allowExitCodes: [0, 1, 128] });
    if (refs.exitCode !== 0) return firstLine(new Error(refs.stderr.trim() || `git for-each-ref exited ${refs.exitCode}`));
    const first = refs.stdout.trim();
    if (first === '') return 'it holds no ref';
    const commit = await cloneGit.run(['cat-file', '-e', `${first}^{commit}`], { allowExitCodes: [0, 1, 128] });
    if (commit.exitCode !== 0) return `its ref names ${first.slice(0, 12)}, which it does not hold${commit.stderr.trim() ? ` (${firstLine(new Error(commit.stderr.trim()))})` : ''}`;
    return undefined;
  } catch (error) {
    return firstLine(error);
  }
}

async function numberThisRun(client: Redis, key: string): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const answer = client
    .multi()
    .incr(key)
    .expire(key, runCounterTtlSeconds)
    .exec()
    .then((replies) => {
      const value = Number(replies?.[0]?.[1]);
      return Number.isSafeInteger(value) && value > 0 ? value : undefined;
    }, () => undefined);
  return Promise.race([answer, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 5000)))]).finally(() => clearTimeout(timer));
}

/** In `<dir>/repo.git`: the start's clone completed there (A19-16: one without it, and without a ref, is a half-made clone). */
const cloneCompleteMark = 'polywave-clone-complete';

/** The start's clone received nothing for the bound ({@link cloneWatched}). */
class CloneStalled extends Error {}

/** Bytes under `directory` (files only; what is there is what the clone received so far). */
async function bytesUnder(directory: string): Promise<number> {
  let total = 0;
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  await Promise.all(entries.filter((entry) => entry.isFile()).map(async (entry) => {
    total += (await stat(path.join(entry.parentPath ?? entry.path, entry.name)).catch(() => ({ size: 0 }))).size;
  }));
  return total;
}

/**
 * `git clone` into `target`, given up when nothing arrives for `stallMs` (A18-11): the size of what it has written is
 * looked at every second (any transport — ssh, https, file — grows the pack it receives); a clone that makes progress
 * runs as long as it needs.
 */
async function cloneWatched(git: ReturnType<typeof createGit>, args: string[], target: string, stallMs: number): Promise<void> {
  const controller = new AbortController();
  let size = -1;
  let changedAt = Date.now();
  const timer = setInterval(() => {
    void bytesUnder(target).then((now) => {
      if (now !== size) {
        size = now;
        changedAt = Date.now();
      } else if (Date.now() - changedAt >= stallMs && !controller.signal.aborted) controller.abort();
    });
  }, Math.max(100, Math.min(1000, Math.floor(stallMs / 4))));
  try {
    await git.run(args, { env: { GIT_TERMINAL_PROMPT: '0' }, signal: controller.signal });
  } catch (error) {
    if (controller.signal.aborted) throw new CloneStalled(`nothing received for ${stallMs % 1000 === 0 ? `${stallMs / 1000} s` : `${stallMs} ms`} (the remote answered, then went silent); nothing was started`);
    throw error;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Outside round A21-22: a template named `claude` or `codex` in the job's repository replaced the built-in `cli:claude`
 * (which needs no `--model-allow`) and ran with the worker's environment — its output, the worker's model keys, came
 * back as the job result. On a worker the project's template of a built-in name is used only when the operator allowed
 * it (`--model-allow cli:claude`); otherwise the built-in runs. (Any other `cli:<name>` already needs `--model-allow`.)
 */
export function workerCliTemplates(templates: Readonly<Record<string, AgentCliTemplate>>, allow: readonly string[]): Record<string, AgentCliTemplate> {
  return Object.fromEntries(Object.entries(templates).filter(([name]) => !['claude', 'codex'].includes(name) || workerAllows(allow, `cli:${name}`)));
}
