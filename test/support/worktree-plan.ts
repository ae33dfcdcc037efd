import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { buildAgentSandboxPlan } from '../../src/agents/sandbox/agent-sandbox.js';
import type { SandboxPlan } from '../../src/sandbox/index.js';
import type { TestRepo } from './git-repo.js';

/** Agent A's worktree of `repo` (where polywave puts it), a private HOME and TMPDIR, and the sandbox plan an agent there gets. */
export async function worktreeAgentPlan(repo: TestRepo): Promise<{ worktree: string; home: string; tmp: string; plan: SandboxPlan }> {
  const worktree = path.join(repo.dir, '.claude', 'worktrees', 'wave1-agent-A');
  await repo.run(['worktree', 'add', '--quiet', '-b', 'a', worktree]);
  const home = repo.sibling('home');
  const tmp = repo.sibling('tmp');
  mkdirSync(home);
  mkdirSync(tmp);
  const plan = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env as Record<string, string> });
  return { worktree, home, tmp, plan };
}
