import { describe, expect, it } from 'vitest';
import { goImports, scriptImports } from './imports.js';
import { bracketErrors, overallStatus } from './scaffold-check.js';

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
});
