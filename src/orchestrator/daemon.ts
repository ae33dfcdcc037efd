import { closeSync, constants, existsSync, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { autonomyLevels, nextQueueItem, type QueueItem } from '../protocol/queue.js';
import { slugPattern } from '../protocol/schema/impl-schema.js';
import { completedSlugs, readQueue, updateQueueItem, type QueueFileItem } from '../store/queue-files.js';
import { runAutopilot, type AutopilotOptions, type AutopilotResult } from './autopilot.js';

/**
 * `polywave daemon`: watches the IMPL queue (`docs/IMPL/queue/`) and runs its items with our real
 * agents — Scout, plan approval, waves, close-impl — one at a time, by priority, once their
 * dependencies are complete. Unlike the Go daemon (which creates worktrees and finalizes without
 * ever launching an agent), each item goes through the same autopilot as `polywave run`, so an
 * interrupted or crashed daemon resumes an item from its manifest and git state.
 *
 * Autonomy (reference/agents.md §6.1): `gated` (default) never advances on its own, `supervised`
 * advances everything but the plan review, `autonomous` advances everything. A queue item's
 * `autonomy_override` replaces the level for that item; `require_review: true` always stops at
 * the plan review.
 */
export { autonomyLevels };
export type AutonomyLevel = (typeof autonomyLevels)[number];
export type AutonomyStage = 'impl_review' | 'gate_failure' | 'queue_advance';

/** Whether `level` lets the daemon pass `stage` without a human. */
export function autoApproved(level: AutonomyLevel, stage: AutonomyStage): boolean {
  if (level === 'autonomous') return true;
  if (level === 'supervised') return stage !== 'impl_review';
  return false;
}

export function parseAutonomy(value: unknown, where: string): AutonomyLevel {
  const text = typeof value === 'string' ? value.trim() : '';
  if ((autonomyLevels as readonly string[]).includes(text)) return text as AutonomyLevel;
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${where}: autonomy must be gated, supervised or autonomous, got "${String(value)}"` });
}

/** What happened to one item in one pass. */
export interface DaemonItemOutcome {
  slug: string;
  title: string;
  /** complete; blocked (a human must look); awaiting_review (plan ready, not approved); retrying (gate_failure auto-retry next pass). */
  status: 'complete' | 'blocked' | 'awaiting_review' | 'retrying';
  impl_path?: string;
  state?: string;
  reason?: string;
  duration_ms: number;
}

export interface DaemonOptions {
  repoDir: string;
  autonomy: AutonomyLevel;
  /** gate_failure auto-retries per item (config `autonomy.max_auto_retries`, default 2). */
  maxAutoRetries?: number;
  pollIntervalMs?: number;
  /** Process what is eligible now, then return (for cron and tests) instead of watching. */
  once?: boolean;
  /** Stop after this many item runs. */
  maxItems?: number;
  env: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  log: (line: string) => void;
  onOutcome?: (outcome: DaemonItemOutcome) => void;
  /** Passed to every item's autopilot run (models, backends, critic, sandbox, limits, events). */
  run?: Omit<AutopilotOptions, 'feature' | 'slug' | 'implPath' | 'repoDir' | 'auto' | 'approve' | 'env' | 'signal'>;
}

export interface DaemonResult {
  outcomes: DaemonItemOutcome[];
  passes: number;
  stopped: 'signal' | 'once' | 'max-items';
}

interface NativeLocks {
  tryLock(fd: number): boolean;
  unlock(fd: number): void;
}

/**
 * One daemon per repository: an exclusive kernel lock on `.polywave-state/daemon.lock` (released
 * by the kernel when the process dies, so a crashed daemon never blocks the next one).
 */
function lockDaemon(repoDir: string): () => void {
  const file = path.join(repoDir, '.polywave-state', 'daemon.lock');
  mkdirSync(path.dirname(file), { recursive: true });
  // A cloned repository can ship a symlink here: the lock file is never followed out of the repository.
  if (!lstatSync(path.dirname(file)).isDirectory()) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${path.dirname(file)} is not a directory (a symlink?): the daemon keeps its lock only in the repository's own .polywave-state/` });
  const native = createRequire(import.meta.url)('fs-native-extensions') as NativeLocks;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${file}: ${(error as NodeJS.ErrnoException).code === 'ELOOP' ? 'is a symbolic link: remove it' : (error as Error).message}` });
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${file} is not a regular file: remove it` });
  }
  if (!native.tryLock(fd)) {
    closeSync(fd);
    let holder: string;
    try {
      holder = readFileSync(file, 'utf8').trim();
    } catch {
      holder = '';
    }
    throw new PolywaveError({ code: 'Q007_DAEMON_RUNNING', message: `another polywave daemon is running on ${repoDir}${holder ? ` (${holder})` : ''}: one daemon per repository`, exitCode: 1 });
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `pid ${process.pid} since ${new Date().toISOString()}\n`, 0);
  return () => {
    native.unlock(fd);
    closeSync(fd);
  };
}

function levelOf(item: QueueItem, fallback: AutonomyLevel): AutonomyLevel {
  const override = item.autonomy_override?.trim();
  return override && (autonomyLevels as readonly string[]).includes(override) ? (override as AutonomyLevel) : fallback;
}

/** The feature text an item is scouted from: its title, then its description. */
export function featureOfItem(item: QueueItem): string {
  return item.feature_description.trim() === '' ? item.title : `${item.title}\n\n${item.feature_description.trim()}`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The item to work on now: an `in_progress` item left by an earlier pass or a crashed daemon
 * (resumed — unless it waits for a plan review its autonomy does not grant), else the next
 * `queued` item whose dependencies are complete, if its autonomy advances the queue.
 */
function pick(items: readonly QueueFileItem[], done: ReadonlySet<string>, options: DaemonOptions, told: Set<string>): QueueFileItem | undefined {
  for (const item of items) {
    if (item.status !== 'in_progress') continue;
    const waiting = item.awaiting_review === true;
    if (waiting && (item.require_review === true || !autoApproved(levelOf(item, options.autonomy), 'impl_review'))) continue;
    return item;
  }
  const next = nextQueueItem(items, done);
  if (!next) return undefined;
  const item = items.find((candidate) => candidate.slug === next.slug)!;
  if (!autoApproved(levelOf(item, options.autonomy), 'queue_advance')) {
    const key = `queue:${item.slug}`;
    if (!told.has(key)) {
      told.add(key);
      options.log(`daemon: ${item.slug} is next but autonomy ${levelOf(item, options.autonomy)} does not advance the queue (autonomy_blocked): run with --autonomy supervised|autonomous, or set autonomy_override on the item`);
    }
    return undefined;
  }
  return item;
}

/** An item file update that cannot break the daemon: a file removed or made unwritable meanwhile is one log line. */
function safeUpdate(options: DaemonOptions): (file: string, changes: Readonly<Record<string, unknown>>) => Promise<void> {
  return async (file, changes) => {
    try {
      await updateQueueItem(file, changes);
    } catch (error) {
      options.log(`daemon: warning: could not update ${file} (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); the item's status there is stale`);
    }
  };
}

async function runItem(item: QueueFileItem, options: DaemonOptions): Promise<DaemonItemOutcome> {
  const updateQueueItem = safeUpdate(options);
  const started = performance.now();
  const level = levelOf(item, options.autonomy);
  const review = item.require_review === true || !autoApproved(level, 'impl_review');
  const feature = featureOfItem(item);
  const implPath = path.join(options.repoDir, 'docs', 'IMPL', `IMPL-${item.slug}.yaml`);
  const base = { slug: item.slug, title: item.title };
  if (!slugPattern.test(item.slug)) {
    const reason = `slug "${item.slug}" is not a valid IMPL slug (lower-case letters, digits and dashes)`;
    await updateQueueItem(item.file_path, { status: 'blocked', blocked_reason: reason });
    return { ...base, status: 'blocked', reason, duration_ms: 0 };
  }
  if (item.status !== 'in_progress') await updateQueueItem(item.file_path, { status: 'in_progress', impl_path: path.relative(options.repoDir, implPath) });
  options.log(`daemon: ${item.slug}: running (${level}${review ? ', plan review by a human' : ''})`);
  let result: AutopilotResult;
  try {
    result = await runAutopilot({
      ...options.run,
      feature,
      slug: item.slug,
      // The daemon updates the item while the run goes on: never the Scout's or an agent's to change (X28-02), and
      // its own updates are not taken for an agent's leftovers.
      orchestratorFiles: [...(options.run?.orchestratorFiles ?? []), item.file_path],
      repoDir: options.repoDir,
      auto: !review,
      approve: async () => !review,
      env: options.env,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    await updateQueueItem(item.file_path, { status: 'blocked', blocked_reason: reason, awaiting_review: undefined });
    return { ...base, status: 'blocked', reason, duration_ms: Math.round(performance.now() - started) };
  }
  const outcome = { ...base, impl_path: result.impl_path, state: result.state, duration_ms: Math.round(performance.now() - started) };
  const implRelative = result.impl_path ? path.relative(options.repoDir, result.impl_path) : undefined;
  if (result.success) {
    await updateQueueItem(item.file_path, { status: 'complete', awaiting_review: undefined, blocked_reason: undefined, ...(implRelative ? { impl_path: implRelative } : {}) });
    return { ...outcome, status: 'complete' };
  }
  if (options.signal?.aborted) {
    // Interrupted: the item stays in_progress and is resumed by the next daemon.
    return { ...outcome, status: 'retrying', reason: 'interrupted; resumed by the next daemon run' };
  }
  if (result.stopped?.startsWith('waiting for approval')) {
    await updateQueueItem(item.file_path, { awaiting_review: true, ...(implRelative ? { impl_path: implRelative } : {}) });
    return { ...outcome, status: 'awaiting_review', reason: `plan ready for review: approve with \`polywave run ${implRelative ?? item.slug} --yes\`, or set require_review: false / autonomy_override on the item` };
  }
  const retries = item.auto_retries ?? 0;
  const maxRetries = options.maxAutoRetries ?? 2;
  const reason = result.stopped ?? `stopped in state ${result.state}`;
  if (result.state !== 'NOT_SUITABLE' && stoppedAtGate(result) && autoApproved(level, 'gate_failure') && retries < maxRetries) {
    await updateQueueItem(item.file_path, { auto_retries: retries + 1 });
    return { ...outcome, status: 'retrying', reason: `${reason} — auto-retry ${retries + 1}/${maxRetries} (gate_failure)` };
  }
  await updateQueueItem(item.file_path, { status: 'blocked', blocked_reason: reason, awaiting_review: undefined });
  return { ...outcome, status: 'blocked', reason };
}

/**
 * An item waiting for its plan review that a human then ran to the end (`polywave run <impl>
 * --yes` archives the IMPL in docs/IMPL/complete/) is complete.
 */
async function reconcileReviewed(items: QueueFileItem[], options: DaemonOptions): Promise<QueueFileItem[]> {
  const out: QueueFileItem[] = [];
  for (const item of items) {
    if (item.status === 'in_progress' && item.awaiting_review === true) {
      const archived = path.join(options.repoDir, 'docs', 'IMPL', 'complete', `IMPL-${item.slug}.yaml`);
      if (existsSync(archived)) {
        await safeUpdate(options)(item.file_path, { status: 'complete', awaiting_review: undefined, impl_path: path.relative(options.repoDir, archived) });
        options.log(`daemon: ${item.slug}: complete (its IMPL was approved and run by hand)`);
        out.push({ ...item, status: 'complete', awaiting_review: undefined } as QueueFileItem);
        continue;
      }
    }
    out.push(item);
  }
  return out;
}

/**
 * Fail closed: an item whose autonomy_override, require_review, status or depends_on the daemon
 * does not understand is blocked with the reason, never run under a looser rule.
 */
async function blockInvalid(items: QueueFileItem[], options: DaemonOptions): Promise<QueueFileItem[]> {
  const out: QueueFileItem[] = [];
  for (const item of items) {
    if (item.invalid === undefined || item.status === 'complete') {
      out.push(item);
      continue;
    }
    if (item.status !== 'blocked' || item.blocked_reason !== item.invalid) {
      await safeUpdate(options)(item.file_path, { status: 'blocked', blocked_reason: item.invalid });
      options.log(`daemon: ${item.slug}: blocked — ${item.invalid}`);
    }
    out.push({ ...item, status: 'blocked' });
  }
  return out;
}

/**
 * `start` → … → `start` when following `depends_on` among the queue's unfinished items leads back to
 * `start` (such an item can never become eligible), else undefined.
 */
export function dependencyCycle(start: string, items: readonly QueueItem[]): string[] | undefined {
  const bySlug = new Map(items.map((item) => [item.slug, item]));
  const seen = new Set<string>();
  const stack: string[][] = [[start]];
  while (stack.length > 0) {
    const trail = stack.pop()!;
    for (const dependency of bySlug.get(trail[trail.length - 1]!)?.depends_on ?? []) {
      if (dependency === start) return [...trail, start];
      const next = bySlug.get(dependency);
      if (!next || next.status === 'complete' || seen.has(dependency)) continue;
      seen.add(dependency);
      stack.push([...trail, dependency]);
    }
  }
  return undefined;
}

/** Queued items on a `depends_on` cycle would wait forever: blocked with the cycle as the reason. */
async function blockCycles(items: QueueFileItem[], options: DaemonOptions): Promise<QueueFileItem[]> {
  const out: QueueFileItem[] = [];
  for (const item of items) {
    const cycle = item.status === 'queued' ? dependencyCycle(item.slug, items) : undefined;
    if (!cycle) {
      out.push(item);
      continue;
    }
    const reason = `depends_on cycle: ${cycle.join(' → ')} (remove one dependency, then set status: queued)`;
    await safeUpdate(options)(item.file_path, { status: 'blocked', blocked_reason: reason });
    options.log(`daemon: ${item.slug}: blocked — ${reason}`);
    out.push({ ...item, status: 'blocked', blocked_reason: reason });
  }
  return out;
}

/** Finalize steps whose failure is a quality-gate failure (what `gate_failure` autonomy may retry). */
const gateSteps = new Set(['run-gates', 'run-post-merge-gates', 'verify-build']);

/**
 * True when the run stopped because a quality gate failed in its last wave. Every other stop (an agent
 * BLOCKED, a Scout that could not plan, a budget, a merge conflict, prepare-wave refusing) is not
 * retried under `gate_failure`: a human must look.
 */
export function stoppedAtGate(result: Pick<AutopilotResult, 'success' | 'waves'>): boolean {
  const last = result.waves[result.waves.length - 1];
  if (result.success || !last || last.success || last.blocked || last.budget) return false;
  return gateSteps.has(last.finalize?.failed_step?.step ?? '');
}

/** Runs the daemon until `signal`, `once` finds nothing eligible, or `maxItems` runs. */
export async function runDaemon(options: DaemonOptions): Promise<DaemonResult> {
  const unlock = lockDaemon(options.repoDir);
  options.log(`daemon: watching ${path.join(options.repoDir, 'docs', 'IMPL', 'queue')} (autonomy ${options.autonomy}${options.once ? ', --once' : `, every ${(options.pollIntervalMs ?? 30_000) / 1000} s`})`);
  const outcomes: DaemonItemOutcome[] = [];
  const told = new Set<string>();
  let passes = 0;
  try {
    for (;;) {
      if (options.signal?.aborted) return { outcomes, passes, stopped: 'signal' };
      passes += 1;
      const read = await readQueue(options.repoDir, {
        onBadFile: (file, message) => {
          if (told.has(`bad:${file}`)) return;
          told.add(`bad:${file}`);
          options.log(`daemon: warning: skipping ${message}`);
        },
      });
      const items = await reconcileReviewed(await blockCycles(await blockInvalid(read, options), options), options);
      const item = pick(items, await completedSlugs(options.repoDir, items), options, told);
      if (item) {
        const outcome = await runItem(item, options);
        outcomes.push(outcome);
        options.onOutcome?.(outcome);
        options.log(`daemon: ${outcome.slug}: ${outcome.status}${outcome.state ? ` (${outcome.state})` : ''}${outcome.reason ? ` — ${outcome.reason}` : ''} after ${(outcome.duration_ms / 1000).toFixed(1)} s`);
        if (options.maxItems !== undefined && outcomes.length >= options.maxItems) return { outcomes, passes, stopped: 'max-items' };
        // An item waiting for review is not picked again until something changes; go straight on.
        continue;
      }
      if (options.once) return { outcomes, passes, stopped: 'once' };
      await sleep(options.pollIntervalMs ?? 30_000, options.signal);
    }
  } finally {
    unlock();
  }
}
