import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { closeImpl } from '../src/engine/close-impl.js';
import { createGit } from '../src/git/git-cli.js';
import { createFinishedRepo, fixtureManifestPath } from './support/closing-fixture.js';

// finalize-tier closes a tier's IMPLs one after another without committing in between, so it reads
// the checked-out branch and the worktree list once and hands them to every close (`known`). The
// close must decide exactly as when it reads them itself.
describe('closeImpl with what the caller already read (known)', () => {
  it('cleans the same stale worktrees and marks, archives and records the same as reading them itself', async () => {
    const own = await createFinishedRepo();
    const given = await createFinishedRepo();
    const ownResult = await closeImpl({ implPath: own.repo.path(fixtureManifestPath), date: '2026-05-12', repoDir: own.repo.dir, env: own.repo.env, commit: false });
    const worktrees = await given.repo.git.worktreeList();
    expect(worktrees).toHaveLength(4);
    const givenResult = await closeImpl({ implPath: given.repo.path(fixtureManifestPath), date: '2026-05-12', repoDir: given.repo.dir, env: given.repo.env, commit: false, known: { branch: 'main', worktrees } });
    expect(givenResult.worktrees_cleaned).toBe(3);
    const summary = (result: typeof ownResult) => result.steps.map((step) => [step.step, step.status]);
    expect(summary(givenResult)).toEqual(summary(ownResult));
    expect(givenResult.worktrees_cleaned).toBe(ownResult.worktrees_cleaned);
    expect(givenResult.marked).toBe(true);
    expect(await given.repo.git.worktreeList()).toHaveLength(1);
    expect(existsSync(given.repo.path('docs/IMPL/complete/IMPL-closing-test.yaml'))).toBe(true);
    expect(given.repo.read('docs/CONTEXT.md')).toBe(own.repo.read('docs/CONTEXT.md'));
  });

  it('still refuses when the branch it is given is an agent branch, and changes nothing', async () => {
    const fixture = await createFinishedRepo();
    const before = fixture.repo.read(fixtureManifestPath);
    const git = createGit(fixture.repo.dir, { env: fixture.repo.env });
    await expect(closeImpl({ implPath: fixture.repo.path(fixtureManifestPath), date: '2026-05-12', repoDir: fixture.repo.dir, env: fixture.repo.env, commit: false, known: { branch: 'polywave/closing-test/wave1-agent-A', worktrees: await git.worktreeList() } })).rejects.toThrow(/agent branch polywave\/closing-test\/wave1-agent-A/);
    expect(fixture.repo.read(fixtureManifestPath)).toBe(before);
    expect(await git.worktreeList()).toHaveLength(4);
  });

  it('a worktree list read before an earlier close removed its own worktrees still serves the next one', async () => {
    const fixture = await createFinishedRepo();
    const worktrees = await fixture.repo.git.worktreeList();
    // The entries of another IMPL's slug (already gone) are not this IMPL's: the list is filtered by slug.
    const foreign = { ...worktrees[1]!, path: fixture.repo.path('.claude/worktrees/polywave/other-impl/wave1-agent-Z'), branch: 'polywave/other-impl/wave1-agent-Z' };
    const result = await closeImpl({ implPath: fixture.repo.path(fixtureManifestPath), date: '2026-05-12', repoDir: fixture.repo.dir, env: fixture.repo.env, commit: false, known: { branch: 'main', worktrees: [...worktrees, foreign] } });
    expect(result.worktrees_cleaned).toBe(3);
    expect(result.warnings).toEqual([]);
  });
});
