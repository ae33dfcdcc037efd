/**
 * findReferences through the ways a JS/TS module can rename what it exports (outside-attack cases
 * of issue 15): default exports imported under any name, `export { default as X }`, aliased
 * re-exports chained through two barrels. Real parses of files in a temporary git repository.
 */
import { describe, expect, it } from 'vitest';
import { findReferences } from '../src/analysis/engine/index.js';
import { createTestRepo } from './support/git-repo.js';

const where = (references: Array<{ file: string; line: number; kind: string; via?: string }>) => references.map((reference) => `${reference.file}:${reference.line} ${reference.kind}${reference.via ? ` via ${reference.via}` : ''}`);

describe('findReferences: renamed exports (TS/JS)', () => {
  // The barrel's `export { default as greeting }` names no identifier of the symbol (`default` is a keyword, the alias
  // a new binding), so it is followed, not listed; the importer's line names the barrel's export.
  it('a default-exported function is found under every local name its importers give it, and only from its own module', async () => {
    const repo = await createTestRepo({
      files: {
        'src/greet.ts': 'export default function greet(name: string): string {\n  return name;\n}\n',
        'src/other.ts': 'export default function other(): void {}\n',
        'src/use-a.ts': "import hello from './greet.js';\n\nhello('a');\n",
        'src/use-b.ts': "import g, { type X } from './greet';\nexport const value = g('b');\n",
        'src/not-it.ts': "import hello from './other.js';\nhello();\n",
        'src/barrel.ts': "export { default as greeting } from './greet.js';\n",
        'src/use-c.ts': "import { greeting as hi } from './barrel.js';\nhi('c');\n",
      },
    });
    const expected = [
      // (the re-export of the default is a use of it, as `export { greet as x } from` would be — outside attack X49-09)
      'src/barrel.ts:1 reexport via default',
      'src/use-a.ts:1 import via hello',
      'src/use-a.ts:3 call via hello',
      'src/use-b.ts:1 import via g',
      'src/use-b.ts:2 call via g',
      'src/use-c.ts:1 import via greeting',
      'src/use-c.ts:2 call via hi',
    ];
    expect(where(await findReferences(repo.dir, 'greet', { definedIn: 'src/greet.ts' }))).toEqual(expected);
    // without definedIn the same (X50-02: nothing — the definition's importers name it only as `default`), and of
    // `other` only its own importer (by name, every default import was taken for any default-exported symbol)
    expect(where(await findReferences(repo.dir, 'greet'))).toEqual(expected);
    expect(where(await findReferences(repo.dir, 'other'))).toEqual(['src/not-it.ts:1 import via hello', 'src/not-it.ts:2 call via hello']);
  });

  it('without definedIn, a re-export of another module\'s default is no use of a symbol re-exported as a default (X50-02)', async () => {
    const repo = await createTestRepo({
      files: {
        'src/defs.ts': 'export function Foo() { return 1; }\n',
        'src/dflt.ts': "export { Foo as default } from './defs';\n",
        'src/greet.ts': 'export default function greet(): number { return 2; }\n',
        'src/barrel.ts': "export { default as greeting } from './greet';\nexport { default as foo } from './dflt';\n",
        'src/use.ts': "import { greeting, foo } from './barrel';\nimport D from './dflt';\nexport const all = [greeting(), foo(), D()];\n",
      },
    });
    const expected = ['src/barrel.ts:2 reexport via default', 'src/dflt.ts:1 reexport', 'src/use.ts:1 import via foo', 'src/use.ts:2 import via D', 'src/use.ts:3 call via foo', 'src/use.ts:3 call via D'];
    expect(where(await findReferences(repo.dir, 'Foo'))).toEqual(expected);
    expect(where(await findReferences(repo.dir, 'Foo', { definedIn: 'src/defs.ts' }))).toEqual(expected);
  });

  it('importers of a module that re-exports the symbol as its default: by name without definedIn, resolved with it (X49-09)', async () => {
    const repo = await createTestRepo({
      files: {
        'src/defs.ts': 'export function Foo() { return 1; }\n',
        'src/dflt.ts': "export { Foo as default } from './defs';\n",
        'src/dflt3.ts': "export { default } from './dflt';\n",
        'src/use.ts': "import D from './dflt';\nimport D3 from './dflt3';\nimport { default as D5 } from './dflt';\nexport const all = [D(), D3(), D5()];\n",
      },
    });
    const expected = [
      'src/dflt.ts:1 reexport',
      'src/dflt3.ts:1 reexport via default',
      'src/use.ts:1 import via D',
      'src/use.ts:2 import via D3',
      'src/use.ts:3 import via default',
      'src/use.ts:4 call via D',
      'src/use.ts:4 call via D3',
      'src/use.ts:4 call via D5',
    ];
    expect(where(await findReferences(repo.dir, 'Foo', { definedIn: 'src/defs.ts' }))).toEqual(expected);
    expect(where(await findReferences(repo.dir, 'Foo'))).toEqual(expected);
  });

  it('`export default name;` and `export { name as default }` make name the default export too', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/a.js': 'function parse(text) {\n  return text;\n}\nexport default parse;\n',
        'lib/b.js': 'function build() {}\nexport { build as default };\n',
        'lib/use.js': "import p from './a.js';\nimport mk from './b.js';\np('x');\nmk();\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'parse', { definedIn: 'lib/a.js' }))).toEqual(['lib/a.js:4 other', 'lib/use.js:1 import via p', 'lib/use.js:3 call via p']);
    expect(where(await findReferences(repo.dir, 'build', { definedIn: 'lib/b.js' }))).toEqual(['lib/b.js:2 other', 'lib/use.js:2 import via mk', 'lib/use.js:4 call via mk']);
  });

  it('aliased re-exports chained through two barrels reach the final importer', async () => {
    const repo = await createTestRepo({
      files: {
        'src/core.ts': 'export function compute(): number {\n  return 1;\n}\n',
        'src/mid.ts': "export { compute as calc } from './core.js';\n",
        'src/top.ts': "export { calc as run } from './mid.js';\n",
        'src/app.ts': "import { run as go } from './top.js';\ngo();\n",
        'src/unrelated.ts': 'export function run(): void {}\nrun();\n',
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'src/core.ts' }))).toEqual([
      'src/app.ts:1 import via run',
      'src/app.ts:2 call via go',
      'src/mid.ts:1 reexport',
      'src/top.ts:1 reexport via calc',
    ]);
  });
});

describe('findReferences: CommonJS and dynamic-import destructuring', () => {
  it('`const { fn: alias } = require(...)` and `await import(...)` bind the alias', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/math.js': 'function add(a, b) {\n  return a + b;\n}\nmodule.exports = { add };\n',
        'lib/use.cjs': "const { add: plus } = require('./math.js');\nplus(1, 2);\n",
        'lib/lazy.mjs': "const { add: sum } = await import('./math.js');\nsum(3, 4);\n",
        'lib/plain.cjs': "const { add } = require('./math.js');\nadd(5, 6);\n",
      },
    });
    expect(where(await findReferences(repo.dir, 'add', { definedIn: 'lib/math.js' }))).toEqual([
      'lib/lazy.mjs:1 import',
      'lib/lazy.mjs:2 call via sum',
      'lib/math.js:4 other',
      'lib/plain.cjs:1 import',
      'lib/plain.cjs:2 call',
      'lib/use.cjs:1 import',
      'lib/use.cjs:2 call via plus',
    ]);
  });
});

describe('findReferences: Python packages re-exporting under another name', () => {
  it("`from .core import compute as calc` in __init__.py makes `from pkg import calc` a use of compute", async () => {
    const repo = await createTestRepo({
      files: {
        'pkg/__init__.py': 'from .core import compute as calc\n',
        'pkg/core.py': 'def compute():\n    return 1\n',
        'app.py': 'from pkg import calc\n\nprint(calc())\n',
        'other.py': 'def calc():\n    return 2\n\ncalc()\n',
      },
    });
    expect(where(await findReferences(repo.dir, 'compute', { definedIn: 'pkg/core.py' }))).toEqual([
      'app.py:1 import via calc',
      'app.py:3 call via calc',
      'pkg/__init__.py:1 import',
    ]);
  });
});
