import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { Job, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import type { AgentEvent, AgentFailureKind, AgentOutcome, ModelSpec } from '../agents/contract.js';
import { defaultAgentLimits, emptyUsage } from '../agents/contract.js';
import { createJail } from '../agents/jail/jail.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { createBranchFetcher } from './branch-fetch.js';
import { createLiveEventInbox } from './live-events.js';
import { unpackCommits } from './commit-pack.js';
import { dispatchCodes } from './codes.js';
import { keepJobJournal } from './dispatched-journal.js';
import { jobWorktreeSetup } from '../engine/prepare/worktree-setup.js';
import type { GateRunResult } from '../gates/types.js';
import { inProcessDispatcher, type AgentJob, type AgentJobResult, type Dispatcher, type DispatchRecord, type GateJob, type GateJobResult } from './dispatcher.js';
import { agentJobDataSchema, agentJobId, checkQueueName, expectedGateJobId, jobLimits, expectedJobId, givenUpKey, givenUpTtlSeconds, jobContentDigest, queueNameFor, remoteKey, runCounterKey, worktreeToken, type AgentJobData, type AgentJobReturn, type GateJobData, type GateJobReturn } from './job.js';
import { loadDispatchKey, type DispatchKey } from './auth.js';
import { claimAwaiter, explainOldWorker, holdJobClaim, jobFormat, polywaveVersion } from './job-claim.js';
import { assertRedisReachable, bullConnectionFromUrl, isRedisFull, redactRedisUrl, redactUserinfo, redisOptionsFromUrl, redisRefusedWrite, remoteWithoutUserinfo } from './redis-url.js';
import { listWorkers, servesLabels, type WorkerRecord } from './registry.js';

/** Options of {@link createRedisDispatcher}. */
export interface RedisDispatcherOptions {
  /** `redis://host:port` */
  url: string;
  /** The dispatch key (A21-43); default: loaded from `env` (POLYWAVE_DISPATCH_KEY, POLYWAVE_DISPATCH_KEY_FILE). */
  key?: DispatchKey;
  /** The shared git remote every worker clones (any git URL); the orchestrator pushes bases and fetches agent branches there. */
  remote: string;
  /** A named queue (`--dispatch-queue`, `dispatch.queue`): only workers started with the same `--queue` take this run's jobs. */
  queue?: string;
  /** Labels per agent: key `<agent id>` or `<slug>/<agent id>` (polywave.config.json `dispatch.labels`). */
  labels?: Readonly<Record<string, readonly string[]>>;
  /** How long a job waits for a live worker with its labels before it fails with DISPATCH_NO_WORKER (default 30 s). */
  labelWaitMs?: number;
  /** How long Redis may be unreachable mid-run before an attempt fails with DISPATCH_REDIS_LOST (default 60 s). */
  outageMs?: number;
  /** The orchestrator's environment (git runs with it; nothing of it is sent to workers). */
  env: Readonly<Record<string, string | undefined>>;
  /** Where git runs the start check of the remote: a relative remote path is resolved from here (default: the temp directory). */
  cwd?: string;
  /** How long `git ls-remote` of the start check may take (default 20 s). */
  remoteCheckMs?: number;
  /** How long finished jobs stay in Redis (their result answers a re-enqueue of the same id: E9). Default 24 h. */
  keepFinishedSeconds?: number;
  /** How often a job being waited for is checked: still in Redis, a live worker for its labels, within its bound (ms). Default 2 s. */
  pollMs?: number;
  /** Beyond the agent's own time limit, how long a running job may take before it fails as a timeout (lock lapse, stalls, push). Default 120 s. */
  runMarginMs?: number;
  /** How long this orchestrator's claim on a job it awaits lives without a refresh (ms; default 6000): a re-run after a kill waits at most this long before it adopts the killed run's job. */
  awaitingTtlMs?: number;
  /** Where finalize-wave runs the E21 pre-merge gates of dispatched agents: `local` (default) or `workers` (gate jobs). */
  gates?: 'local' | 'workers';
}

/** The ref that carries a wave's base commit on the shared remote (the only non-agent ref the orchestrator pushes). */
export function baseRefName(slug: string, wave: number): string {
  return `refs/polywave/base/${slug}/wave${wave}`;
}

function failedOutcome(kind: AgentFailureKind, code: string, message: string): AgentOutcome {
  return { status: 'failed', failure: { kind, message: `${code}: ${message}` }, text: '', turns: 0, usage: emptyUsage(), durationMs: 0, denials: [] };
}

/**
 * Attack F11: the shared remote answers `git ls-remote` within `timeoutMs` (no credential prompt),
 * or DISPATCH_REMOTE_UNREACHABLE (exit 2) — checked before prepare-wave, so nothing is changed.
 */
export async function assertRemoteReachable(remote: string, options: { cwd: string; env: Readonly<Record<string, string | undefined>>; timeoutMs?: number }): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  try {
    await createGit(options.cwd, { env: options.env }).run(['ls-remote', '--quiet', remote, 'HEAD'], { env: { GIT_TERMINAL_PROMPT: '0' }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const timedOut = error instanceof Error && /abort|killed by SIGTERM/i.test(`${error.name} ${error.message}`);
    const stderr = typeof (error as { stderr?: unknown }).stderr === 'string' ? (error as { stderr: string }).stderr : '';
    const reason = timedOut ? `no answer within ${timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} s` : `${timeoutMs} ms`}` : (stderr.split('\n').find((line) => line.trim() !== '') ?? (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? 'failed');
    throw new PolywaveError({ code: dispatchCodes.remoteUnreachable, message: redactUserinfo(`the shared remote ${remote} is unreachable (git ls-remote: ${reason.trim()}); nothing was started`) });
  }
}

/** E19 kind of a job a worker failed with `reason` (`CODE: message`). */
export function kindOfFailure(reason: string): AgentFailureKind {
  if (reason.startsWith(dispatchCodes.versionSkew) || reason.startsWith(dispatchCodes.remoteUnreachable) || reason.startsWith(dispatchCodes.remoteNoForce) || reason.startsWith(dispatchCodes.noWorker) || reason.startsWith(dispatchCodes.jobTooLarge) || reason.startsWith(dispatchCodes.redisFull)) return 'config';
  // A23-52: by the leading code, or BullMQ's own stall/lock errors as they begin — never a word inside the text (`/stalled|lock/i`
  // made a setup failing on `yarn.lock` transient, three runs on three workers, and any failure of a slug like `clock`).
  if (reason.startsWith(dispatchCodes.redisLost) || reason.startsWith(dispatchCodes.baseMissing) || reason.startsWith(dispatchCodes.branchMoved) || reason.startsWith(dispatchCodes.lockLost) || /^(job stalled more than allowable limit|Missing lock for job |Lock mismatch for job |could not renew lock for job )/.test(reason)) return 'transient';
  return 'fatal';
}

class OutageError extends Error {}
class AbortedError extends Error {}
/**
 * `job.waitUntilFinished(events)`, except when the job's key vanished from Redis before BullMQ's first
 * look (a non-persistent Redis restarted, a hostile DEL): BullMQ then rejects with "Missing key for job …"
 * — not the job's failure. That case never settles here: the job watch adds the job again (F4) and
 * resolves with its result.
 */
function finishedOrVanished(job: Job<AgentJobData, AgentJobReturn>, events: QueueEvents): Promise<unknown> {
  return job.waitUntilFinished(events).catch((error: unknown) => {
    if (error instanceof Error && /^Missing key for job /.test(error.message)) return new Promise<never>(() => undefined);
    throw error;
  });
}

/** The job failed on its worker (its reason, as waitUntilFinished rejects with it). */
class FailedJobError extends Error {}
/** The job being waited for went wrong in a way BullMQ does not report (attack F4): fail the attempt with this outcome. */
class WatchError extends Error {
  constructor(readonly outcome: AgentOutcome) {
    super(outcome.failure?.message ?? 'job watch');
  }
}

/**
 * The BullMQ dispatcher (issue 17): each agent attempt becomes one job with a deterministic id on
 * the queue of its label set; a `polywave worker` runs it from the shared remote and pushes only the
 * agent branch; here the branch is fetched into the local worktree and the report written with the
 * locked writer, so run-wave's E42, E19 and finalize run exactly as for a local agent.
 * Throws DISPATCH_REDIS_UNREACHABLE (exit 2) when Redis does not answer now.
 */
export async function createRedisDispatcher(options: RedisDispatcherOptions): Promise<Dispatcher> {
  if (!options.remote) throw new PolywaveError({ code: dispatchCodes.noRemote, message: 'the Redis dispatcher needs the shared git remote workers clone (--dispatch-remote <git-url> or dispatch.remote in polywave.config.json)' });
  const queueName = options.queue === undefined || options.queue === '' ? undefined : checkQueueName(options.queue, '--dispatch-queue');
  // A21-43: jobs are signed, progress and results verified, with the key shared with the workers (never in Redis).
  const key: DispatchKey = options.key ?? loadDispatchKey({ env: options.env, who: 'the orchestrator' });
  await assertRemoteReachable(options.remote, { cwd: options.cwd ?? '/', env: options.env, ...(options.remoteCheckMs !== undefined ? { timeoutMs: options.remoteCheckMs } : {}) });
  await assertRedisReachable(options.url, undefined, { keepsKeys: true });
  const connection = bullConnectionFromUrl(options.url);
  const client = new Redis(redisOptionsFromUrl(options.url));
  client.on('error', () => undefined);
  const queues = new Map<string, { queue: Queue; events?: QueueEvents; ready: Promise<QueueEvents> }>();
  const stalls = new Map<string, number>();
  /** How long an orchestrator's claim on a job it awaits lives without a refresh (ms; refreshed every third of it). */
  const awaitingTtlMs = options.awaitingTtlMs ?? 6000;
  /** A job of an agent that finished within this (ms) counts as in flight for a re-run (its result may be uncollected). */
  const recentlyFinishedMs = 10 * 60_000;
  /** A delayed job (handed back by a worker, due again soon) is adopted only when due within this (ms). */
  const adoptDelayedMs = 120_000;
  /** The agent jobs this process added (an in-flight job of an agent that is not among them was left by another orchestrator). */
  const addedHere = new Set<string>();
  /** The agent's job ids in flight now (queued, delayed or running) on `queue`: same slug, wave and base, any attempt; undefined when Redis does not answer within 3 s. */
  const inFlightIds = async (queue: Queue, context: { slug: string; wave: number; agentId: string; baseCommit: string }, boundMs = 3000, collectedHead?: string): Promise<string[] | undefined> => {
    const prefix = `${agentJobId({ ...context, attempt: 1 }).replace(/\.a1$/, '')}.a`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const listing = Promise.all([queue.getRanges(['active', 'wait', 'delayed', 'prioritized'], 0, -1), queue.getRanges(['completed'], 0, -1)]);
    const lists = await Promise.race([listing, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), boundMs)))]).finally(() => clearTimeout(timer));
    if (!lists) return undefined;
    const [running, completed] = lists.map((ids) => ids.filter((id): id is string => typeof id === 'string' && id.startsWith(prefix)));
    // A job of the agent that finished a moment ago — while its orchestrator was dead, or while a re-run waited for the
    // dead one's claim to lapse — holds a result nobody collected (commits made after the early report): it counts.
    const recent = await Promise.all(
      completed!.map(async (id) => {
        const finished = await Job.fromId<AgentJobData, AgentJobReturn>(queue, id).catch(() => undefined);
        // (not one whose commits the local worktree holds already: its result was collected)
        return finished && succeeded(finished.returnvalue, id) && (finished.finishedOn ?? 0) >= Date.now() - recentlyFinishedMs && (collectedHead === undefined || finished.returnvalue.head !== collectedHead) ? id : undefined;
      }),
    );
    return [...running!, ...recent.filter((id): id is string => id !== undefined)];
  };
  /**
   * A18-09/A18-17: the latest in-flight job of the agent, other than `jobId`, that this process did not add (with its
   * data), if any — a run of THIS request but for its prompt (a killed run's fix context is not rebuilt): the same model,
   * script, system prompt, files, branch, remote and limits, an attempt no later than `mine`'s (A19-01: a job put there
   * with other content, or a later attempt on a first run, is never adopted), and not one held back for long (A19-08: a
   * job delayed for a day was awaited for ever).
   */
  const orphanJobOf = async (queue: Queue, context: { slug: string; wave: number; agentId: string; baseCommit: string }, jobId: string, mine: AgentJobData): Promise<{ id: string; data: AgentJobData } | undefined> => {
    const ids = ((await inFlightIds(queue, context)) ?? []).filter((id) => id !== jobId && !addedHere.has(id));
    const attemptOf = (id: string) => Number(/\.a(\d+)\.[^.]*$/.exec(id)?.[1] ?? 0);
    const sameRequest = (data: AgentJobData): boolean => {
      const { prompt: _prompt, attempt: _attempt, job_id: _id, enqueued_at: _at, ...rest } = data;
      const { prompt: _myPrompt, attempt: _myAttempt, job_id: _myId, enqueued_at: _myAt, ...myRest } = mine;
      return jobContentDigest({ ...rest, prompt: '', attempt: 1, job_id: '', enqueued_at: 0 } as AgentJobData) === jobContentDigest({ ...myRest, prompt: '', attempt: 1, job_id: '', enqueued_at: 0 } as AgentJobData);
    };
    for (const id of ids.filter((candidate) => attemptOf(candidate) <= mine.attempt).sort((a, b) => attemptOf(b) - attemptOf(a))) {
      const job = await Job.fromId<AgentJobData, AgentJobReturn>(queue, id);
      const data = job?.data;
      if (!job || !data || !key.verify('agent-job', id, data) || !agentJobDataSchema.safeParse(data).success || expectedJobId(data) !== id || data.attempt > mine.attempt || !sameRequest(data)) continue;
      if ((await job.getState()) === 'delayed' && job.timestamp + (job.delay ?? 0) - Date.now() > adoptDelayedMs) continue;
      return { id, data };
    }
    return undefined;
  };
  /**
   * A19-09: the in-flight jobs of the agent (not `jobId`, not added here) that were not adopted for this attempt — a killed
   * run's job with another request (another `--model`, script, …) — with the model each runs and what differs (at most 5).
   */
  const notAdoptedOf = async (queue: Queue, context: { slug: string; wave: number; agentId: string; baseCommit: string }, jobId: string, mine: AgentJobData): Promise<Array<{ job_id: string; model: string; differs: string[] }>> => {
    const ids = ((await inFlightIds(queue, context)) ?? []).filter((id) => id !== jobId && !addedHere.has(id)).slice(0, 5);
    const fields: Array<[keyof AgentJobData, string]> = [['model', 'model'], ['script_text', 'script'], ['system_prompt', 'system prompt'], ['role', 'role'], ['owned_files', 'files'], ['frozen_paths', 'frozen paths'], ['limits', 'limits'], ['labels', 'labels'], ['attempt', 'attempt']];
    const found = await Promise.all(
      ids.map(async (id) => {
        const data = (await Job.fromId<AgentJobData, AgentJobReturn>(queue, id).catch(() => undefined))?.data;
        if (!data || typeof data !== 'object') return undefined;
        const differs = fields.filter(([key]) => JSON.stringify(data[key] ?? null) !== JSON.stringify(mine[key] ?? null)).map(([, name]) => name);
        return { job_id: id.slice(0, 200), model: String(data.model ?? '').slice(0, 200), differs };
      }),
    );
    return found.filter((entry): entry is { job_id: string; model: string; differs: string[] } => entry !== undefined);
  };
  /**
   * Which orchestrator awaits a job: `polywave:awaiting:<job id>` names it (host, pid, a token of this process) while it
   * does, refreshed as it waits and gone soon after it died. A job another live orchestrator awaits is not adopted
   * (A19-13: a second orchestrator on the same IMPL took the first's running jobs as its own).
   */
  const awaitingKey = (id: string) => `polywave:awaiting:${id}`;
  const awaiter = `${os.hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
  // (issue 17, replayed jobs: the claim is signed and names the enqueues awaited — a worker runs a job only while one is live; job-claim.ts)
  const claimAwaiting = (id: string, sigs: Array<string | undefined> = [], queue?: string) => holdJobClaim(client, key, id, awaiter, awaitingTtlMs, sigs, queue);
  /** The other orchestrator that awaits job `id`, once that claim has not lapsed within `waitMs` (a killed one's lapses), else undefined. */
  const otherAwaiter = async (id: string, waitMs: number): Promise<string | undefined> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const holder = claimAwaiter(await client.get(awaitingKey(id)).catch(() => null));
      if (holder === undefined || holder === awaiter) return undefined;
      if (Date.now() >= deadline) return holder.split(':').slice(0, 2).join(' pid ');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const labelWaitMs = options.labelWaitMs ?? 30_000;
  const outageMs = options.outageMs ?? 60_000;
  const keep = options.keepFinishedSeconds ?? 24 * 3600;
  const pollMs = options.pollMs ?? 2000;
  const runMarginMs = options.runMarginMs ?? 120_000;
  const pushedBases = new Map<string, Promise<void>>();
  // This process's event-loop lateness (p90 over ~5 s windows; the 10 ms resolution is on time): the
  // part of a result's arrival that is this process waiting for a CPU (dispatch record loop_delay_ms).
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  let lastLoopP90 = 0;
  const loopWindow = setInterval(() => {
    lastLoopP90 = Math.max(0, Math.round(loopDelay.percentile(90) / 1e6) - 10);
    loopDelay.reset();
  }, 5000);
  loopWindow.unref();
  const loopP90 = () => Math.max(lastLoopP90, Math.max(0, Math.round(loopDelay.percentile(90) / 1e6) - 10));
  // When each job's completion entered the queue's events stream (Redis's clock: the entry id), by job id.
  const completedInStream = new Map<string, number>();
  const gitOf = (directory: string): Git => createGit(directory, { env: options.env });

  const queueFor = (name: string) => {
    let entry = queues.get(name);
    if (!entry) {
      const queue = new Queue(name, { connection });
      queue.on('error', () => undefined);
      // One waiter per job in flight (a wave of 64 agents waits on 64 jobs at once).
      queue.setMaxListeners(0);
      let events: QueueEvents | undefined;
      const ready = (async () => {
        await queue.waitUntilReady();
        // The events stream is read from its last entry as it is NOW, before any job of this
        // dispatcher is added: a QueueEvents reads from "$" by default, i.e. from its first XREAD,
        // and a job finishing before that read was missed — only the next watch poll (2 s) found it.
        const last = await client.xrevrange(queue.toKey('events'), '+', '-', 'COUNT', 1);
        events = new QueueEvents(name, { connection, lastEventId: last[0]?.[0] ?? '0-0' });
        events.on('error', () => undefined);
        events.setMaxListeners(0);
        // E19: a stalled job (its worker died or hung past its lock) goes back to the queue for another worker.
        events.on('stalled', ({ jobId }) => stalls.set(jobId, (stalls.get(jobId) ?? 0) + 1));
        events.on('completed', ({ jobId }, id) => {
          const at = Number(String(id).split('-')[0]);
          if (Number.isFinite(at) && at > 0 && completedInStream.size < 10_000) completedInStream.set(jobId, at);
        });
        await events.waitUntilReady();
        return events;
      })();
      const created = { queue, ready, get events() { return events; } };
      // Not ready (Redis went away meanwhile): the next attempt starts this queue's connections anew.
      ready.catch(() => {
        if (queues.get(name) === created) queues.delete(name);
        void queue.close().catch(() => undefined);
        void events?.close().catch(() => undefined);
      });
      entry = created;
      queues.set(name, entry);
    }
    return entry;
  };

  // Once an outage outlasted the limit, later attempts fail at once while Redis is still down
  // (each would only wait the limit again); the first moment it answers clears it.
  let lostSince: number | undefined;
  // A17-16: a Redis that stops answering while its connection stays up (a stopped or hung server, packets dropped on
  // the way, an overloaded host) keeps the client `ready` for ever. While a watch runs, a probe (a short-lived key
  // written) goes out every {@link probeMs}; one unanswered since `probeSince` counts as the connection being down
  // from that moment.
  const probeMs = 500;
  const probeKey = `polywave:probe:${os.hostname()}:${process.pid}`;
  let probeSince: number | undefined;
  let probeTimer: NodeJS.Timeout | undefined;
  let watching = 0;
  const probe = () => {
    if (probeSince !== undefined || client.status !== 'ready') return;
    const sent = Date.now();
    probeSince = sent;
    // (a write, not a PING: a Redis whose writes are paused — `CLIENT PAUSE … WRITE`, a failover — still answers PING,
    // while every job's move waits: A18-15)
    client.set(probeKey, String(sent), 'PX', 10_000).then(
      () => {
        if (probeSince === sent) probeSince = undefined;
      },
      () => {
        if (probeSince === sent) probeSince = undefined;
      },
    );
  };
  const startProbing = () => {
    watching += 1;
    if (probeTimer === undefined) {
      probeTimer = setInterval(probe, probeMs);
      probeTimer.unref();
    }
  };
  const stopProbing = () => {
    watching -= 1;
    if (watching === 0 && probeTimer !== undefined) {
      clearInterval(probeTimer);
      probeTimer = undefined;
    }
  };
  /** Rejects with OutageError once the connection has been down — or its Redis silent — for longer than the outage limit. */
  const outageWatch = (): { promise: Promise<never>; stop: () => void } => {
    let downSince: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    startProbing();
    const promise = new Promise<never>((_, reject) => {
      const check = () => {
        // (a PING unanswered for a moment is a busy server; only one unanswered for over a second counts)
        const silentSince = probeSince !== undefined && Date.now() - probeSince > 1000 ? probeSince : undefined;
        if (client.status === 'ready' && silentSince === undefined) {
          downSince = undefined;
          lostSince = undefined;
        } else {
          downSince ??= silentSince ?? Date.now();
          if (lostSince !== undefined || Date.now() - downSince > outageMs) {
            lostSince ??= Date.now();
            reject(new OutageError(`Redis at ${redactRedisUrl(options.url)} ${silentSince !== undefined && client.status === 'ready' ? 'has not answered' : 'unreachable'} for more than ${Math.round(outageMs / 1000)} s`));
          }
        }
      };
      timer = setInterval(check, 100);
      check();
    });
    promise.catch(() => undefined);
    let stopped = false;
    return {
      promise,
      stop: () => {
        clearInterval(timer);
        if (!stopped) {
          stopped = true;
          stopProbing();
        }
      },
    };
  };
  const guarded = async <T>(work: Promise<T>, signal?: AbortSignal): Promise<T> => {
    const watch = outageWatch();
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new AbortedError(String(signal?.reason instanceof Error ? signal.reason.message : (signal?.reason ?? 'aborted'))));
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    aborted.catch(() => undefined);
    try {
      return await Promise.race([work, watch.promise, aborted]);
    } finally {
      watch.stop();
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  };

  // Attack F6: this remote's queues and workers only (jobs of another remote on the same Redis are never taken).
  const remoteKeyOf = remoteKey(options.remote);
  // (queueName: and this named queue's only — teams sharing one Redis and remote.)
  const labelsOf = (slug: string, agentId: string): string[] => [...(options.labels?.[`${slug}/${agentId}`] ?? options.labels?.[agentId] ?? [])];

  const waitForWorker = async (labels: string[]): Promise<boolean> => {
    const deadline = Date.now() + labelWaitMs;
    for (;;) {
      const workers = await listWorkers(client);
      if (workers.some((worker) => servesLabels(worker, labels, remoteKeyOf, queueName))) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  const pushBase = (repoRoot: string, slug: string, wave: number, base: string): Promise<void> => {
    const key = `${repoRoot}\0${slug}\0${wave}\0${base}`;
    let pending = pushedBases.get(key);
    if (!pending) {
      pending = gitOf(repoRoot)
        .run(['push', '--quiet', options.remote, `+${base}:${baseRefName(slug, wave)}`])
        .then(() => undefined);
      pushedBases.set(key, pending);
      pending.catch(() => pushedBases.delete(key));
    }
    return pending;
  };

  // Results that arrive together share one `git fetch` of their branches (branch-fetch.ts).
  const fetchBranch = createBranchFetcher(options.remote, gitOf);

  const scriptText = async (spec: ModelSpec, job: AgentJob): Promise<string | undefined> => {
    if (spec.backend !== 'script') return undefined;
    const file = spec.scriptPath ?? job.options.env.POLYWAVE_SCRIPT;
    if (!file) return undefined;
    const absolute = path.isAbsolute(file) ? file : path.resolve(job.options.env.POLYWAVE_REPO_ROOT ?? job.options.cwd, file);
    return readFile(absolute, 'utf8');
  };

  /** The orchestrator's paths in a prompt become the worker's worktree (longest first). */
  const portable = (text: string, job: AgentJob): string => {
    const { cwd, implPath } = job.options;
    let result = text;
    if (implPath) result = result.split(implPath).join(`${worktreeToken}/${path.relative(job.context.repoRoot, implPath).split(path.sep).join('/')}`);
    return result.split(cwd).join(worktreeToken);
  };

  // The registry as the job watches see it: one read per half poll, shared by every job in flight.
  let registryRead: { at: number; workers: Promise<WorkerRecord[]> } | undefined;
  const liveWorkers = (): Promise<WorkerRecord[]> => {
    if (!registryRead || Date.now() - registryRead.at > pollMs / 2) {
      const workers = listWorkers(client);
      registryRead = { at: Date.now(), workers };
      workers.catch(() => (registryRead = undefined));
    }
    return registryRead.workers;
  };

  /** A result worth reusing (E9): the agent finished and reported complete. */
  /** A complete result a worker signed (A21-43: one forged in Redis never counts). */
  const succeeded = (value: AgentJobReturn | null | undefined, jobId: string): value is AgentJobReturn => value?.outcome?.status === 'finished' && value.report?.status === 'complete' && key.verify('agent-result', jobId, value);

  const sameContent = (stored: unknown, digest: string): boolean => {
    try {
      return jobContentDigest(stored as AgentJobData) === digest;
    } catch {
      return false;
    }
  };

  /**
   * Attack F4: while a job is awaited, every `pollMs` — it still exists (gone: added again under
   * the same id, E9-safe, at most 3 times, then DISPATCH_REDIS_LOST); it finished (its result,
   * should the event have been missed); a live worker serves its labels (none for
   * `labelWaitMs`: DISPATCH_NO_WORKER and the job is removed); running longer than the agent's
   * limit + `runMarginMs` (on this process's clock, A19-20): a timeout (transient). Redis errors here are left to the outage watch.
   */
  /**
   * Outside round A21-23: the worker of the labels may not be gone — a worker whose `--dir` cannot be written leaves the
   * registry until a probe write works again — so the message does not only send the operator to start another one.
   */
  const pausedHint = `; a worker of them may also be paused, its --dir full or read-only (its log: "cannot be written …; taking no jobs until it can"): free its disk and it takes jobs again within 5 s`;
  const watchJob = (queue: Queue, jobId: string, add: () => Promise<unknown>, labels: string[], timeoutMs: number): { promise: Promise<AgentJobReturn>; stop: () => void } => {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let readded = 0;
    let servedAt = Date.now();
    /** The run of the job seen active now (its `processedOn` as stored, an identity only) and since when, on this process's clock. */
    let activeRun: { stamp: string; since: number } | undefined;
    const promise = new Promise<AgentJobReturn>((resolve, reject) => {
      const check = async (): Promise<void> => {
        // Its state only (the job's data — prompts, script — is read once it finished): a wave of 64
        // agents polls 32 jobs a second.
        const state = await queue.getJobState(jobId);
        if (stopped) return;
        if (state === 'unknown') {
          readded += 1;
          if (readded > 3) throw new WatchError(failedOutcome('transient', dispatchCodes.redisLost, `job ${jobId} keeps vanishing from Redis (added again ${readded - 1} times)`));
          await add();
          return;
        }
        if (state === 'completed' || state === 'failed') {
          const job = await Job.fromId<AgentJobData, AgentJobReturn>(queue, jobId);
          if (state === 'completed' && job?.returnvalue) return resolve(job.returnvalue);
          if (state === 'failed' && job) throw new FailedJobError(job.failedReason || `job ${jobId} failed`);
        }
        if ((await liveWorkers()).some((worker) => servesLabels(worker, labels, remoteKeyOf, queueName))) servedAt = Date.now();
        else if (Date.now() - servedAt > labelWaitMs) {
          await queue.remove(jobId).catch(() => undefined);
          throw new WatchError(failedOutcome('config', dispatchCodes.noWorker, `no live worker ${labels.length > 0 ? `has the label(s) ${labels.join(', ')}` : 'is connected'} any more (waited ${Math.round(labelWaitMs / 1000)} s); job ${jobId} was removed${pausedHint}`));
        }
        // A19-20: how long the job has run is measured on THIS process's clock, from the poll that first saw this run of
        // it active — never from BullMQ's `processedOn`, which is the worker's clock (a worker whose clock was behind by
        // more than the bound made every job it took "time out" at the first poll, and the agent ran again beside it).
        // `processedOn` only tells one run from the next (a job moved on after a stall starts its bound again).
        if (state !== 'active') activeRun = undefined;
        else {
          const stamp = String((await client.hget(queue.toKey(jobId), 'processedOn')) ?? '');
          if (stopped) return;
          if (activeRun === undefined || activeRun.stamp !== stamp) activeRun = { stamp, since: Date.now() };
        }
        if (activeRun !== undefined && Date.now() - activeRun.since > timeoutMs + runMarginMs) {
          const seconds = Math.round((timeoutMs + runMarginMs) / 1000);
          // A22-24: the run given up on here stops on its worker (which fails it, DISPATCH_GIVEN_UP, never handing it back
          // to the queue): it held that worker — up to a setup's 24 h — while the relaunch waited for one.
          await client.set(givenUpKey(queue.name, jobId), '1', 'EX', givenUpTtlSeconds).catch(() => undefined);
          throw new WatchError({ ...failedOutcome('transient', '', ''), status: 'timeout', failure: { kind: 'transient', message: `job ${jobId} ran for more than ${seconds} s on a worker (the agent's limit + ${Math.round(runMarginMs / 1000)} s) without a result` } });
        }
      };
      const tick = () => {
        if (stopped) return;
        check().then(
          () => {
            if (!stopped) timer = setTimeout(tick, pollMs);
          },
          (error: unknown) => {
            // Anything else (Redis trouble: the outage watch's business) is looked at again next time.
            if (error instanceof WatchError || error instanceof FailedJobError) reject(error);
            else if (!stopped) timer = setTimeout(tick, pollMs);
          },
        );
      };
      timer = setTimeout(tick, pollMs);
    });
    promise.catch(() => undefined);
    return {
      promise,
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
    };
  };

  const run = async (job: AgentJob): Promise<AgentJobResult> => {
    const { context, options: request } = job;
    const spec = typeof request.model === 'object' ? request.model : resolveModelSpec(request.model, request.env);
    const jail = await createJail(request.policy, { env: request.env });
    // Provisional (messages before the job exists); the real id carries the digest of the job's content.
    let jobId = agentJobId(context);
    const dispatch: DispatchRecord = { dispatcher: 'redis', job_id: jobId, stalls: 0 };
    const fail = (kind: AgentFailureKind, code: string, message: string): AgentJobResult => ({ outcome: failedOutcome(kind, code, message), spec, jail, dispatch });
    const labels = labelsOf(context.slug, context.agentId);
    const branch = context.branch!;
    let releaseAwaiting: (() => void) | undefined;

    try {
      if (!(await guarded(waitForWorker(labels)))) {
        return fail('config', dispatchCodes.noWorker, `no live worker of the shared remote ${redactUserinfo(options.remote)} (key ${remoteKeyOf}${queueName ? `, queue ${queueName}` : ''}) ${labels.length > 0 ? `has the label(s) ${labels.join(', ')}` : 'is connected'} (waited ${Math.round(labelWaitMs / 1000)} s); start one with: polywave worker --redis ${redactRedisUrl(options.url)} --remote ${redactUserinfo(options.remote)}${queueName ? ` --queue ${queueName}` : ''}${labels.map((label) => ` --label ${label}`).join('')}`);
      }
      try {
        await pushBase(context.repoRoot, context.slug, context.wave, context.baseCommit);
      } catch (error) {
        return fail('config', dispatchCodes.remoteUnreachable, redactUserinfo(`cannot push the wave's base to the shared remote ${options.remote}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`));
      }
      const text = await scriptText(spec, job);
      let data: AgentJobData = {
        v: jobFormat,
        polywave: polywaveVersion(),
        job_id: '',
        slug: context.slug,
        wave: context.wave,
        agent: context.agentId,
        attempt: context.attempt,
        role: request.role,
        model: spec.backend === 'script' ? 'script:' : spec.raw,
        ...(text !== undefined ? { script_text: text } : {}),
        system_prompt: portable(request.systemPrompt, job),
        prompt: portable(request.prompt, job),
        base_commit: context.baseCommit,
        branch,
        base_ref: baseRefName(context.slug, context.wave),
        owned_files: [...request.policy.ownedFiles],
        frozen_paths: [...(request.policy.frozenPaths ?? [])],
        ...(request.implPath ? { impl_path: path.relative(context.repoRoot, request.implPath).split(path.sep).join('/') } : {}),
        limits: { ...(request.limits?.timeoutMs ? { timeoutMs: request.limits.timeoutMs } : {}), ...(request.limits?.maxTurns ? { maxTurns: request.limits.maxTurns } : {}) },
        labels,
        // F8: never the remote's credentials (each worker uses its own --remote).
        remote: remoteWithoutUserinfo(options.remote),
        // A20-26: the worktree setup prepare-wave gave the local worktree, for the worker's job worktree.
        ...(await jobWorktreeSetup({ primaryRoot: context.primaryRoot ?? context.repoRoot, repoRoot: context.repoRoot, localWorktree: request.cwd, git: gitOf(context.repoRoot) }).then(
          (setup) => ({ worktree_setup: setup }),
          () => ({}),
        )),
        enqueued_at: 0,
      };
      // F5: the id names the content (prompts, model, script, files, remote): other input is another job.
      let digest = jobContentDigest(data);
      jobId = data.job_id = expectedJobId(data);
      dispatch.job_id = jobId;
      const { queue, ready } = queueFor(queueNameFor(labels, remoteKeyOf, queueName));
      const events = await guarded(ready);
      // A18-09/A18-17: a job of this agent (same IMPL, wave and base) still queued or running that this process did not
      // add — its orchestrator was killed — is this attempt's run: awaited, never a second run of the agent beside it
      // (a re-run rebuilds another prompt for it: the killed run's fix context is gone; `retry` numbers it anew).
      // A19-13: a job of this agent that another LIVE orchestrator awaits (the same IMPL run from another copy of the
      // repository, or a second run here) — whatever its content: refused, never a second run beside it. (A killed
      // orchestrator's claim lapses within its TTL: a re-run after a kill waits that long, then goes on.)
      const foreign = ((await guarded(inFlightIds(queue, context))) ?? []).filter((candidate) => !addedHere.has(candidate));
      for (const id of foreign) {
        const other = await guarded(otherAwaiter(id, awaitingTtlMs + 1000));
        if (other !== undefined) return fail('config', dispatchCodes.jobOwned, `job ${id} of agent ${context.agentId} is awaited by another orchestrator (${other}): two runs of wave ${context.wave} of ${context.slug} at once; nothing started`);
      }
      const orphan = await guarded(orphanJobOf(queue, context, jobId, data));
      if (orphan) {
        data = orphan.data;
        digest = jobContentDigest(data);
        jobId = orphan.id;
        dispatch.job_id = jobId;
        dispatch.adopted_attempt = data.attempt;
      } else if (foreign.length > 0) {
        // A19-09: a killed run's job of the agent with another request (`retry --model` another model) is not adopted —
        // this attempt runs its own job beside it; the record says so (run-wave warns), never naming one for the other.
        const left = await guarded(notAdoptedOf(queue, context, jobId, data));
        if (left.length > 0) dispatch.not_adopted = left;
      }
      const jobClaim = claimAwaiting(jobId, [orphan?.data.sig], queue.name);
      releaseAwaiting = jobClaim.release;
      // The report, written when the agent reports (as in-process), from the job's progress: the
      // worker publishes it there at once (it validated it with the writer's rules). Written one at a
      // time, in order; ignored once the job's result is here (a late copy from a lost run).
      let earlyChain: Promise<unknown> = Promise.resolve();
      let resultHere = false;
      // Likewise the agent's commits: the worker pushes them when the agent reports (progress
      // `pushed`), and they are fetched and fast-forwarded into the local worktree right away.
      let early: { key: string; run: string; ok: Promise<boolean> } | undefined;
      /**
       * E9/E19: a report written early that is not this attempt's result — a lost run's (A17-26, A18-04) — is withdrawn:
       * a `blocked` report at the base saying why, so `retry` relaunches the agent and finalize-wave never merges on it.
       */
      const withdrawReport = async (notes: string, failureType: 'transient' | 'escalate'): Promise<void> => {
        if (request.reportCompletion) await request.reportCompletion({ status: 'blocked', failure_type: failureType, commit: context.baseCommit, notes: `withdrawn by the orchestrator: ${notes}`, worktree: request.cwd, branch }).catch(() => undefined);
      };
      let earlyCommits: { head: string; applied: Promise<boolean>; fetchedAfterPush?: boolean } | undefined;
      // When the early path's steps happened here (the dispatch record's *_rel_ms, relative to the worker's finish).
      const earlyAt: { reportSeen?: number; packSeen?: number; pushedSeen?: number; fetched?: number; applied?: number; written?: number } = {};
      // The agent's events as its worker relays them (progress), then those the result alone carries: each once.
      const deliver = job.onWorkerEvent ?? ((event: AgentEvent) => request.onEvent?.(event));
      const inbox = createLiveEventInbox((event, meta) => deliver(event, meta));
      let placedRun: string | undefined;
      /**
       * Replays (issue 17): the signatures of the enqueues of this job id this attempt awaits — its own, and the one it
       * found stored (E9: an interrupted run's, adopted). A progress record or result of any other enqueue of the id (an
       * earlier job's, genuine and signed, put back into Redis) is not this attempt's.
       */
      const acceptedSigs = new Set<string>();
      let sigsKnown: () => void = () => undefined;
      const sigsReady = new Promise<void>((resolve) => (sigsKnown = resolve));
      /** The number (`run_no`) of the run placed here: 0 for a run without one (an older worker's, or a forged message). */
      let placedNo = 0;
      const supersededRuns = new Set<string>();
      /** The highest run number Redis had handed out for the job when last read. */
      let handedOut = 0;
      const counterNow = async (): Promise<number> => {
        let timer: NodeJS.Timeout | undefined;
        const read = client.get(runCounterKey(queue.name, jobId)).then((value) => Number(value) || 0, () => 0);
        return Promise.race([read, new Promise<number>((resolve) => (timer = setTimeout(() => resolve(0), 2000)))]).finally(() => clearTimeout(timer));
      };
      /**
       * Outside round A25-07: the Redis server's run id (INFO server: a new one each time it starts) when the run placed
       * here was placed — undefined when not known (INFO refused or unanswered within 2 s: a managed Redis).
       */
      let placedServer: string | undefined;
      const serverNow = async (): Promise<string | undefined> => {
        let timer: NodeJS.Timeout | undefined;
        const read = client.info('server').then((text) => /^run_id:([0-9a-f]{8,64})\s*$/m.exec(text)?.[1], () => undefined);
        return Promise.race([read, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 2000)))]).finally(() => clearTimeout(timer));
      };
      /**
       * A25-07: whether Redis restarted since the run placed here was placed — a Redis with persistence comes back with
       * its last snapshot: the job waiting again and its run counter as it was then (not yet INCR'd for the placed run),
       * so the honest run after the restart is numbered as the placed one was (or lower). Its numbers restart with that
       * snapshot: runs of the Redis before are not comparable with them.
       */
      const redisRestartedSincePlaced = async (): Promise<boolean> => {
        if (placedRun === undefined || placedServer === undefined) return false;
        const now = await serverNow();
        return now !== undefined && now !== placedServer;
      };
      /** How often this attempt added the job again (below): a progress record judged across one is judged again. */
      let addsAgain = 0;
      /**
       * Outside round A24-04: the orchestrator adds the job again — its key vanished (a Redis restarted empty, a DEL), a
       * failed run is retried, other content replaced. The run placed so far is over (its messages are ignored, its result
       * refused: that job is gone), and the runs to come are numbered anew — a Redis restarted empty hands out #1 again,
       * which the remembered run's number refused as a replay (`DISPATCH_REPLAYED`, the wave BLOCKED).
       */
      const addingAgain = (): void => {
        if (placedRun !== undefined && supersededRuns.size < 1000) supersededRuns.add(placedRun);
        placedRun = undefined;
        placedNo = 0;
        placedServer = undefined;
        handedOut = 0;
        addsAgain += 1;
      };
      // The job's progress messages are handled one at a time, in order (a new run's number is checked with Redis first).
      let progressChain: Promise<unknown> = Promise.resolve();
      const onProgress = ({ jobId: id, data: progress }: { jobId: string; data: unknown }) => {
        if (id !== jobId || resultHere || typeof progress !== 'object' || progress === null) return;
        // A21-43: a progress record its worker did not sign (forged in Redis) is ignored: no report, commit or event of it.
        if (!key.verify('progress', jobId, progress)) {
          dispatch.forged_progress = (dispatch.forged_progress ?? 0) + 1;
          return;
        }
        progressChain = progressChain.then(() => handleProgress(progress)).catch(() => undefined);
      };
      const handleProgress = async (progress: object): Promise<void> => {
        await Promise.race([sigsReady, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
        if (resultHere) return;
        const progressSig = (progress as { job_sig?: unknown }).job_sig;
        // (A24-15: and only a run of it from the queue it was enqueued on — a copy a Redis writer put on another queue,
        // its run counter raised at will, is not the job's)
        if (typeof progressSig !== 'string' || !acceptedSigs.has(progressSig) || (progress as { queue?: unknown }).queue !== queue.name) {
          dispatch.replayed_progress = (dispatch.replayed_progress ?? 0) + 1;
          return;
        }
        const { report, run: runId, run_no: runNumber, pushed, packed, pack, worker: runWorker, host: runHost, events: relayed } = progress as { report?: unknown; run?: unknown; run_no?: unknown; pushed?: unknown; packed?: unknown; pack?: unknown; worker?: unknown; host?: unknown; events?: unknown };
        // A17-20: a run the job was handed on from (its worker stalled, then came back: SIGSTOP, a long pause) is over —
        // what it still sends (events, reports, commits) is not the job's; "runs on" never flips back to it.
        // A19-05/A19-03: runs are ordered by their number, which Redis hands out (the job's run counter, INCR'd by the
        // worker that starts a run) — never by a start time the worker's clock chose (a worker whose clock was ahead kept
        // the job after a stall, and a forged `evil:9999999999999` silenced the real run). A run with no higher number
        // than the one placed is an earlier one (or a forgery), whichever of their messages came first; a number Redis
        // never handed out is ignored; a run without a number (an older worker) never takes the job from a numbered one.
        if (typeof runId === 'string' && runId !== placedRun) {
          if (supersededRuns.has(runId)) return;
          const number = typeof runNumber === 'number' && Number.isSafeInteger(runNumber) && runNumber > 0 ? runNumber : 0;
          if (placedRun !== undefined && number <= placedNo) {
            // A25-07: Redis restarted (from a snapshot) since the run was placed: the runs are numbered anew from the
            // snapshot's counter — the placed run is over (its job was rewound), as when the job is added again (A24-04).
            if (number === 0 || !(await redisRestartedSincePlaced())) return;
            addingAgain();
            return handleProgress(progress);
          }
          const epoch = addsAgain;
          if (number > handedOut) handedOut = Math.max(handedOut, await counterNow());
          if (number > handedOut || resultHere) return;
          // (the job was added again meanwhile: this run's record is judged anew, against the runs since)
          if (epoch !== addsAgain) return handleProgress(progress);
          if (typeof runWorker === 'string' && runWorker !== '') placedNo = number;
        }
        // Where it runs, before the result: the worker puts its id in the progress when it takes the job.
        if (typeof runId === 'string' && typeof runWorker === 'string' && runWorker !== '' && runId !== placedRun) {
          if (placedRun !== undefined && supersededRuns.size < 1000) supersededRuns.add(placedRun);
          placedRun = runId;
          placedServer = await serverNow();
          const worker = runWorker.slice(0, 128);
          dispatch.worker = worker;
          if (typeof runHost === 'string' && runHost !== '') dispatch.host = runHost.slice(0, 255);
          try {
            job.onPlaced?.({ job_id: jobId, worker, ...(dispatch.host ? { host: dispatch.host } : {}), at: Date.now() });
          } catch {
            // the listener's business
          }
        }
        if (typeof runId === 'string' && relayed !== undefined) inbox.fromProgress(runId.slice(0, 300), typeof runWorker === 'string' ? runWorker.slice(0, 128) : '', relayed);
        // The agent's commits before the result: from a pack in the progress (small commits: no fetch),
        // else fetched once the worker pushed them; then fast-forwarded. One after the other, in order.
        const bringEarly = (head: string, bring: () => Promise<boolean>, retry: boolean) => {
          const previous = earlyCommits?.applied ?? Promise.resolve(false);
          earlyCommits = {
            head,
            applied: previous.then(async (done) => {
              if (retry && done) return true;
              if (!(await bring())) return false;
              earlyAt.fetched = Date.now();
              const ok = (await gitOf(request.cwd).run(['-c', 'maintenance.auto=false', 'merge', '--ff-only', '--quiet', head], { allowExitCodes: [1, 128] })).exitCode === 0;
              earlyAt.applied = Date.now();
              return ok;
            }).catch(() => false),
          };
        };
        const isCommit = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(value) && value !== context.baseCommit;
        if (isCommit(packed) && typeof pack === 'string' && earlyCommits?.head !== packed) {
          earlyAt.packSeen = Date.now();
          bringEarly(packed, () => unpackCommits(context.repoRoot, options.env, pack), false);
        }
        if (isCommit(pushed)) {
          // (the same head from a pack: fetched only should the pack not have brought it)
          if (earlyCommits?.head !== pushed || !earlyCommits.fetchedAfterPush) {
            earlyAt.pushedSeen = Date.now();
            const retry = earlyCommits?.head === pushed;
            bringEarly(pushed, () => fetchBranch(context.repoRoot, branch).then(() => true), retry);
            earlyCommits!.fetchedAfterPush = true;
          }
        }
        if (!request.reportCompletion) return;
        if (typeof report !== 'object' || report === null || Array.isArray(report) || typeof runId !== 'string') return;
        const key = JSON.stringify(report);
        if (early && early.key === key && early.run === runId) return;
        earlyAt.reportSeen ??= Date.now();
        const write = request.reportCompletion;
        const ok = earlyChain.then(() => write({ ...(report as Record<string, unknown>), worktree: request.cwd, branch })).then((written) => {
          earlyAt.written = Date.now();
          return written.ok;
        }, () => false);
        early = { key, run: runId, ok };
        earlyChain = ok;
      };
      events.on('progress', onProgress);
      data.enqueued_at = Date.now();
      // A21-43/A21-11: signed with the dispatch key; a worker runs no job without a valid signature.
      data = key.sign('agent-job', jobId, data);
      if (data.sig !== undefined) acceptedSigs.add(data.sig);
      await guarded(jobClaim.name(data.sig));
      // E9: the same attempt on the same base with the same content is one job, however often it is enqueued.
      const add = () => queue.add('agent', data, { jobId, attempts: 1, removeOnComplete: { age: keep }, removeOnFail: { age: keep } });
      // (a mark of an earlier watch that gave up on this very job id is not this attempt's: A22-24)
      await guarded(client.del(givenUpKey(queue.name, jobId)).catch(() => 0));
      addedHere.add(jobId);
      if (addedHere.size > 10_000) addedHere.delete(addedHere.values().next().value!);
      await guarded(add());
      let stored = await guarded(Job.fromId<AgentJobData, AgentJobReturn>(queue, jobId));
      // Gone already (a worker took it at once and the key was then deleted — a non-persistent Redis,
      // a hostile DEL): added again under the same id, E9-safe, as the watch below does (seen in CI).
      for (let readded = 0; !stored && readded < 3; readded += 1) {
        addingAgain();
        await guarded(add());
        stored = await guarded(Job.fromId<AgentJobData, AgentJobReturn>(queue, jobId));
      }
      if (!stored) return fail('transient', dispatchCodes.redisLost, `job ${jobId} vanished from Redis (added again 3 times)`);
      // A job stored under this id with other content (put there by someone else): never reuse it — replace it.
      if (!sameContent(stored.data, digest) || !key.verify('agent-job', jobId, stored.data)) {
        const removed = await guarded(stored.remove().then(() => true, () => false));
        if (!removed) return fail('fatal', dispatchCodes.invalidJob, `job ${jobId} in Redis holds other content than this attempt and is running; not reused`);
        addingAgain();
        await guarded(add());
        stored = await guarded(Job.fromId<AgentJobData, AgentJobReturn>(queue, jobId));
        if (!stored || !sameContent(stored.data, digest)) return fail('fatal', dispatchCodes.invalidJob, `job ${jobId} in Redis holds other content than this attempt; not reused`);
      }
      if (typeof stored.data.sig === 'string') acceptedSigs.add(stored.data.sig);
      await guarded(jobClaim.name(stored.data.sig));
      sigsKnown();
      let state = await guarded(stored.getState());
      // E9 reuses a job still queued or running (its orchestrator was interrupted) and a success (a
      // finished run with a complete report). A failure of this very attempt is never reused (attack
      // F20: a relaunch got the old failure back without running anything): a BullMQ-failed job is
      // retried, a completed one carrying a failed outcome is replaced and runs again.
      if (state === 'failed') {
        addingAgain();
        await guarded(stored.retry());
        state = 'waiting';
      } else if (state === 'completed' && !succeeded(stored.returnvalue, jobId)) {
        if (!(await guarded(stored.remove().then(() => true, () => false)))) return fail('transient', dispatchCodes.redisLost, `job ${jobId}: its earlier failed result could not be removed to run it again`);
        addingAgain();
        await guarded(add());
        stored = await guarded(Job.fromId<AgentJobData, AgentJobReturn>(queue, jobId));
        if (!stored) return fail('transient', dispatchCodes.redisLost, `job ${jobId} vanished from Redis`);
        state = 'waiting';
      }
      let value: AgentJobReturn;
      if (state === 'completed' && stored.returnvalue) value = stored.returnvalue;
      else {
        try {
          // (A24-04: the job vanished — a Redis restarted empty — and is added again: the runs to come are numbered anew)
          const watch = watchJob(queue, jobId, () => (addingAgain(), add()), labels, data.limits.timeoutMs ?? defaultAgentLimits.timeoutMs);
          try {
            value = (await guarded(Promise.race([finishedOrVanished(stored, events), watch.promise]), request.signal)) as AgentJobReturn;
          } finally {
            watch.stop();
          }
        } catch (error) {
          if (error instanceof OutageError || error instanceof AbortedError) throw error;
          // A18-04: a report written early, from the job's progress, belongs to a run that did not finish: the job
          // failed. Withdrawn, as for a finished run that reported nothing (A17-26) — else, its commits here already,
          // the failed attempt was judged on it and merged.
          // (its E19 type that of the job's failure: a worker's transient trouble is relaunched, anything else escalates)
          // (only when the job moved between runs — stalled: a job that ran once and failed after its own report, its
          // push refused as another run of it pushed first, keeps that report, judged by E42 as before)
          // (A18-17: and when the run's push was refused as another run of the job had moved the branch: the report's
          // commits, brought here early, are not what the shared remote holds)
          const withdrawEarly = async (why: string, kind: AgentFailureKind | undefined, branchMoved = false): Promise<void> => {
            await progressChain;
            await earlyChain;
            if (early === undefined || ((stalls.get(jobId) ?? 0) === 0 && !branchMoved) || !(await early.ok)) return;
            await withdrawReport(`job ${jobId} ${why}; the report came from a run of it that did not finish`, kind === 'transient' ? 'transient' : 'escalate');
          };
          if (error instanceof WatchError) {
            await withdrawEarly(`failed (${error.message.slice(0, 200)})`, error.outcome.failure?.kind);
            return { outcome: error.outcome, spec, jail, dispatch: { ...dispatch, stalls: stalls.get(jobId) ?? 0 } };
          }
          const reason = explainOldWorker(redactUserinfo(error instanceof Error ? error.message : String(error)));
          await withdrawEarly(`failed on its worker (${reason.slice(0, 200)})`, kindOfFailure(reason), reason.startsWith(dispatchCodes.branchMoved));
          stored = (await guarded(Job.fromId<AgentJobData, AgentJobReturn>(queue, jobId))) ?? stored;
          dispatch.stalls = stalls.get(jobId) ?? 0;
          const code = /^[A-Z][A-Z0-9_]+:/.exec(reason) ? '' : 'DISPATCH_WORKER_FAILED: ';
          return { outcome: { ...failedOutcome(kindOfFailure(reason), '', ''), failure: { kind: kindOfFailure(reason), message: `${code}${reason}` } }, spec, jail, dispatch };
        }
      }
      // (the progress that came before the result handled first, as it was before a new run's number was checked)
      await progressChain;
      const received = Date.now();
      resultHere = true;
      // A21-43: a result no worker signed (written into Redis by someone else, for this running job) is not the job's:
      // the attempt fails, and a report its progress wrote early is withdrawn — nothing of it is merged.
      if (!key.verify('agent-result', jobId, value)) {
        await earlyChain;
        const message = `job ${jobId}: its result in Redis carries no valid signature of the dispatch key (forged by a writer to the Redis, or a worker with another key); not taken, nothing of the attempt is merged`;
        if (early !== undefined && (await early.ok)) await withdrawReport(`${dispatchCodes.forged}: ${message}`, 'escalate');
        return fail('fatal', dispatchCodes.forged, message);
      }
      // Replays (issue 17): a genuine result, but of another enqueue of this job id (an earlier job's, put back), or of
      // another run than the one placed here — one the job was handed on from, or a copy of it run elsewhere — while the
      // run placed here is the job's: not this attempt's result. Refused as a forged one (nothing of it merged).
      // (A25-07: a result numbered as the placed run or lower, after a Redis restart since it was placed, is of the runs
      // numbered anew from the snapshot Redis came back with — the placed run's job was rewound)
      const renumbered = placedRun !== undefined && value.run !== placedRun && (await redisRestartedSincePlaced());
      const replayedWhy = ((): string | undefined => {
        if (typeof value.job_sig !== 'string' || !acceptedSigs.has(value.job_sig)) return 'it answers another enqueue of the job id (an earlier job\'s, replayed), not the job this attempt awaits';
        // A24-15: the queue its worker took it from is signed with it: a copy of the job run from another queue is not the
        // job (its run number, a plain Redis key of that queue, was whatever a writer set)
        if (value.queue !== queue.name) return value.queue === undefined ? `it names no queue it was taken from (a worker older than this orchestrator: upgrade it), not ${queue.name} where this attempt enqueued the job` : `it was run from another queue (${String(value.queue).slice(0, 160)}), not ${queue.name} where this attempt enqueued the job`;
        const resultNo = typeof value.run_no === 'number' && Number.isSafeInteger(value.run_no) && value.run_no > 0 ? value.run_no : 0;
        if (typeof value.run !== 'string' || supersededRuns.has(value.run)) return `it comes from ${typeof value.run === 'string' ? `run ${value.run.slice(0, 120)}, one the job was handed on from` : 'no named run'}`;
        // (a run Redis gave no number — its INCR unanswered — still counts, as its progress never took the job: A19-05)
        if (placedRun !== undefined && value.run !== placedRun && resultNo > 0 && resultNo <= placedNo && !renumbered) return `it comes from run ${value.run.slice(0, 120)}${resultNo ? ` (#${resultNo})` : ''}, not the run ${placedRun.slice(0, 120)}${placedNo ? ` (#${placedNo})` : ''} that has the job`;
        return undefined;
      })();
      if (replayedWhy !== undefined) {
        await earlyChain;
        const message = `job ${jobId}: its result in Redis is signed, but ${replayedWhy}; not taken, nothing of the attempt is merged`;
        if (early !== undefined && (await early.ok)) await withdrawReport(`${dispatchCodes.replayed}: ${message}`, 'escalate');
        return fail('fatal', dispatchCodes.replayed, message);
      }
      dispatch.worker = value.worker;
      if (typeof value.host === 'string' && value.host !== '') dispatch.host = value.host.slice(0, 255);
      dispatch.stalls = stalls.get(jobId) ?? 0;
      dispatch.enqueue_to_start_ms = Math.max(0, value.started_at - data.enqueued_at);
      if (typeof value.fetched_at === 'number' && Number.isFinite(value.fetched_at)) {
        dispatch.enqueue_to_fetch_ms = Math.max(0, value.fetched_at - data.enqueued_at);
        dispatch.fetch_to_start_ms = Math.max(0, value.started_at - value.fetched_at);
      }
      if (typeof value.ready_at === 'number' && Number.isFinite(value.ready_at)) dispatch.worker_setup_ms = Math.max(0, value.ready_at - value.started_at);
      dispatch.finish_to_received_ms = Math.max(0, received - value.finished_at);
      const inStream = completedInStream.get(jobId);
      completedInStream.delete(jobId);
      if (inStream !== undefined) dispatch.finish_to_stream_ms = inStream - value.finished_at;
      dispatch.loop_delay_ms = loopP90();
      if (value.steps && typeof value.steps === 'object') {
        // Each step's duration from the one before it (the start: BullMQ's processedOn).
        const order = ['active', 'processor', 'checked', 'admitted', 'clone_turn', 'base', 'cleaned', 'worktree', 'seeded', 'lease', 'first_event'];
        const at: Record<string, unknown> = { ...value.steps, admitted: value.started_at };
        let previous = typeof value.fetched_at === 'number' ? value.fetched_at : undefined;
        const stepsMs: Record<string, number> = {};
        for (const name of order) {
          const time = at[name];
          if (typeof time !== 'number' || !Number.isFinite(time)) continue;
          if (previous !== undefined) stepsMs[name] = time - previous;
          previous = time;
        }
        dispatch.worker_steps_ms = stepsMs;
      }
      // The agent's commits: the branch the worker pushed, fast-forwarded into the local worktree.
      // Attack F15: a result's head is a full commit id (never an option or a branch name for git).
      if (value.head !== undefined && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(String(value.head))) return fail('fatal', dispatchCodes.invalidJob, `job ${jobId}: the result's head ${JSON.stringify(String(value.head).slice(0, 80))} is not a full commit id`);
      // The branch is brought here and the report written at the same time (each waits on other
      // processes: git, the manifest's lock and fsync), so a result costs the longer of the two, not
      // their sum. Should the branch not arrive, the attempt still fails with that error; its report,
      // already written, is then refused by run-wave's E42 check (no commits) and never merged.
      const bringCommits = async (): Promise<AgentJobResult | undefined> => {
        // Fetched and fast-forwarded already (the worker pushed when the agent reported)?
        const applied = earlyCommits ? await earlyCommits.applied : false;
        if (applied && earlyCommits?.head === value.head) {
          dispatch.commits_early = true;
          dispatch.fetch_ms = Date.now() - received;
          return undefined;
        }
        // Early commits of another run of the job (a lost one) or rewritten since: the worktree goes
        // to exactly the result's commit (the base when it has none), keeping nothing of them.
        if (applied && (!value.head || value.head === context.baseCommit)) {
          const reset = await gitOf(request.cwd).run(['reset', '--quiet', '--keep', context.baseCommit], { allowExitCodes: [1, 128] });
          if (reset.exitCode !== 0) return fail('transient', dispatchCodes.branchMismatch, `job ${jobId}: the local worktree holds commits of another run of the job and cannot go back to the base: ${reset.stderr.trim().split('\n')[0] ?? ''}`);
        }
        if (value.head && value.head !== context.baseCommit) {
          try {
            await fetchBranch(context.repoRoot, branch);
          } catch (error) {
            return fail('config', dispatchCodes.remoteUnreachable, redactUserinfo(`cannot fetch ${branch} from the shared remote ${options.remote}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`));
          }
          // Exactly the commit of the accepted result (a second run of the job may have moved the branch since).
          // (No auto-maintenance spawn per result: the repository's own next commit runs it.)
          let merged = await gitOf(request.cwd).run(['-c', 'maintenance.auto=false', 'merge', '--ff-only', '--quiet', value.head], { allowExitCodes: [1, 128] });
          // Not a fast-forward: the worktree holds commits this result does not build on (pushed early by
          // a lost run of the job, or an earlier attempt's — a job always starts from the base). The
          // worktree goes to exactly the result's commit; without that commit here, that fails too.
          if (merged.exitCode !== 0) merged = await gitOf(request.cwd).run(['reset', '--quiet', '--keep', value.head], { allowExitCodes: [1, 128] });
          // A22-18: the commit is here (fetched) and only this worktree refused it (its own files in the way): say so.
          if (merged.exitCode !== 0 && (await gitOf(context.repoRoot).run(['cat-file', '-e', `${value.head}^{commit}`], { allowExitCodes: [1, 128] })).exitCode === 0) {
            return fail('fatal', dispatchCodes.worktreeUpdate, `job ${jobId}: the local worktree ${request.cwd} cannot be brought to ${value.head.slice(0, 12)}, the commit the job's result names (fetched from ${branch}): ${merged.stderr.trim().split('\n')[0] ?? ''} — files in that worktree (not the job's) are in the way; remove them and re-run`);
          }
          if (merged.exitCode !== 0) return fail('transient', dispatchCodes.branchMismatch, redactUserinfo(`${branch} on ${options.remote} does not hold ${value.head.slice(0, 12)}, the commit the job's result names (another run of the job pushed over it): ${merged.stderr.trim().split('\n')[0] ?? ''}`));
        }
        dispatch.fetch_ms = Date.now() - received;
        return undefined;
      };
      // The report, written here by the single writer (the worker only validated it).
      // Usually written already, from the job's progress, while the agent still ran: then only a
      // report that differs from it (another run of the job) is written again.
      const writeReport = async (): Promise<AgentJobResult | undefined> => {
        await earlyChain;
        const sameRun = early !== undefined && early.run === `${value.worker}:${value.started_at}`;
        const writtenEarly = early !== undefined && (await early.ok);
        if (sameRun && writtenEarly && value.report !== undefined && early?.key === JSON.stringify(value.report)) dispatch.report_early = true;
        else if (value.report && request.reportCompletion) await request.reportCompletion({ ...value.report, worktree: request.cwd, branch });
        dispatch.report_ms = Date.now() - received;
        // A report written from a run that was lost (its worker died after the agent reported), and
        // the run that finished reported nothing: that report is not this result's — never judged as it.
        if (!value.report && writtenEarly && !sameRun) {
          const message = `job ${jobId}: the report in the manifest came from an earlier run of the job that was lost; the run that finished (on ${value.worker}) reported nothing`;
          // A17-26: and it is withdrawn — left `complete`, it outlived the attempt: after a BLOCKED wave `retry` found
          // nothing to retry and finalize-wave refused the agent (I5: its branch at the base).
          await withdrawReport(message, 'transient');
          return fail('transient', dispatchCodes.workerFailed, message);
        }
        return undefined;
      };
      let failure: AgentJobResult | undefined;
      try {
        const [fetched, written] = await Promise.all([bringCommits(), writeReport()]);
        failure = fetched ?? written;
      } finally {
        events.off('progress', onProgress);
      }
      if (failure) return failure;
      // Those the progress did not bring (older workers: all of them, without their time).
      inbox.fromResult(`${value.worker}:${value.started_at}`, String(value.worker ?? '').slice(0, 128), Array.isArray(value.events) ? value.events.slice(0, jobLimits.resultEvents) : []);
      dispatch.finish_to_result_ms = Math.max(0, Date.now() - value.finished_at);
      const loop = (value as { loop_delay_ms?: { p90?: unknown } }).loop_delay_ms?.p90;
      if (typeof loop === 'number' && Number.isFinite(loop)) dispatch.worker_loop_delay_ms = Math.max(0, Math.min(loop, 3_600_000));
      const relative = (at: unknown) => (typeof at === 'number' && Number.isFinite(at) ? at - value.finished_at : undefined);
      for (const [field, at] of [['agent_end_rel_ms', value.agent_end_at], ['reported_rel_ms', value.reported_at], ['pushed_rel_ms', value.pushed_at], ['report_seen_rel_ms', earlyAt.reportSeen], ['pack_seen_rel_ms', earlyAt.packSeen], ['pushed_seen_rel_ms', earlyAt.pushedSeen], ['early_fetched_rel_ms', earlyAt.fetched], ['early_applied_rel_ms', earlyAt.applied], ['report_written_rel_ms', earlyAt.written]] as const) {
        const ms = relative(at);
        if (ms !== undefined) dispatch[field] = ms;
      }
      dispatch.job_result = true;
      return { outcome: value.outcome, spec, jail, dispatch };
    } catch (error) {
      if (error instanceof OutageError) return fail('transient', dispatchCodes.redisLost, `${error.message}; the manifest is intact — re-run when Redis is back (E9 resumes)`);
      // A23-25: a full Redis (maxmemory, noeviction) refused a write (the enqueue, a claim, a mark): a coded config failure
      // (escalate: it stays full until its operator acts), not BullMQ's raw reply as an INTERNAL error.
      if (error instanceof Error && isRedisFull(error.message)) return fail('config', dispatchCodes.redisFull, `${redisRefusedWrite(options.url, error.message, `job ${jobId} could not be enqueued or followed`).message}; the manifest is intact — re-run when Redis has room (E9 resumes)`);
      // Interrupted here: the job may still finish on its worker; its result is reused by the next run (same job id).
      if (error instanceof AbortedError) return { outcome: { ...failedOutcome('transient', '', ''), status: 'aborted', failure: { kind: 'transient', message: `interrupted while job ${jobId} ran on a worker: ${error.message}` } }, spec, jail, dispatch };
      throw error;
    } finally {
      releaseAwaiting?.();
    }
  };

  /**
   * A gate job: the agent's tip pushed to its branch on the shared remote (a no-op when its worker
   * pushed it), enqueued on the agent's label queue, its GateRunResult returned as a local run's.
   * Rejects (finalize-wave: "gates could not run", the merge blocked) when it cannot run there.
   */
  const runGateJob = async (job: GateJob): Promise<GateJobResult> => {
    const labels = labelsOf(job.slug, job.agentId);
    const failWith = (code: string, message: string): never => {
      throw new PolywaveError({ code, message: redactUserinfo(message) });
    };
    let gateClaim: ReturnType<typeof claimAwaiting> | undefined;
    try {
      if (!(await guarded(waitForWorker(labels), job.signal))) failWith(dispatchCodes.noWorker, `no live worker of the shared remote ${options.remote}${queueName ? ` (queue ${queueName})` : ''} ${labels.length > 0 ? `has the label(s) ${labels.join(', ')}` : 'is connected'} to run the gates of agent ${job.agentId} (waited ${Math.round(labelWaitMs / 1000)} s)`);
      try {
        await gitOf(job.repoRoot).run(['push', '--quiet', '--force', options.remote, `${job.head}:refs/heads/${job.branch}`]);
        // (the worker checks the gated commit against the branch and the base against the wave's base ref: A21-11's class)
        if (job.baseCommit) await pushBase(job.repoRoot, job.slug, job.wave, job.baseCommit);
      } catch (error) {
        failWith(dispatchCodes.remoteUnreachable, `cannot push ${job.branch} to the shared remote ${options.remote} for its gates: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
      }
      const defaultTimeoutMs = job.defaultTimeoutMs ?? 10 * 60_000;
      const data: GateJobData = {
        v: jobFormat,
        polywave: polywaveVersion(),
        kind: 'gate',
        job_id: '',
        slug: job.slug,
        wave: job.wave,
        agent: job.agentId,
        branch: job.branch,
        head: job.head,
        gates: job.gates.map(({ repo: _repo, ...gate }) => Object.fromEntries(Object.entries(gate).filter(([, value]) => value !== undefined))),
        ...(job.defaultTimeoutMs ? { default_timeout_ms: job.defaultTimeoutMs } : {}),
        ...(job.baseCommit ? { base_commit: job.baseCommit } : {}),
        docs_only: job.docsOnly,
        labels,
        remote: remoteWithoutUserinfo(options.remote),
        enqueued_at: 0,
      };
      const jobId = (data.job_id = expectedGateJobId(data));
      const { queue, ready } = queueFor(queueNameFor(labels, remoteKeyOf, queueName));
      const events = await guarded(ready, job.signal);
      data.enqueued_at = Date.now();
      const signed = key.sign('gate-job', jobId, data);
      gateClaim = claimAwaiting(jobId, [signed.sig], queue.name);
      await guarded(gateClaim.written, job.signal);
      const add = () => queue.add('gate', signed, { jobId, attempts: 1, removeOnComplete: { age: keep }, removeOnFail: { age: keep } });
      await guarded(add(), job.signal);
      let stored = await guarded(Job.fromId<GateJobData, GateJobReturn>(queue, jobId), job.signal);
      if (!stored) return failWith(dispatchCodes.redisLost, `gate job ${jobId} vanished from Redis`);
      await guarded(gateClaim.name(stored.data?.sig), job.signal);
      // The same gates on the same commit, finished before (an earlier finalize of this wave): run
      // again, as local gates would (outside the E38 cache, a flaky gate is not stuck with its result).
      // One still queued or running (a concurrent finalize) is waited for. Its time bound: every gate's timeout.
      const state = await guarded(stored.getState(), job.signal);
      if (state === 'completed' || state === 'failed') {
        if (await guarded(stored.remove().then(() => true, () => false), job.signal)) await guarded(add(), job.signal);
        stored = (await guarded(Job.fromId<GateJobData, GateJobReturn>(queue, jobId), job.signal)) ?? stored;
      }
      let value: GateJobReturn;
      const budget = data.gates.reduce((sum, gate) => sum + (gate.timeout_seconds ? gate.timeout_seconds * 1000 : defaultTimeoutMs), 0);
      const watch = watchJob(queue, jobId, add, labels, budget);
      try {
        value = (await guarded(Promise.race([finishedOrVanished(stored as unknown as Job<AgentJobData, AgentJobReturn>, events), watch.promise]), job.signal)) as unknown as GateJobReturn;
      } catch (error) {
        if (error instanceof WatchError) return failWith(dispatchCodes.workerFailed, error.message);
        if (error instanceof OutageError) return failWith(dispatchCodes.redisLost, error.message);
        if (error instanceof AbortedError) return failWith(dispatchCodes.workerFailed, `interrupted while gate job ${jobId} ran on a worker: ${error.message}`);
        const reason = explainOldWorker(error instanceof Error ? error.message : String(error));
        return failWith(/^[A-Z][A-Z0-9_]+:/.exec(reason) ? reason.slice(0, reason.indexOf(':')) : dispatchCodes.workerFailed, `gate job ${jobId} failed on its worker: ${reason}`);
      } finally {
        watch.stop();
      }
      if (!key.verify('gate-result', jobId, value)) return failWith(dispatchCodes.forged, `gate job ${jobId}: its result in Redis carries no valid signature of the dispatch key (forged by a writer to the Redis, or a worker with another key); not taken`);
      // Replays (issue 17): a genuine answer to another enqueue of this gate job id (an earlier finalize's) is not this one's
      // (the one found running, a concurrent finalize's, is awaited as this one).
      if (value.job_sig !== signed.sig && (typeof value.job_sig !== 'string' || value.job_sig !== stored.data?.sig)) return failWith(dispatchCodes.replayed, `gate job ${jobId}: its result in Redis is signed, but it answers another enqueue of the job id (an earlier gate job's, replayed); not taken`);
      const run = value.run as GateRunResult;
      if (!run || !Array.isArray(run.results)) return failWith(dispatchCodes.invalidJob, `gate job ${jobId}: its result holds no gate results`);
      // (Anyone on the Redis can write a result: the worker's id and host, which go into events and the store, are bounded.)
      return { run, worker: String(value.worker ?? '').slice(0, 128), host: String(value.host ?? '').slice(0, 255), dir: String(value.dir ?? '').slice(0, 4096), job_id: jobId };
    } catch (error) {
      if (error instanceof OutageError) failWith(dispatchCodes.redisLost, error.message);
      if (error instanceof AbortedError) failWith(dispatchCodes.workerFailed, `interrupted: ${error.message}`);
      if (error instanceof Error && isRedisFull(error.message)) failWith(dispatchCodes.redisFull, redisRefusedWrite(options.url, error.message, `the gate job of agent ${job.agentId} could not be enqueued or followed`).message);
      throw error;
    } finally {
      gateClaim?.release();
    }
  };

  return {
    name: 'redis',
    flags: [`--dispatch ${redactRedisUrl(options.url)}`, `--dispatch-remote ${redactUserinfo(options.remote)}`, ...(queueName ? [`--dispatch-queue ${queueName}`] : [])].join(' '),
    ...(options.gates === 'workers' ? { runGateJob } : {}),
    // A17-34: attempts of this agent (same slug, wave, base) queued or running now.
    inFlight: async (context) => {
      const prefix = `${agentJobId({ ...context, attempt: 1 }).replace(/\.a1$/, '')}.a`;
      const queue = queueFor(queueNameFor(labelsOf(context.slug, context.agentId), remoteKeyOf, queueName)).queue;
      // A19-21: a listing that does not come back (a slow Redis, a huge queue) is not "nothing in flight": tried once
      // more with a longer bound, then the caller is told it cannot be known (it fails closed).
      const head = context.worktree !== undefined ? await gitOf(context.worktree).run(['rev-parse', '--verify', '--quiet', 'HEAD'], { allowExitCodes: [1, 128] }).then((out) => out.stdout.trim() || undefined, () => undefined) : undefined;
      const ids = (await inFlightIds(queue, context, 3000, head)) ?? (await inFlightIds(queue, context, 30_000, head));
      if (ids === undefined) throw new Error(`the jobs in flight of agent ${context.agentId} could not be listed in time`);
      const attempts = ids.map((id) => Number(id.slice(prefix.length).split('.')[0])).filter((n) => Number.isInteger(n) && n > 0);
      return attempts.length > 0 ? Math.max(...attempts) : undefined;
    },
    // A19-11/A19-19: the agent's latest job (none in flight) ended without a complete result — it failed, or its push was
    // refused: the report an early progress of it wrote is a lost run's, not to be taken as final.
    // A20-22/A20-39: whatever its age (it counted only within 10 min of the failure), and fail closed: no job of the agent
    // at all (Redis restarted — persistence is optional — or BullMQ let it age out) proves nothing, so the report is not
    // taken as final either: the agent runs again.
    lostRun: async (context) => {
      const prefix = `${agentJobId({ ...context, attempt: 1 }).replace(/\.a1$/, '')}.a`;
      const queue = queueFor(queueNameFor(labelsOf(context.slug, context.agentId), remoteKeyOf, queueName)).queue;
      const ids = (await queue.getRanges(['failed', 'completed'], 0, -1)).filter((id): id is string => typeof id === 'string' && id.startsWith(prefix));
      const jobs = (await Promise.all(ids.map((id) => Job.fromId<AgentJobData, AgentJobReturn>(queue, id).catch(() => undefined)))).filter((job): job is Job<AgentJobData, AgentJobReturn> => job !== undefined);
      const latest = jobs.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0))[0];
      if (!latest) return `no job of it is on record in Redis (restarted, or the job aged out), so nothing proves the run that reported ended with a complete result`;
      const value = latest.returnvalue as AgentJobReturn | null | undefined;
      const why = latest.failedReason ? `failed (${redactUserinfo(latest.failedReason).slice(0, 200)})` : `ended without a complete result (${String(value?.outcome?.failure?.message ?? value?.outcome?.status ?? 'no outcome').slice(0, 200)})`;
      if (value && !latest.failedReason && !key.verify('agent-result', String(latest.id), value)) return `job ${latest.id} holds a result no worker signed (forged in Redis: ${dispatchCodes.forged})`;
      return succeeded(value, String(latest.id)) ? undefined : `job ${latest.id} ${why}`;
    },
    // E23A: the tool journal the job's workers relayed (its progress) joins the orchestrator's journal of the agent.
    runAgentJob: (job) => (job.context.solo || !job.context.branch ? inProcessDispatcher.runAgentJob(job) : run(job).then((result) => keepJobJournal(result, job.options.journal, (id) => Job.fromId(queueFor(queueNameFor(labelsOf(job.context.slug, job.context.agentId), remoteKeyOf, queueName)).queue, id).then((stored) => (stored && key.verify('progress', id, stored.progress) ? stored : undefined))))),
    close: async () => {
      clearInterval(loopWindow);
      loopDelay.disable();
      // Bounded: with Redis gone, BullMQ's close never settles; the connections are dropped instead.
      const bounded = (work: Promise<unknown>, ms: number) => Promise.race([work.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);
      client.disconnect();
      await Promise.all(
        [...queues.values()].map(async ({ queue, events }) => {
          await bounded(Promise.all([queue.close(), events?.close()]), 1000);
          await bounded(queue.disconnect(), 200);
          if (events) await bounded(events.disconnect(), 200);
        }),
      );
    },
  };
}
