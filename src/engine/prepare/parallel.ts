import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { GitError } from '../../git/git-error.js';

/**
 * Runs `task` over `items` with at most `limit` in flight and returns every outcome in input
 * order (settled: one failure never hides the others — the caller reports each item).
 * Items not yet started when `signal` aborts are rejected with the abort reason.
 */
export async function mapBounded<Item, Result>(
  items: readonly Item[],
  limit: number,
  task: (item: Item, index: number) => Promise<Result>,
  signal?: AbortSignal,
): Promise<Array<PromiseSettledResult<Result>>> {
  const outcomes: Array<PromiseSettledResult<Result>> = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      try {
        signal?.throwIfAborted();
        outcomes[index] = { status: 'fulfilled', value: await task(items[index]!, index) };
      } catch (error) {
        outcomes[index] = { status: 'rejected', reason: error };
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, () => worker());
  await Promise.all(workers);
  return outcomes;
}

/**
 * Default bound on concurrent git processes that write (worktree adds): the CPUs that are idle
 * right now (CPU count minus the 1-minute load average), between 1 and 8. A `worktree add` is
 * mostly process start-up and kernel file work; on a saturated machine extra parallel adds only
 * contend (measured on the 2-vCPU development VMs under load 7: 24 adds took 3.2–9.1 s serial,
 * 5.3–9.2 s with 2 at once and 8.7–12.0 s with 4 at once), while an idle 8-core machine uses 8.
 */
export function defaultGitConcurrency(): number {
  const idle = availableParallelism() - loadavg()[0]!;
  return Math.min(8, Math.max(1, Math.round(idle)));
}

/**
 * git serializes writers with lock files (`index.lock`, `refs/heads/x.lock`, `config.lock`,
 * `packed-refs.lock`, `.git/worktrees/<name>/…`). Two of our own parallel `git` processes can
 * meet on one of them; that is contention, not a failure.
 */
export function isLockContention(error: unknown): boolean {
  if (!(error instanceof GitError)) return false;
  // Also git's own race between concurrent `worktree add`s: one lists the worktrees while another
  // is still writing its administrative files ("failed to read .git/worktrees/x/commondir").
  return /\.lock'?:? File exists|Unable to create '[^']*\.lock'|cannot lock ref|could not lock config file|unable to lock|Another git process seems to be running|failed to read [^\n]*worktrees\/[^\n]*\/(?:commondir|gitdir|HEAD)/i.test(error.stderr);
}

/** Options of {@link retryOnLockContention}. */
export interface LockRetryOptions {
  /** Attempts in all (default 8). */
  attempts?: number;
  /** First back-off in ms, doubled per attempt with jitter, capped at 1 s (default 25). */
  initialDelayMs?: number;
  signal?: AbortSignal;
}

/** Runs `action`, retrying with jittered exponential back-off while git reports lock contention. */
export async function retryOnLockContention<Result>(action: () => Promise<Result>, options: LockRetryOptions = {}): Promise<Result> {
  const attempts = options.attempts ?? 8;
  let delay = options.initialDelayMs ?? 25;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await action();
    } catch (error) {
      if (attempt >= attempts || !isLockContention(error)) throw error;
      await sleep(Math.min(1000, delay) * (0.5 + Math.random()), undefined, options.signal ? { signal: options.signal } : undefined);
      delay *= 2;
    }
  }
}
