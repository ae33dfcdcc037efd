// Issue 11, outside attack X9 #1/#2: a repository whose git config includes a file inside the working
// tree (`include.path = ../.gitconfig`, a documented way to share a repository's config) lets an
// agent — a solo agent writing it, or any agent whose owned copy is merged — name programs
// (`filter.x.clean`, `diff.x.command`, `gpg.program`) that every git command polywave runs outside the
// sandbox then executes. prepare-wave refuses such a repository before anything is written.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { createWaveFixture } from './support/wave-fixture.js';

const twoAgents = { waves: [[{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }]], state: 'WAVE_PENDING' };

describe('X9 #1/#2: a git config include inside the working tree', () => {
  it('prepare-wave refuses it (GIT_CONFIG_IN_WORKTREE, nothing written) whether the included file exists or not; an include inside .git/ is fine', async () => {
    const fixture = await createWaveFixture(twoAgents);
    const git = (args: string[]) => execFileSync('git', args, { cwd: fixture.repo.dir, env: { ...process.env, ...fixture.repo.env } as NodeJS.ProcessEnv }).toString();
    const prepare = () => prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T10:00:00Z') });
    const snapshot = () => ({ head: git(['rev-parse', 'HEAD']), branches: git(['branch', '--list']), worktrees: git(['worktree', 'list', '--porcelain']), status: git(['status', '--porcelain']) });
    // The included file does not exist yet: the agent would be the one to write it.
    git(['config', '--add', 'include.path', '../.gitconfig']);
    git(['config', '--add', 'includeIf.onbranch:main.path', '../tools/git.cfg']);
    const before = snapshot();
    const refused = await prepare();
    expect(refused.success).toBe(false);
    const failed = refused.steps.find((item) => item.status === 'failed');
    expect(failed?.step, JSON.stringify(failed)).toBe('tamper_check');
    expect(failed?.detail).toMatch(/^GIT_CONFIG_IN_WORKTREE: the repository's git config includes .*\/\.gitconfig, .*\/tools\/git\.cfg, inside the working tree/);
    expect(snapshot()).toEqual(before);

    // Moved into .git/ (out of the agents' reach): prepared as usual.
    git(['config', '--unset-all', 'include.path']);
    git(['config', '--unset-all', 'includeIf.onbranch:main.path']);
    git(['config', '--add', 'include.path', 'shared.cfg']);
    const prepared = await prepare();
    expect(prepared.success, JSON.stringify(prepared.steps.filter((item) => item.status === 'failed'))).toBe(true);
  });
});
