/**
 * Declarations that are not references (outside attack X47): a name declared locally — a class,
 * enum, interface or type alias inside a function, a type parameter, a class or function
 * expression's own name, Python's `with … as`, `except … as`, `:=`, match captures, tuple targets,
 * PEP 695 parameters, a function-local class; Go type parameters, type-switch bindings and local
 * types; Rust generics and local items — is neither a reference itself nor lets the uses in its
 * scope count as uses of a module-level symbol of that name. Member declarations (object keys,
 * property signatures, fields, enum members, Python keyword-pattern names, Rust labels and
 * lifetimes) are no references either. What stays a reference is listed exactly, for the full
 * extraction and for the partial one a cold check-callers reads (they must agree). End to end,
 * check-callers and detect-cascades on a repository with such locals.
 */
import { describe, expect, it } from 'vitest';
import { decodeRefs, extractFacts } from '../src/analysis/engine/extract.js';
import type { Lang } from '../src/analysis/engine/types.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';

interface Case {
  name: string;
  lang: Lang;
  source: string;
  /** `line:column:kind` of every reference to Foo that must remain. */
  expected: string[];
}

const cases: Case[] = [
  {
    name: 'TypeScript: local class/interface/type/enum, type parameters, expression names, keys and members',
    lang: 'typescript',
    source: [
      'function f() { class Foo {} ; interface Bar { Foo: number; m(): void } ; return new Foo(); }',
      'const o = { Foo: 1 };',
      'function g<Foo>(x: Foo): Foo { return x }',
      'const c = class Foo { m() { return Foo } };',
      'const fe = function Foo() { return Foo };',
      'type I = { [Foo: string]: number };',
      'enum E { Foo, B = 2 }',
      'abstract class Q { Foo = 1; abstract Foo(): void }',
      'Foo(); let t: Foo; function z() { type Foo = number; let u: Foo; Foo() }',
      'function y() { enum Foo { A } return Foo.A } interface J<Foo> { v: Foo } type K<Foo> = Foo[]; let w: Foo[] = [];',
      'function x() { interface Foo { a: 1 } return Foo(); }',
    ].join('\n'),
    // line 9: the call and the type at the top level; `Foo()` in z() (a local type alias binds no value);
    // line 10: the top-level `Foo[]`; line 11: the value `Foo()` beside a local interface
    expected: ['9:1:call', '9:15:type', '9:66:call', '10:102:type', '11:46:call'],
  },
  {
    name: 'JavaScript: local class, class and function expression names, object keys, fields',
    lang: 'javascript',
    source: [
      'const c = class Foo { m() { return Foo } };',
      'const fe = function Foo() { return Foo };',
      'function f(){ class Foo {}; return Foo }',
      'const o = { Foo: 1, Foo() {} }; class K { Foo = 2 }',
      'Foo(); c(Foo);',
    ].join('\n'),
    expected: ['5:1:call', '5:10:other'],
  },
  {
    name: 'Python: with/except as, walrus, match captures, tuple targets, PEP 695, local class, global',
    lang: 'python',
    source: [
      'def f():',
      '    with open(x) as Foo, g() as (a, Foo): pass',
      '    try: pass',
      '    except E as Foo: pass',
      '    if (Foo := 3): pass',
      '    match v:',
      '        case Foo: pass',
      '        case [Foo, *Bar]: pass',
      '        case {"k": Foo, **Rest}: pass',
      '        case P(Foo=Foo) | Q(Foo) as Foo: pass',
      '        case A.Foo: pass',
      '    for a, Foo in z: pass',
      '    for (Foo, b) in z: pass',
      '    [Foo for k, Foo in z]',
      '    class Foo: pass',
      '    Foo()',
      'def g[Foo](x: Foo) -> Foo: pass',
      'class C[Foo]: pass',
      'type Al[Foo] = list[Foo]',
      'def h():',
      '    global Foo',
      '    Foo = 2',
      '    return Foo',
      'Foo()',
      'def k():',
      '    class Foo: pass',
      '    class D:',
      '        class Foo: pass',
      '        def m(self): return Foo',
      '    return Foo()',
    ].join('\n'),
    // `global Foo` and the module's Foo it returns; the top-level call
    expected: ['21:12:other', '23:12:other', '24:1:call'],
  },
  {
    name: 'Go: struct fields, interface methods, type parameters, type-switch bindings, local types',
    lang: 'go',
    source: [
      'package p',
      '',
      'type S struct {',
      '\tFoo int',
      '\tBar, Foo2 string',
      '}',
      'type I interface { Foo() }',
      'func F[Foo any, B ~int](x Foo) Foo {',
      '\tswitch Foo := y.(type) {',
      '\tcase int:',
      '\t\t_ = Foo',
      '\t}',
      '\t_ = Foo(1)',
      '\treturn x',
      '}',
      'func G() {',
      '\ttype Foo struct{}',
      '\t_ = Foo{}',
      '}',
      'func H() { Foo() }',
      'type L[Foo any] struct { v Foo }',
    ].join('\n'),
    expected: ['20:12:call'],
  },
  {
    name: 'Rust: generics, labels, lifetimes, local items, fields, enum variants; an impl inside a block binds nothing there',
    lang: 'rust',
    source: [
      'struct S { Foo: i32 }',
      "fn f<Foo: Clone, 'a>(x: Foo) -> Foo { 'Foo: loop { break 'Foo; } }",
      'fn g() { fn Foo() {} struct Foo; Foo(); }',
      'enum E { Foo, B(i32) }',
      'impl<Foo> T for X<Foo> {}',
      "fn h(x: &'Foo str) { Foo(); }",
      'fn k() { impl X { fn Foo() {} } Foo(); }',
    ].join('\n'),
    expected: ['6:22:call', '7:33:call'],
  },
];

const render = (refs: ReturnType<typeof decodeRefs>) => refs.map(([, line, column, kind]) => `${line}:${column}:${kind}`);

describe('local declarations are not references, and hide the name in their scope (X47)', () => {
  for (const { name, lang, source, expected } of cases) {
    it(name, async () => {
      const full = await extractFacts(lang, source);
      const partial = await extractFacts(lang, source, { refsFor: ['Foo'] });
      expect(render(decodeRefs(full.refs, new Set(['Foo'])))).toEqual(expected);
      expect(render(decodeRefs(partial.refs, new Set(['Foo'])))).toEqual(expected);
    });
  }
});

describe('check-callers and detect-cascades leave locals alone (X47)', () => {
  it('TypeScript and Python: only the real callers; a rename proposes no local', async () => {
    const repo = await createTestRepo();
    repo.write('package.json', '{"name":"x"}\n');
    repo.write('src/lib.ts', 'export function Widget(): number { return 1; }\n');
    repo.write(
      'src/use.ts',
      [
        "import { Widget } from './lib';",
        'export function a() { class Widget {} return new Widget(); }',
        'export function b<Widget>(w: Widget): Widget { return w; }',
        'export const c = class Widget { m() { return Widget; } };',
        'export const d = { Widget: 1 };',
        'export function e() { return Widget(); }',
        '',
      ].join('\n'),
    );
    repo.write('py/lib.py', 'def widget():\n    return 1\n');
    repo.write('py/__init__.py', '');
    repo.write(
      'py/use.py',
      [
        'from py.lib import widget',
        'def a(x):',
        '    with open(x) as widget:',
        '        return widget.read()',
        'def b(v):',
        '    match v:',
        '        case [widget]:',
        '            return widget',
        'def c():',
        '    return widget()',
        "label = 'widget'  # a string and a comment still are mentions",
        '',
      ].join('\n'),
    );
    await repo.commitAll('locals named like module-level functions');
    const ts = await runCliInProcess(['check-callers', 'Widget', '--defined-in', 'src/lib.ts'], { cwd: repo.dir });
    expect(ts.code).toBe(0);
    expect((JSON.parse(ts.stdout) as Array<{ file: string; line: number; kind: string }>).map((entry) => `${entry.file}:${entry.line} ${entry.kind}`)).toEqual(['src/use.ts:1 import', 'src/use.ts:6 call']);
    const py = await runCliInProcess(['check-callers', 'widget', '--defined-in', 'py/lib.py'], { cwd: repo.dir });
    expect(py.code).toBe(0);
    expect((JSON.parse(py.stdout) as Array<{ file: string; line: number; kind: string }>).map((entry) => `${entry.file}:${entry.line} ${entry.kind}`)).toEqual(['py/use.py:1 import', 'py/use.py:10 call']);

    const cascades = await runCliInProcess(['detect-cascades', '.', '--renames', JSON.stringify([{ old: 'widget', new: 'gadget', scope: 'py' }]), '--format', 'json'], { cwd: repo.dir });
    expect(cascades.code).toBe(0);
    const found = (JSON.parse(cascades.stdout) as { cascade_candidates: Array<{ file: string; line: number; cascade_type: string; severity: string }> }).cascade_candidates;
    // the locals' lines (3, 4, 7, 8 of py/use.py) are no candidates, not even "semantic": no comment or string holds them
    expect(found.map((entry) => `${entry.file}:${entry.line} ${entry.cascade_type} ${entry.severity}`)).toEqual(['py/lib.py:1 syntax high', 'py/use.py:1 syntax high', 'py/use.py:10 syntax medium', 'py/use.py:11 semantic low']);
  });
});
