/**
 * ESCAPE REPRODUCTION (outside attack X3, 2026-12-02). The agent of a solo wave (one agent) or an
 * integration wave works in the main checkout, which is then its writable root — `.polywave-state/`
 * included, where the orchestrator keeps that agent's own journal. The orchestrator appends every tool
 * call to `<root>/.polywave-state/<slug>/wave<N>/agent-<ID>/index.jsonl` with appendFileSync, OUTSIDE
 * the sandbox and following symlinks. The agent (a script it wrote into its owned file, run with
 * python) replaces index.jsonl with a symlink to the user's ~/.bashrc; from then on its tool calls are
 * appended there as JSON, and a command such as `echo '$(touch …)'` ends up inside a double-quoted
 * JSON string: the user's next shell runs it. The wave completes with exit 0.
 *
 * Expected (fixed): ~/.bashrc unchanged. Today the test FAILS: it ends with the agent's journal lines.
 */
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { soloEscapeRepo } from './support/solo-escape.js';

const available = (await sandboxStatus()).available;

describe("a solo wave's agent cannot make the orchestrator write outside its sandbox", () => {
  it.skipIf(!available)('its journal, swapped for a symlink to ~/.bashrc, is not appended through the link', async () => {
    const { repo, home, bashrc } = await soloEscapeRepo();
    const plant = [
      'import os, binascii',
      "f = '.polywave-state/solo/wave1/agent-A/index.jsonl'",
      'try: os.remove(f)',
      'except FileNotFoundError: pass',
      `os.symlink(binascii.unhexlify('${Buffer.from(bashrc).toString('hex')}').decode(), f)`,
      "print('planted', f)",
      '',
    ].join('\n');
    const steps = [
      { write: { path: 'src/a.ts', content: plant } },
      { bash: 'python3 src/a.ts' },
      { bash: "echo '$(touch ESC-journal-PWNED)'" },
      { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
      { commit: 'feat(A): a' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x3-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const cli = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-solo.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    // The wave ran (the agent broke no rule the audit sees: .polywave-state/ is ignored by it).
    expect(cli.stdout, cli.stderr).toContain('"slug": "solo"');
    const after = readFileSync(bashrc, 'utf8');
    expect(after.includes('ESC-journal-PWNED') ? `~/.bashrc carries the agent's journal: ${after.slice(0, 300)}` : after).toBe('echo original\n');
  }, 300_000);
});
