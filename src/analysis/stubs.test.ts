import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { formatStubTable, scanStubText, scanStubsOnBranches } from './stubs.js';

function patterns(filePath: string, text: string): Array<[number, string]> {
  return scanStubText(filePath, text).map((hit) => [hit.line, hit.pattern]);
}

describe('scanStubText — Python', () => {
  it('finds pass-only and ...-only bodies, inline or on their own line, with a docstring allowed', () => {
    const text = [
      'def process_items(self): pass', // 1
      '',
      'def later():', // 3
      '    """Will do it."""',
      '    pass',
      '',
      'async def fetch(url: str,', // 7
      '                timeout: float = 1.0) -> bytes:',
      '    ...',
      '',
      'class Empty:', // 11
      '    pass',
      '',
      'def real():',
      '    if True:',
      '        pass',
      '    return 1',
    ].join('\n');
    expect(patterns('app/x.py', text)).toEqual([
      [1, 'pass'],
      [3, 'pass'],
      [7, '...'],
      [11, 'pass'],
    ]);
    expect(scanStubText('app/x.py', text)[0]).toEqual({ file: 'app/x.py', line: 1, pattern: 'pass', context: 'def process_items(self): pass' });
  });

  it('finds raise NotImplementedError but not in abstract methods', () => {
    const text = [
      'import abc',
      'class Shape(abc.ABC):',
      '    @abc.abstractmethod',
      '    def area(self):',
      '        raise NotImplementedError',
      '    def perimeter(self):',
      '        raise NotImplementedError("later")',
    ].join('\n');
    expect(patterns('shape.py', text)).toEqual([[7, 'raise NotImplementedError']]);
  });

  it('exempts exception classes, Protocol methods, overloads, abstract methods and .pyi files', () => {
    const text = [
      'class ParseError(ValueError):',
      '    """Raised on bad input."""',
      '    pass',
      'class Reader(Protocol):',
      '    def read(self) -> bytes: ...',
      '@overload',
      'def f(x: int) -> int: ...',
      'class Base:',
      '    @abstractmethod',
      '    def run(self): pass',
    ].join('\n');
    expect(patterns('a.py', text)).toEqual([]);
    expect(patterns('a.pyi', 'def f(x: int) -> int: ...\n')).toEqual([]);
  });

  it('does not take pass inside strings or a body that does work', () => {
    const text = ['def f():', '    x = "pass"', '    return x', 'def g():', '    """pass"""', '    return 1', "s = 'raise NotImplementedError'"].join('\n');
    expect(patterns('a.py', text)).toEqual([]);
  });

  it('keeps a docstring closing at column 0 inside the body', () => {
    const text = ['def f():', '    """Doc', 'more', '"""', '    pass', 'x = 1'].join('\n');
    expect(patterns('a.py', text)).toEqual([[1, 'pass']]);
  });

  it('finds markers in # comments only', () => {
    const text = ['# TODO: write it', 'todo_list = ["TODO"]', 'x = 1  # FIXME(ann) later', 'XXX_CONST = 3', '# placeholder until v2'].join('\n');
    expect(patterns('a.py', text)).toEqual([
      [1, 'TODO'],
      [3, 'FIXME'],
      [5, '# placeholder'],
    ]);
  });
});

describe('scanStubText — Rust', () => {
  it('finds todo!() and unimplemented!() in code, not in strings or comments', () => {
    const text = [
      'fn a() -> u32 { todo!() }',
      'fn b() { unimplemented!("later") }',
      'fn c() { let s = "todo!()"; }',
      '/* unimplemented!() */',
      "fn d<'a>(x: &'a str) -> char { 'x' }",
      'fn e() { todo![]; }',
    ].join('\n');
    expect(patterns('src/lib.rs', text)).toEqual([
      [1, 'todo!()'],
      [2, 'unimplemented!()'],
      [6, 'todo!()'],
    ]);
  });

  it('handles raw strings and nested block comments', () => {
    const text = ['let s = r#"a " todo!() "#;', '/* outer /* TODO inner */ still comment todo!() */', 'fn x() { todo!() }'].join('\n');
    expect(patterns('a.rs', text)).toEqual([
      [2, 'TODO'],
      [3, 'todo!()'],
    ]);
  });
});

describe('scanStubText — Go', () => {
  it('finds panic("not implemented") / panic("TODO") in any case', () => {
    const text = [
      'package x',
      'func A() { panic("not implemented") }',
      'func B() { panic("TODO") }',
      'func C() { panic("Not Implemented yet") }',
      'func D() { panic(errors.New("unimplemented")) }',
      'func E() { panic("bad state") }',
      'var s = `panic("TODO")`',
      '// panic("todo") in a comment is not code',
    ].join('\n');
    expect(patterns('x.go', text)).toEqual([
      [2, 'panic("not implemented")'],
      [3, 'panic("TODO")'],
      [4, 'panic("not implemented")'],
      [5, 'panic("not implemented")'],
    ]);
  });

  it('treats // stub and // placeholder comments as stubs', () => {
    expect(patterns('x.go', 'func F() int {\n\treturn 0 // stub\n}\n// Placeholder: real logic in wave 2\n// stubbed elsewhere\n')).toEqual([
      [2, '// stub'],
      [4, '// placeholder'],
    ]);
  });
});

describe('scanStubText — TypeScript/JavaScript', () => {
  it('finds throw new Error("not implemented"/"TODO") with any quote and case', () => {
    const text = [
      'export function a(): never { throw new Error("not implemented"); }',
      "export function b() { throw new Error('TODO: later'); }",
      'export function c() { throw Error(`Not implemented: ${name}`); }',
      'export function d() { throw new Error("invalid input"); }',
      'export function e() {}',
      'const message = "throw new Error(\'not implemented\')";',
    ].join('\n');
    expect(patterns('src/a.ts', text)).toEqual([
      [1, 'throw new Error("not implemented")'],
      [2, 'throw new Error("TODO")'],
      [3, 'throw new Error("not implemented")'],
    ]);
  });

  it('finds markers only in comments, not in identifiers or strings', () => {
    const text = [
      '// TODO: handle errors',
      'const todoItems = ["TODO", "FIXME"];',
      'const HACKER_NEWS = 1; // see XXXL sizes',
      '/**',
      ' * HACK around the bug',
      ' */',
      'const re = /TODO/g; // todo: tighten',
      'const url = `http://x/${TODOS}`;',
      '<div>Don\'t TODO</div>;',
    ].join('\n');
    expect(patterns('src/a.tsx', text)).toEqual([
      [1, 'TODO'],
      [5, 'HACK'],
      [7, 'TODO'],
    ]);
  });

  it('skips empty function bodies and binary text', () => {
    expect(patterns('a.js', 'export function noop() {}\nconst f = () => {};\n')).toEqual([]);
    expect(patterns('a.js', 'TODO\0binary')).toEqual([]);
  });

  it('trims the context and caps it at 200 characters; one hit per line', () => {
    const long = `// TODO ${'x'.repeat(300)} FIXME`;
    const [hit] = scanStubText('a.ts', `   ${long}\n`);
    expect(hit!.context.length).toBe(200);
    expect(hit!.context.startsWith('// TODO')).toBe(true);
    expect(scanStubText('a.ts', `   ${long}\n`)).toHaveLength(1);
  });
});

describe('scanStubText — other files', () => {
  it('reads shell/YAML # comments and prose as comment text', () => {
    expect(patterns('deploy.sh', 'echo "TODO"\n# TODO: retries\necho $# # FIXME\n')).toEqual([
      [2, 'TODO'],
      [3, 'FIXME'],
    ]);
    expect(patterns('notes.md', 'Intro\n\nTODO: write the guide\nA todolist.\n')).toEqual([[3, 'TODO']]);
  });
});

describe('formatStubTable', () => {
  it('renders the E20 table and the no-stub sentence', () => {
    expect(formatStubTable([])).toBe('No stub patterns detected.\n');
    const table = formatStubTable([{ file: 'path/to/file.py', line: 42, pattern: 'pass', context: 'def process_items(self): pass' }]);
    expect(table).toBe(
      ['| File | Line | Pattern | Context |', '|------|------|---------|---------|', '| path/to/file.py | 42 | `pass` | `def process_items(self): pass` |', ''].join('\n'),
    );
  });

  it('escapes pipes and backticks and can render the whole section', () => {
    const text = formatStubTable([{ file: 'a|b.ts', line: 1, pattern: 'TODO', context: 'x = `a|b` // TODO' }], { wave: 2 });
    expect(text).toContain('## Stub Report — Wave 2');
    expect(text).toContain('_Generated by scan-stubs.sh after wave 2 completion. Informational only — does not block merge._');
    expect(text).toContain('| a\\|b.ts | 1 | `TODO` | `` x = `a\\|b` // TODO `` |');
  });
});

describe('scanStubsOnBranches', () => {
  it('reads each agent file from its branch, not from the checkout, and skips deleted files', async () => {
    const repo = await createTestRepo({ files: { 'pkg/old.go': 'package pkg\n\nfunc Old() {}\n', 'src/keep.ts': 'export const keep = 1;\n' } });
    await repo.git.createBranch('agent-a', 'HEAD');
    await repo.git.createBranch('agent-b', 'HEAD');

    await repo.git.checkout('agent-a');
    repo.write('src/new.ts', 'export function build(): never {\n  throw new Error("not implemented");\n}\n');
    repo.remove('pkg/old.go');
    await repo.commitAll('agent a');
    await repo.git.checkout('agent-b');
    repo.write('app/svc.py', 'def serve():\n    pass\n');
    repo.write('src/keep.ts', 'export const keep = 1; // TODO: remove\n');
    await repo.commitAll('agent b');
    await repo.git.checkout('main');
    // The checkout has a stub of its own that must not be reported.
    repo.write('src/new.ts', '// TODO only in the working tree\n');

    const result = await scanStubsOnBranches({
      git: repo.git,
      agents: [
        { agentId: 'B', ref: 'agent-b', files: ['app/svc.py', 'src/keep.ts', 'missing.py'] },
        { agentId: 'A', ref: 'agent-a', files: ['src/new.ts', 'pkg/old.go'] },
      ],
    });
    expect(result.hits).toEqual([
      { file: 'app/svc.py', line: 1, pattern: 'pass', context: 'def serve():', agent_id: 'B' },
      { file: 'src/keep.ts', line: 1, pattern: 'TODO', context: 'export const keep = 1; // TODO: remove', agent_id: 'B' },
      { file: 'src/new.ts', line: 2, pattern: 'throw new Error("not implemented")', context: 'throw new Error("not implemented");', agent_id: 'A' },
    ]);
  });

  it('returns no hits for no agents', async () => {
    const repo = await createTestRepo();
    expect(await scanStubsOnBranches({ git: repo.git, agents: [] })).toEqual({ hits: [] });
  });
});

describe('scanStubText — line endings', () => {
  it('reads CRLF files like LF files', () => {
    expect(patterns('a.py', 'def f():\r\n    pass\r\n# TODO: x\r\n')).toEqual([
      [1, 'pass'],
      [3, 'TODO'],
    ]);
    expect(scanStubText('a.go', 'package a\r\nfunc F() { panic("TODO") }\r\n')[0]!.context).toBe('func F() { panic("TODO") }');
  });
});
