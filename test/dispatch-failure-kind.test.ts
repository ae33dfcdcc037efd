import { describe, expect, it } from 'vitest';
import { kindOfFailure } from '../src/dispatch/redis-dispatcher.js';

// Outside round A23-52 (issue 17): a worker's job failure counted TRANSIENT when its text held "lock" (or "stalled")
// anywhere (`/stalled|lock/i`): a worktree setup failing on `yarn.lock` / `--frozen-lockfile` ran three times on three
// workers (the same failure without the word: fatal at once), and so did any failure of a slug like `clock` or
// `block-list` (`DISPATCH_FORGED: job clock.w1.A…`). Now by the leading code, or BullMQ's own stall/lock errors as they
// begin — never a word inside text that carries project content.
describe('kindOfFailure (A23-52)', () => {
  it('a word inside the text does not make a failure transient', () => {
    expect(kindOfFailure("WORKTREE_SETUP_FAILED: worker w3 on vm: the worktree setup of agent A failed: error: yarn install --frozen-lockfile: no yarn.lock")).toBe('fatal');
    expect(kindOfFailure('DISPATCH_FORGED: job clock.w1.A.1a2b.a1: carries no valid signature of the dispatch key')).toBe('fatal');
    expect(kindOfFailure('fatal: script step 2 (bash) failed: the build stalled on block-list.ts')).toBe('fatal');
  });
  it("the codes and BullMQ's stall/lock errors stay as they were", () => {
    expect(kindOfFailure('DISPATCH_LOCK_LOST: job x lost its lock on w1 before the push; polywave/x/wave1-agent-A was not pushed')).toBe('transient');
    expect(kindOfFailure('job stalled more than allowable limit')).toBe('transient');
    expect(kindOfFailure('Missing lock for job x.w1.A.a1. moveToFinished')).toBe('transient');
    expect(kindOfFailure('Lock mismatch for job x.w1.A.a1. Cmd moveToFinished from active')).toBe('transient');
    expect(kindOfFailure('DISPATCH_REDIS_LOST: Redis at redis://127.0.0.1:1 has not answered')).toBe('transient');
    expect(kindOfFailure('DISPATCH_BRANCH_MOVED: x')).toBe('transient');
    expect(kindOfFailure('DISPATCH_JOB_TOO_LARGE: x')).toBe('config');
    expect(kindOfFailure('DISPATCH_NO_WORKER: x')).toBe('config');
  });
});
