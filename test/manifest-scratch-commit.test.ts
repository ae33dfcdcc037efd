import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { createGit } from '../src/git/git-cli.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { implRelative, implYaml } from './support/wave-fixture.js';

// Issue 11: a run-wave re-run committed a dead run's `IMPL-demo.yaml.lock` and its temp file to
// main (prepare-wave's --commit-state took everything under docs/IMPL/). The lock no longer lives
// there at all; a manifest write's temp file or an old version's lock files left by a kill are
// neither committed nor blocking, and the next manifest write removes them.

const scratch = ['docs/IMPL/IMPL-demo.yaml.lock', 'docs/IMPL/IMPL-demo.yaml.lock.4242.0123456789ab.tmp', 'docs/IMPL/.IMPL-demo.yaml.4242.0123456789ab.tmp'];

describe('what a killed writer left in docs/IMPL/ is never committed', () => {
  it('prepare-wave commits the edited manifest and not the temp/lock files beside it; the next write removes them', async () => {
    const spec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], state: 'WAVE_PENDING' };
    const repo = await createTestRepo({ files: { 'src/base.ts': 'export const base = 1;\n', [implRelative]: implYaml(spec) } });
    const implPath = repo.path(implRelative);
    for (const file of scratch) repo.write(file, '{"pid":4242}\n');
    writeFileSync(implPath, readFileSync(implPath, 'utf8').replace('title: ', 'title: Edited — '));

    const result = await prepareWave({ implPath, wave: 1, env: repo.env, gitAt: (directory) => createGit(directory, { env: repo.env }), now: () => new Date('2026-05-12T10:00:00Z') });
    const workingDir = result.steps.find((step) => step.step === 'working_dir_check');
    expect(workingDir?.status, JSON.stringify(workingDir)).toBe('success');
    const committed = (await repo.run(['log', '--name-only', '--format=', 'HEAD~1..HEAD'])).trim().split('\n').filter(Boolean);
    expect(committed).toEqual([implRelative]);
    const tracked = (await repo.run(['ls-files', 'docs/IMPL'])).trim().split('\n');
    expect(tracked).toEqual([implRelative]);

    // The next write of the manifest (under its lock) removes what the dead writer left.
    const write = await runCli(['update-status', implPath, '--wave', '1', '--agent', 'A', '--status', 'blocked'], { cwd: repo.dir, env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });
    expect(write.code, write.stderr).toBe(0);
    for (const file of scratch) expect(existsSync(repo.path(file)), file).toBe(false);
  }, 120_000);
});
