import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { corpusRoot, corpusYamlFiles } from '../../../test/support/corpus.js';
import { parseImpl } from '../parse-impl.js';
import { parseProgram } from '../parse-program.js';
import { loadPlainFast } from './fast-plain.js';
import { readPlain } from './read-plain.js';
import { parseYamlSafe } from './safe-parse.js';
import { toPlain } from './to-plain.js';

/**
 * The one property the fast path must have: whenever it answers, the full parse accepts the text
 * with no finding at all (no duplicate key, no warning) and gives exactly the same plain data.
 * Returns whether the fast path answered.
 */
function checkAgainstFullParse(text: string, label: string): boolean {
  const fast = loadPlainFast(text);
  if (!fast) return false;
  const full = parseYamlSafe(text);
  expect(full.ok, `${label}: the fast path accepted text the full parse refuses`).toBe(true);
  if (!full.ok) return true;
  expect(full.findings, `${label}: the full parse has findings the fast path would hide`).toEqual([]);
  expect(fast.value, `${label}: different plain data`).toEqual(toPlain(full.document));
  // toEqual ignores some differences (e.g. -0 vs 0, undefined vs missing): compare the JSON too.
  expect(JSON.stringify(fast.value), label).toBe(JSON.stringify(toPlain(full.document)));
  return true;
}

describe('the fast plain read of YAML (js-yaml) against the full parse (yaml Document + toPlain)', () => {
  it('parseImpl and parseProgram give the same manifest, data and findings (with lines) on both paths, for every corpus file', () => {
    const files = corpusYamlFiles();
    expect(files.length).toBeGreaterThan(100);
    const slow: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const label = path.relative(corpusRoot, file);
      const parse = /PROGRAM/.test(path.basename(file)) ? parseProgram : parseImpl;
      const fast = parse(text);
      const full = parse(text, { document: true });
      expect(fast.fatal, label).toBe(full.fatal);
      expect(fast.findings, label).toEqual(full.findings);
      expect(JSON.stringify(fast.data), label).toBe(JSON.stringify(full.data));
      expect(fast.manifest, label).toEqual(full.manifest);
      if (!loadPlainFast(text)) slow.push(label);
    }
    // Files that fall back hold duplicate keys, aliases, tags or multi-line flow collections; the
    // claim "a read parses once, cheaply" is about the rest.
    expect(slow.length, `fell back: ${slow.join(', ')}`).toBeLessThanOrEqual(Math.ceil(files.length * 0.1));
  });

  const scalars = [
    '42', '-7', '+7', '0', '-0', '007', '0123', '1.5', '1.10', '1.0', '.5', '5.', '1e3', '1E3', '1.5e-3', '-1.5e+3',
    '12345678901234567890', '9007199254740993', '0x1F', '0o17', '0b101', '1_000', '.inf', '-.inf', '.NaN', '.nan',
    'true', 'false', 'True', 'FALSE', 'yes', 'no', 'on', 'off', 'y', 'n', '~', 'null', 'Null', 'NULL', 'nULL', '',
    '"1"', "'true'", '"~"', "'it''s'", '"tab\\tand\\u00e9"', '2024-01-01', '12:30:00', 'a: b', '"a: b"', '- x', 'x #c',
    'x#y', '@x', '`x`', '%x', '!x', '!!str 12', '!!int "12"', '!!bool yes', '!!null ""', '!custom x', '&a x', '*a',
    '|\n  block\n  text\n', '>\n  folded\n  text\n\n  para\n', '|-\n  strip\n', '|+\n  keep\n\n', '>-\n  a\n  b\n',
    '|2\n    indented\n', '"multi\n  line"', 'plain\n  continued', "'single\n\n  blank'", '[]', '{}', '[1, "2", three]',
    '{a: 1, b: [x, y]}', '[a, [b, [c]]]', '"\\x41\\N\\_"', 'é ünïcödé 😀', '<<', '<<: {a: 1}', '"<<"', '=', '-', '--', '...x', '"...\n"',
  ];

  it('agrees on every scalar form as a value, a key and a sequence item (or falls back)', () => {
    let fastCount = 0;
    for (const scalar of scalars) {
      const variants = [
        `key: ${scalar}\n`,
        `list:\n  - ${scalar}\n  - after\n`,
        `outer:\n  inner: ${scalar}\n  next: 1\n`,
        `${scalar.includes('\n') ? '"k"' : scalar}: value\nother: 2\n`,
        `{k: ${scalar.includes('\n') ? 'x' : scalar}}\n`,
      ];
      for (const text of variants) if (checkAgainstFullParse(text, JSON.stringify(text))) fastCount += 1;
    }
    expect(fastCount).toBeGreaterThan(scalars.length * 2);
  });

  it('falls back on what the full parse reports or spells differently: duplicates, aliases, tags, directives, null and complex keys', () => {
    const fallBack = [
      'a: 1\na: 2\n',
      'a:\n  b: 1\n  b: 1\n',
      'base: &x {a: 1}\nuse: *x\n',
      'a: &x 1\nb: *x\n',
      'a: !!int "5"\n',
      'a: !custom 5\n',
      '%YAML 1.2\n---\na: 1\n',
      '~: 1\n',
      'null: 1\n',
      ': 1\n',
      '? [a, b]\n: 1\n',
      '? {a: 1}\n: 1\n',
      'a: 1\n---\nb: 2\n',
      '',
      '# only a comment\n',
      'a:\n  - [1,\n  2]\n',
      'a: [1,\n2]\n',
      'a: {b: 1,\nc: 2}\n',
      'a: "x\u0001y"\n',
      '\ufeffa: 1\n',
      'a: b: c\n',
      'a:\n\t- x\n',
      'a: [1, 2\n',
      'a: "unterminated\n',
    ];
    for (const text of fallBack) {
      expect(loadPlainFast(text), JSON.stringify(text)).toBeUndefined();
    }
    // And the reader gives the full parse's findings for them, unchanged.
    for (const text of fallBack) {
      const read = readPlain(text);
      const full = parseYamlSafe(text);
      expect(read.findings, JSON.stringify(text)).toEqual(full.findings);
    }
  });

  it('never differs from the full parse on mutated manifests (deterministic fuzz)', () => {
    const sources = corpusYamlFiles()
      .map((file) => readFileSync(file, 'utf8'))
      .filter((text) => text.length > 3000 && text.length < 12000)
      .slice(0, 3);
    expect(sources.length).toBeGreaterThan(0);
    const pieces = [':', ' ', '\n', '  ', '- ', '"', "'", '#', '[', ']', '{', '}', ',', '\t', '|', '>', '&a ', '*a', '!', '?', '%', '\\', 'true', '1e3', '~', '---\n', '...\n', 'key: ', '\r\n'];
    let seed = 12345;
    const random = (limit: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % limit;
    };
    let fastCount = 0;
    let total = 0;
    for (const source of sources) {
      for (let round = 0; round < 60; round += 1) {
        let text = source;
        const edits = 1 + random(3);
        for (let edit = 0; edit < edits; edit += 1) {
          const at = random(text.length);
          const kind = random(3);
          if (kind === 0) text = text.slice(0, at) + (pieces[random(pieces.length)] ?? '') + text.slice(at);
          else if (kind === 1) text = text.slice(0, at) + text.slice(at + 1 + random(4));
          else {
            const lineStart = text.lastIndexOf('\n', at) + 1;
            text = random(2) === 0 ? `${text.slice(0, lineStart)} ${text.slice(lineStart)}` : text.slice(0, lineStart) + text.slice(lineStart).replace(/^ /, '');
          }
        }
        total += 1;
        if (checkAgainstFullParse(text, `mutation ${total}`)) fastCount += 1;
      }
    }
    // Most mutations stay valid YAML and take the fast path: the property is exercised, not skipped.
    expect(fastCount).toBeGreaterThan(total / 3);
  });
});
