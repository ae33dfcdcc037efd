import { describe, expect, it } from 'vitest';
import { formatPath, locatePath, parsePath, resolvePath } from './locate.js';
import { parseYamlSafe } from './safe-parse.js';

const text = [
  'title: x', // 1
  'waves:', // 2
  '    - number: 1', // 3
  '      agents:', // 4
  '        - id: A', // 5
  '        - id: B', // 6
  '          task: |', // 7
  '            do it', // 8
  'completion_reports:', // 9
  '    A:', // 10
  '        commit: abc', // 11
  'quality_gates:', // 12
  '    gates:', // 13
  '        - type: build', // 14
  '        - type: test', // 15
  '        - {type: lint, command: x}', // 16
  'alias_target: &t {deep: {k: 1}}', // 17
  'via_alias: *t', // 18
  '',
].join('\n');

function parsed(): Extract<ReturnType<typeof parseYamlSafe>, { ok: true }> {
  const result = parseYamlSafe(text);
  if (!result.ok) throw new Error(result.findings[0]?.message);
  return result;
}

describe('formatPath / parsePath', () => {
  it('formats field paths', () => {
    expect(formatPath(['waves', 0, 'agents', 1, 'id'])).toBe('waves[0].agents[1].id');
    expect(formatPath(['completion_reports', 'A', 'commit'])).toBe('completion_reports.A.commit');
    expect(formatPath(['quality_gates', 'gates', 2, 'type'])).toBe('quality_gates.gates[2].type');
    expect(formatPath(['state'])).toBe('state');
    expect(formatPath([])).toBe('');
    expect(formatPath(['files', 'pkg/a.go', 'x y', '1', ''])).toBe('files["pkg/a.go"]["x y"]["1"][""]');
    expect(formatPath([0, 'a'])).toBe('[0].a');
  });

  it('parses what it formats', () => {
    const paths: Array<Array<string | number>> = [
      ['waves', 0, 'agents', 1, 'id'],
      ['completion_reports', 'A', 'commit'],
      ['files', 'pkg/a.go', 'x y', '1', '', 'quote"in', 'back\\slash', 'a.b', 'a[0]'],
      [0, 'a', 12],
      ['feature-slug'],
    ];
    for (const path of paths) expect(parsePath(formatPath(path))).toEqual(path);
  });

  it('accepts loose keys and rejects malformed paths', () => {
    expect(parsePath('files.pkg/a-b.c')).toEqual(['files', 'pkg/a-b', 'c']);
    for (const bad of ['.a', 'a..b', 'a[', 'a[x]', 'a["x]', 'a["x"', 'a[1']) {
      expect(() => parsePath(bad), bad).toThrow(/invalid field path/);
    }
  });
});

describe('locatePath', () => {
  it('finds keys, items and nested values', () => {
    const { document, lineCounter } = parsed();
    expect(locatePath(document, lineCounter, ['title'])).toEqual({ line: 1, column: 1 });
    expect(locatePath(document, lineCounter, ['waves', 0])).toEqual({ line: 3, column: 7 });
    expect(locatePath(document, lineCounter, ['waves', 0, 'agents', 1, 'task'])).toEqual({ line: 7, column: 11 });
    expect(locatePath(document, lineCounter, ['completion_reports', 'A', 'commit'])).toEqual({ line: 11, column: 9 });
    expect(locatePath(document, lineCounter, ['quality_gates', 'gates', 2, 'command'])).toEqual({ line: 16, column: 24 });
  });

  it('falls back to the deepest existing ancestor for missing paths', () => {
    const { document, lineCounter } = parsed();
    expect(locatePath(document, lineCounter, ['completion_reports', 'B', 'commit'])).toEqual({ line: 9, column: 1 });
    expect(locatePath(document, lineCounter, ['waves', 0, 'agents', 7, 'id'])).toEqual({ line: 4, column: 7 });
    expect(locatePath(document, lineCounter, ['nope'])).toEqual({ line: 1, column: 1 });
    expect(locatePath(document, lineCounter, [])).toEqual({ line: 1, column: 1 });
  });

  it('follows aliases', () => {
    const { document, lineCounter } = parsed();
    expect(locatePath(document, lineCounter, ['via_alias', 'deep', 'k'])).toEqual({ line: 17, column: 26 });
  });

  it('returns undefined for an empty document', () => {
    const result = parseYamlSafe('# nothing\n');
    if (!result.ok) throw new Error('parse failed');
    expect(locatePath(result.document, result.lineCounter, ['a'])).toBeUndefined();
  });

  it('resolves paths as far as they exist', () => {
    const { document } = parsed();
    expect(resolvePath(document, ['waves', 0, 'agents', 1, 'nope']).resolvedLength).toBe(4);
    expect(resolvePath(document, ['waves', 'x']).resolvedLength).toBe(1);
    expect(resolvePath(document, ['via_alias', 'deep']).resolvedLength).toBe(1);
    expect(resolvePath(document, ['via_alias', 'deep'], { followAliases: true }).resolvedLength).toBe(2);
  });
});
