import { describe, expect, it } from 'vitest';
import { expectCodedError } from './support/cli-assert.js';
import { runCli } from './support/cli.js';
import { createWaveFixture } from './support/wave-fixture.js';

// Issue 13: an agent that reports from its own worktree (the Claude Code plugin's wave agents run
// `polywave set-completion … --status complete` there) need not copy a SHA: commit, branch and
// worktree come from git — only in that agent's worktree, on that agent's branch.

describe('set-completion fills commit, branch and worktree from the agent worktree', () => {
  it('fills them for the agent whose worktree it is, and nowhere else', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]] });
    await fixture.startWave(1);
    const commitA = await fixture.work('A', { 'src/a.ts': 'export const a = 1;\n' });
    const env = fixture.repo.env as Record<string, string>;

    // Agent B cannot file a report with A's commit by running from A's worktree.
    expectCodedError(await runCli(['set-completion', fixture.implPath, '--agent', 'B', '--status', 'complete', '--files-created', 'src/b.ts'], { cwd: fixture.worktree('A'), env }), { code: 'G003_COMMIT_MISSING' });
    // Nor from the main checkout.
    expectCodedError(await runCli(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete'], { cwd: fixture.repo.dir, env }), { code: 'G003_COMMIT_MISSING' });
    // A claimed branch that is not the checkout's is not overridden.
    expectCodedError(await runCli(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete', '--branch', 'main'], { cwd: fixture.worktree('A'), env }), { code: 'G003_COMMIT_MISSING' });
    expect(fixture.manifest().completion_reports ?? {}).toEqual({});

    const ok = await runCli(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete', '--files-created', 'src/a.ts', '--verification', 'PASS'], { cwd: fixture.worktree('A'), env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(fixture.manifest().completion_reports?.A).toMatchObject({ status: 'complete', commit: commitA, branch: fixture.branch('A'), worktree: fixture.worktree('A') });

    // Found by an outside attack: a worktree elsewhere on a branch named like A's (another IMPL's, or this IMPL's name) lent its commit.
    const elsewhere = `${fixture.repo.dir}-evil/wave1-agent-A`;
    await fixture.repo.git.run(['worktree', 'add', '-q', '-b', 'polywave/other/wave1-agent-A', elsewhere, 'HEAD']);
    expectCodedError(await runCli(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete', '--worktree', elsewhere], { cwd: fixture.repo.dir, env }), { code: 'G003_COMMIT_MISSING' });
    const sameName = `${fixture.repo.dir}-evil2/wave1-agent-A`;
    await fixture.repo.git.run(['worktree', 'add', '-q', '--detach', sameName, 'HEAD']);
    await fixture.gitAt(sameName).run(['checkout', '-q', '-B', 'polywave/demo/wave1-agent-A-x']);
    expectCodedError(await runCli(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete'], { cwd: sameName, env }), { code: 'G003_COMMIT_MISSING' });

    // In A's worktree but on another branch: refused.
    const gitA = fixture.gitAt(fixture.worktree('A'));
    await gitA.run(['checkout', '-q', '-b', 'elsewhere']);
    expectCodedError(await runCli(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete'], { cwd: fixture.worktree('A'), env }), { code: 'G003_COMMIT_MISSING' });
  });
});
