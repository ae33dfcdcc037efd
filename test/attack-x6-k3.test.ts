import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { createWaveFixture } from './support/wave-fixture.js';

// Outside attack X6 (issue 13), findings N6–N9. Real repositories, real processes.

const spec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], testCommand: 'true', lintCommand: 'true' };

describe('N6: prepare-wave --commit-baseline leaves secret-bearing untracked files out by name AND by content', () => {
  it("the attacker's names and content-only secrets stay out of the baseline commit; ordinary new files go in", async () => {
    const fixture = await createWaveFixture(spec);
    fixture.repo.write('src/base.ts', 'export const base = 2;\n');
    const byName = ['.dev.vars', 'api_key.json', 'docker-config.json', 'kubeconfig', 'terraform.tfvars', 'token.txt'];
    for (const file of byName) fixture.repo.write(file, 'TOKEN=abc\n');
    // Names no list knows: only the content says secret.
    const byContent: Record<string, string> = {
      'deploy/bootstrap': '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n',
      'notes/setup.md': 'use ghp_abcdefghijklmnopqrstuvwxyz0123 for the CI\n',
      'config/app.toml': 'db = "postgres://app:hunter2@db.internal/app"\n',
      'config/local.yml': 'service:\n  password: hunter2\n',
      'wrangler.vars': 'API_KEY=abc123\n',
    };
    for (const [file, text] of Object.entries(byContent)) fixture.repo.write(file, text);
    fixture.repo.write('src/new.ts', 'export const token = getToken();\n');
    fixture.repo.write('locales/en.json', '{"password": "Password", "forgotPassword": "Forgot password?"}\n');
    const head = await fixture.head();
    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, commitBaseline: true });
    expect(result.success, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe(true);
    const inBaseline = (await fixture.repo.run(['diff', '--name-only', head, 'HEAD'])).split('\n').filter((file) => file !== '');
    expect(inBaseline).toEqual(expect.arrayContaining(['src/base.ts', 'src/new.ts', 'locales/en.json']));
    expect(inBaseline.filter((file) => byName.includes(file) || file in byContent)).toEqual([]);
    const leftOut = (result.steps.find((step) => step.step === 'working_dir_check')?.data as { left_out: Array<{ file: string; reason: string }> }).left_out;
    expect(leftOut.filter((item) => item.reason === 'secret-looking').map((item) => item.file).sort()).toEqual([...byName].sort());
    expect(leftOut.filter((item) => item.reason === 'secret-content').map((item) => item.file).sort()).toEqual(Object.keys(byContent).sort());
    // Kept on disk, out of git's sight (info/exclude).
    expect(readFileSync(fixture.repo.path('wrangler.vars'), 'utf8')).toBe('API_KEY=abc123\n');
    expect((await fixture.repo.git.status()).filter((entry) => !entry.path.startsWith('docs/IMPL/'))).toEqual([]);
  });
});
