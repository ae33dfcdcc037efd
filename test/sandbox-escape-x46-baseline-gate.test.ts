/**
 * ESCAPE REPRODUCTION (outside round X46, X46-01). prepare-wave's E21A baseline runs the IMPL's pre-merge quality gates on
 * the main checkout before every non-solo wave. It ran them sandboxed but IN PLACE — no throwaway checkout, unlike the
 * post-merge gates and verify-build since X3 #18 — and from wave 2 on that is wave 1's merged agent code: it wrote the
 * checkout's IGNORED files, which persist and which the user later runs outside any sandbox (`.envrc` for direnv,
 * `node_modules/.bin/tsc`), and read the checkout's ignored `.env`, whose content the gate output carried into
 * `.polywave-state` (prepare-result.json, the E38 gate cache). Wave 2 still ended WAVE_VERIFIED.
 *
 * Black box through two `run-wave`s with script agents: wave 1's agent A owns `src/a.gate.sh` (run by the gate
 * `for f in src/*.gate.sh …`), which prints the `.env` it sees and, where it finds a `.git` DIRECTORY (the main checkout),
 * plants the two files. Expected (fixed): wave 2's baseline gate ran (its output is on record) in a throwaway checkout —
 * no `.env` there, nothing planted in the main checkout, the secret nowhere in `.polywave-state`.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { filesUnder } from './support/files-under.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

const owned: Array<[agent: string, file: string, wave: number]> = [
  ['A', 'src/a.gate.sh', 1],
  ['B', 'src/b.ts', 1],
  ['C', 'src/c.ts', 2],
  ['D', 'src/d.ts', 2],
];

const impl = [
  'title: Baseline gate',
  'feature_slug: baseline',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "true"',
  'quality_gates:',
  '    level: standard',
  '    gates:',
  '        - type: test',
  '          command: for f in src/*.gate.sh; do [ -e "$f" ] && sh "$f"; done; exit 0',
  '          required: true',
  '          timing: pre-merge',
  'file_ownership:',
  ...owned.flatMap(([agent, file, wave]) => [`    - file: ${file}`, `      agent: ${agent}`, `      wave: ${wave}`, '      action: new']),
  'interface_contracts:',
  '    - name: Letter',
  '      description: A letter constant.',
  '      definition: "export const b: number"',
  '      location: src/b.ts',
  'waves:',
  ...[1, 2].flatMap((wave) => [
    `    - number: ${wave}`,
    '      agents:',
    ...owned.filter((row) => row[2] === wave).flatMap(([agent, file]) => [`        - id: ${agent}`, `          task: Implement ${file}.`, '          files:', `            - ${file}`]),
  ]),
  '',
].join('\n');

/** Agent A's "test": harmless in a worktree or a throwaway checkout (a `.git` FILE there); in the main checkout it plants. */
const gateScript = [
  '#!/bin/sh',
  'echo "X46GATE ran in $(pwd): $(cat .env 2>/dev/null || echo no-env)"',
  'if [ -d .git ]; then',
  "  printf 'echo direnv ran > /tmp/x46-direnv\\n' > .envrc",
  "  mkdir -p node_modules/.bin && printf '#!/bin/sh\\necho tsc ran\\n' > node_modules/.bin/tsc",
  'fi',
  'exit 0',
  '',
].join('\n');

describe.skipIf(!available)("prepare-wave's baseline gates on the main checkout (X46-01)", () => {
  it("wave 1's merged code run by wave 2's baseline gate neither reads the checkout's .env nor plants its ignored files", async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-baseline.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.env\n.envrc\nnode_modules/\n' } });
    writeFileSync(repo.path('.env'), 'SECRET=X46BASELINEDOTENV\n');
    const finish = [{ commit: 'feat: work' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }];
    const script = {
      version: 1,
      agents: {
        A: { steps: [{ write: { path: 'src/a.gate.sh', content: gateScript } }, ...finish] },
        B: { steps: [{ write: { path: 'src/b.ts', content: 'export const b = 1;\n' } }, ...finish] },
        C: { steps: [{ write: { path: 'src/c.ts', content: 'export const c = 1;\n' } }, ...finish] },
        D: { steps: [{ write: { path: 'src/d.ts', content: 'export const d = 1;\n' } }, ...finish] },
      },
    };
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x46-baseline-')));
    const scriptPath = path.join(scratch, 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const home = path.join(scratch, 'home');
    mkdirSync(home);
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const wave = (number: number) => runCli(['run-wave', repo.path('docs/IMPL/IMPL-baseline.yaml'), '--wave', String(number), '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '60'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    const first = await wave(1);
    expect(first.code, first.stderr.slice(-3000)).toBe(0);
    expect(await repo.run(['show', 'HEAD:src/a.gate.sh'])).toContain('X46GATE');
    const second = await wave(2);
    const detail = `${second.stdout.slice(-2000)}\n${second.stderr.slice(-3000)}`;
    expect(second.code, detail).toBe(0);
    const prepareResult = readFileSync(repo.path('.polywave-state/baseline/wave2/prepare-result.json'), 'utf8');
    // the baseline gate did run wave 1's code (its output is on record), without the checkout's .env
    expect(prepareResult, detail).toContain('X46GATE ran in');
    expect(prepareResult).toContain('no-env');
    expect(existsSync(repo.path('.envrc')), 'the baseline gate planted .envrc in the main checkout').toBe(false);
    expect(existsSync(repo.path('node_modules/.bin/tsc')), 'the baseline gate planted node_modules/.bin/tsc in the main checkout').toBe(false);
    const carrying = filesUnder(repo.path('.polywave-state')).filter((file) => readFileSync(file, 'utf8').includes('X46BASELINEDOTENV'));
    expect(carrying).toEqual([]);
    expect(`${first.stdout}${first.stderr}${second.stdout}${second.stderr}`).not.toContain('X46BASELINEDOTENV');
  }, 300_000);
});
