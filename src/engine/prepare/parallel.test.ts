import { describe, expect, it } from 'vitest';
import { GitError } from '../../git/git-error.js';
import { isLockContention, mapBounded, retryOnLockContention } from './parallel.js';

function gitError(stderr: string): GitError {
  return new GitError({ args: ['worktree', 'add'], exitCode: 128, stderr, cwd: '/repo' });
}

describe('mapBounded', () => {
  it('never runs more than the limit at once, keeps input order and settles every item', async () => {
    let running = 0;
    let peak = 0;
    const outcomes = await mapBounded([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      running += 1;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 5 * (8 - item)));
      running -= 1;
      if (item === 4) throw new Error('four');
      return item * 10;
    });
    expect(peak).toBe(3);
    expect(outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : (outcome.reason as Error).message))).toEqual([10, 20, 30, 'four', 50, 60, 70]);
  });

  it('rejects items not started once the signal aborts', async () => {
    const controller = new AbortController();
    const outcomes = await mapBounded([1, 2, 3], 1, async (item) => {
      if (item === 1) controller.abort(new Error('stop'));
      return item;
    }, controller.signal);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  });
});

describe('lock contention', () => {
  it('recognizes git lock and worktree-admin races, nothing else', () => {
    expect(isLockContention(gitError("fatal: Unable to create '/r/.git/index.lock': File exists."))).toBe(true);
    expect(isLockContention(gitError("error: cannot lock ref 'refs/heads/x': Unable to create"))).toBe(true);
    expect(isLockContention(gitError('fatal: failed to read .git/worktrees/w14/commondir: Success'))).toBe(true);
    expect(isLockContention(gitError("fatal: 'x' is already checked out at '/wt'"))).toBe(false);
    expect(isLockContention(new Error('index.lock'))).toBe(false);
  });

  it('retries contention with back-off and gives up on anything else', async () => {
    let calls = 0;
    const value = await retryOnLockContention(async () => {
      calls += 1;
      if (calls < 3) throw gitError("fatal: Unable to create '/r/.git/packed-refs.lock': File exists.");
      return 'done';
    }, { initialDelayMs: 1 });
    expect([value, calls]).toEqual(['done', 3]);
    calls = 0;
    await expect(retryOnLockContention(async () => {
      calls += 1;
      throw gitError('fatal: invalid reference: nope');
    }, { initialDelayMs: 1 })).rejects.toThrow(/invalid reference/);
    expect(calls).toBe(1);
    await expect(retryOnLockContention(async () => {
      throw gitError("fatal: Unable to create '/r/.git/index.lock': File exists.");
    }, { attempts: 2, initialDelayMs: 1 })).rejects.toThrow(/index.lock/);
  });
});
