import { mkdirSync } from 'node:fs';
import { createTestRepo, type TestRepo } from './git-repo.js';

/** An agent's layout beside a fresh repository: its worktree `wt-A` on `branch`, and a private HOME and TMPDIR. */
export interface AgentLayout {
  repo: TestRepo;
  worktree: string;
  home: string;
  tmp: string;
}

/** A repository with `src/a.ts`, agent A's worktree on `branch` at HEAD, and its scratch HOME/TMPDIR (created). */
export async function createAgentLayout(branch: string): Promise<AgentLayout> {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch, base: 'HEAD', createBranch: true });
  const home = repo.sibling('scratch/home');
  const tmp = repo.sibling('scratch/tmp');
  mkdirSync(home, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  return { repo, worktree, home, tmp };
}
