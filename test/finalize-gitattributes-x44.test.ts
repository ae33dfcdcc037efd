/**
 * Outside round X44 (X44-11, issue 11; I1): E11_ATTRIBUTES_OUTSIDE_OWNERSHIP judged each agent tip alone against the
 * base. A (owns the root `.gitattributes`) defined a macro no path used (`[attr]x44 text eol=crlf`); B (owns
 * `src/.gitattributes`) applied it to C's file (`c.ts x44` — without A's definition an unknown attribute that changes no
 * bytes). Neither tip alone changed src/c.ts; merged, C's file on disk was CRLF and the wave WAVE_VERIFIED. Now the
 * attributes of the base with every agent's `.gitattributes` (what the merge lands) are judged too: refused before any
 * merge, naming both agents, the file and the attribute. Real parts: run-wave through the CLI, three script agents in
 * bubblewrap, real git.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
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

const rows = [
  ['.gitattributes', 'A'],
  ['src/a.ts', 'A'],
  ['src/.gitattributes', 'B'],
  ['src/b.ts', 'B'],
  ['src/c.ts', 'C'],
] as const;
const impl = [
  'title: Attributes wave', 'feature_slug: attrs', 'verdict: SUITABLE', 'state: WAVE_PENDING', 'test_command: "true"',
  'file_ownership:',
  ...rows.flatMap(([file, agent]) => [`    - file: ${file}`, `      agent: ${agent}`, '      wave: 1', '      action: new']),
  'waves:', '    - number: 1', '      agents:',
  ...['A', 'B', 'C'].flatMap((id) => [`        - id: ${id}`, `          task: Implement agent ${id}'s files.`, '          files:', ...rows.filter(([, agent]) => agent === id).map(([file]) => `            - ${file}`)]),
  '',
].join('\n');

const cBytes = "export const c = 'c';\nexport const cc = 'cc';\n";
const done = { report: { status: 'complete', verification: 'PASS', notes: 'done' } };

describe('a macro in one agent\'s .gitattributes applied by another\'s to a third agent\'s file (X44-11)', () => {
  it.skipIf(!available)('run-wave refuses it before any merge (E11 on the combined attributes), C\'s bytes untouched', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-attrs.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\n' } });
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const script = {
      version: 1,
      agents: {
        A: { steps: [{ write: { path: 'src/a.ts', content: "export const a = 'a';\n" } }, { write: { path: '.gitattributes', content: '[attr]x44 text eol=crlf\n' } }, { commit: 'feat(A): a' }, done] },
        B: { steps: [{ write: { path: 'src/b.ts', content: "export const b = 'b';\n" } }, { write: { path: 'src/.gitattributes', content: 'c.ts x44\n' } }, { commit: 'feat(B): b' }, done] },
        C: { steps: [{ write: { path: 'src/c.ts', content: cBytes } }, { commit: 'feat(C): c' }, done] },
      },
    };
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'x44-attrs-'))), 'agents.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const env = repo.env as Record<string, string>;
    const run = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-attrs.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '300'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    // Before the fix: exit 0, WAVE_VERIFIED, and src/c.ts on main's disk had CRLF line ends.
    const onDisk = existsSync(repo.path('src/c.ts')) ? readFileSync(repo.path('src/c.ts')).toString('hex') : '(absent)';
    expect(onDisk === '(absent)' || onDisk === Buffer.from(cBytes).toString('hex'), `src/c.ts on disk: ${onDisk}`).toBe(true);
    expect(run.code, output.slice(-2000)).not.toBe(0);
    expect(output).not.toContain('WAVE_VERIFIED');
    expect(output).toContain('E11_ATTRIBUTES_OUTSIDE_OWNERSHIP');
    expect(output).toMatch(/agent A\+B: src\/c\.ts eol unspecified → crlf/);
    expect((await repo.run(['log', '--format=%s', `${head}..HEAD`])).split('\n').filter((line) => /^Merge|feat\(/.test(line))).toEqual([]);
  }, 360_000);
});
