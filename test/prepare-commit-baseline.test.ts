import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { runPolywave } from './support/closing-fixture.js';
import { createWaveFixture, implRelative } from './support/wave-fixture.js';

// Issue 13: prepare-wave --commit-baseline (Go): the user's uncommitted changes become the wave's
// baseline commit instead of blocking — untracked secrets and setup copies excepted (F5); --no-gowork / --no-workspace-setup are accepted (no-ops
// for polywave, which writes no language workspace into the main checkout). Real repositories.

const spec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], testCommand: 'true', lintCommand: 'true' };

describe('prepare-wave --commit-baseline (issue 13)', () => {
  it('without it a dirty user file blocks; with it the file is committed as the baseline and the worktrees start from it', async () => {
    const fixture = await createWaveFixture(spec);
    fixture.repo.write('polywave.config.json', JSON.stringify({ copy: ['local/settings.json'] }));
    await fixture.repo.commitAll('config: copy local/settings.json into each worktree');
    fixture.repo.write('src/base.ts', 'export const base = 2;\n');
    // Untracked: a new source file (committed) and secrets / setup copies (F5: left out, kept, excluded).
    fixture.repo.write('src/new.ts', 'export const added = 1;\n');
    fixture.repo.write('.env', 'SECRET=1\n');
    fixture.repo.write('certs/server.pem', 'key\n');
    fixture.repo.write('local/settings.json', '{}\n');
    const head = await fixture.head();
    const refused = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(refused.success).toBe(false);
    expect(refused.steps.find((step) => step.status === 'failed')?.detail).toContain('--commit-baseline');
    expect(await fixture.head()).toBe(head);

    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, commitBaseline: true });
    expect(result.success, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe(true);
    expect((await fixture.repo.run(['log', '--format=%s', `${head}..HEAD`])).split('\n')).toContain('chore: fix baseline for wave 1');
    expect(await fixture.repo.run(['show', 'HEAD:src/base.ts'])).toBe('export const base = 2;\n');
    expect(readFileSync(path.join(fixture.worktree('A'), 'src/base.ts'), 'utf8')).toBe('export const base = 2;\n');
    const inBaseline = (await fixture.repo.run(['diff', '--name-only', head, 'HEAD'])).split('\n').filter((file) => file !== '');
    expect(inBaseline).toEqual(expect.arrayContaining(['src/base.ts', 'src/new.ts']));
    expect(inBaseline.filter((file) => ['.env', 'certs/server.pem', 'local/settings.json'].includes(file))).toEqual([]);
    const check = result.steps.find((step) => step.step === 'working_dir_check');
    expect(check?.status).toBe('warning');
    expect(check?.detail).toContain('.env (secret-looking)');
    expect((check?.data as { left_out: unknown[] }).left_out).toEqual([
      { file: '.env', reason: 'secret-looking' },
      { file: 'certs/server.pem', reason: 'secret-looking' },
      { file: 'local/settings.json', reason: 'setup copy' },
    ]);
    expect(readFileSync(fixture.repo.path('.env'), 'utf8')).toBe('SECRET=1\n');
    expect(readFileSync(path.join(fixture.worktree('A'), 'local/settings.json'), 'utf8')).toBe('{}\n');
    // Left-out files are in info/exclude: the checkout is clean for finalize-wave's foreign-change check.
    expect((await fixture.repo.git.status()).filter((entry) => !entry.path.startsWith('docs/IMPL/'))).toEqual([]);
  });

  it('the CLI accepts --commit-baseline, --no-gowork and --no-workspace-setup', async () => {
    const fixture = await createWaveFixture(spec);
    writeFileSync(fixture.repo.path('src/base.ts'), 'export const base = 3;\n');
    const run = await runPolywave(['prepare-wave', implRelative, '--wave', '1', '--commit-baseline', '--no-gowork', '--no-workspace-setup', '--json-only'], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { success: boolean }).success).toBe(true);
  });
});
