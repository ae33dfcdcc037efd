/**
 * The partial extractions a cold check-callers / analyze-deps use (extract.ts ExtractPart) against
 * the full extraction they stand in for, on inputs that are easy to get wrong: the word in strings
 * and comments, as a substring of longer names, shadowed by a parameter or local, after non-ASCII
 * text (web-tree-sitter's nodes count UTF-16 code units, its query ranges bytes), under import
 * aliases, in re-exports, as a method, Go qualified names, Python `from x import *`, Rust
 * `use a::b as c`. And end to end: findReferences and dependencyGraph answer the same from a cold
 * cache (partial facts) as after analyzeRepo stored every file's full facts.
 */
import { describe, expect, it } from 'vitest';
import { decodeRefs, extractFacts, type RawRef } from '../src/analysis/engine/extract.js';
import { analyzeRepo, dependencyGraph, findReferences } from '../src/analysis/engine/index.js';
import type { Lang } from '../src/analysis/engine/types.js';
import { createTestRepo } from './support/git-repo.js';

interface Case {
  lang: Lang;
  word: string;
  source: string;
}

const cases: Case[] = [
  {
    lang: 'typescript',
    word: 'sharedHelper',
    source: [
      "import { sharedHelper, sharedHelperX as other } from './shared.js';",
      "import * as ns from './ns.js';",
      "import def from './def.js';",
      "export { sharedHelper as helperAlias } from './shared.js';",
      "export * from './all.js';",
      "const text = 'héllo wörld 😀 sharedHelper in a string'; // sharedHelper in a comment 😀",
      '/* sharedHelper in a block comment, ünïcode before the call */ sharedHelper(1);',
      'function local(sharedHelper: number): number {',
      '  return sharedHelper + 1; // the parameter, not the import',
      '}',
      'export class Store {',
      '  sharedHelper(): void {}',
      '  run(): void {',
      '    this.sharedHelper();',
      '    ns.sharedHelper();',
      '    other(); def(); mySharedHelper(); sharedHelperz();',
      '    const { sharedHelper: renamed } = require("./x");',
      '    renamed();',
      '  }',
      '}',
      'type T = typeof sharedHelper;',
      'const obj = { sharedHelper };',
      'export const value = `${sharedHelper(2)} 😀 sharedHelper`;',
    ].join('\n'),
  },
  {
    lang: 'tsx',
    word: 'Button',
    source: "import { Button as B } from './ui';\nexport const App = () => <div title=\"Button\">{/* Button */}<B /><Button label='é' /></div>;\n",
  },
  {
    lang: 'javascript',
    word: 'parse',
    source: [
      "const { parse, format: fmt } = require('./lib');",
      "import parseDefault from './p.js';",
      "// parse in a comment: é😀",
      "const s = 'parse'; parse(s); fmt(s); parseDefault(s);",
      'function f(parse) { return parse(1); }',
      'const g = (x) => { const parse = x; return parse; };',
      'obj.parse(); new parse();',
      "export { parse as parseIt, fmt };",
    ].join('\n'),
  },
  {
    lang: 'go',
    word: 'SharedHelper',
    source: [
      'package p1',
      '',
      'import (',
      '\t"example.com/bench/pkg/p0"',
      '\tq "example.com/bench/pkg/q0"',
      ')',
      '',
      '// SharedHelper in a comment: é😀',
      'var s = "SharedHelper ünï"',
      'var UseShared = p0.SharedHelper(3) + q.SharedHelper(1)',
      '',
      'func F(SharedHelper int) int {',
      '\treturn SharedHelper + 1',
      '}',
      '',
      'type T struct{ SharedHelper int }',
      '',
      'func (t *T) SharedHelper() int { return t.SharedHelper() + SharedHelper(2) + SharedHelperX() }',
    ].join('\n'),
  },
  {
    lang: 'python',
    word: 'shared_helper',
    source: [
      'from app.m0.f0 import shared_helper',
      'from app.m0.f1 import shared_helper as sh, other',
      'from .star import *',
      'import app.m0.f0 as mod',
      '"""shared_helper in a docstring é😀"""',
      '# shared_helper in a comment',
      'USE = shared_helper(3) + sh(1) + mod.shared_helper(2) + other()',
      'label = "shared_helper"',
      '',
      'def f(shared_helper):',
      '    return shared_helper + 1',
      '',
      'class C:',
      '    def shared_helper(self) -> None:',
      '        self.shared_helper()',
      '        g(shared_helper=1)',
      '        not_shared_helper()',
      '',
      'def h():',
      '    shared_helper = 2',
      '    return [shared_helper for shared_helper in range(3)]',
    ].join('\n'),
  },
  {
    lang: 'rust',
    word: 'shared_helper',
    source: [
      'use crate::m0::f0::shared_helper;',
      'use crate::m0::f1::shared_helper as c;',
      'pub use crate::m0::f2::{self, other as shared_helper_alias};',
      'use super::*;',
      'mod inner;',
      '/// shared_helper in a doc comment é😀',
      'pub fn use_shared() -> i64 {',
      '    let s = "shared_helper ünï";',
      '    shared_helper(3) + c(1) + crate::m0::f0::shared_helper(2) + shared_helper_alias()',
      '}',
      'fn shadow(shared_helper: i64) -> i64 {',
      '    let f = |shared_helper: i64| shared_helper + 1;',
      '    f(shared_helper)',
      '}',
      'impl S {',
      '    pub fn shared_helper(&self) { self.shared_helper(); }',
      '}',
    ].join('\n'),
  },
];

const byPosition = (a: RawRef, b: RawRef) => a[1] - b[1] || a[2] - b[2];

describe('partial extraction = the full extraction, for what its readers read', () => {
  for (const { lang, word, source } of cases) {
    it(`${lang}: references to ${word}, its import aliases and in import statements; imports only`, async () => {
      const full = await extractFacts(lang, source);
      const part = await extractFacts(lang, source, { refsFor: [word] });
      const importsOnly = await extractFacts(lang, source, { imports: true });
      // What findReferences reads of a file: the word, the local names its imports bind, import/re-export references.
      const locals = new Set([word, ...full.imports.flatMap((raw) => raw.names.map((name) => name.local)).filter((local) => local !== '*')]);
      const expected = decodeRefs(full.refs).filter(([name, , , kind]) => locals.has(name) || kind === 'import' || kind === 'reexport');
      expect(decodeRefs(part.refs).sort(byPosition)).toEqual(expected.sort(byPosition));
      // The word itself is found (not vacuous), and never from a string or comment line alone.
      expect(expected.some(([name]) => name === word)).toBe(true);
      expect(part.symbols).toEqual(full.symbols);
      expect(part.imports).toEqual(full.imports);
      expect(importsOnly).toEqual({ symbols: [], imports: full.imports, refs: '', ...(full.package === undefined ? {} : { package: full.package }) });
    });
  }

  it('a word with no identifier occurrence (only in literals, or inside longer names) yields no reference of it', async () => {
    const source = "// findMe\nconst findMeToo = 'findMe';\nexport const x = findMeToo;\n";
    const part = await extractFacts('typescript', source, { refsFor: ['findMe'] });
    expect(decodeRefs(part.refs)).toEqual([]);
    expect(decodeRefs((await extractFacts('typescript', source)).refs).map(([name]) => name)).toContain('findMeToo');
  });
});

describe('findReferences / dependencyGraph: cold (partial facts) = after full facts are cached', () => {
  const files: Record<string, string> = {
    'src/shared.ts': "export function sharedHelper(x: number): number {\n  return x + 1; // é😀\n}\nexport class Box {\n  sharedHelper(): void {}\n}\n",
    'src/barrel.ts': "export { sharedHelper as helper } from './shared.js';\nexport * from './shared.js';\n",
    'src/use-a.ts': "import { helper as h } from './barrel.js';\n// sharedHelper in a comment 😀\nexport const a = h(1);\n",
    'src/use-b.ts': "import { sharedHelper } from './shared.js';\nconst label = 'sharedHelper';\nexport function b(sharedHelper: number): number {\n  return sharedHelper;\n}\nexport const c = sharedHelper;\n",
    'src/use-c.ts': "import { Box } from './barrel.js';\nnew Box().sharedHelper();\n",
    'src/strings.ts': "export const s = 'sharedHelper';\n",
    'pkg/p0/p0.go': 'package p0\n\n// SharedHelper adds one.\nfunc SharedHelper(x int) int { return x + 1 }\n',
    'pkg/p1/p1.go': 'package p1\n\nimport (\n\tq "example.com/m/pkg/p0"\n)\n\nvar U = q.SharedHelper(1) // é\n\nfunc SharedHelper() {}\n\nvar V = SharedHelper\n',
    'go.mod': 'module example.com/m\n\ngo 1.21\n',
    'app/__init__.py': 'from .core import shared_helper as sh\n',
    'app/core.py': 'def shared_helper(x):\n    return x + 1\n',
    'app/use.py': 'from app import sh\nfrom app.core import *\n"""shared_helper é😀"""\nsh(1)\nshared_helper(2)\n',
    'Cargo.toml': '[package]\nname = "bench"\nversion = "0.1.0"\n',
    'src/lib.rs': 'pub mod core;\npub mod user;\n',
    'src/core.rs': 'pub fn shared_helper(x: i64) -> i64 {\n    x + 1\n}\n',
    'src/user.rs': 'use crate::core::shared_helper as c;\nuse crate::core::*;\n/// shared_helper é\npub fn u() -> i64 {\n    c(1) + shared_helper(2)\n}\n',
  };
  const queries: Array<[string, string | undefined]> = [
    ['sharedHelper', undefined],
    ['sharedHelper', 'src/shared.ts'],
    ['SharedHelper', 'pkg/p0/p0.go'],
    ['shared_helper', 'app/core.py'],
    ['shared_helper', 'src/core.rs'],
  ];
  // Two of 14 analysable files: the cold path reads the listed files and their possible importers only
  // (importersOf); all four files: the whole-tree graph.
  const depsOf = ['src/shared.ts', 'src/core.rs'];
  const wholeTree = [...depsOf, 'app/core.py', 'pkg/p0/p0.go'];

  it('every answer is identical, and not empty', async () => {
    // Two repositories with the same files: two caches (each under its own .git).
    const cold = await createTestRepo({ files });
    const full = await createTestRepo({ files });
    await analyzeRepo(full.dir);
    for (const [symbol, definedIn] of queries) {
      const options = definedIn === undefined ? {} : { definedIn };
      const fromCold = await findReferences(cold.dir, symbol, options);
      expect(fromCold.length).toBeGreaterThan(0);
      expect(fromCold).toEqual(await findReferences(full.dir, symbol, options));
      // A second call on the cold repository reads the partial facts back from the cache.
      expect(await findReferences(cold.dir, symbol, options)).toEqual(fromCold);
    }
    const graph = await dependencyGraph(cold.dir, depsOf);
    expect(Object.values(graph.dependedBy).flat().length).toBeGreaterThan(0);
    expect(graph).toEqual(await dependencyGraph(full.dir, depsOf));
    expect(await dependencyGraph(cold.dir, depsOf)).toEqual(graph);
    const whole = await dependencyGraph(full.dir, wholeTree);
    for (const file of depsOf) {
      expect(graph.dependsOn[file]).toEqual(whole.dependsOn[file]);
      expect(graph.dependedBy[file]).toEqual(whole.dependedBy[file]);
    }
  });
});
