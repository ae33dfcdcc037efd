import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../src/errors/polywave-error.js';
import { parseYamlSafe, toPlain } from '../src/protocol/yaml/index.js';
import { readTextFile } from '../src/store/index.js';
import { makeTempDir } from './support/temp.js';

/** Reads and parses like a command would; returns the coded outcome and how long it took. */
async function load(filePath: string): Promise<{ code: string; message: string; elapsedMs: number; data?: unknown }> {
  const start = performance.now();
  try {
    const text = await readTextFile(filePath);
    const parsed = parseYamlSafe(text);
    if (!parsed.ok) {
      return { code: parsed.findings[0]?.code ?? '?', message: parsed.findings[0]?.message ?? '', elapsedMs: performance.now() - start };
    }
    return { code: 'OK', message: '', elapsedMs: performance.now() - start, data: toPlain(parsed.document) };
  } catch (error) {
    if (!PolywaveError.isInstance(error)) throw error;
    expect(error.exitCode).toBe(2);
    expect(error.message).not.toContain('\n');
    return { code: error.code, message: error.message, elapsedMs: performance.now() - start };
  }
}

function billionLaughs(): string {
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  const names = 'abcdefghij';
  for (let index = 1; index < names.length; index += 1) {
    lines.push(`${names[index]}: &${names[index]} [${Array.from({ length: 9 }, () => `*${names[index - 1]}`).join(',')}]`);
  }
  return `${lines.join('\n')}\n`;
}

describe('hostile input', () => {
  const directory = makeTempDir('polywave-hostile-');
  const file = (name: string, content: string | Buffer): string => {
    const full = path.join(directory, name);
    writeFileSync(full, content);
    return full;
  };
  const rssLimit = 1024 * 1024 * 1024;

  it('empty file: an empty document, not an error', async () => {
    const result = await load(file('empty.yaml', ''));
    expect(result.code).toBe('OK');
    expect(result.data).toBeNull();
  });

  it('binary file: V046', async () => {
    const bytes = Buffer.alloc(4096);
    for (let index = 0; index < bytes.length; index += 1) bytes[index] = (index * 37) % 256;
    const result = await load(file('binary.yaml', bytes));
    expect(result.code).toBe('V046_PARSE_ERROR');
    expect(result.message).toMatch(/binary content/);
  });

  it('non-UTF-8 bytes: V046', async () => {
    const result = await load(file('latin1.yaml', Buffer.from('title: caf\xe9\n', 'latin1')));
    expect(result.code).toBe('V046_PARSE_ERROR');
    expect(result.message).toMatch(/not valid UTF-8 text$/);
  });

  it('a 50 MB file is refused from its size, fast, without reading it', async () => {
    const big = path.join(directory, 'big.yaml');
    const descriptor = openSync(big, 'w');
    const chunk = Buffer.from('key: value\n'.repeat(100_000));
    for (let written = 0; written < 50 * 1024 * 1024; written += chunk.length) writeSync(descriptor, chunk);
    closeSync(descriptor);
    const rssBefore = process.memoryUsage().rss;
    const result = await load(big);
    expect(result.code).toBe('RESOURCE_EXHAUSTION');
    expect(result.message).toMatch(/larger than the limit of 10485760 bytes/);
    // Refused from the size (stat), so the time is the call's own, not reading 50 MB; generous for loaded CI.
    expect(result.elapsedMs).toBeLessThan(1000);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(20 * 1024 * 1024);
  });

  it('a 50 MB string is refused by the parser before composing', () => {
    const text = 'k: v\n'.repeat(10 * 1024 * 1024);
    const start = performance.now();
    const result = parseYamlSafe(text);
    expect(result.ok).toBe(false);
    expect(result.findings[0]?.code).toBe('RESOURCE_EXHAUSTION');
    expect(performance.now() - start).toBeLessThan(500);
  });

  it('20000-deep flow and block nesting: RESOURCE_EXHAUSTION, fast, twice in the same process', async () => {
    const depth = 20_000;
    const cases = {
      'flow-seq.yaml': `a: ${'['.repeat(depth)}${']'.repeat(depth)}\n`,
      'flow-map.yaml': `${'{a: '.repeat(depth)}1${'}'.repeat(depth)}\n`,
      'block-seq.yaml': `${'- '.repeat(depth)}x\n`,
      'block-map.yaml': `${Array.from({ length: 4000 }, (_, index) => `${' '.repeat(index)}k:`).join('\n')} 1\n`,
      'mixed.yaml': `${Array.from({ length: 3000 }, (_, index) => `${' '.repeat(index * 2)}- k${index}:`).join('\n')} 1\n`,
    };
    for (let round = 1; round <= 2; round += 1) {
      for (const [name, content] of Object.entries(cases)) {
        const result = await load(file(`${round}-${name}`, content));
        expect(result.code, name).toBe('RESOURCE_EXHAUSTION');
        expect(result.message, name).toMatch(/nesting is deeper than the limit of 100/);
        expect(result.elapsedMs, name).toBeLessThan(2000);
      }
    }
    expect(process.memoryUsage().rss).toBeLessThan(rssLimit);
  });

  it('billion laughs: RESOURCE_EXHAUSTION, fast, memory bounded', async () => {
    const rssBefore = process.memoryUsage().rss;
    const result = await load(file('laughs.yaml', billionLaughs()));
    expect(result.code).toBe('RESOURCE_EXHAUSTION');
    expect(result.message).toMatch(/too many alias expansions/);
    expect(result.elapsedMs).toBeLessThan(2000);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
  });

  it('a directory: X002', async () => {
    const sub = path.join(directory, 'IMPL-dir.yaml');
    mkdirSync(sub);
    const result = await load(sub);
    expect(result.code).toBe('X002_FILE_READ');
    expect(result.message).toBe(`${sub} is a directory, not a file`);
  });

  it('a missing file: N005', async () => {
    const missing = path.join(directory, 'IMPL-missing.yaml');
    const result = await load(missing);
    expect(result.code).toBe('N005_IMPL_NOT_FOUND');
    expect(result.message).toBe(`file not found: ${missing}`);
  });

  it('YAML syntax garbage: V046 with a position', async () => {
    const result = await load(file('garbage.yaml', 'title: [unclosed\nstate: {\n  - : :\n'));
    expect(result.code).toBe('V046_PARSE_ERROR');
    expect(result.message).toMatch(/^YAML syntax error at line \d+, column \d+: /);
  });

  it('many small hostile documents never throw', () => {
    const samples = ['&a [*a]', '*a', '!!python/object:os.system x', '? ? ? a', '- - - - -', '{[{[{[', '"\\u', "'", '|9\n x', '>-\n\t\tx', '%TAG ! x\n---\na', 'a: b: c', '\uFEFF\uFEFF'];
    for (const text of samples) {
      expect(() => {
        const result = parseYamlSafe(text);
        if (result.ok) toPlain(result.document);
      }, JSON.stringify(text)).not.toThrow();
    }
    expect(process.memoryUsage().rss).toBeLessThan(rssLimit);
  });
});
