import { describe, expect, it } from 'vitest';
import { codeFamilyOf, depthAtLineStarts, isTestFile, languageOf, lexSource, stringAt, stringContent } from './source-lexer.js';

function code(filePath: string, text: string): string {
  return lexSource(filePath, text).code;
}

describe('lexSource', () => {
  it('keeps offsets and lines: comments blanked, string contents blanked, delimiters kept', () => {
    const text = 'const a = "x // y"; // note\n/* block\nstill */ b(\'q\');\n';
    const masked = code('a.ts', text);
    expect(masked.length).toBe(text.length);
    expect(masked.split('\n')).toEqual(['const a = "      ";        ', '        ', '         b(\' \');', '']);
  });

  it('JS: nested template literals, regex literals with quotes, division, JSX text with apostrophes', () => {
    const source = lexSource('a.tsx', 'const t = `a ${ b(`c ${d}`) } e`;\nconst r = /["\'/]+/g; const q = x / y / z;\n<p>Don\'t</p>; call(k);\n');
    expect(source.code.split('\n')).toEqual(['const t = `  ${ b(`  ${d}`) }  `;', 'const r = /      /g; const q = x / y / z;', "<p>Don't</p>; call(k);", '']);
    const outer = stringAt(source, 10)!;
    expect(stringContent(source, outer)).toBe('a ${ b(`c ${d}`) } e');
  });

  it('Python: prefixes, triple quotes, comments', () => {
    const masked = code('a.py', 'x = rb"\\d" + f\'{y}\'  # c\ns = """multi\nline""" ; t = \'it\'\n');
    expect(masked.split('\n')).toEqual(['x = rb"  " + f\'   \'     ', 's = """     ', '    """ ; t = \'  \'', '']);
  });

  it('Go raw strings and runes; Rust lifetimes, chars, raw strings', () => {
    expect(code('a.go', "s := `a\n\"b` + string('\"')\n")).toBe("s := ` \n  ` + string(' ')\n");
    expect(code('a.rs', "fn f<'a>(x: &'a str) -> char { let c = '\"'; r##\"x\"##; '\\n' }\n")).toBe("fn f<'a>(x: &'a str) -> char { let c = ' '; r##\" \"##; '  ' }\n");
  });

  it('depth at line starts', () => {
    expect([...depthAtLineStarts(lexSource('a.ts', 'a {\n  b (\n  )\n}\nc\n'))]).toEqual([0, 1, 2, 1, 0, 0]);
  });
});

describe('languages and tests', () => {
  it('maps names to languages', () => {
    expect([languageOf('a.tsx'), languageOf('a.cjs'), languageOf('a.go'), languageOf('a.pyi'), languageOf('a.rs'), languageOf('Makefile'), languageOf('a.yml'), languageOf('a.md')]).toEqual([
      'typescript', 'javascript', 'go', 'python', 'rust', 'hash', 'hash', 'text',
    ]);
    expect(codeFamilyOf('a.java')).toBeUndefined();
  });

  it('recognises test files of the four families', () => {
    for (const file of ['x_test.go', 'src/a.test.ts', 'src/a.spec.jsx', 'src/__tests__/a.ts', 'test_a.py', 'a_test.py', 'conftest.py', 'tests/net.rs', 'test/support/x.ts']) expect(isTestFile(file), file).toBe(true);
    for (const file of ['x.go', 'src/testing.ts', 'src/latest.py', 'src/contest.rs']) expect(isTestFile(file), file).toBe(false);
  });
});
