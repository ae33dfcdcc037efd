import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { AgentEvent } from '../agents/contract.js';
import { runAgent } from '../agents/run-agent.js';
import { dispatchCodes } from '../dispatch/codes.js';
import { agentJobDataSchema, assertJobBranch, assertJobIdentity, assertJobModel, jobRole, labelSubsets, normalizeLabels, queueNameFor, worktreeToken, type AgentJobData, type AgentJobReturn } from '../dispatch/job.js';
import { assertRedisReachable, bullConnectionFromUrl, redactUserinfo, redisOptionsFromUrl } from '../dispatch/redis-url.js';
import { removeWorkerRecord, writeWorkerRecord, type WorkerRecord } from '../dispatch/registry.js';
import { journalPaths } from '../engine/journal.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import { buildCompletionReport, type CompletionReportInput } from '../protocol/completion-report.js';

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  redisUrl: string;
  /** The shared git remote (this worker's URL for it: its credentials, its transport). */
  remote: string;
  /** Where the clone and the job worktrees live. */
  dir: string;
  concurrency: number;
  labels: readonly string[];
  /** The worker's environment: model keys live here and never travel in a job. */
  env: Readonly<Record<string, string | undefined>>;
  id?: string;
  /** BullMQ lock of a running job (ms; a dead worker's job is handed on after it lapses). Default 30 s. */
  lockDurationMs?: number;
  /** How often workers look for stalled jobs (ms). Default 15 s. */
  stalledIntervalMs?: number;
  /** Registry heartbeat (ms; the record expires after 3 beats). Default 2 s. */
  heartbeatMs?: number;
  /** Run agents without the OS sandbox — this worker's decision, never the job's. */
  unsafeNoSandbox?: boolean;
  /**
   * Prefixes of job models that name their own endpoint or command (`openai-compatible:<url>#m`,
   * `cli:<template>`) this worker runs anyway (`--model-allow`); others are refused (attack F2).
   */
  modelAllow?: readonly string[];
  log?: (line: string) => void;
}

/** A running worker. */
export interface RunningWorker {
  id: string;
  /** Finishes the jobs it runs (or, with `force`, hands them back as stalled), then disconnects. */
  close(force?: boolean): Promise<void>;
  /** Resolves when the worker has closed. */
  closed: Promise<void>;
}

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
 * `polywave worker` (issue 17): keeps a clone of the shared remote in `dir`, takes agent jobs from
 * the queues of every subset of its labels, and for each: fetches the wave's base, makes a worktree
 * on the agent branch, runs the agent through the same runtime and jail as run-wave, pushes ONLY the
 * agent branch (anything else: DISPATCH_REF_REFUSED) and returns the report and usage. Registers
 * itself in Redis (heartbeat) for `polywave workers`. Throws DISPATCH_REDIS_UNREACHABLE or
 * DISPATCH_REMOTE_UNREACHABLE (exit 2) when it cannot start.
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const log = options.log ?? (() => undefined);
  const labels = normalizeLabels(options.labels);
  const subsets = labelSubsets(labels);
  await assertRedisReachable(options.redisUrl);
  const id = options.id ?? `${os.hostname()}-${process.pid}`;
  const dir = path.resolve(options.dir);
  const clone = path.join(dir, 'repo.git');
  const env = options.env;
  // F8: messages name the remote without its credentials.
  const shownRemote = redactUserinfo(options.remote);
  await mkdir(dir, { recursive: true });
  const cloneGit = createGit(clone, { env });
  if (!existsSync(path.join(clone, 'HEAD'))) {
    try {
      await createGit(dir, { env }).run(['clone', '--quiet', '--bare', '--no-tags', options.remote, clone]);
    } catch (error) {
      throw new PolywaveError({ code: dispatchCodes.remoteUnreachable, message: `cannot clone the shared remote ${shownRemote}: ${firstLine(error)}` });
    }
  } else {
    await cloneGit.run(['ls-remote', '--quiet', options.remote, 'HEAD']).catch((error: unknown) => {
      throw new PolywaveError({ code: dispatchCodes.remoteUnreachable, message: `the shared remote ${shownRemote} is unreachable: ${firstLine(error)}` });
    });
  }

  const connection = bullConnectionFromUrl(options.redisUrl);
  const client = new Redis(redisOptionsFromUrl(options.redisUrl));
  client.on('error', () => undefined);
  const current = new Set<string>();
  let done = 0;
  const startedAt = new Date().toISOString();
  const heartbeatMs = options.heartbeatMs ?? 2000;
  const record = (): WorkerRecord => ({ id, host: os.hostname(), pid: process.pid, labels, concurrency: options.concurrency, current: [...current].sort(), done, started_at: startedAt, heartbeat_at: new Date().toISOString() });
  const beat = () => writeWorkerRecord(client, record(), heartbeatMs * 3).catch(() => undefined);

  // One concurrency budget across the queues of every label subset.
  let active = 0;
  const waiting: Array<() => void> = [];
  const acquire = async () => {
    if (active >= options.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    return () => {
      const next = waiting.shift();
      if (next) next();
      else active -= 1;
    };
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

  const runningIds = new Set<string>();
  const processJob = async (job: Job, token?: string): Promise<AgentJobReturn> => {
    const parsed = agentJobDataSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`${dispatchCodes.invalidJob}: job ${job.id}: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const data: AgentJobData = parsed.data;
    // Before anything is touched: only the agent's own branch ever leaves this machine; the id the
    // job's directories are named by is the one its content implies (F1); the model sends this
    // worker's keys to no endpoint the job chose (F2).
    let worktree: string;
    let scriptFile: string;
    try {
      assertJobBranch(data);
      assertJobIdentity(data, job.id);
      assertJobModel(data, options.modelAllow ?? []);
      worktree = inside(path.join(dir, 'work'), data.job_id);
      scriptFile = inside(path.join(dir, 'scripts'), `${data.job_id}.yaml`);
    } catch (error) {
      throw new UnrecoverableError(PolywaveError.isInstance(error) ? `${error.code}: ${error.message}` : String(error));
    }
    // The same job again while it runs here (its copy was lost from Redis meanwhile and the
    // orchestrator added it again, F4): handed back for a second, so the copies run one after the
    // other — they would share the worktree, and BullMQ tracks a worker's jobs by id.
    if (runningIds.has(data.job_id)) {
      await job.moveToDelayed(Date.now() + 1000, token);
      throw new DelayedError();
    }
    runningIds.add(data.job_id);
    const release = await acquire();
    current.add(data.job_id);
    void beat();
    const startedAtMs = Date.now();
    log(`job ${data.job_id}: agent ${data.agent} of ${data.slug} wave ${data.wave} (attempt ${data.attempt})`);
    try {
      await withClone(async () => {
        // The base is fetched once per clone (a later wave or retry on the same base finds it here).
        const present = knownBases.has(data.base_commit) || (await cloneGit.run(['cat-file', '-e', `${data.base_commit}^{commit}`], { allowExitCodes: [1, 128] })).exitCode === 0;
        if (!present) {
          try {
            await cloneGit.run(['fetch', '--quiet', '--no-tags', options.remote, `+${data.base_ref}:${data.base_ref}`]);
          } catch (error) {
            throw new UnrecoverableError(`${dispatchCodes.remoteUnreachable}: cannot fetch ${data.base_ref} from the shared remote ${shownRemote}: ${firstLine(error)}`);
          }
        }
        knownBases.add(data.base_commit);
        // Deletes still under way finish first (the same agent's branch may be checked out in one).
        await Promise.all(cleanups.values());
        await removeWorktree(worktree);
        await cloneGit.run(['worktree', 'add', '--quiet', '--force', '-B', data.branch, worktree, data.base_commit]);
      });
      let model = data.model;
      if (data.script_text !== undefined) {
        await mkdir(path.dirname(scriptFile), { recursive: true });
        await writeFile(scriptFile, data.script_text);
        model = `script:${scriptFile}`;
      }
      const localize = (text: string) => text.split(worktreeToken).join(worktree);
      const implPath = data.impl_path && existsSync(path.join(worktree, data.impl_path)) ? path.join(worktree, data.impl_path) : undefined;
      let report: Record<string, unknown> | undefined;
      const events: AgentEvent[] = [];
      const run = await runAgent({
        ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
        agentId: data.agent,
        role: jobRole(data.role),
        wave: data.wave,
        attempt: data.attempt,
        model,
        systemPrompt: localize(data.system_prompt),
        prompt: localize(data.prompt),
        cwd: worktree,
        branch: data.branch,
        baseCommit: data.base_commit,
        ...(implPath ? { implPath } : {}),
        policy: { root: worktree, ownedFiles: data.owned_files, frozenPaths: data.frozen_paths, branch: data.branch, readablePaths: [] },
        limits: data.limits,
        env: { ...env, POLYWAVE_REPO_ROOT: worktree },
        onEvent: (event) => {
          const kept = keepEvent(event);
          if (kept && events.length < 5000) events.push(kept);
        },
        journal: journalPaths(dir, data.slug, data.wave, data.agent),
        // The worker only checks the report (same rules as the writer); the orchestrator writes it.
        reportCompletion: async (input) => {
          const built = buildCompletionReport(input as CompletionReportInput, { agentId: data.agent });
          const blocking = built.findings.filter((finding) => finding.severity === 'error' || finding.severity === 'fatal');
          if (!built.ok || blocking.length > 0) return { ok: false, code: blocking[0]?.code ?? 'X001_INVALID_INPUT', message: blocking[0]?.message ?? 'invalid report' };
          report = { ...input };
          return { ok: true, status: built.report.status ?? '' };
        },
        hasCompletionReport: async () => report !== undefined,
      });
      const worktreeGit = createGit(worktree, { env });
      const head = (await worktreeGit.headCommit()).trim();
      if (head !== data.base_commit) {
        try {
          await worktreeGit.run(['push', '--quiet', options.remote, `+${head}:refs/heads/${data.branch}`]);
        } catch (error) {
          const message = firstLine(error);
          if (/hook declined|pre-receive|update hook|remote rejected/i.test(String(error instanceof Error ? error.message : error))) throw new UnrecoverableError(`${dispatchCodes.refRefused}: the shared remote ${shownRemote} refused ${data.branch}: ${message}`);
          throw new UnrecoverableError(`${dispatchCodes.remoteUnreachable}: cannot push ${data.branch} to the shared remote ${shownRemote}: ${message}`);
        }
      }
      done += 1;
      log(`job ${data.job_id}: ${run.outcome.status}${report ? ` (report ${String(report.status)})` : ''}`);
      return { v: 1, job_id: data.job_id, worker: id, outcome: { ...run.outcome, text: run.outcome.text.slice(0, 20_000) }, ...(report ? { report } : {}), ...(head !== data.base_commit ? { head } : {}), events, started_at: startedAtMs, finished_at: Date.now() };
    } finally {
      discardWorktree(worktree);
      current.delete(data.job_id);
      runningIds.delete(data.job_id);
      release();
      void beat();
    }
  };

  /** `parent/name`, refused (DISPATCH_INVALID_JOB) unless it is a direct child of `parent`. */
  function inside(parent: string, name: string): string {
    const target = path.resolve(parent, name);
    if (path.dirname(target) !== path.resolve(parent) || name.includes('/') || name.includes('\\')) {
      throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job path ${JSON.stringify(name.slice(0, 120))} is not inside ${parent}` });
    }
    return target;
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

  const workers = subsets.map(
    (subset) =>
      new Worker(queueNameFor(subset), processJob, {
        connection,
        concurrency: options.concurrency,
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 15_000,
        maxStalledCount: 3,
        // After a Redis outage, take jobs again within a second of its return (BullMQ waits 15 s by default).
        runRetryDelay: 1000,
      }),
  );
  for (const worker of workers) worker.on('error', (error) => log(`bullmq: ${firstLine(error)}`));
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  await beat();
  const timer = setInterval(() => void beat(), heartbeatMs);
  log(`worker ${id} ready: labels [${labels.join(', ')}], concurrency ${options.concurrency}, queues ${subsets.map((subset) => queueNameFor(subset)).join(', ')}${options.modelAllow?.length ? `, models also allowed: ${options.modelAllow.join(' ')}` : ''}`);

  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  let closing: Promise<void> | undefined;
  return {
    id,
    closed,
    close: (force = false) => {
      if (closing && !force) return closing;
      closing = (async () => {
        await Promise.all(workers.map((worker) => worker.close(force)));
        await Promise.all(cleanups.values());
        await withClone(() => removeWorktree()).catch(() => undefined);
        clearInterval(timer);
        await removeWorkerRecord(client, id).catch(() => undefined);
        client.disconnect();
        resolveClosed();
      })();
      return closing;
    },
  };
}
