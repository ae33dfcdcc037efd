import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { makeTempDir } from '../../test/support/temp.js';
import { readTextFile } from './read-text.js';

async function readError(filePath: string, options = {}): Promise<PolywaveError> {
  try {
    await readTextFile(filePath, options);
  } catch (error) {
    if (PolywaveError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected readTextFile to fail');
}

describe('readTextFile', () => {
  const directory = makeTempDir('polywave-read-text-');

  it('reads UTF-8 text and strips a BOM', async () => {
    const file = path.join(directory, 'ok.yaml');
    writeFileSync(file, '\uFEFFtitle: ü ✓\n');
    expect(await readTextFile(file)).toBe('title: ü ✓\n');
    const empty = path.join(directory, 'empty.yaml');
    writeFileSync(empty, '');
    expect(await readTextFile(empty)).toBe('');
  });

  it('reports a missing file as N005', async () => {
    const file = path.join(directory, 'missing.yaml');
    const error = await readError(file);
    expect(error.code).toBe('N005_IMPL_NOT_FOUND');
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe(`file not found: ${file}`);
    const underFile = await readError(path.join(directory, 'ok.yaml', 'child.yaml'));
    expect(underFile.code).toBe('N005_IMPL_NOT_FOUND');
  });

  it('reports a directory as X002', async () => {
    const sub = path.join(directory, 'a-directory');
    mkdirSync(sub);
    const error = await readError(sub);
    expect(error.code).toBe('X002_FILE_READ');
    expect(error.message).toBe(`${sub} is a directory, not a file`);
  });

  it.skipIf(process.getuid?.() === 0)('reports an unreadable file as X002', async () => {
    const file = path.join(directory, 'secret.yaml');
    writeFileSync(file, 'a: 1\n');
    chmodSync(file, 0o000);
    const error = await readError(file);
    expect(error.code).toBe('X002_FILE_READ');
    expect(error.message).toBe(`cannot read ${file}: permission denied`);
  });

  it('refuses files above the size limit', async () => {
    const file = path.join(directory, 'big.yaml');
    writeFileSync(file, 'x'.repeat(2000));
    const error = await readError(file, { maxBytes: 1000 });
    expect(error.code).toBe('RESOURCE_EXHAUSTION');
    expect(error.message).toBe(`${file} is 2000 bytes, larger than the limit of 1000 bytes`);
    expect(await readTextFile(file, { maxBytes: 2000 })).toHaveLength(2000);
  });

  it('refuses binary and non-UTF-8 content', async () => {
    const binary = path.join(directory, 'binary.yaml');
    writeFileSync(binary, Buffer.from([0x61, 0x3a, 0x20, 0x00, 0x01, 0x0a]));
    const binaryError = await readError(binary);
    expect(binaryError.code).toBe('V046_PARSE_ERROR');
    expect(binaryError.message).toMatch(/binary content/);
    const latin1 = path.join(directory, 'latin1.yaml');
    writeFileSync(latin1, Buffer.from([0x61, 0x3a, 0x20, 0xe9, 0x0a]));
    const encodingError = await readError(latin1);
    expect(encodingError.code).toBe('V046_PARSE_ERROR');
    expect(encodingError.message).toBe(`${latin1} is not valid UTF-8 text`);
  });

  it('refuses special files such as FIFOs', async () => {
    const error = await readError('/dev/null');
    expect(error.code).toBe('X002_FILE_READ');
    expect(error.message).toBe('/dev/null is not a regular file');
  });
});
