/**
 * findReferences on cases of outside round X67 (issue 15): CommonJS re-exports and aliases by assignment of a module's
 * member. Real parses of files in a temporary git repository; each expected answer is what node / tsc / python3 run.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findReferences } from '../src/analysis/engine/index.js';
import { cacheDir, flushCache } from '../src/analysis/engine/cache.js';
import { analysisCall, memory } from '../src/analysis/engine/scope.js';
import { createTestRepo } from './support/git-repo.js';

const where = (references: Array<{ file: string; line: number; kind: string; via?: string }>) => references.map((reference) => `${reference.file}:${reference.line} ${reference.kind}${reference.via ? ` via ${reference.via}` : ''}`);

afterEach(() => {
  flushCache();
  memory.clear();
});

describe('CommonJS re-exports (X67-01, X67-02) and aliases of a module member (X67-03)', () => {
  it('a CommonJS module exporting an imported function under another name, or re-exporting a whole module: its importers are callers', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/util.js': 'function compute(a) { return a * 2; }\nmodule.exports = { compute };\n',
        'lib/re1.js': "const { compute } = require('./util');\nmodule.exports = { calc: compute };\n",
        'lib/re2.js': "const util = require('./util');\nmodule.exports.calc2 = util.compute;\n",
        'lib/re3.js': "exports.calc3 = require('./util').compute;\n",
        'lib/re4.js': "const { compute } = require('./util');\nexports.calc4 = compute;\n",
        'lib/re5.js': "module.exports = require('./util');\n",
        'app/a.js': "const { calc } = require('../lib/re1');\ncalc(1);\n",
        'app/b.js': "const { calc2 } = require('../lib/re2');\ncalc2(2);\n",
        'app/c.js': "const { calc3 } = require('../lib/re3');\ncalc3(3);\n",
        'app/d.js': "const { calc4 } = require('../lib/re4');\ncalc4(4);\n",
        'app/e.js': "const { compute } = require('../lib/re5');\ncompute(5);\n",
        'app/g.js': "const c = require('../lib/util').compute;\nc(7);\n",
        // another module's own calc: not the definition's
        'lib/own.js': 'function calc() { return 0; }\nmodule.exports = { calc };\n',
        'app/h.js': "const { calc } = require('../lib/own');\ncalc(8);\n",
      },
    });
    const definedIn = [
      'app/a.js:1 import via calc',
      'app/a.js:2 call via calc',
      'app/b.js:1 import via calc2',
      'app/b.js:2 call via calc2',
      'app/c.js:1 import via calc3',
      'app/c.js:2 call via calc3',
      'app/d.js:1 import via calc4',
      'app/d.js:2 call via calc4',
      'app/e.js:1 import',
      'app/e.js:2 call',
      'app/g.js:1 other',
      'app/g.js:2 call via c',
      'lib/re1.js:1 import',
      'lib/re1.js:2 other',
      'lib/re2.js:2 other',
      'lib/re3.js:1 other',
      'lib/re4.js:1 import',
      'lib/re4.js:2 other',
      'lib/util.js:2 other',
    ];
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'lib/util.js' }))).toEqual(definedIn);
    // the plain answer holds the --defined-in one
    const plain = where(await findReferences(repo.dir, 'compute'));
    for (const line of definedIn) expect(plain).toContain(line);
    expect(plain.filter((line) => line.startsWith('app/h.js'))).toEqual([]);
  });

  it('an alias by assignment of an imported module\'s member (TS namespace import, Python module) is the member', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/util.ts': 'export function compute(a: number) { return a * 2; }\n',
        'lib/re2.ts': "import * as util from './util';\nexport const calc2 = util.compute;\n",
        'app/b.ts': "import { calc2 } from '../lib/re2';\ncalc2(2);\n",
        'lib/__init__.py': '',
        'lib/util.py': 'def compute(a):\n    return a\n',
        'lib/re4.py': 'from . import util\ncalc4 = util.compute\n',
        'lib/re5.py': 'import lib.util as u\ncalc5 = u.compute\ncalc5(5)\n',
        'app/d.py': 'from lib.re4 import calc4\ncalc4(4)\n',
        // another module's member under the same name: not the definition
        'lib/other.py': 'def compute(a):\n    return -a\n',
        'lib/re6.py': 'from . import other\ncalc6 = other.compute\n',
        'app/f.py': 'from lib.re6 import calc6\ncalc6(6)\n',
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'lib/util.ts' }))).toEqual([
      'app/b.ts:1 import via calc2',
      'app/b.ts:2 call via calc2',
      'lib/re2.ts:2 other',
    ]);
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'lib/util.py' }))).toEqual([
      'app/d.py:1 import via calc4',
      'app/d.py:2 call via calc4',
      'lib/re4.py:2 other',
      'lib/re5.py:2 other',
      'lib/re5.py:3 call via calc5',
    ]);
  });

  it('X67-08: a CommonJS module whose export is the function (`module.exports = compute`, TS `export = compute`) — the module is the function where it is required or default-imported', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/c1.js': 'module.exports = function compute(a) { return a; };\n',
        'lib/c2.js': 'function compute(a) { return a; }\nmodule.exports = compute;\n',
        'lib/c3.ts': 'function compute(a: number) { return a; }\nexport = compute;\n',
        'lib/other.js': 'function compute(a) { return -a; }\nmodule.exports = { compute };\n',
        'app/a.js': "const compute = require('../lib/c1');\ncompute(1);\n",
        'app/b.js': "const calc = require('../lib/c2');\ncalc(2);\n",
        'app/c.ts': "import calc3 = require('../lib/c3');\ncalc3(3);\n",
        'app/d.ts': "import calc4 from '../lib/c2';\ncalc4(4);\n",
        // the module of another compute, required whole: not c2's
        'app/e.js': "const other = require('../lib/other');\nother.compute(5);\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'lib/c2.js' }))).toEqual([
      'app/b.js:2 call via calc',
      'app/d.ts:1 import via calc4',
      'app/d.ts:2 call via calc4',
      'lib/c2.js:2 other',
    ]);
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'lib/c3.ts' }))).toEqual(['app/c.ts:1 import via calc3', 'app/c.ts:2 call via calc3', 'lib/c3.ts:2 other']);
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'lib/c1.js' }))).toEqual(['app/a.js:2 call']);
    const plain = where(await findReferences(repo.dir, 'compute'));
    for (const line of ['app/b.js:2 call via calc', 'app/c.ts:2 call via calc3', 'app/d.ts:2 call via calc4', 'app/a.js:2 call']) expect(plain).toContain(line);
  });

  it('X67-05 (open since X66): `import(\'./m\').then(({ compute }) => …)` destructures the module\'s exports', async () => {
    const repo = await createTestRepo({
      files: {
        'src/util.ts': 'export function compute(a: number) { return a * 2; }\n',
        'src/other.ts': 'export function compute(a: number) { return -a; }\n',
        'src/g.ts': "import('./util').then(({ compute }) => compute(7));\n",
        'src/h.js': "import('./util.js').then(function ({ compute: c }) {\n  return c(8);\n});\n",
        'src/i.ts': "import('./other').then(({ compute }) => compute(9));\n",
        // a parameter of another callback, not a destructuring of the module
        'src/j.ts': "import { compute } from './util';\n[1].map(({ compute }: any) => compute(10));\ncompute(11);\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'src/util.ts' }))).toEqual([
      'src/g.ts:1 import',
      'src/g.ts:1 call',
      'src/h.js:1 import',
      'src/h.js:2 call via c',
      'src/j.ts:1 import',
      'src/j.ts:3 call',
    ]);
  });
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

describe('a default-exported symbol on a first call (open since X66)', () => {
  it('check-callers of a default export without --defined-in lists no tree on a first call, and answers as the listing path does', async () => {
    const repo = await createTestRepo({
      files: {
        'src/main.ts': 'export default function main() { return 1; }\n',
        'src/other.ts': 'export default function other() { return 2; }\nexport function main() { return 3; }\n',
        'src/a.ts': "import m from './main';\nm();\n",
        'src/b.ts': "import o from './other';\no();\n",
        'src/c.ts': "export { default as start } from './main';\n",
        'src/d.ts': "import { start } from './c';\nstart();\n",
        'src/e.ts': "import { main } from './other';\nmain();\n",
        'src/lib/main/index.ts': 'export default function main() { return 4; }\n',
        'src/f.ts': "import mm from './lib/main';\nmm();\n",
      },
    });
    const expected = ['src/a.ts:1 import via m', 'src/a.ts:2 call via m', 'src/c.ts:1 reexport via default', 'src/d.ts:1 import via start', 'src/d.ts:2 call via start', 'src/e.ts:1 import', 'src/e.ts:2 call', 'src/f.ts:1 import via mm', 'src/f.ts:2 call via mm'];
    const trace = path.join(repo.root, 'first.trace');
    expect(where(await firstCall(repo.dir, trace, () => findReferences(repo.dir, 'main')))).toEqual(expected);
    expect(readFileSync(trace, 'utf8')).not.toMatch(/built-in: git ls-files/);
    // the listing path (a later call of the process) answers the same
    expect(where(await analysisCall(process.env, () => findReferences(repo.dir, 'main')))).toEqual(expected);
  });
});

describe('Python star imports and __all__ (X67-11)', () => {
  it('`from m import *` binds only what m\'s __all__ lists, and no `_`-private name without one', async () => {
    const repo = await createTestRepo({
      files: {
        'setup.py': '',
        'app/__init__.py': '',
        'app/core.py': '__all__ = ["Engine"]\n\ndef compute(x):\n    return x\n\nclass Engine:\n    pass\n',
        'app/open.py': 'def compute(x):\n    return x\n\ndef _private():\n    pass\n',
        'app/other.py': 'def compute(x):\n    return -x\n',
        // python3: compute is other's (core's __all__ leaves it out), _private a NameError
        'a.py': 'from app.other import compute\nfrom app.core import *\ncompute(2)\nEngine()\n',
        'b.py': 'from app.open import *\ncompute(3)\n_private()\n',
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'app/core.py' }))).toEqual([]);
    expect(where(await findReferences(repo.dir, 'Engine', { definedIn: 'app/core.py' }))).toEqual(['a.py:4 call']);
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'app/open.py' }))).toEqual(['b.py:2 call']);
    expect(where(await findReferences(repo.dir, '_private', { definedIn: 'app/open.py' }))).toEqual([]);
  });
});

describe('destructuring a namespace import (X67-04)', () => {
  it('`const { compute: cc } = ns` after `import * as ns` / `const ns = require()` binds cc to the module\'s compute', async () => {
    const repo = await createTestRepo({
      files: {
        'src/util.ts': 'export function compute(a: number) { return a * 2; }\n',
        'src/other.ts': 'export function compute(a: number) { return -a; }\n',
        'src/v.ts': "import * as all from './util';\nconst { compute: cc } = all;\ncc(4);\n",
        'src/w.js': "const u = require('./util');\nconst { compute } = u;\ncompute(5);\n",
        'src/x.ts': "import * as o from './other';\nconst { compute } = o;\ncompute(6);\n",
        // a local object's destructuring: not the module's
        'src/y.ts': "import { compute } from './util';\nfunction f(obj: any) { const { compute: k } = obj; return k(7); }\ncompute(8);\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'src/util.ts' }))).toEqual([
      'src/v.ts:2 import',
      'src/v.ts:3 call via cc',
      'src/w.js:2 import',
      'src/w.js:3 call',
      'src/y.ts:1 import',
      // (`obj.compute` written as a pattern: a member, listed as `x.compute` is in a file importing the module)
      'src/y.ts:2 other',
      'src/y.ts:3 call',
    ]);
  });
});

describe('a default import through `export *` (X67-12)', () => {
  it('`import main from \'./barrel\'` of a barrel that only `export *`s the definition\'s module is no use of its default', async () => {
    const repo = await createTestRepo({
      files: {
        'src/util.ts': 'export default function main() {}\nexport function compute() {}\n',
        'src/barrel.ts': "export * from './util';\nexport { default as start } from './util';\n",
        'src/a.ts': "import main from './barrel';\nmain();\n",
        'src/b.ts': "import main from './util';\nmain();\n",
        'src/c.ts': "import { start } from './barrel';\nstart();\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'main', { definedIn: 'src/util.ts' }))).toEqual([
      'src/b.ts:1 import',
      'src/b.ts:2 call',
      'src/barrel.ts:2 reexport via default',
      'src/c.ts:1 import via start',
      'src/c.ts:2 call via start',
    ]);
  });
});
