import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

// E47 (issue 13): wave 1 changes greet()'s signature; src/later.js (a wave-2 file) still calls the
// old one, so the merged build fails only there — a caller cascade. finalize-wave runs the hotfix
// agent (script backend) on exactly that file, commits the fix with the E47 message, verifies again.

const check = [
  "import { readFileSync } from 'node:fs';",
  "const later = readFileSync('src/later.js', 'utf8');",
  "if (!later.includes(\"greet(name, '!')\")) { console.error('src/later.js:2:10: error: greet() now takes 2 arguments'); process.exit(1); }",
  '',
].join('\n');

const impl = [
  'title: Cascade',
  'feature_slug: cascade',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "node check.mjs"',
  'file_ownership:',
  '    - file: src/lib.js',
  '      agent: A',
  '      wave: 1',
  '      action: modify',
  '    - file: src/later.js',
  '      agent: C',
  '      wave: 2',
  '      action: modify',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: greet takes a suffix.',
  '          files:',
  '            - src/lib.js',
  '    - number: 2',
  '      agents:',
  '        - id: C',
  '          task: Use greet.',
  '          files:',
  '            - src/later.js',
  '',
].join('\n');

function script(hotfix: string[]): string {
  return [
    'version: 1',
    'agents:',
    '  A:',
    '    steps:',
    '      - write: { path: src/lib.js, content: "export function greet(name, suffix) { return `hi ${name}${suffix}`; }\\n" }',
    '      - commit: "feat(A): greet suffix"',
    '      - report: { status: complete, verification: PASS }',
    '  hotfix:',
    '    steps:',
    ...hotfix,
    '',
  ].join('\n');
}

async function setup(hotfix: string[]) {
  const repo = await createTestRepo({
    files: { 'docs/IMPL/IMPL-cascade.yaml': impl, 'check.mjs': check, 'src/lib.js': 'export function greet(name) { return `hi ${name}`; }\n', 'src/later.js': "import { greet } from './lib.js';\nexport const hello = (name) => greet(name);\n" },
  });
  const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-hotfix-')), 'script.yaml');
  writeFileSync(scriptPath, script(hotfix));
  const env = repo.env as Record<string, string>;
  const implPath = repo.path('docs/IMPL/IMPL-cascade.yaml');
  const ran = await runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--no-finalize', '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
  expect(ran.code, ran.stderr.slice(-2000)).toBe(0);
  return { repo, implPath, scriptPath, env };
}

interface Result {
  success: boolean;
  state: string;
  caller_cascade_only?: boolean;
  failed_step?: { step: string };
  cascade_hotfix?: { files: string[]; outcome: string; commit?: string; still_failing?: boolean; skipped?: string };
}

describe('E47 caller cascade hotfix', () => {
  it('fixes the later-wave caller on the target, commits it with the E47 message and verifies the wave', async () => {
    const { repo, implPath, scriptPath, env } = await setup(['      - edit: { path: src/later.js, old: "greet(name)", new: "greet(name, \'!\')" }', '      - write: { path: src/lib.js, content: "tampered" }']);
    const result = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    const data = JSON.parse(result.stdout) as Result;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(data).toMatchObject({ success: true, state: 'WAVE_VERIFIED' });
    expect(data.cascade_hotfix).toMatchObject({ files: ['src/later.js'], outcome: 'finished' });
    expect(await repo.run(['log', '-1', '--format=%s', data.cascade_hotfix!.commit!])).toContain('[Polywave:wave1:integration-hotfix] fix caller cascade after wave 1 signature changes');
    expect((await repo.run(['show', '--name-only', '--format=', data.cascade_hotfix!.commit!])).trim()).toBe('src/later.js');
    // The hotfix agent was held to the failing caller: the wave's own code is untouched.
    expect(readFileSync(repo.path('src/lib.js'), 'utf8')).toContain('suffix');
  }, 600_000);

  it('attacked from the hotfix agent (no OS sandbox): a hook planted in the common git dir and a symlink in the state dir — the wave is not verified, the hook never runs, the main checkout state is untouched', async () => {
    const marker = path.join(os.tmpdir(), `pw-hotfix-hook-${process.pid}-${Date.now()}`);
    const evil = [
      "const cp=require('child_process'),fs=require('fs'),p=require('path');",
      "const dir=cp.execSync('git rev-parse --path-format=absolute --git-common-dir').toString().trim();",
      `fs.writeFileSync(p.join(dir,'hooks','post-commit'),'#!/bin/sh\\ntouch ${marker}\\n',{mode:0o755});`,
      "fs.mkdirSync('.polywave-state',{recursive:true}); try{fs.symlinkSync('/etc/hostname','.polywave-state/daemon.lock')}catch(e){}",
    ].join('');
    const { repo, implPath, scriptPath, env } = await setup([
      `      - write: { path: src/later.js, content: ${JSON.stringify(evil)} }`,
      '      - bash: "node src/later.js"',
      '      - write: { path: src/later.js, content: "import { greet } from \'./lib.js\';\\nexport const hello = (name) => greet(name, \'!\');\\n" }',
    ]);
    const result = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    const data = JSON.parse(result.stdout) as Result & { failed_step?: { step: string; code?: string } };
    expect(data.state).not.toBe('WAVE_VERIFIED');
    expect(data.failed_step?.code).toBe('TAMPER_DETECTED');
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(repo.path('.polywave-state/daemon.lock'))).toBe(false);
  }, 600_000);

  it('a hotfix that does not fix the build is a genuine failure; --no-hotfix launches nothing', async () => {
    const { repo, implPath, scriptPath, env } = await setup(['      - edit: { path: src/later.js, old: "greet(name)", new: "greet(name, \'?\')" }']);
    const off = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--no-hotfix'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(off.code).toBe(1);
    const offData = JSON.parse(off.stdout) as Result;
    expect(offData).toMatchObject({ caller_cascade_only: true });
    expect(offData.cascade_hotfix).toBeUndefined();

    const result = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(result.code).toBe(1);
    const data = JSON.parse(result.stdout) as Result;
    expect(data.cascade_hotfix).toMatchObject({ still_failing: true });
    expect(result.stderr).toContain('build still fails after hotfix');
  }, 600_000);
});
