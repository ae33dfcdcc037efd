import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { createGit } from './git-cli.js';
import { statusWithBranch } from './status-with-branch.js';

describe('statusWithBranch', () => {
  afterEach(() => {
    delete process.env.POLYWAVE_GIT_STATUS_TIMEOUT_MS;
  });

  it('X30-13: a FIFO named .gitignore does not hold it for ever: GIT_STATUS_TIMEOUT after the limit, git killed', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    spawnSync('mkdir', ['-p', repo.path('tools')]);
    spawnSync('mkfifo', [repo.path('tools/.gitignore')]);
    process.env.POLYWAVE_GIT_STATUS_TIMEOUT_MS = '1500';
    const started = performance.now();
    await expect(statusWithBranch(createGit(repo.dir, { env: repo.env }))).rejects.toMatchObject({ code: 'GIT_STATUS_TIMEOUT' });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('answers as before without one', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    repo.write('new.ts', 'x\n');
    const status = await statusWithBranch(createGit(repo.dir, { env: repo.env }));
    expect(status.entries).toEqual([{ code: '??', path: 'new.ts' }]);
    expect(status.head).toMatch(/^[0-9a-f]{40}$/);
  });
});
