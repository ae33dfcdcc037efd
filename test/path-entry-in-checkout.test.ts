/**
 * Outside round X42-11/12 (issue 11): X41-02 kept every ABSOLUTE PATH entry, and one inside the main checkout — what
 * direnv's `PATH_add bin` or `layout node` (`<checkout>/node_modules/.bin`) give — is a directory an agent that works in
 * the checkout (a solo wave's agent) can write. The agent planted `bin/{git,bash,bwrap}`: polywave's own `git status`
 * and the sandbox wrapper's `bash`/`bwrap` ran them on the host (the wrapper's `bwrap` got the whole sandbox command
 * line: the agent's code replaced the sandbox of every later call). Now no host program is looked up inside the
 * repositories polywave works on. Real parts: run-wave through the CLI, a solo wave of a script agent in bubblewrap,
 * stand-ins that append to a file outside the repository (read-only to the sandbox: only a host process can write it).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

const impl = [
  'title: Solo wave', 'feature_slug: solo', 'verdict: SUITABLE', 'state: WAVE_PENDING', 'test_command: "true"',
  'file_ownership:', '    - file: src/a.ts', '      agent: A', '      wave: 1', '      action: new', '    - file: src/a2.ts', '      agent: A', '      wave: 1', '      action: new',
  'interface_contracts:', '    - name: Letter', '      description: A letter constant.', '      definition: "export const a: string"', '      location: src/a.ts',
  'waves:', '    - number: 1', '      agents:', '        - id: A', '          task: Implement src/a.ts.', '          files:', '            - src/a.ts', '            - src/a2.ts', '',
].join('\n');

/** A python script (an owned file) that plants logging stand-ins of git, bash, bwrap and sh in `<cwd>/<dir>`. */
const planter = (dir: string, marker: string) =>
  [
    'import os',
    `d = ${JSON.stringify(dir)}`,
    'os.makedirs(d, exist_ok=True)',
    "for n in ('git', 'bash', 'bwrap', 'sh'):",
    '    p = os.path.join(d, n)',
    `    open(p, 'w').write('#!/bin/sh\\necho "%s ran in $PWD" >> ${marker}\\nexec /usr/bin/%s "$@"\\n' % (n, n))`,
    '    os.chmod(p, 0o755)',
    '',
  ].join('\n');

describe('no host program comes from a PATH entry inside the checkout (X42-11/12)', () => {
  for (const [name, dir] of [['X42-11: <checkout>/bin', 'bin'], ['X42-12: <checkout>/node_modules/.bin (absent at the start)', 'node_modules/.bin']] as const) {
    it.skipIf(!available)(name, async () => {
      const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-solo.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\n' } });
      const outside = repo.sibling('outside');
      mkdirSync(outside);
      const marker = path.join(outside, 'HOST-RAN');
      const script = {
        version: 1,
        agents: {
          A: {
            steps: [
              { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
              { write: { path: 'src/a2.ts', content: planter(dir, marker) } },
              { bash: 'python3 src/a2.ts; ls -la ' + dir },
              // The next call's wrapper (bash, bwrap) and polywave's own git audit after it.
              { bash: 'echo after-plant' },
              { write: { path: 'src/a2.ts', content: "export const a2 = 'a2';\n" } },
              { commit: 'feat(A): a' },
              { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
            ],
          },
        },
      };
      const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'x42-path-'))), 'agents.json');
      writeFileSync(scriptPath, JSON.stringify(script));
      const env = { ...(repo.env as Record<string, string>), PATH: `${path.join(repo.dir, dir)}:${process.env.PATH ?? '/usr/bin:/bin'}` };
      const run = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-solo.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '300'], { cwd: repo.dir, env, timeoutMs: 300_000 });
      // The agent did plant them (its own bash saw them), and none ran on the host.
      expect(existsSync(path.join(repo.dir, dir, 'git')) || run.stdout.includes('bwrap') || run.code !== 0, run.stderr.slice(-1500)).toBe(true);
      // Before the fix: "git ran in <checkout>" (polywave's own status) and "bash ran …", "bwrap ran …" (the wrapper).
      expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
    }, 320_000);
  }
});
