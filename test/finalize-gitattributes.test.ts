/**
 * Outside round X42 (X42-07, issue 11; I1): agent A owned `.gitattributes` and committed
 * `src/b.ts working-tree-encoding=UTF-16LE`, `*.ts text eol=crlf`, `src/b.ts merge=union filter=lfs`; run-wave merged it
 * WAVE_VERIFIED and B's `src/b.ts` in the main checkout became UTF-16LE with CRLF — no longer B's bytes, with git showing
 * the checkout clean. Now finalize-wave refuses before any merge (E11_ATTRIBUTES_OUTSIDE_OWNERSHIP naming the file, the
 * attribute and the line), nothing merged; with the lines limited to A's own file the re-run merges, and B's file on
 * disk is B's bytes. Real parts: run-wave and finalize-wave through the CLI, two script agents in bubblewrap, real git.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

const impl = [
  'title: Attributes wave', 'feature_slug: attrs', 'verdict: SUITABLE', 'state: WAVE_PENDING', 'test_command: "true"',
  'file_ownership:',
  '    - file: .gitattributes', '      agent: A', '      wave: 1', '      action: new',
  '    - file: src/a.ts', '      agent: A', '      wave: 1', '      action: new',
  '    - file: src/b.ts', '      agent: B', '      wave: 1', '      action: new',
  'interface_contracts:', '    - name: Letter', '      description: A letter constant.', '      definition: "export const a: string"', '      location: src/a.ts',
  'waves:', '    - number: 1', '      agents:',
  '        - id: A', '          task: Implement src/a.ts and the attributes.', '          files:', '            - .gitattributes', '            - src/a.ts',
  '        - id: B', '          task: Implement src/b.ts.', '          files:', '            - src/b.ts', '',
].join('\n');

const bBytes = "export const b = 'b';\nexport const bb = 'bb';\n";

describe("an agent's .gitattributes reaching another agent's file (X42-07)", () => {
  it.skipIf(!available)('finalize-wave refuses it before any merge, coded, naming file, attribute and line; limited to its own file the re-run merges B byte for byte', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-attrs.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\n' } });
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const attributes = 'src/b.ts working-tree-encoding=UTF-16LE\n*.ts text eol=crlf\nsrc/b.ts merge=union filter=lfs diff=x42\n';
    const script = {
      version: 1,
      agents: {
        A: {
          steps: [
            { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
            { write: { path: '.gitattributes', content: attributes } },
            { commit: 'feat(A): a and attributes' },
            { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
          ],
        },
        B: {
          steps: [
            { write: { path: 'src/b.ts', content: bBytes } },
            { commit: 'feat(B): b' },
            { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
          ],
        },
      },
    };
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'x42-attrs-'))), 'agents.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const env = repo.env as Record<string, string>;
    const run = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-attrs.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '300'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    // Before the fix: exit 0, WAVE_VERIFIED, and src/b.ts on main's disk was UTF-16LE with CRLF.
    const onDisk = existsSync(repo.path('src/b.ts')) ? readFileSync(repo.path('src/b.ts')).toString('hex') : '(absent)';
    expect(onDisk === '(absent)' || onDisk === Buffer.from(bBytes).toString('hex'), `src/b.ts on disk: ${onDisk}`).toBe(true);
    expect(run.code, output.slice(-2000)).not.toBe(0);
    expect(output).toContain('E11_ATTRIBUTES_OUTSIDE_OWNERSHIP');
    expect(output).toMatch(/src\/b\.ts working-tree-encoding unspecified → UTF-16LE by \.gitattributes:1 `src\/b\.ts working-tree-encoding=UTF-16LE`/);
    expect(output).toMatch(/src\/b\.ts eol unspecified → crlf by \.gitattributes:2 `\*\.ts text eol=crlf`/);
    expect(output).toContain('src/index.ts eol'); // a file no agent owns is not A's either
    // Nothing merged: main's branch is where it was, both agent branches are still there to fix and re-run.
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).not.toBe('');
    expect((await repo.run(['log', '--format=%s', `${head}..HEAD`])).split('\n').filter((line) => /^Merge|feat\(/.test(line))).toEqual([]);
    const worktrees = (await repo.run(['worktree', 'list', '--porcelain'])).split('\n\n');
    const worktreeA = worktrees.find((block) => /branch refs\/heads\/\S*agent-A\b/i.test(block) || /branch refs\/heads\/\S*-A$/m.test(block));
    expect(worktreeA, worktrees.join('\n---\n')).toBeDefined();
    const dirA = /^worktree (.+)$/m.exec(worktreeA!)![1]!;

    // A fixes its branch: attributes on its own file only. The re-run merges, and B's file is B's bytes.
    writeFileSync(path.join(dirA, '.gitattributes'), 'src/a.ts text eol=crlf\n');
    execFileSync('git', ['-C', dirA, 'commit', '-qam', 'fix(A): attributes on its own file only'], { env: { ...process.env, ...env } });
    const again = await runCli(['finalize-wave', repo.path('docs/IMPL/IMPL-attrs.yaml'), '--wave', '1'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(again.code, `${again.stdout}\n${again.stderr}`.slice(-3000)).toBe(0);
    expect(readFileSync(repo.path('src/b.ts')).toString('hex')).toBe(Buffer.from(bBytes).toString('hex'));
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toBe("export const a = 'a';\r\n");
  }, 320_000);
});
