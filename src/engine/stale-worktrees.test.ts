import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGit } from '../git/git-cli.js';
import { createTestRepo, type TestRepo } from '../../test/support/git-repo.js';
import { cleanStaleWorktrees, detectStaleWorktrees, identifyAgentWorktree } from './stale-worktrees.js';

function implText(slug: string, state = 'WAVE_EXECUTING'): string {
  return `title: ${slug}\nfeature_slug: ${slug}\nverdict: SUITABLE\nstate: ${state}\nwaves:\n    - number: 1\n      agents:\n        - id: A\n          task: t\n`;
}

async function addAgentWorktree(repo: TestRepo, slug: string, agent: string): Promise<string> {
  const worktree = repo.path(`.claude/worktrees/polywave/${slug}/wave1-agent-${agent}`);
  await repo.git.worktreeAdd({ path: worktree, branch: `polywave/${slug}/wave1-agent-${agent}`, base: 'HEAD', createBranch: true });
  return worktree;
}

describe('identifyAgentWorktree', () => {
  it('reads slug, wave and agent from the E5 path or the branch', () => {
    expect(identifyAgentWorktree('/r', { path: '/r/.claude/worktrees/polywave/feat/wave2-agent-B3' })).toEqual({ slug: 'feat', wave: 2, agent: 'B3' });
    expect(identifyAgentWorktree('/r', { path: '/elsewhere/x', branch: 'polywave/feat/wave1-agent-A' })).toEqual({ slug: 'feat', wave: 1, agent: 'A' });
    expect(identifyAgentWorktree('/r', { path: '/elsewhere/x', branch: 'wave1-agent-A' })).toBeUndefined();
    expect(identifyAgentWorktree('/r', { path: '/r/.claude/worktrees/polywave/program/p/tier1-impl-x', branch: 'polywave/program/p/tier1-impl-x' })).toBeUndefined();
  });
});

describe('E4a detection and cleaning', () => {
  it('finds completed, orphaned, branch-less and vanished worktrees; cleans only what holds no work', async () => {
    const repo = await createTestRepo({
      files: {
        'docs/IMPL/IMPL-active.yaml': implText('active'),
        'docs/IMPL/complete/IMPL-done.yaml': implText('done', 'COMPLETE'),
        'docs/IMPL/IMPL-over.yaml': implText('over', 'NOT_SUITABLE'),
      },
    });
    const active = await addAgentWorktree(repo, 'active', 'A');
    const done = await addAgentWorktree(repo, 'done', 'A');
    const over = await addAgentWorktree(repo, 'over', 'A');
    const orphan = await addAgentWorktree(repo, 'ghost', 'A');
    const vanished = await addAgentWorktree(repo, 'ghost', 'B');
    rmSync(vanished, { recursive: true, force: true });
    const dirty = await addAgentWorktree(repo, 'done', 'B');
    writeFileSync(path.join(dirty, 'wip.txt'), 'unsaved\n');
    const locked = await addAgentWorktree(repo, 'done', 'C');
    await repo.run(['worktree', 'lock', locked]);

    const stale = await detectStaleWorktrees({ git: repo.git });
    const reasons = Object.fromEntries(stale.map((item) => [item.worktree_path, item.reason]));
    expect(reasons).toEqual({
      [done]: 'completed_impl',
      [dirty]: 'completed_impl',
      [locked]: 'completed_impl',
      [over]: 'completed_impl',
      [orphan]: 'orphaned',
      [vanished]: 'missing_directory',
    });
    expect(reasons[active]).toBeUndefined();
    expect(await detectStaleWorktrees({ git: repo.git, slug: 'ghost' })).toHaveLength(2);

    const gitAt = (directory: string) => createGit(directory, { env: repo.env });
    const dry = await cleanStaleWorktrees(stale, { git: repo.git, gitAt, bases: ['HEAD'], dryRun: true });
    expect(dry.cleaned).toEqual([]);
    expect(dry.skipped).toHaveLength(6);
    expect(existsSync(done)).toBe(true);

    const result = await cleanStaleWorktrees(stale, { git: repo.git, gitAt, bases: ['HEAD'] });
    expect(result.errors).toEqual([]);
    expect(result.cleaned.map((item) => item.worktree_path).sort()).toEqual([done, orphan, over, vanished].sort());
    expect(result.skipped.map((item) => item.worktree_path).sort()).toEqual([dirty, locked].sort());
    expect(result.skipped.find((item) => item.worktree_path === dirty)?.detail).toContain('wip.txt');
    expect(readFileSync(path.join(dirty, 'wip.txt'), 'utf8')).toBe('unsaved\n');
    // Merged branches of cleaned worktrees are deleted with `branch -d`.
    expect(await repo.git.branchExists('polywave/done/wave1-agent-A')).toBe(false);
    expect(existsSync(active)).toBe(true);

    const forced = await cleanStaleWorktrees(await detectStaleWorktrees({ git: repo.git, slug: 'done' }), { git: repo.git, gitAt, bases: ['HEAD'], force: true });
    expect(forced.cleaned.map((item) => item.worktree_path)).toEqual([locked]);
    expect(forced.skipped.map((item) => item.worktree_path)).toEqual([dirty]);
  });
});
