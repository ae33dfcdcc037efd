import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** A temporary directory removed after the test file finishes. */
export function makeTempDir(prefix = 'polywave-test-'): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}
