// vitest: own process — checks that the parser is not loaded before the first bash check (a shared worker may have done both already).
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { diagnoseWithMvdanSh, findSyntaxError, isBashParserLoaded, loadBashParser } from './bash-parser.js';
import { createJail } from './jail.js';

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-bash-parser-')));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the bash parser loads lazily', () => {
  it('a jail that checks no bash command does not load the WASM; the first bash check does', async () => {
    const jail = await createJail({ root: scratch, ownedFiles: ['a.ts'] });
    expect(await jail.checkWrite('a.ts')).toMatchObject({ allowed: true });
    expect(await jail.checkToolUse('Read', { file_path: 'a.ts' })).toEqual({ allowed: true });
    expect(isBashParserLoaded()).toBe(false);
    expect(await jail.checkBash('ls')).toEqual({ allowed: true });
    expect(isBashParserLoaded()).toBe(true);
  });

  it('nothing in src/ imports the parser packages eagerly (only `import type` and `await import`)', () => {
    const sourceRoot = path.resolve(import.meta.dirname, '../..');
    const offenders: string[] = [];
    const visit = (directory: string) => {
      for (const entry of readdirSync(directory, { withFileTypes: true })) {
        const full = path.join(directory, entry.name);
        if (entry.isDirectory()) visit(full);
        else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
          const text = readFileSync(full, 'utf8');
          for (const match of text.matchAll(/^\s*(import|export)\s+(?!type\b)[^;]*?from\s+'(web-tree-sitter|sh-syntax|@vscode\/tree-sitter-wasm)[^']*'/gm)) {
            offenders.push(`${path.relative(sourceRoot, full)}: ${match[0].trim()}`);
          }
        }
      }
    };
    visit(sourceRoot);
    expect(offenders).toEqual([]);
  });
});

describe('tree-sitter-bash and mvdan/sh', () => {
  it('parses to a full syntax tree and locates a syntax error', async () => {
    const parser = await loadBashParser();
    const tree = parser.parse('FOO=1 git -c a.b=c commit -m "x $(pwd)" > out 2>&1 | cat <(ls)');
    try {
      expect(findSyntaxError(tree.rootNode)).toBeUndefined();
      expect(tree.rootNode.descendantsOfType('command_substitution').map((node) => node.text)).toEqual(['$(pwd)']);
      expect(tree.rootNode.descendantsOfType('process_substitution').map((node) => node.text)).toEqual(['<(ls)']);
    } finally {
      tree.delete();
    }
    const broken = parser.parse('echo ok\necho )');
    try {
      expect(findSyntaxError(broken.rootNode)).toMatchObject({ line: 2 });
    } finally {
      broken.delete();
    }
  });

  it('mvdan/sh tells invalid bash from a form tree-sitter does not follow', async () => {
    expect(await diagnoseWithMvdanSh('echo $(ls')).toBe('line 1, column 6: reached EOF without matching `$(` with `)`');
    expect(await diagnoseWithMvdanSh('cat <<EOF; cd ..\nhi\nEOF')).toBeUndefined();
  });
});
