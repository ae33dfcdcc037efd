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
  /** The name looked for (default Foo). */
  word?: string;
  source: string;
  /** `line:column:kind` of every reference to the word that must remain. */
  expected: string[];
}

/** X48-10..12's Go file (one file, three names looked for). */
const goScopes = [
  "package p",
  "",
  "func BeforeShort() int {",
  "\ta := Cfg.N",
  "\tCfg := 3",
  "\treturn a + Cfg",
  "}",
  "",
  "func SelfInit() int {",
  "\tCfg := Cfg",
  "\treturn Cfg.N",
  "}",
  "",
  "func ParamType(Foo Foo) int {",
  "\treturn Foo.N",
  "}",
  "",
  "func TypeSwitch(v any) {",
  "\tswitch Cfg := Cfg; t := v.(type) {",
  "\tcase int:",
  "\t\t_ = t",
  "\t}",
  "\t_ = Cfg",
  "}",
  "",
  "func Ranged() {",
  "\tfor Cfg := range Cfg.N {",
  "\t\t_ = Cfg",
  "\t}",
  "}",
  "",
  "type List[Foo any] struct{ v Foo }",
  "",
  "func (l *List[Foo]) Get() Foo { return l.v }",
  "",
  "func Labelled() {",
  "Cfg:",
  "\tfor {",
  "\t\tbreak Cfg",
  "\t}",
  "}",
  "",
  "func LocalType() {",
  "\t_ = Make()",
  "\ttype Make int",
  "\tvar x Make",
  "\t_ = x",
  "}",
].join('\n');

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
  // Outside round X48 (/work/coord/attack-analysis-48.md): each language's own scope rules.
  {
    name: "X48-02..05: Python global in a nested function, defaults and annotations outside the body, a comprehension's first iterable, := in a comprehension",
    lang: 'python',
    word: 'Foo',
    source: [
      "from pkg.defs import Foo",
      "",
      "",
      "def outer():",
      "    Foo = 1",
      "    def inner():",
      "        global Foo",
      "        return Foo()",
      "    return inner",
      "",
      "",
      "def defaults(Foo=Foo):",
      "    return Foo",
      "",
      "",
      "callbacks = [lambda Foo=Foo: Foo for _ in range(3)]",
      "",
      "",
      "def annotated(Foo: Foo) -> None:",
      "    pass",
      "",
      "",
      "def comp():",
      "    return [Foo for Foo in Foo]",
      "",
      "",
      "def walrus_in_comp():",
      "    [(Foo := y) for y in range(3)]",
      "    return Foo",
      "",
      "",
      "class K:",
      "    Foo = 2",
      "",
      "    def m(self):",
      "        return Foo()",
      "",
      "",
      "def g1():",
      "    global Foo",
      "    Foo = None",
      "",
      "",
      "def g2():",
      "    return Foo()",
    ].join('\n'),
    expected: ['1:22:import', '7:16:other', '8:16:call', '12:18:other', '16:25:other', '19:20:type', '24:28:other', '36:16:call', '40:12:other', '45:12:call'],
  },
  {
    name: "X48-06..08: TS a class in a switch case, module augmentation, infer and mapped-type keys",
    lang: 'typescript',
    word: 'Foo',
    source: [
      "import { Foo } from './defs';",
      "",
      "export function sw(k: number) {",
      "  switch (k) {",
      "    case 1:",
      "      class Foo {}",
      "      break;",
      "  }",
      "  return new Foo();",
      "}",
      "",
      "export function sibling(c: boolean) {",
      "  if (c) { class Foo {} }",
      "  else { return new Foo(); }",
      "  return null;",
      "}",
      "",
      "export const ce = class Foo {};",
      "export const after = new Foo();",
      "",
      "export function gen<Foo>(x: Foo): Foo { return x; }",
      "export const v: Foo = new Foo();",
      "",
      "export class Box<Foo> {",
      "  static make(): Foo { return new Foo(); }",
      "}",
      "",
      "export function localIface() {",
      "  interface Foo { a: 1 }",
      "  return Foo;",
      "}",
      "",
      "declare module './defs' {",
      "  interface Foo { augmented: string }",
      "}",
      "",
      "export type Unwrap<T> = T extends Array<infer Foo> ? Foo : never;",
      "export type Keys<T> = { [Foo in keyof T]: Foo };",
      "",
      "export function lab() {",
      "  Foo: for (;;) { break Foo; }",
      "}",
    ].join('\n'),
    expected: ['1:10:import', '9:14:call', '14:21:call', '19:26:call', '22:17:type', '22:27:call', '25:35:call', '30:10:other', '34:13:type'],
  },
  {
    name: "X48-10: Go locals are seen from the end of their declaration (x := x, range x, switch x := x)",
    lang: 'go',
    word: 'Cfg',
    source: goScopes,
    expected: ['4:7:other', '10:9:other', '19:16:other', '23:6:other', '27:19:other'],
  },
  {
    name: "X48-11/12: Go parameter types are outside the parameters' scope; receiver type parameters are declarations",
    lang: 'go',
    word: 'Foo',
    source: goScopes,
    expected: ['14:20:type'],
  },
  {
    name: "X48-10: Go a local type is seen from its name on",
    lang: 'go',
    word: 'Make',
    source: goScopes,
    expected: ['44:6:call'],
  },
  {
    name: "X48-14..17: Rust for iterators, namespaces of local items, struct-pattern shorthand, const generics",
    lang: 'rust',
    word: 'make',
    source: [
      "#![allow(dead_code, unused_variables, non_camel_case_types)]",
      "use crate::defs::{make, Unit};",
      "",
      "pub fn sibling(c: bool) -> usize {",
      "    if c {",
      "        fn make() -> Vec<u32> { vec![] }",
      "    }",
      "    make().len()",
      "}",
      "",
      "pub fn for_iter() -> u32 {",
      "    let mut s = 0;",
      "    for make in make() {",
      "        s += make;",
      "    }",
      "    s",
      "}",
      "",
      "pub fn namespaces() {",
      "    trait Unit {}",
      "    let u = Unit;",
      "}",
      "",
      "pub fn typed_local() {",
      "    type make = u8;",
      "    let v = make();",
      "}",
      "",
      "pub fn field_pattern(p: Point) -> i32 {",
      "    let Point { make, .. } = p;",
      "    make + 1",
      "}",
      "",
      "pub struct Point { pub make: i32, pub y: i32 }",
      "",
      "pub fn const_generic<const make: usize>() -> [u8; make] {",
      "    [0; make]",
      "}",
    ].join('\n'),
    expected: ['2:19:import', '8:5:call', '13:17:call', '26:13:call'],
  },
  {
    name: "X48-21: Go type-switch case types and a func literal's parameter types",
    lang: 'go',
    word: 'Foo',
    source: [
      "package p",
      "",
      "func Constrained[T Foo](x T) { x.M() }",
      "",
      "func Switch(v any) {",
      "\tswitch Foo := v.(type) {",
      "\tcase Foo:",
      "\t\t_ = Foo",
      "\t}",
      "}",
      "",
      "func Closure() func(Foo) {",
      "\treturn func(Foo Foo) { _ = Foo }",
      "}",
      "",
      "type Pair[A Foo, B any] struct{ a A }",
    ].join('\n'),
    expected: ['3:20:type', '7:7:type', '12:21:type', '13:18:type', '16:13:type'],
  },
  {
    name: "X48-01/20: Python a subscripted annotation is no type parameter",
    lang: 'python',
    word: 'Car',
    source: [
      "from pkg.defs import Car",
      "",
      "",
      "def fleet() -> list[Car]:",
      "    return [Car(\"a\"), Car(\"b\")]",
      "",
      "",
      "def test_fleet():",
      "    assert len(fleet()) == 2",
      "",
      "",
      "def test_one():",
      "    assert Car(\"c\").kind == \"c\"",
    ].join('\n'),
    expected: ['1:22:import', '4:21:type', '5:13:call', '5:23:call', '13:12:call'],
  },
  // Outside round X49 (/work/coord/attack-analysis-49.md)
  {
    name: 'X49-10: Rust refutable patterns bind in their block or arm (if let, while let, let-else, ref, @, tuple structs)',
    lang: 'rust',
    word: 'make',
    source: [
      'fn f() {',
      '    if let Some(make) = make() { make } else { make() };',
      '    while let Some(make) = it.next() { make; }',
      '    match x { make @ 1..=5 => make, Foo(make) => make, _ => make() }',
      '    let Some(make) = make() else { return make(); };',
      '    make',
      '}',
      'fn g() { match x { Some(v) => v, None => make() } }',
    ].join('\n'),
    expected: ['2:25:call', '2:48:call', '4:61:call', '5:22:call', '5:43:call', '8:42:call'],
  },
  {
    name: 'X49-02: Go a select receive `case v := <-ch` binds in its clause',
    lang: 'go',
    word: 'v',
    source: ['package p', '', 'func f() {', '\tselect {', '\tcase v := <-ch:', '\t\t_ = v', '\tcase v = <-ch:', '\t}', '\t_ = v', '}'].join('\n'),
    expected: ['7:7:other', '9:6:other'],
  },
  {
    name: 'X49-08/07: TS an enum member in its enum body; a module augmentation is a reference',
    lang: 'typescript',
    source: ['enum E { Foo = 1, Bar = Foo }', 'const x = Foo;', "declare module './defs' { interface Foo {} }"].join('\n'),
    expected: ['2:11:other', '3:37:type'],
  },
  {
    name: 'X49-06: Python `del x` makes x local to the function',
    lang: 'python',
    source: ['def f():', '    del Foo', 'def g():', '    return Foo'].join('\n'),
    expected: ['4:12:other'],
  },
  {
    name: 'Go struct literal keys are the field (f), written or elided; map and slice keys, values, and pkg.Foo (p) are not',
    lang: 'go',
    source: [
      'package p',
      '',
      'import "example.com/m/q"',
      '',
      'type M map[int]int',
      'type L []int',
      '',
      'var a = S{Foo: Foo}',
      'var b = []*q.S{{Foo: 1}, nil}',
      'var c = map[S]S{{Foo: 1}: {Foo: 2}}',
      'var d = map[int]int{Foo: 1}',
      'var e = M{Foo: 1}',
      'var f = L{Foo: 1}',
      'var g = [...]G[int]{{Foo: 1}}',
      'var h = q.Foo + q.Foo()',
      'var i = struct{ Foo int }{Foo: 1}',
    ].join('\n'),
    expected: ['8:11:other:f', '8:16:other', '9:17:other:f', '10:18:other:f', '10:28:other:f', '11:21:other', '12:11:other', '13:11:other', '14:22:other:f', '15:11:other:p', '15:19:call', '16:27:other:f'],
  },
  {
    name: "Python: a class body's own later statements read its attributes; earlier ones, its methods and comprehensions read the module's",
    lang: 'python',
    source: [
      'class C:',
      '    a = Foo',
      '    Foo = 2',
      '    b = Foo + 1',
      '    def m(self, d=Foo):',
      '        return Foo',
      '    c = [Foo for _ in range(3)]',
      '    e = lambda: Foo',
      '    class D:',
      '        f = Foo',
      '    @staticmethod',
      '    def g():',
      '        return Foo',
      '    h = Foo',
      'x = Foo',
      'class E:',
      '    Foo = 1',
    ].join('\n'),
    expected: ['2:9:other', '6:16:other', '7:10:other', '8:17:other', '10:13:other', '13:16:other', '15:5:other'],
  },
  {
    name: 'Go: a local named like an imported package is an object from its declaration on (no p flag, a method call)',
    lang: 'go',
    word: 'Timeout',
    source: ['package p', '', 'import "example.com/m/cfg"', '', 'func f() int {', '\tx := cfg.Timeout', '\tcfg := cfg.Load()', '\treturn x + cfg.Timeout + cfg.Timeout()', '}'].join('\n'),
    expected: ['6:11:other:p', '8:17:other', '8:31:method-call'],
  },
  {
    name: "TS: a namespace's exported member is bound in every block of that namespace, not in another namespace",
    lang: 'typescript',
    source: [
      'namespace NS { export const Foo = 1; const a = Foo; }',
      'namespace NS { export const x = Foo; }',
      'namespace Other { export const y = Foo; }',
      'export namespace NS { export const z = Foo; }',
      'namespace Local { const Foo = 2; }',
      'namespace Local { export const w = Foo; }',
      'const v = Foo;',
    ].join('\n'),
    expected: ['3:36:other', '6:36:other', '7:11:other'],
  },
  {
    name: 'Python: a module attribute is a package member (p), an object attribute is not',
    lang: 'python',
    source: ['import q', 'import r.s as t', 'x = q.Foo + t.u.Foo + obj.Foo + q.Foo()'].join('\n'),
    expected: ['3:7:other:p', '3:17:other:p', '3:27:other', '3:35:call'],
  },
];

const render = (refs: ReturnType<typeof decodeRefs>) => refs.map(([, line, column, kind, flag]) => `${line}:${column}:${kind}${flag ? `:${flag}` : ''}`);

describe('local declarations are not references, and hide the name in their scope (X47)', () => {
  for (const { name, lang, word = 'Foo', source, expected } of cases) {
    it(name, async () => {
      const full = await extractFacts(lang, source);
      const partial = await extractFacts(lang, source, { refsFor: [word] });
      expect(render(decodeRefs(full.refs, new Set([word])))).toEqual(expected);
      expect(render(decodeRefs(partial.refs, new Set([word])))).toEqual(expected);
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
    // labels and private names are code, not mentions (X48-09/13/18); the comment is a mention
    repo.write('src/labels.ts', 'export function l() {\n  Widget: for (;;) { break Widget; }\n}\nexport class P {\n  #Widget = 1;\n  m() { return this.#Widget; } // Widget\n}\n');
    await repo.commitAll('locals named like module-level functions');
    const ts = await runCliInProcess(['check-callers', 'Widget', '--defined-in', 'src/lib.ts'], { cwd: repo.dir });
    expect(ts.code).toBe(0);
    expect((JSON.parse(ts.stdout) as Array<{ file: string; line: number; kind: string }>).map((entry) => `${entry.file}:${entry.line} ${entry.kind}`)).toEqual(['src/use.ts:1 import', 'src/use.ts:6 call']);
    const py = await runCliInProcess(['check-callers', 'widget', '--defined-in', 'py/lib.py'], { cwd: repo.dir });
    expect(py.code).toBe(0);
    expect((JSON.parse(py.stdout) as Array<{ file: string; line: number; kind: string }>).map((entry) => `${entry.file}:${entry.line} ${entry.kind}`)).toEqual(['py/use.py:1 import', 'py/use.py:10 call']);

    const tsCascades = await runCliInProcess(['detect-cascades', '.', '--renames', JSON.stringify([{ old: 'Widget', new: 'Gadget' }]), '--format', 'json'], { cwd: repo.dir });
    expect((JSON.parse(tsCascades.stdout) as { cascade_candidates: Array<{ file: string; line: number; cascade_type: string }> }).cascade_candidates.map((entry) => `${entry.file}:${entry.line} ${entry.cascade_type}`)).toEqual([
      'src/labels.ts:6 semantic',
      'src/lib.ts:1 syntax',
      'src/use.ts:1 syntax',
      'src/use.ts:6 syntax',
    ]);
    const cascades = await runCliInProcess(['detect-cascades', '.', '--renames', JSON.stringify([{ old: 'widget', new: 'gadget', scope: 'py' }]), '--format', 'json'], { cwd: repo.dir });
    expect(cascades.code).toBe(0);
    const found = (JSON.parse(cascades.stdout) as { cascade_candidates: Array<{ file: string; line: number; cascade_type: string; severity: string }> }).cascade_candidates;
    // the locals' lines (3, 4, 7, 8 of py/use.py) are no candidates, not even "semantic": no comment or string holds them
    expect(found.map((entry) => `${entry.file}:${entry.line} ${entry.cascade_type} ${entry.severity}`)).toEqual(['py/lib.py:1 syntax high', 'py/use.py:1 syntax high', 'py/use.py:10 syntax medium', 'py/use.py:11 semantic low']);
  });
});
