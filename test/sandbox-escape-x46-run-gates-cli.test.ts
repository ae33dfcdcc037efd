/**
 * ESCAPE REPRODUCTION (outside round X46, X46-08). `polywave run-gates <impl>` run by a user on the main checkout after a
 * wave ran the IMPL's gates sandboxed but IN PLACE — unlike finalize-wave's post-merge gates, verify-build and (since
 * X46-01) prepare-wave's baseline: the merged agent code the gates run wrote the checkout's IGNORED files, which persist
 * and which the user runs later outside any sandbox (`.envrc`, `node_modules/.bin/tsc`), and read the ignored `.env`,
 * printed in the gate output.
 *
 * Black box: the checkout holds (as merged) `src/a.gate.sh`, run by the gate, which prints the `.env` it sees and, where
 * it finds a `.git` DIRECTORY (the main checkout), plants the two files. Expected (fixed): the gate ran, in a throwaway
 * checkout — no `.env`, nothing planted in the main checkout.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

const impl = [
  'title: Run gates',
  'feature_slug: rungates',
  'verdict: SUITABLE',
  'state: WAVE_VERIFIED',
  'test_command: "true"',
  'quality_gates:',
  '    level: standard',
  '    gates:',
  '        - type: test',
  '          command: for f in src/*.gate.sh; do [ -e "$f" ] && sh "$f"; done; exit 0',
  '          required: true',
  '          timing: post-merge',
  'file_ownership:',
  '    - file: src/a.gate.sh',
  '      agent: A',
  '      wave: 1',
  '      action: new',
  '    - file: src/b.ts',
  '      agent: B',
  '      wave: 1',
  '      action: new',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Implement src/a.gate.sh.',
  '          files:',
  '            - src/a.gate.sh',
  '        - id: B',
  '          task: Implement src/b.ts.',
  '          files:',
  '            - src/b.ts',
  '',
].join('\n');

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

describe.skipIf(!available)('the run-gates command on the main checkout (X46-08)', () => {
  it("runs the merged code's gates without reading the checkout's .env or planting its ignored files", async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-rungates.yaml': impl, 'src/a.gate.sh': gateScript, 'src/b.ts': 'export const b = 1;\n', '.gitignore': '.env\n.envrc\nnode_modules/\n' } });
    writeFileSync(repo.path('.env'), 'SECRET=X46RUNGATESDOTENV\n');
    const home = repo.sibling('home');
    mkdirSync(home);
    const run = await runCli(['run-gates', repo.path('docs/IMPL/IMPL-rungates.yaml')], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), HOME: home }, timeoutMs: 120_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.code, output.slice(-3000)).toBe(0);
    expect(output).toContain('X46GATE ran in');
    expect(output).toContain('no-env');
    expect(output).not.toContain('X46RUNGATESDOTENV');
    expect(existsSync(repo.path('.envrc')), 'run-gates planted .envrc in the main checkout').toBe(false);
    expect(existsSync(repo.path('node_modules/.bin/tsc')), 'run-gates planted node_modules/.bin/tsc in the main checkout').toBe(false);
  }, 180_000);
});
