/**
 * findReferences on cases of outside round X66 (issue 15) left open by the first fixers: re-export names taken by name
 * without `definedIn` (X66-67), … Real parses of files in a temporary git repository; each expected answer checked
 * against the language's own tools (tsc, python3) when written.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dependencyGraph, findReferences } from '../src/analysis/engine/index.js';
import { cacheDir, flushCache } from '../src/analysis/engine/cache.js';
import { analysisCall, memory } from '../src/analysis/engine/scope.js';
import { createTestRepo } from './support/git-repo.js';

const where = (references: Array<{ file: string; line: number; kind: string; via?: string }>) => references.map((reference) => `${reference.file}:${reference.line} ${reference.kind}${reference.via ? ` via ${reference.via}` : ''}`);

afterEach(() => {
  flushCache();
  memory.clear();
});

/** A first call on the tree as a command makes it (memory on, nothing cached); git's commands traced to `trace`. */
async function firstCall<T>(dir: string, trace: string, fn: () => Promise<T>): Promise<T> {
  memory.clear();
  rmSync(cacheDir(path.join(dir, '.git')), { recursive: true, force: true });
  const saved = process.env.GIT_TRACE;
  process.env.GIT_TRACE = trace;
  try {
    return await analysisCall(process.env, fn);
  } finally {
    if (saved === undefined) delete process.env.GIT_TRACE;
    else process.env.GIT_TRACE = saved;
  }
}

describe('findReferences without definedIn: a re-export name another module defines itself (X66-67)', () => {
  // tsc: use2's `greet()` is greet.ts's (a string), use's is other's hello (a number).
  it('X66-67: `import { greet } from \'./greet\'` is greet.ts\'s, not the symbol a barrel re-exports as greet — on a first call, without a listing', async () => {
    const repo = await createTestRepo({
      files: {
        'src/greet.ts': "export function greet(): string { return 'g'; }\n",
        'src/other.ts': 'export function hello(): number { return 1; }\n',
        'src/barrel.ts': "export { hello as greet } from './other';\n",
        'src/use.ts': "import { greet } from './barrel';\ngreet();\n",
        'src/use2.ts': "import { greet } from './greet';\ngreet();\n",
        'src/use3.ts': "import { greet as g } from './greet.js';\ng();\n",
        // an alias by assignment of the symbol is the symbol; a module's own arrow function is not
        'src/assigned.ts': "import { hello } from './other';\nexport const greet = hello;\n",
        'src/use4.ts': "import { greet } from './assigned';\ngreet();\n",
        'src/own.ts': 'export const greet = () => 1;\n',
        'src/use5.ts': "import { greet } from './own';\ngreet();\n",
        // Python: `greet` of a package re-importing hello under it, and a module of its own defining greet
        'greetmod.py': "def greet():\n    return 'g'\n",
        'pkg/__init__.py': 'from .other import hello as greet\n',
        'pkg/other.py': 'def hello():\n    return 1\n',
        'use.py': 'from pkg import greet\ngreet()\n',
        'use2.py': 'from greetmod import greet\ngreet()\n',
      },
    });
    const expected = [
      'pkg/__init__.py:1 import',
      'src/assigned.ts:1 import',
      'src/assigned.ts:2 other',
      'src/barrel.ts:1 reexport',
      'src/use.ts:1 import via greet',
      'src/use.ts:2 call via greet',
      'src/use4.ts:1 import via greet',
      'src/use4.ts:2 call via greet',
      'use.py:1 import via greet',
      'use.py:2 call via greet',
    ];
    const trace = path.join(repo.root, 'first.trace');
    expect(where(await firstCall(repo.dir, trace, () => findReferences(repo.dir, 'hello')))).toEqual(expected);
    // (the first call on the tree lists nothing: test/analysis-first-call.test.ts)
    expect(readFileSync(trace, 'utf8')).not.toMatch(/built-in: git ls-files/);
    // the listing path answers the same
    expect(where(await analysisCall(process.env, () => findReferences(repo.dir, 'hello')))).toEqual(expected);
  });

  it('X66-67: `export { default as greet } from \'./other\'` — the default export hello is not greet.ts\'s greet', async () => {
    const repo = await createTestRepo({
      files: {
        'src/greet.ts': "export function greet(): string { return 'g'; }\n",
        'src/other.ts': 'export default function hello(): number { return 1; }\n',
        'src/barrel.ts': "export { default as greet } from './other';\n",
        'src/use.ts': "import { greet } from './barrel';\ngreet();\n",
        'src/use2.ts': "import { greet } from './greet';\ngreet();\n",
      },
    });
    const expected = ['src/barrel.ts:1 reexport via default', 'src/use.ts:1 import via greet', 'src/use.ts:2 call via greet'];
    expect(where(await findReferences(repo.dir, 'hello'))).toEqual(expected);
    expect(where(await findReferences(repo.dir, 'hello', { definedIn: 'src/other.ts' }))).toEqual(expected);
  });
});

describe('findReferences: aliases by assignment (X66-37)', () => {
  // tsc/python3: c.ts's bar() and baz() call a.ts's foo; use.py's bar() is pkg/core.py's foo; other.ts's bar is its own.
  it('X66-37: `export const bar = foo`, `export { foo as bar }`, `const local = foo; local()`, Python `bar = foo` — of an imported foo or of the module\'s own', async () => {
    const repo = await createTestRepo({
      files: {
        'src/a.ts': 'export function foo(): number { return 1; }\nexport { foo as bar };\n',
        'src/b.ts': "import { foo } from './a';\nexport const baz = foo;\nconst local = foo;\nlocal();\n",
        'src/c.ts': "import { bar } from './a';\nimport { baz } from './b';\nbar();\nbaz();\n",
        'src/other.ts': 'export function foo(): string { return "o"; }\nexport const bar = foo;\n',
        'src/d.ts': "import { bar } from './other';\nbar();\n",
        'pkg/__init__.py': 'from .core import foo\nqux = foo\n',
        'pkg/core.py': 'def foo():\n    return 1\n\nbar = foo\n',
        'use.py': 'from pkg.core import bar\nfrom pkg import qux\nbar()\nqux()\n',
      },
    });
    expect(where(await findReferences(repo.dir, 'foo', { definedIn: 'src/a.ts' }))).toEqual([
      'src/a.ts:2 other',
      'src/b.ts:1 import',
      'src/b.ts:2 other',
      'src/b.ts:3 other',
      'src/b.ts:4 call via local',
      'src/c.ts:1 import via bar',
      'src/c.ts:2 import via baz',
      'src/c.ts:3 call via bar',
      'src/c.ts:4 call via baz',
    ]);
    expect(where(await findReferences(repo.dir, 'foo', { definedIn: 'pkg/core.py' }))).toEqual([
      'pkg/__init__.py:1 import',
      'pkg/__init__.py:2 other',
      'pkg/core.py:4 other',
      'use.py:1 import via bar',
      'use.py:2 import via qux',
      'use.py:3 call via bar',
      'use.py:4 call via qux',
    ]);
  });
});

describe('Python `import a.b, a.c`: every module of the statement (h15y\'s note, X66-51 follow-up)', () => {
  // python3: `import a.b, a.c; a.b.foo(), a.c.foo()` → 1 2; `import os, a.c as m; m.foo()` → 2.
  it('`import a.b, a.c` and `import os, a.c as m` import a.c too: its callers and dependents', async () => {
    const repo = await createTestRepo({
      files: {
        'a/__init__.py': '',
        'a/b.py': 'def foo():\n    return 1\n',
        'a/c.py': 'def foo():\n    return 2\n',
        'use.py': 'import a.b, a.c\na.b.foo()\na.c.foo()\n',
        'use2.py': 'import os, a.c as m\nm.foo()\n',
      },
    });
    expect(where(await findReferences(repo.dir, 'foo', { definedIn: 'a/c.py' }))).toEqual(['use.py:3 call', 'use2.py:2 call']);
    expect(where(await findReferences(repo.dir, 'foo', { definedIn: 'a/b.py' }))).toEqual(['use.py:2 call']);
    expect((await dependencyGraph(repo.dir, ['a/c.py'])).dependedBy['a/c.py']).toEqual(['use.py', 'use2.py']);
  });
});

describe('TS ambient modules and type-only re-export names (X66-41)', () => {
  // tsc (with types/ambient.d.ts included): use2's Foo and make() are the ambient module 'shop''s; use's Bar/Baz are a.ts's Foo.
  it('X66-41: `declare module \'shop\' { export interface Foo … }` defines Foo for `import … from \'shop\'`; `export { type Foo as Bar }` is an alias', async () => {
    const repo = await createTestRepo({
      files: {
        'src/a.ts': 'export interface Foo { x: number }\n',
        'src/barrel.ts': "export { type Foo as Bar } from './a';\nexport type { Foo as Baz } from './a';\n",
        'src/use.ts': "import { type Bar, Baz } from './barrel';\nexport const v: Bar = { x: 1 };\nexport const w: Baz = { x: 2 };\n",
        'types/ambient.d.ts': "declare module 'shop' {\n  export interface Foo { y: string }\n  export function make(): Foo;\n}\n",
        'src/use2.ts': "import type { Foo } from 'shop';\nimport { make } from 'shop';\nexport const u: Foo = make();\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'Foo', { definedIn: 'types/ambient.d.ts' }))).toEqual(['src/use2.ts:1 import', 'src/use2.ts:3 type', 'types/ambient.d.ts:3 type']);
    expect(where(await findReferences(repo.dir, 'make', { definedIn: 'types/ambient.d.ts' }))).toEqual(['src/use2.ts:2 import', 'src/use2.ts:3 call']);
    expect(where(await findReferences(repo.dir, 'Foo', { definedIn: 'src/a.ts' }))).toEqual([
      'src/barrel.ts:1 reexport',
      'src/barrel.ts:2 reexport',
      'src/use.ts:1 import via Bar',
      'src/use.ts:1 import via Baz',
      'src/use.ts:2 type via Bar',
      'src/use.ts:3 type via Baz',
    ]);
    // (the ambient module's own declaration is a definition, no reference; `make(): Foo` is one)
    expect(where(await findReferences(repo.dir, 'Foo')).filter((line) => line.startsWith('types/'))).toEqual(['types/ambient.d.ts:3 type']);
  });
});

describe('a declaration file beside a JavaScript file (X66-46)', () => {
  // tsc resolves both specifiers to util.d.ts (types), node runs util.js: use.ts and use2.ts both call the one helper.
  it('X66-46: `import … from \'../lib/util.js\'` and `from \'../lib/util\'` reach both util.js and util.d.ts', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/util.js': 'export function helper() { return 1; }\n',
        'lib/util.d.ts': 'export declare function helper(): number;\n',
        'src/use.ts': "import { helper } from '../lib/util.js';\nhelper();\n",
        'src/use2.ts': "import { helper } from '../lib/util';\nhelper();\n",
      },
    });
    const both = ['src/use.ts:1 import', 'src/use.ts:2 call', 'src/use2.ts:1 import', 'src/use2.ts:2 call'];
    expect(where(await findReferences(repo.dir, 'helper', { definedIn: 'lib/util.js' }))).toEqual(both);
    expect(where(await findReferences(repo.dir, 'helper', { definedIn: 'lib/util.d.ts' }))).toEqual(both);
    const graph = await dependencyGraph(repo.dir, ['lib/util.js', 'lib/util.d.ts']);
    expect(graph.dependedBy['lib/util.js']).toEqual(['src/use.ts', 'src/use2.ts']);
    expect(graph.dependedBy['lib/util.d.ts']).toEqual(['src/use.ts', 'src/use2.ts']);
  });
});

describe('aliases by assignment asked by their own file (X66-37)', () => {
  it('X66-37: `check-callers bar --defined-in` the file assigning `bar = foo` keeps that file\'s own uses of bar', async () => {
    const repo = await createTestRepo({
      files: {
        'pkg/__init__.py': 'from .core import foo\nbar = foo\nbar()\n',
        'pkg/core.py': 'def foo():\n    return 1\n',
        'use.py': 'from pkg import bar\nbar()\n',
        'src/a.ts': 'export function foo(): number { return 1; }\n',
        'src/b.ts': "import { foo } from './a';\nexport const bar = foo;\nbar();\n",
        'src/c.ts': "import { bar } from './b';\nbar();\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'bar', { definedIn: 'pkg/__init__.py' }))).toEqual(['pkg/__init__.py:3 call', 'use.py:1 import', 'use.py:2 call']);
    expect(where(await findReferences(repo.dir, 'bar', { definedIn: 'src/b.ts' }))).toEqual(['src/b.ts:3 call', 'src/c.ts:1 import', 'src/c.ts:2 call']);
  });
});
