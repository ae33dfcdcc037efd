import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectCodedError } from './support/cli-assert.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

// Issue 13 defect: an agent whose writes the jail refused could still report `complete` and be
// merged without those changes, and nobody saw it. Now the refusals are recorded (the journal's
// denials.jsonl and the report's out_of_scope_deps), shown by finalize-wave and agent-status,
// and `finalize-wave --strict-ownership` does not merge such a wave.

const impl = [
  'title: Moves',
  'feature_slug: moves',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "node -e \\"process.exit(0)\\""',
  'file_ownership:',
  '    - file: src/a.ts',
  '      agent: A',
  '      wave: 1',
  '      action: modify',
  '    - file: src/b.ts',
  '      agent: B',
  '      wave: 1',
  '      action: modify',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Move helper() from src/b.ts into src/a.ts.',
  '          files:',
  '            - src/a.ts',
  '        - id: B',
  '          task: Add twice() to src/b.ts.',
  '          files:',
  '            - src/b.ts',
  '',
].join('\n');

// A "moves" helper(): it writes the function into its own file, then tries to delete it from B's
// file (refused), and reports complete anyway — as a model does.
const script = [
  'version: 1',
  'agents:',
  '  A:',
  '    steps:',
  '      - write: { path: src/a.ts, content: "export const a = 1;\\nexport function helper() { return 1; }\\n" }',
  '      - write: { path: src/b.ts, content: "export const b = 2;\\n" }',
  '      - commit: "feat(A): helper moved into a.ts"',
  '      - report: { status: complete, verification: PASS }',
  '  B:',
  '    steps:',
  '      - write: { path: src/b.ts, content: "export const b = 2;\\nexport function helper() { return 1; }\\nexport const twice = (n: number) => 2 * n;\\n" }',
  '      - commit: "feat(B): twice"',
  '      - report: { status: complete, verification: PASS }',
  '',
].join('\n');

async function setup() {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-moves.yaml': impl, 'src/a.ts': 'export const a = 1;\n', 'src/b.ts': 'export const b = 2;\nexport function helper() { return 1; }\n' } });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pw-denials-'));
  const scriptPath = path.join(dir, 'script.yaml');
  writeFileSync(scriptPath, script);
  return { repo, implPath: repo.path('docs/IMPL/IMPL-moves.yaml'), scriptPath, env: repo.env as Record<string, string> };
}

describe('writes refused by the jail are visible where the merge is decided', () => {
  it('recorded in the report and the journal, shown by agent-status, blocking with --strict-ownership, a warning otherwise', async () => {
    const { repo, implPath, scriptPath, env } = await setup();
    const ran = await runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--no-finalize', '--unsafe-no-sandbox'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(ran.code, ran.stderr.slice(-2000)).toBe(0);
    const manifest = readFileSync(implPath, 'utf8');
    // The report carries the refused write, in the wave prompt's out_of_scope_deps form.
    expect(manifest).toMatch(/file: src\/b\.ts, change: write refused by the jail \(JAIL_NOT_OWNED\)/);
    const denials = readFileSync(repo.path('.polywave-state/moves/wave1/agent-A/denials.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { code: string; target: string });
    expect(denials).toEqual([expect.objectContaining({ code: 'JAIL_NOT_OWNED', target: 'src/b.ts' })]);

    const status = await runCli(['agent-status', implPath, '--json'], { cwd: repo.dir, env });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).refused_writes).toEqual([expect.objectContaining({ agent: 'A', wave: 1, target: 'src/b.ts', code: 'JAIL_NOT_OWNED' })]);
    const table = await runCli(['agent-status', implPath], { cwd: repo.dir, env });
    expect(table.stdout).toContain('Writes refused by the jail');

    // --strict-ownership: nothing merges, the reason names the agent and the file.
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const strict = await runCli(['finalize-wave', implPath, '--wave', '1', '--strict-ownership'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(strict.code, strict.stderr.slice(-2000)).toBe(1);
    const strictResult = JSON.parse(strict.stdout) as { steps: Array<{ step: string; status: string; detail: string }> };
    const step = strictResult.steps.find((entry) => entry.step === 'check-jail-denials');
    expect(step?.status).toBe('failed');
    expect(step?.detail).toContain('agent A: src/b.ts (JAIL_NOT_OWNED)');
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).toBe(head);
    expect((await repo.run(['log', '--merges', '--format=%s'])).trim()).toBe('');

    // Without it the wave merges with the refusal listed as a warning.
    const plain = await runCli(['finalize-wave', implPath, '--wave', '1'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    const plainResult = JSON.parse(plain.stdout) as { steps: Array<{ step: string; status: string; detail: string }> };
    expect(plainResult.steps.find((entry) => entry.step === 'check-jail-denials')).toMatchObject({ status: 'warning' });
    expect(plain.code, plain.stderr.slice(-2000)).toBe(0);
  }, 600_000);

  it('bad input to the flag is refused like any other', async () => {
    const { repo, implPath, env } = await setup();
    expectCodedError(await runCli(['finalize-wave', implPath, '--wave', 'x', '--strict-ownership'], { cwd: repo.dir, env }), {});
  });
});
