/**
 * ESCAPE REPRODUCTION (outside attack X4, 2026-12-02), against the fix of X3 #16 (gates take their
 * sandbox settings from the main checkout's polywave.config.json) and a6194b4 (a solo agent's
 * `.polywave-state` is read-only). The agent of a solo wave works IN the main checkout, and only the
 * IMPL manifest and `.polywave-state` are read-only there: its bash writes the main checkout's
 * `polywave.config.json` (`sandbox.writable: [<the user's home>]`). The jail only warns
 * (JAIL_UNOWNED_CHANGE, "NOT reverted"); the file stays in the main checkout after the run, and the
 * next gate run (and every later agent, whose plan reads the same file) gets the home writable.
 *
 * Expected (fixed): the config is read-only to such agents (or never taken from a writable tree), and
 * the next gate cannot write the home. Fixed: sandbox settings are read as committed (HEAD), and the
 * unowned file fails the wave at the agent's stop audit (E42), kept in place.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runGates } from '../src/gates/run-gates.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { soloEscapeRepo } from './support/solo-escape.js';

const available = (await sandboxStatus()).available;

describe("a solo wave's agent cannot choose the sandbox of later gates and agents", () => {
  it.skipIf(!available)('its polywave.config.json in the main checkout does not widen the next gate run', async () => {
    const { repo, home, bashrc } = await soloEscapeRepo();
    const config = JSON.stringify({ sandbox: { writable: ['~'] } });
    const steps = [
      // A script in its owned file (a plain redirection to an unowned path is refused by the bash jail).
      { write: { path: 'src/a.ts', content: `printf '%s' '${config}' > polywave.config.json\n` } },
      { bash: 'bash src/a.ts' },
      { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
      { commit: 'feat(A): a' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x4-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const cli = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-solo.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    expect(cli.stdout, cli.stderr).toContain('"slug": "solo"');

    // The next run's gate (agent code again): the home must stay read-only to it.
    await runGates({ repoDir: repo.dir, gates: [{ type: 'test', command: 'echo "echo PWNED-via-agent-config" >> "$HOME/.bashrc"; true', required: true }], noCache: true, env });
    const escapes: string[] = [];
    // The untracked file the agent left in the main checkout fails the wave (E42 at the agent's stop,
    // naming the file; exit 1) and is moved to the quarantine, not deleted (X14 #3/#5: a main-checkout
    // agent's refused untracked paths leave the checkout; nothing is lost). What it could do is closed
    // too: sandbox settings are read as committed.
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stdout).toMatch(/I1 violation: \\?"polywave\.config\.json\\?" is an untracked path the agent does not own \(I1\), left in the main checkout by the agent: moved to .*\(SANDBOX_SOLO_LEFTOVER_QUARANTINED\)/);
    expect(existsSync(repo.path('polywave.config.json'))).toBe(false);
    const quarantine = repo.path('.git/polywave/quarantine');
    const kept = readdirSync(quarantine).map((entry) => path.join(quarantine, entry, 'polywave.config.json.quarantined')).filter((file) => existsSync(file));
    expect(kept.map((file) => readFileSync(file, 'utf8'))).toContain(config);
    const after = readFileSync(bashrc, 'utf8');
    if (after !== 'echo original\n') escapes.push(`the next gate wrote ~/.bashrc: ${JSON.stringify(after)}`);
    expect(escapes).toEqual([]);
  }, 300_000);
});
