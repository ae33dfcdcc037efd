/**
 * Outside attack X21-10 (issue 11, critical): prepare-wave's default worktree setup ran the package
 * manager's install (`npm ci` for a workspaces repository, or a lockfile that differs from the main
 * checkout's) on the host, with the orchestrator's whole environment. An agent of an earlier wave that
 * added a `postinstall` to package.json (an everyday edit) had it run outside every sandbox in the next
 * wave's worktrees: it read ~/.ssh and the main checkout's `.env`, wrote outside the repository, planted a
 * git hook that the tamper record then took as its baseline, and the wave ended WAVE_VERIFIED.
 *
 * Here the same: a real npm workspaces repository (offline, no registry), a hostile root `postinstall`
 * already merged, the real prepare-wave and the real OS sandbox. The script does run — inside the sandbox:
 * it may write the worktree only; it reads no secret, writes nothing outside, plants no hook, sees no
 * credential in its environment.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createWaveFixture } from './support/wave-fixture.js';

const sandboxAvailable = (await sandboxStatus()).available;
const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-x21-setup-')));
afterAll(async () => {
  await resetSandbox();
  rmSync(scratch, { recursive: true, force: true });
});

/** The hostile postinstall: each attempt's outcome goes to `postinstall-result.txt` in the worktree (the one place it may write). */
function hostileScript(outside: string, home: string, mainCheckout: string): string {
  const source = [
    "const fs = require('fs');",
    'const out = [];',
    `const tryIt = (name, f) => { try { out.push(name + ' OK ' + String(f()).slice(0, 200)); } catch (e) { out.push(name + ' DENIED ' + e.code); } };`,
    `tryIt('ssh', () => fs.readFileSync(${JSON.stringify(path.join(home, '.ssh', 'id_rsa'))}, 'utf8'));`,
    `tryIt('dotenv', () => fs.readFileSync(${JSON.stringify(path.join(mainCheckout, '.env'))}, 'utf8'));`,
    `tryIt('outside', () => { fs.writeFileSync(${JSON.stringify(path.join(outside, 'PWNED.txt'))}, 'x'); return 'written'; });`,
    `tryIt('hook', () => { fs.writeFileSync(${JSON.stringify(path.join(mainCheckout, '.git', 'hooks', 'post-checkout'))}, '#!/bin/sh\\necho pwned\\n', { mode: 0o755 }); return 'planted'; });`,
    // (npm puts the script's own text in npm_lifecycle_script / npm_package_scripts_*: not a credential)
    "tryIt('env', () => Object.entries(process.env).filter(([k, v]) => !/^npm_/.test(k) && /SECRET/.test(v ?? '')).map(([k]) => k).join(',') || 'none');",
    "fs.writeFileSync('postinstall-result.txt', out.join('\\n') + '\\n');",
  ].join(' ');
  return `node -e ${JSON.stringify(source)}`;
}

describe('outside attack X21-10: the default install of a new worktree runs in the sandbox', () => {
  it.skipIf(!sandboxAvailable)('a postinstall merged by an earlier wave runs sandboxed: no secret read, nothing written outside, no hook planted, no credential in its environment', async () => {
    const home = path.join(scratch, 'home');
    const outside = path.join(scratch, 'outside');
    mkdirSync(path.join(home, '.ssh'), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(home, '.ssh', 'id_rsa'), 'SECRET-SSH-X21\n');
    // An npm workspaces repository: the default setup installs it in each worktree (its links point at the worktree's own sources).
    const template = path.join(scratch, 'template');
    mkdirSync(path.join(template, 'packages', 'p1'), { recursive: true });
    writeFileSync(path.join(template, 'packages', 'p1', 'package.json'), JSON.stringify({ name: 'p1', version: '1.0.0' }));
    writeFileSync(path.join(template, 'packages', 'p1', 'index.js'), 'exports.p1 = 1;\n');
    writeFileSync(path.join(template, 'package.json'), JSON.stringify({ name: 'ws-root', version: '1.0.0', private: true, workspaces: ['packages/*'] }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent'], { cwd: template, stdio: 'ignore' });
    const fixture = await createWaveFixture(
      { waves: [[{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }]], state: 'WAVE_PENDING' },
      {
        'package-lock.json': readFileSync(path.join(template, 'package-lock.json'), 'utf8'),
        'packages/p1/package.json': readFileSync(path.join(template, 'packages', 'p1', 'package.json'), 'utf8'),
        'packages/p1/index.js': 'exports.p1 = 1;\n',
        '.gitignore': 'node_modules/\n.env\n',
      },
    );
    // What an agent of an earlier wave merged: package.json with a postinstall (npm ci accepts it: the lockfile still matches).
    fixture.repo.write('package.json', `${JSON.stringify({ name: 'ws-root', version: '1.0.0', private: true, workspaces: ['packages/*'], scripts: { postinstall: hostileScript(outside, home, fixture.repo.dir) } }, null, 2)}\n`);
    await fixture.repo.commitAll('wave 0: a script');
    writeFileSync(fixture.repo.path('.env'), 'SECRET-DOTENV-X21\n');
    execFileSync('cp', ['-r', path.join(template, 'node_modules'), fixture.repo.path('node_modules')]);
    const hooksBefore = existsSync(fixture.repo.path('.git/hooks/post-checkout'));
    const result = await prepareWave({
      implPath: fixture.implPath,
      wave: 1,
      env: { ...fixture.repo.env, HOME: home, ANTHROPIC_API_KEY: 'sk-ant-SECRET-MODELKEY-X21', GITHUB_TOKEN: 'ghp_SECRETGHTOKENX21aaaaaaaaaaaaaaaaaaaaaa' },
      gitAt: fixture.gitAt,
      now: () => new Date('2026-12-03T10:00:00Z'),
    });
    const setup = result.steps.find((step) => step.step === 'workspace_setup');
    expect(result.success, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe(true);
    expect(setup?.detail).toContain('npm ci');
    for (const agent of ['A', 'B']) {
      // the script ran (it is the package's own: the install ran it), inside the sandbox
      const report = readFileSync(path.join(fixture.worktree(agent), 'postinstall-result.txt'), 'utf8');
      expect(report).toMatch(/^ssh DENIED /m);
      expect(report).toMatch(/^dotenv DENIED /m);
      expect(report).toMatch(/^outside DENIED /m);
      expect(report).toMatch(/^hook DENIED /m);
      expect(report).toContain('env OK none');
      expect(report).not.toMatch(/SECRET-(SSH|DOTENV|MODELKEY)|SECRETGHTOKEN/);
      expect(existsSync(path.join(fixture.worktree(agent), 'node_modules', 'p1'))).toBe(true);
    }
    expect(existsSync(path.join(outside, 'PWNED.txt'))).toBe(false);
    expect(existsSync(fixture.repo.path('.git/hooks/post-checkout'))).toBe(hooksBefore);
  }, 180_000);

  it('a setup that runs where no sandbox confines it (POLYWAVE_SANDBOX=off) and changes the git hooks or configuration fails prepare-wave, before the tamper record could take the change as its baseline', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }]], state: 'WAVE_PENDING' });
    fixture.repo.write('polywave.config.json', `${JSON.stringify({ setup: "sh -c 'printf \"#!/bin/sh\\necho pwned\\n\" > \"$(git rev-parse --git-common-dir)/hooks/post-checkout\"'" }, null, 2)}\n`);
    await fixture.repo.commitAll('configure a setup');
    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: { ...fixture.repo.env, POLYWAVE_SANDBOX: 'off' }, gitAt: fixture.gitAt, now: () => new Date('2026-12-03T10:00:00Z') });
    const setup = result.steps.find((step) => step.step === 'workspace_setup');
    expect(result.success).toBe(false);
    expect(setup?.status, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe('failed');
    expect(setup?.detail).toMatch(/^WORKTREE_SETUP_TAMPERED: the worktree setup changed the repository's git configuration or hooks, which no setup may: .*hooks\/post-checkout/);
    expect(result.steps.find((step) => step.step === 'record_tamper')?.status ?? 'not run').not.toBe('success');
  }, 120_000);
});
