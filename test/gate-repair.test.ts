import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

// E21 closed-loop gate retry (the CLI path, issue 13): a required pre-merge gate that fails in an
// agent's worktree launches a repair agent there (script backend: the agent's attempt 2), which
// fixes its own file and commits; finalize-wave runs the gates again on the new tip and merges.

const gate = `node -e "const t=require('fs').readFileSync('src/a.js','utf8'); if (t.includes('BUG')) { console.error('src/a.js still has the BUG'); process.exit(1) }"`;
const impl = [
  'title: Repair',
  'feature_slug: repair',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'file_ownership:',
  '    - file: src/a.js',
  '      agent: A',
  '      wave: 1',
  '      action: modify',
  '    - file: src/b.js',
  '      agent: B',
  '      wave: 1',
  '      action: modify',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Write a.',
  '          files:',
  '            - src/a.js',
  '        - id: B',
  '          task: Write b.',
  '          files:',
  '            - src/b.js',
  'quality_gates:',
  '    level: standard',
  '    gates:',
  '        - type: test',
  `          command: ${JSON.stringify(gate)}`,
  '          required: true',
  '          timing: pre-merge',
  '',
].join('\n');

function script(repair: string[]): string {
  return [
    'version: 1',
    'agents:',
    '  A:',
    '    attempts:',
    '      1:',
    '        - write: { path: src/a.js, content: "export const a = \'BUG\';\\n" }',
    '        - commit: "feat(A): a"',
    '        - report: { status: complete, verification: PASS }',
    '    steps:',
    ...repair,
    '  B:',
    '    steps:',
    '      - write: { path: src/b.js, content: "export const b = 2;\\n" }',
    '      - commit: "feat(B): b"',
    '      - report: { status: complete, verification: PASS }',
    '',
  ].join('\n');
}

async function setup(repair: string[]) {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-repair.yaml': impl, 'src/a.js': 'export const a = 1;\n', 'src/b.js': 'export const b = 1;\n' } });
  const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-repair-')), 'script.yaml');
  writeFileSync(scriptPath, script(repair));
  const env = repo.env as Record<string, string>;
  const implPath = repo.path('docs/IMPL/IMPL-repair.yaml');
  const ran = await runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--no-finalize', '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
  expect(ran.code, ran.stderr.slice(-2000)).toBe(0);
  return { repo, implPath, scriptPath, env };
}

interface Result {
  success: boolean;
  failed_step?: { step: string };
  gate_retry?: { attempts: Array<{ round: number; agent: string; outcome: string; head?: string }>; skipped?: string };
}

describe('E21 closed-loop gate retry', () => {
  it('a repair agent fixes the failing gate in the agent worktree; the wave then merges', async () => {
    const { repo, implPath, scriptPath, env } = await setup(['      - write: { path: src/a.js, content: "export const a = \'fixed\';\\n" }', '      - commit: "fix(gate): no more BUG"']);
    const result = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    const data = JSON.parse(result.stdout) as Result;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(data.success).toBe(true);
    expect(data.gate_retry?.attempts).toEqual([expect.objectContaining({ round: 1, agent: 'A', outcome: 'finished' })]);
    expect(readFileSync(repo.path('src/a.js'), 'utf8')).toContain("'fixed'");
    expect(await repo.run(['log', '--format=%s', 'main'])).toContain('fix(gate): no more BUG');
  }, 600_000);

  it('a repair that changes nothing stops after one round; nothing merges; --no-gate-retry and missing credentials launch nothing', async () => {
    // The repair agent is jailed like the agent it repairs: a write to B's file is refused.
    const { repo, implPath, scriptPath, env } = await setup(['      - write: { path: src/b.js, content: "hacked" }', '      - write: { path: docs/IMPL/IMPL-repair.yaml, content: "state: COMPLETE" }', '      - bash: "true"']);
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const result = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--unsafe-no-sandbox', '--max-gate-retries', '2'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(result.code).toBe(1);
    const data = JSON.parse(result.stdout) as Result;
    expect(data.failed_step?.step).toBe('run-gates');
    expect(data.gate_retry?.attempts).toHaveLength(1);
    expect(result.stderr).toContain('no repair agent committed a change');
    expect(readFileSync(repo.path('.claude/worktrees/polywave/repair/wave1-agent-A/src/b.js'), 'utf8')).not.toContain('hacked');
    expect(readFileSync(implPath, 'utf8')).not.toContain('state: COMPLETE');
    expect(readFileSync(repo.path('.polywave-state/repair/wave1/agent-A/denials.jsonl'), 'utf8')).toContain('src/b.js');
    expect((await repo.run(['log', '--merges', '--format=%s'])).trim()).toBe('');

    const off = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--no-gate-retry'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(off.code).toBe(1);
    expect((JSON.parse(off.stdout) as Result).gate_retry).toBeUndefined();

    const noKeys = { ...env, ANTHROPIC_API_KEY: '', CLAUDE_CODE_OAUTH_TOKEN: '', OPENAI_API_KEY: '', POLYWAVE_MODEL: '' };
    const skipped = await runCli(['finalize-wave', implPath, '--wave', '1', '--model', 'anthropic:claude-sonnet-4-5'], { cwd: repo.dir, env: noKeys, timeoutMs: 300_000 });
    expect(skipped.code).toBe(1);
    expect((JSON.parse(skipped.stdout) as Result).gate_retry?.skipped).toMatch(/not run: no credentials/);
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).not.toBe('');
    expect((await repo.run(['log', '--merges', '--format=%s'])).trim()).toBe('');
    expect(head).toMatch(/^[0-9a-f]{40}$/);
  }, 600_000);
});
