import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGit } from '../git/git-cli.js';
import { createTestRepo, type TestRepo } from '../../test/support/git-repo.js';
import { cleanupWave } from './cleanup.js';

/** Three agent worktrees (A, B, C) with one commit each; A and B merged into main. */
async function wave(): Promise<{ repo: TestRepo; worktree: (id: string) => string; branch: (id: string) => string; tips: Map<string, string> }> {
  const repo = await createTestRepo();
  const worktree = (id: string) => path.join(repo.dir, '.claude', 'worktrees', 'polywave', 'demo', `wave1-agent-${id}`);
  const branch = (id: string) => `polywave/demo/wave1-agent-${id}`;
  const tips = new Map<string, string>();
  for (const id of ['A', 'B', 'C']) {
    await repo.git.worktreeAdd({ path: worktree(id), branch: branch(id), base: 'HEAD', createBranch: true });
    writeFileSync(path.join(worktree(id), `${id}.txt`), id);
    const git = createGit(worktree(id), { env: repo.env });
    await git.add([`${id}.txt`]);
    tips.set(id, await git.commit({ message: id }));
  }
  writeFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), '/.claude/\n');
  for (const id of ['A', 'B']) await repo.run(['merge', '--no-ff', '-q', '-m', id, branch(id)]);
  return { repo, worktree, branch, tips };
}

describe('cleanupWave', () => {
  it('removes merged worktrees and branches (one batched branch -d), keeps the unmerged one', async () => {
    const { repo, worktree, branch } = await wave();
    const result = await cleanupWave({ git: repo.git, targetGit: repo.git, targetBranch: 'main', wave: 1, agents: ['A', 'B', 'C'].map((id) => ({ agent: id, branch: branch(id), worktreePath: worktree(id) })) });
    expect(result.agents.map((line) => [line.agent, line.worktree_removed, line.branch_deleted])).toEqual([
      ['A', true, true],
      ['B', true, true],
      ['C', false, false],
    ]);
    expect(result.agents[2]?.kept).toMatch(/not reachable from main \(not merged\)/);
    expect(result.success).toBe(false);
    expect(existsSync(worktree('C'))).toBe(true);
    expect(await repo.git.branchExists(branch('C'))).toBe(true);
    expect(existsSync(worktree('A'))).toBe(false);
  });

  it('never force-removes a worktree with uncommitted changes: kept with its branch, the files named', async () => {
    const { repo, worktree, branch } = await wave();
    writeFileSync(path.join(worktree('A'), 'unsaved.txt'), 'work in progress');
    const result = await cleanupWave({ git: repo.git, targetGit: repo.git, targetBranch: 'main', wave: 1, agents: [{ agent: 'A', branch: branch('A'), worktreePath: worktree('A') }] });
    expect(result.agents[0]).toMatchObject({ worktree_removed: false, branch_deleted: false });
    expect(result.agents[0]?.kept).toContain('has uncommitted changes (unsaved.txt)');
    expect(existsSync(path.join(worktree('A'), 'unsaved.txt'))).toBe(true);
    expect(await repo.git.branchExists(branch('A'))).toBe(true);
  });

  it('a branch already gone whose reported commit is not in the target gets the recovery command', async () => {
    const { repo, worktree, branch, tips } = await wave();
    await repo.git.worktreeRemove(worktree('C'));
    await repo.run(['branch', '-D', branch('C')]); // the data loss E9 guards against
    const result = await cleanupWave({
      git: repo.git,
      targetGit: repo.git,
      targetBranch: 'main',
      wave: 1,
      agents: [
        { agent: 'A', branch: branch('A'), worktreePath: worktree('A'), reportCommit: tips.get('A')! },
        { agent: 'C', branch: branch('C'), worktreePath: worktree('C'), reportCommit: tips.get('C')! },
      ],
    });
    expect(result.recovery).toEqual([`git branch recover-C ${tips.get('C')}`]);
    expect(result.agents[1]).toMatchObject({ branch_deleted: false, recovery: `git branch recover-C ${tips.get('C')}` });
    expect(result.agents[0]).toMatchObject({ worktree_removed: true, branch_deleted: true });
  });

  it('dry run removes nothing', async () => {
    const { repo, worktree, branch } = await wave();
    const result = await cleanupWave({ git: repo.git, targetGit: repo.git, targetBranch: 'main', wave: 1, dryRun: true, agents: [{ agent: 'A', branch: branch('A'), worktreePath: worktree('A') }] });
    expect(result.agents[0]?.kept).toContain('dry run: would remove');
    expect(existsSync(worktree('A'))).toBe(true);
  });
});
