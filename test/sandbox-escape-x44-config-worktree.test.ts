/**
 * ESCAPE REPRODUCTION (outside attack X44-09, a gap of X43-18). X43-18's stale-view watch covered the git config files
 * present when the sandbox started (and `.git/config`): with `extensions.worktreeConfig` on and no `.git/config.worktree`
 * yet, a `git config --worktree remote.origin.url https://u:TOKEN@…` during a worktree agent's run (a CI step, a human)
 * made the main worktree's `config.worktree`, which was neither masked nor watched: the agent read the token in clear.
 *
 * Black box through `run-wave` with script agents: agent A's first attempt loops 20 s reading `<main>/.git/config.worktree`
 * through a computed path and prints it once it carries the token; the test makes the file once the loop runs.
 * Expected (fixed): the file made is a stale view — the call is killed, its output withheld, the run ends
 * (SANDBOX_VIEW_STALE) — and the token is nowhere in the journal or the worktrees.
 */
import { describe, it } from 'vitest';
import { sandboxStatus } from '../src/agents/sandbox/index.js';
import { expectLateConfigTokenNeverRead } from './support/late-config-token.js';

const available = (await sandboxStatus()).available;

describe.skipIf(!available)("a .git/config.worktree made during a worktree agent's run (X44-09)", () => {
  it('a token set with git config --worktree meanwhile is never read: the file made ends the run', async () => {
    await expectLateConfigTokenNeverRead({
      token: 'X44TOKENLATEwt09',
      setup: async (repo) => void (await repo.run(['config', 'extensions.worktreeConfig', 'true'])),
      watched: (repo) => repo.path('.git/config.worktree'),
      change: async (repo) => void (await repo.run(['config', '--worktree', 'remote.origin.url', 'https://u:X44TOKENLATEwt09@github.com/x/y.git'])),
    });
  }, 300_000);
});
