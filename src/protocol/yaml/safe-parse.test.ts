import { describe, expect, it } from 'vitest';
import { parseYamlSafe } from './safe-parse.js';
import { toPlain } from './to-plain.js';

function expectFailure(text: string, code: string, options = {}): string {
  const result = parseYamlSafe(text, options);
  expect(result.ok).toBe(false);
  expect(result.findings[0]?.code).toBe(code);
  expect(result.findings[0]?.severity).toBe('fatal');
  return result.findings[0]?.message ?? '';
}

describe('parseYamlSafe', () => {
  it('parses a normal document with positions', () => {
    const result = parseYamlSafe('title: x\nwaves:\n    - number: 1\n');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.findings).toEqual([]);
    expect(toPlain(result.document)).toEqual({ title: 'x', waves: [{ number: 1 }] });
    expect(result.lineCounter.linePos(9)).toEqual({ line: 2, col: 1 });
  });

  it('accepts empty and comment-only text with null contents', () => {
    for (const text of ['', '\n', '# just a comment\n', '   \n# c\n']) {
      const result = parseYamlSafe(text);
      expect(result.ok, JSON.stringify(text)).toBe(true);
      if (result.ok) expect(result.document.contents).toBeNull();
    }
  });

  it('reports syntax errors with line and column', () => {
    const result = parseYamlSafe('a: 1\nb: [1, 2\nc: 3\n');
    expect(result.ok).toBe(false);
    const finding = result.findings[0];
    expect(finding?.code).toBe('V046_PARSE_ERROR');
    expect(finding?.message).toMatch(/^YAML syntax error at line \d+, column \d+: /);
    expect(finding?.line).toBeGreaterThan(0);
    expect(finding?.column).toBeGreaterThan(0);
    const indentation = parseYamlSafe('a:\n  b: 1\n c: 2\n');
    expect(indentation.ok).toBe(false);
    expect(indentation.findings[0]?.line).toBe(3);
  });

  it('rejects more than one document', () => {
    const message = expectFailure('a: 1\n---\nb: 2\n', 'V046_PARSE_ERROR');
    expect(message).toMatch(/more than one YAML document/);
    expect(parseYamlSafe('---\na: 1\n').ok).toBe(true);
  });

  it('reports duplicate keys at any depth with every line, without failing', () => {
    const text = [
      'state: A', // 1
      'waves:', // 2
      '    - number: 1', // 3
      '      agents:', // 4
      '        - id: A', // 5
      '          task: one', // 6
      '        - id: B', // 7
      '          task: two', // 8
      '          files: []', // 9
      '          task: three', // 10
      'title: t', // 11
      'state: B', // 12
      'state: C', // 13
      '',
    ].join('\n');
    const result = parseYamlSafe(text);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.findings).toEqual([
      { code: 'E16_DUPLICATE_KEY', message: "duplicate key 'task' at lines 8, 10", severity: 'error', field: 'waves[0].agents[1].task', line: 10 },
      { code: 'E16_DUPLICATE_KEY', message: "duplicate key 'state' at lines 1, 12, 13", severity: 'error', field: 'state', line: 12 },
    ]);
    expect(toPlain(result.document)).toMatchObject({ state: 'C', waves: [{ agents: [{ task: 'one' }, { task: 'three' }] }] });
  });

  it('treats keys that read as the same string as duplicates', () => {
    const result = parseYamlSafe('1: a\n"1": b\n');
    expect(result.ok && result.findings.map((finding) => finding.message)).toEqual(["duplicate key '1' at lines 1, 2"]);
  });

  it('rejects oversize text before parsing', () => {
    const message = expectFailure(`a: ${'x'.repeat(2000)}\n`, 'RESOURCE_EXHAUSTION', { maxBytes: 1000 });
    expect(message).toBe('YAML text is at least 2004 bytes, larger than the limit of 1000 bytes');
    expect(expectFailure(`a: ${'ü'.repeat(600)}\n`, 'RESOURCE_EXHAUSTION', { maxBytes: 1000 })).toBe('YAML text is 1204 bytes, larger than the limit of 1000 bytes');
    // Counted in UTF-8 bytes, not UTF-16 units.
    expect(parseYamlSafe('a: ü\n', { maxBytes: 6 }).ok).toBe(true);
    expect(parseYamlSafe('a: üü\n', { maxBytes: 6 }).ok).toBe(false);
  });

  it('rejects binary content', () => {
    expect(expectFailure('a: 1\nb: \u0000\n', 'V046_PARSE_ERROR')).toBe('binary content: NUL byte at line 2, column 4');
    expect(expectFailure('a: \u001b[31m\n', 'V046_PARSE_ERROR')).toMatch(/^binary content: control character U\+001B/);
    expect(parseYamlSafe('a: "tab\there"\r\nb: 2\r\n').ok).toBe(true);
  });

  it('rejects deep flow and block nesting quickly, twice in a row', () => {
    const depth = 20_000;
    const cases = [
      '['.repeat(depth) + ']'.repeat(depth),
      '{a: '.repeat(depth) + '1' + '}'.repeat(depth),
      `${'- '.repeat(depth)}x\n`,
      Array.from({ length: 2000 }, (_, index) => `${' '.repeat(index)}k${index}:`).join('\n') + ' 1\n',
      Array.from({ length: 200 }, (_, index) => `${'  '.repeat(index)}- a${index}:`).join('\n') + ' 1\n',
    ];
    for (let round = 0; round < 2; round += 1) {
      for (const text of cases) {
        const start = performance.now();
        const message = expectFailure(text, 'RESOURCE_EXHAUSTION');
        expect(message).toMatch(/^YAML nesting is deeper than the limit of 100 levels/);
        expect(performance.now() - start).toBeLessThan(1000);
      }
    }
  });

  it('accepts nesting up to the limit', () => {
    const nested = '['.repeat(99) + ']'.repeat(99);
    expect(parseYamlSafe(nested).ok).toBe(true);
    expect(parseYamlSafe('['.repeat(101) + ']'.repeat(101)).ok).toBe(false);
    const block = Array.from({ length: 60 }, (_, index) => `${'    '.repeat(index)}k${index}:`).join('\n') + ' 1\n';
    expect(parseYamlSafe(block).ok).toBe(true);
    expect(parseYamlSafe(block, { maxDepth: 10 }).ok).toBe(false);
  });

  it('does not count block scalar content or quoted text as nesting', () => {
    const content = Array.from({ length: 300 }, (_, index) => `${' '.repeat(4 + index)}- [{ x: ${index}`).join('\n');
    const text = `task: |\n${content}\nquoted: "${'[{'.repeat(300)}"\nsingle: '${'['.repeat(300)}'\nplain: a[b{c\n`;
    const result = parseYamlSafe(text);
    expect(result.ok).toBe(true);
  });

  it('rejects alias bombs', () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    const names = 'abcdefghi';
    for (let index = 1; index < names.length; index += 1) {
      const previous = names[index - 1];
      lines.push(`${names[index]}: &${names[index]} [${Array.from({ length: 9 }, () => `*${previous}`).join(',')}]`);
    }
    const start = performance.now();
    const message = expectFailure(`${lines.join('\n')}\n`, 'RESOURCE_EXHAUSTION');
    expect(message).toMatch(/^too many alias expansions/);
    expect(performance.now() - start).toBeLessThan(2000);
  });

  it('rejects alias bombs hidden in complex keys', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    const names = 'abcdefgh';
    for (let index = 1; index < names.length; index += 1) {
      lines.push(`${names[index]}: &${names[index]} [${Array.from({ length: 9 }, () => `*${names[index - 1]}`).join(', ')}]`);
    }
    lines.push('? [*h, *h]', ': v', '? [*h, *h]', ': w');
    const start = performance.now();
    expectFailure(`${lines.join('\n')}\n`, 'RESOURCE_EXHAUSTION');
    expect(performance.now() - start).toBeLessThan(2000);
  });

  it('allows a few aliases', () => {
    const result = parseYamlSafe('base: &b {x: 1}\nuse: *b\nagain: *b\n');
    expect(result.ok).toBe(true);
    if (result.ok) expect(toPlain(result.document)).toEqual({ base: { x: 1 }, use: { x: 1 }, again: { x: 1 } });
  });

  it('reports an unknown alias as a syntax error', () => {
    expectFailure('a: *nope\n', 'V046_PARSE_ERROR');
  });

  it('never throws', () => {
    const inputs = ['\uFEFFa: 1', '%YAML 9.9\n---\na: 1', '!!binary x', '? [a]\n: 1', ':', '-', '&a', '*', '"unterminated', "'x", '|\n  a\n b', 'a: !!int x', '\uD800'];
    for (const text of inputs) {
      expect(() => parseYamlSafe(text), JSON.stringify(text)).not.toThrow();
    }
  });
});
