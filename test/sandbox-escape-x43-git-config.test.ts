/**
 * ESCAPE REPRODUCTION (outside attack X43-18). A worktree agent reads the main checkout's `.git/config` (git needs it)
 * with the credentials in it masked: the mask is a bind of the file as it was when the sandbox started. git writes its
 * config by lock file + rename, so after any config write during the run (`git remote set-url`, `git config`) the path
 * named the new file — unmasked — and a token set then was read in clear.
 *
 * Black box through `run-wave` with script agents: agent A's first attempt loops 20 s reading `<main>/.git/config`
 * through a computed path and prints it once it carries the new token; the test runs `git remote set-url` with a token
 * once the loop runs. Expected (fixed): the replaced config is a stale view — the call is killed, its output withheld,
 * the run ends (SANDBOX_VIEW_STALE) — and the token is nowhere in A's journal.
 */
import { describe, it } from 'vitest';
import { sandboxStatus } from '../src/agents/sandbox/index.js';
import { expectLateConfigTokenNeverRead } from './support/late-config-token.js';

const available = (await sandboxStatus()).available;

describe.skipIf(!available)("the masked .git/config rewritten during a worktree agent's run (X43-18)", () => {
  it('a token set with git remote set-url meanwhile is never read: the replaced config ends the run', async () => {
    await expectLateConfigTokenNeverRead({
      token: 'X43TOKENNEWxyz18',
      setup: async (repo) => void (await repo.run(['remote', 'add', 'origin', 'https://u:X43TOKENSTARTabc@github.com/x/y.git'])),
      watched: (repo) => repo.path('.git/config'),
      change: async (repo) => void (await repo.run(['remote', 'set-url', 'origin', 'https://u:X43TOKENNEWxyz18@github.com/x/y.git'])),
    });
  }, 300_000);
});
