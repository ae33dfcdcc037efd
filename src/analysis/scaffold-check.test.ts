import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { goImports, scriptImports } from './imports.js';
import { bracketErrors, checkScaffold, overallStatus } from './scaffold-check.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-scaffold-check-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('scaffold checks', () => {
  it('bracket balance ignores brackets in strings and comments, and names the lines', () => {
    expect(bracketErrors('a.ts', 'const s = "(";\n// }\nfunction f() { return [1, 2]; }\n')).toEqual([]);
    expect(bracketErrors('a.go', 'func f() {\n\tx := []int{1\n}\n')).toEqual(["a.go:1: '{' is never closed"]);
    expect(bracketErrors('a.rs', 'fn f() { ) }\n')).toEqual(["a.rs:1: ')' closes '{' opened on line 1", "a.rs:1: unexpected '}'"]);
  });

  it('imports of TS/JS and Go sources', () => {
    expect(scriptImports('a.ts', "import x from 'a';\nimport type { T } from \"./t.js\";\nexport * from './e';\nconst y = require('b');\n// import z from 'c'\nconst s = \"import q from 'd'\";\nawait import('e');\n")).toEqual(['a', './t.js', './e', 'b', 'e']);
    expect(goImports('package p\nimport "fmt"\nimport (\n\tm "math"\n\t"github.com/x/y"\n)\n').sort()).toEqual(['fmt', 'github.com/x/y', 'math']);
  });

  it('overall status: FAIL beats PASS beats SKIP', () => {
    expect(overallStatus({ syntax: { status: 'PASS' }, imports: { status: 'FAIL' }, type_references: { status: 'SKIP' }, build: { status: 'SKIP' } })).toBe('FAIL');
    expect(overallStatus({ syntax: { status: 'PASS' }, imports: { status: 'SKIP' }, type_references: { status: 'SKIP' }, build: { status: 'SKIP' } })).toBe('PASS');
    expect(overallStatus({ syntax: { status: 'SKIP' }, imports: { status: 'SKIP' }, type_references: { status: 'SKIP' }, build: { status: 'SKIP' } })).toBe('SKIP');
  });

  it('outside attack X21-12: the syntax check runs no code of the repository (its ast.py, a typescript in its node_modules); syntax errors are still found', async () => {
    const root = path.join(scratch, 'repo');
    mkdirSync(path.join(root, 'node_modules', 'typescript'), { recursive: true });
    const ran = path.join(scratch, 'RAN');
    writeFileSync(path.join(root, 'ast.py'), `open(${JSON.stringify(`${ran}-py`)}, 'w').write('ast.py executed')\n`);
    writeFileSync(path.join(root, 'node_modules', 'typescript', 'package.json'), JSON.stringify({ name: 'typescript', main: 'index.js' }));
    writeFileSync(path.join(root, 'node_modules', 'typescript', 'index.js'), `require('fs').writeFileSync(${JSON.stringify(`${ran}-ts`)}, 'typescript executed'); exports.transpileModule = () => ({ diagnostics: [] });\n`);
    writeFileSync(path.join(root, 'scaf.py'), 'x = 1\n');
    writeFileSync(path.join(root, 'bad.py'), 'def f(:\n  pass\n');
    writeFileSync(path.join(root, 'scaf.ts'), 'export interface T { a: number }\n');
    writeFileSync(path.join(root, 'bad.ts'), 'export const x = ;\n');
    const check = (file: string) => checkScaffold({ file: path.join(root, file), root });
    const [good, badPython, goodTs, badTs] = await Promise.all([check('scaf.py'), check('bad.py'), check('scaf.ts'), check('bad.ts')]);
    expect(existsSync(`${ran}-py`)).toBe(false);
    expect(existsSync(`${ran}-ts`)).toBe(false);
    expect(good.syntax.status).toBe('PASS');
    expect(badPython.syntax.status).toBe('FAIL');
    expect(goodTs.syntax.status).toBe('PASS');
    expect(badTs.syntax.status).toBe('FAIL');
    expect(badTs.syntax.errors?.[0]).toMatch(/^bad\.ts:1/);
  });

  it('outside attack X22-02: a formatter found on PATH is started from a directory of no repository (rustup follows the rust-toolchain.toml of its working directory), on the file\'s absolute path', async () => {
    const root = path.join(scratch, 'rust-repo');
    const bin = path.join(scratch, 'fake-bin');
    mkdirSync(root, { recursive: true });
    mkdirSync(bin, { recursive: true });
    const seen = path.join(scratch, 'rustfmt-seen');
    // a stand-in rustfmt (what rustup's proxy would run) that records where it was started and on what
    writeFileSync(path.join(bin, 'rustfmt'), `#!/bin/sh\necho "$(pwd) $*" > ${JSON.stringify(seen)}\nexit 0\n`, { mode: 0o755 });
    writeFileSync(path.join(root, 'rust-toolchain.toml'), '[toolchain]\npath = "/somewhere"\n');
    writeFileSync(path.join(root, 'scaf.rs'), 'pub struct T;\n');
    const result = await checkScaffold({ file: path.join(root, 'scaf.rs'), root, env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } });
    expect(result.syntax.status).toBe('PASS');
    const [cwd, ...args] = readFileSync(seen, 'utf8').trim().split(' ');
    expect(cwd).toBe('/');
    expect(args.at(-1)).toBe(path.join(root, 'scaf.rs'));
  });

  // Needs rustup (its proxy is what reads rust-toolchain.toml): skipped where there is none.
  const rustup = spawnSync('rustup', ['--version'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!rustup)('outside attack X23-02: a rust-toolchain.toml another local user left in the shared temp directory does not pick the rustfmt the syntax check runs', async () => {
    const shared = path.join(scratch, 'shared-tmp');
    const evil = path.join(shared, 'evil-toolchain');
    const ran = path.join(scratch, 'EVIL-RAN');
    mkdirSync(path.join(evil, 'bin'), { recursive: true });
    for (const tool of ['rustfmt', 'rustc', 'cargo']) {
      writeFileSync(path.join(evil, 'bin', tool), `#!/bin/sh\necho "$0 ran in $(pwd)" >> ${JSON.stringify(ran)}\n[ "$1" = "--version" ] && echo "${tool} 1.99.0"\nexit 0\n`, { mode: 0o755 });
    }
    writeFileSync(path.join(shared, 'rust-toolchain.toml'), `[toolchain]\npath = ${JSON.stringify(evil)}\n`);
    const root = path.join(scratch, 'rust-repo-2');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'scaf.rs'), 'pub struct T;\n');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = shared;
    try {
      expect(os.tmpdir()).toBe(shared);
      await checkScaffold({ file: path.join(root, 'scaf.rs'), root, env: { ...process.env, TMPDIR: shared } });
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(existsSync(ran) ? readFileSync(ran, 'utf8') : '').toBe('');
  });
});
