/**
 * The cold path of the analysis engine (issue 15, bench:analysis): what it skips must never change an
 * answer. (1) The lexical pre-check that lets check-callers skip parsing a file naming the symbol only
 * in comments and strings is compared with tree-sitter on traps in every language. (2) analyze-deps'
 * cold graph — only the listed files and the files a word search says could import them — equals the
 * whole-tree graph on imports that do not name their target (`'..'`, `from . import`, `super::`,
 * `crate::`, a Go module's root package).
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dependencyGraph, listSymbols } from '../src/analysis/engine/index.js';
import { decodeRefs, extractFacts } from '../src/analysis/engine/extract.js';
import { onlyInLiterals } from '../src/analysis/engine/lexical.js';
import type { Lang } from '../src/analysis/engine/types.js';
import { createTestRepo } from './support/git-repo.js';

const name = 'target';
/** [lang, file, source, the scanner's expected verdict]; `true` only where `target` is never an identifier. */
const cases: Array<[Lang, string, string, boolean]> = [
  ['typescript', 'a.ts', "// target\n/* target */\nconst x = 'target' + \"target\";\n", true],
  ['typescript', 'a.ts', 'const re = /target/g; const y = a / b;\n', true],
  ['typescript', 'a.ts', 'target();\n', false],
  ['typescript', 'a.ts', "const x = `${target}`;\n", false],
  ['typescript', 'a.ts', 'const t = `a ${`b ${"target"}`} target`;\n', false],
  ['typescript', 'a.ts', "if (x) /'/.test(s); target();\n", false],
  ['typescript', 'a.ts', "const a = b! / 2; const s = '\\'target';\n", false],
  ['typescript', 'a.ts', 'return /"/.test(x) ? target : 0;\n', false],
  ['typescript', 'a.ts', "const n = x['target'];\n", true],
  // outside attack X47-01: a `//` comment ends at a lone CR, U+2028 or U+2029 as at LF
  ['typescript', 'a.ts', '// calls below\rtarget();\r', false],
  ['typescript', 'a.ts', '// note \u2028target();\n', false],
  ['javascript', 'a.js', '// note \u2029target();\n', false],
  ['typescript', 'a.ts', '// target\r\nconst s = "target";\r\n', true],
  ['tsx', 'a.tsx', "const e = <div>it's {target}</div>;\n", false],
  ['javascript', 'a.js', "const e = <p>don't</p>; target();\n", false],
  ['javascript', 'a.js', "#!/usr/bin/env node target\nconst s = 'target';\n", true],
  ['go', 'a.go', 'package a\n// target\nvar s = "target" + `target\n` + string(\'t\')\n', true],
  ['go', 'a.go', 'package a\nvar r = \'"\'; var x = target()\n', false],
  ['go', 'a.go', 'package a\nvar s = "a\\"target"\n', true],
  ['python', 'a.py', '# target\ns = "target" + \'target\' + r"\\"target" + b\'target\'\n"""\ntarget\n"""\n', true],
  ['python', 'a.py', 'x = f"{target}"\n', false],
  ['python', 'a.py', "s = 'it''s'; target()\n", false],
  ['python', 'a.py', 'def f(target): pass\n', false],
  ['rust', 'a.rs', '// target\n/* a /* target */ target */\nfn f<\'a>(x: &\'a str) { let s = "target"; let c = \'"\'; let r = r#"target "quoted" "#; }\n', true],
  ['rust', 'a.rs', "fn f<'a>(x: &'a str) -> &'a str { target(x) }\n", false],
  ['rust', 'a.rs', 'fn f() { let c = \'"\'; target(); }\n', false],
  ['rust', 'a.rs', 'fn f() { println!("{}", target); }\n', false],
];

describe('cold check-callers: files naming the symbol only in comments and strings are not parsed', () => {
  it('the scanner says "only in literals" exactly where expected, and never where tree-sitter finds the identifier', async () => {
    const verdicts: string[] = [];
    for (const [lang, file, source, expected] of cases) {
      const verdict = onlyInLiterals(lang, source, file, [name]);
      const parsed = decodeRefs((await extractFacts(lang, source)).refs, new Set([name]));
      // Soundness: a skipped file has no reference (what parsing would have found).
      if (verdict) expect(parsed, `${lang}: ${source}`).toEqual([]);
      verdicts.push(`${lang} ${JSON.stringify(source)} ${verdict}`);
      expect(verdict, `${lang}: ${source}`).toBe(expected);
    }
    expect(verdicts).toHaveLength(cases.length);
    // No occurrence at all: parsed (the scanner only skips what it has seen).
    expect(onlyInLiterals('go', 'package a\n', 'a.go', [name])).toBe(false);
  });
});

describe('cold analyze-deps: the word search finds every importer', () => {
  it('equals the whole-tree graph for imports that do not name the file they reach', async () => {
    const repo = await createTestRepo({
      files: {
        'web/index.ts': 'export const root = 1;\n',
        'web/a/index.ts': "import { root } from '..';\nexport const a = root;\n",
        'web/a/x.ts': "import { a } from '.';\nimport { root } from '../';\nexport const x = a + root;\n",
        'web/a/y.ts': "import { a } from './x/..';\nimport type { T } from './t';\nexport const y = a;\n",
        'web/a/t.d.ts': 'export type T = number;\n',
        'py/pkg/__init__.py': 'VALUE = 1\n',
        'py/pkg/m.py': 'from . import VALUE\nfrom .import VALUE as V\n',
        'py/pkg/sub/__init__.py': 'from .. import VALUE\n',
        'py/pkg/sub/n.py': 'from .. import VALUE\nfrom . import VALUE as W\n',
        'Cargo.toml': '[package]\nname = "shop-core"\nversion = "0.1.0"\n',
        'src/lib.rs': 'pub mod model;\npub fn top() {}\n',
        'src/model.rs': 'pub mod item;\nuse crate::top;\npub struct Model;\n',
        'src/model/item.rs': 'use super::Model;\nuse super::super::top;\n',
        'tests/it.rs': 'use shop_core::top;\n',
        'go.mod': 'module example.com/shop\n',
        'root.go': 'package shop\n\nfunc Root() {}\n',
        'cmd/main.go': 'package main\n\nimport "example.com/shop"\n\nfunc main() { shop.Root() }\n',
      },
    });
    const listed = ['web/index.ts', 'web/a/index.ts', 'web/a/t.d.ts', 'py/pkg/__init__.py', 'py/pkg/sub/__init__.py', 'src/lib.rs', 'src/model.rs', 'root.go'];
    const cold = await dependencyGraph(repo.dir, listed);
    await listSymbols(repo.dir); // now the whole tree's heads answer
    const whole = await dependencyGraph(repo.dir, listed);
    expect(cold).toEqual(whole);
    expect(whole.dependedBy).toEqual({
      'web/index.ts': ['web/a/index.ts'], // `'../'` from web/a/x.ts names `web/`, which resolves to nothing
      'web/a/index.ts': ['web/a/x.ts', 'web/a/y.ts'],
      'web/a/t.d.ts': ['web/a/y.ts'],
      'py/pkg/__init__.py': ['py/pkg/m.py', 'py/pkg/sub/__init__.py', 'py/pkg/sub/n.py'],
      'py/pkg/sub/__init__.py': ['py/pkg/sub/n.py'],
      'src/lib.rs': ['src/model.rs', 'src/model/item.rs', 'tests/it.rs'],
      'src/model.rs': ['src/lib.rs', 'src/model/item.rs'],
      'root.go': ['cmd/main.go'],
    });
    rmSync(path.join(repo.dir, '.git', 'polywave'), { recursive: true, force: true });
  });
});

describe('what is not a reference (outside attack X47)', () => {
  it("a Python keyword argument's name is the callee's parameter: `Car(make=…)` and `dict(make=1)` do not use `make`; a value named `make` does", async () => {
    const source = ['from pkg.defs import Car, make', 'car = Car(make="Toyota")', 'd = dict(make=1)', 'e = Car(make=make)', 'make("x")', ''].join('\n');
    const refs = decodeRefs((await extractFacts('python', source)).refs, new Set(['make']));
    expect(refs.map(([, line, column, kind]) => [line, column, kind])).toEqual([
      [1, 27, 'import'],
      [4, 14, 'other'],
      [5, 1, 'call'],
    ]);
  });
});

describe('columns (outside attack X47-18)', () => {
  it('a byte order mark is not counted on line 1 (the context line never shows it); columns are UTF-16 units of the line', async () => {
    const cases: Array<[Lang, string, Array<[number, number]>]> = [
      ['typescript', '\uFEFFimport { Foo } from "./def";\nFoo();\n', [[1, 10], [2, 1]]],
      ['python', '\uFEFFfrom pkg.defs import Foo\nFoo()\n', [[1, 22], [2, 1]]],
      ['rust', '\uFEFFuse crate::a::Foo;\nfn f() { Foo(); }\n', [[1, 15], [2, 10]]],
      ['typescript', '/*é😀*/Foo();\n', [[1, 8]]],
    ];
    for (const [lang, source, expected] of cases) {
      const refs = decodeRefs((await extractFacts(lang, source)).refs, new Set(['Foo']));
      expect(refs.map(([, line, column]) => [line, column]), `${lang}: ${JSON.stringify(source)}`).toEqual(expected);
    }
  });
});
