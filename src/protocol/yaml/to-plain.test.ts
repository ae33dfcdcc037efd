import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseYamlSafe } from './safe-parse.js';
import { plainKeyOf, toPlain } from './to-plain.js';

function plain(text: string, options = {}): unknown {
  const result = parseYamlSafe(text, { maxAliasCount: -1 });
  if (!result.ok) throw new Error(result.findings[0]?.message);
  return toPlain(result.document, options);
}

describe('toPlain', () => {
  it('keeps numbers and booleans only when they print back as written (yaml.v3 string fields)', () => {
    const text = [
      'commit: 0123',
      'version: 1.10',
      'upper: True',
      'exp: 1e3',
      'hex: 0x1F',
      'octal: 0o17',
      'inf: .inf',
      'plus: +1',
      'negzero: -0',
      'wave: 1',
      'negative: -3',
      'float: 1.5',
      'yes: true',
      'no: false',
      'big: 12345678901234567890',
      'word: yes',
      'date: 2026-03-25',
      '',
    ].join('\n');
    expect(plain(text)).toEqual({
      commit: '0123',
      version: '1.10',
      upper: 'True',
      exp: '1e3',
      hex: '0x1F',
      octal: '0o17',
      inf: '.inf',
      plus: '+1',
      negzero: '-0',
      wave: 1,
      negative: -3,
      float: 1.5,
      yes: true,
      no: false,
      big: '12345678901234567890',
      word: 'yes',
      date: '2026-03-25',
    });
  });

  it('reads quoted and block scalars as strings and null forms as null', () => {
    expect(plain('a: "1"\nb: \'true\'\nc: |\n    x\n    y\nd: >-\n    folded\n    text\ne: null\nf: ~\ng:\nh: Null\ni: !!str 5\n')).toEqual({
      a: '1',
      b: 'true',
      c: 'x\ny\n',
      d: 'folded text',
      e: null,
      f: null,
      g: null,
      h: null,
      i: '5',
    });
  });

  it('turns non-string keys into their source text', () => {
    expect(plain('1: a\ntrue: b\n~: c\n1.50: d\n[x, y]: e\n')).toEqual({ '1': 'a', true: 'b', '~': 'c', '1.50': 'd', '["x","y"]': 'e' });
  });

  it('lets the last duplicate key win, keeping the first position', () => {
    const value = plain('a: 1\nb: 2\na: 3\n') as Record<string, unknown>;
    expect(value).toEqual({ a: 3, b: 2 });
    expect(Object.keys(value)).toEqual(['a', 'b']);
  });

  it('keeps __proto__ as a plain data key', () => {
    const value = plain('__proto__:\n    polluted: true\n') as Record<string, unknown>;
    expect(Object.prototype.hasOwnProperty.call(value, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  });

  it('expands aliases into independent copies and honours redefined anchors', () => {
    const value = plain('a: &x [1, 2]\nb: *x\nc: &x {k: v}\nd: *x\n') as Record<string, unknown>;
    expect(value).toEqual({ a: [1, 2], b: [1, 2], c: { k: 'v' }, d: { k: 'v' } });
    expect(value.a).not.toBe(value.b);
  });

  it('throws RESOURCE_EXHAUSTION when aliases expand too much', () => {
    const text = 'a: &a [x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b, *b]\n';
    let error: unknown;
    try {
      plain(text, { maxAliasCount: 5 });
    } catch (caught) {
      error = caught;
    }
    expect(PolywaveError.isInstance(error) && error.code).toBe('RESOURCE_EXHAUSTION');
    expect(() => plain(text, { maxAliasCount: 100 })).not.toThrow();
  });

  it('converts flow pairs in sequences and documents of any root type', () => {
    expect(plain('[a: 1, b]\n')).toEqual([{ a: 1 }, 'b']);
    expect(plain('just a string\n')).toBe('just a string');
    expect(plain('')).toBeNull();
  });

  it('handles the maximum allowed depth without recursion problems', () => {
    const depth = 100;
    const text = '['.repeat(depth) + ']'.repeat(depth);
    let value = plain(text);
    let levels = 0;
    while (Array.isArray(value)) {
      levels += 1;
      value = value[0];
    }
    expect(levels).toBe(depth);
  });

  it('exposes the key conversion', () => {
    const result = parseYamlSafe('~: 1\n');
    if (!result.ok) throw new Error('parse failed');
    const contents = result.document.contents as unknown as { items: Array<{ key: unknown }> };
    expect(plainKeyOf(contents.items[0]?.key, result.document)).toBe('~');
  });
});
