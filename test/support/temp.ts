import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

// The directories made in this test file: removed after it, by one hook registered when the file imports this module
// (a hook registered from inside a running test is never run — directories made in tests were left in /tmp).
const made = new Set<string>();
afterAll(() => {
  for (const directory of made) rmSync(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  made.clear();
});

/** A temporary directory removed after the test file finishes. */
export function makeTempDir(prefix = 'polywave-test-'): string {
  const directory = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.add(directory);
  return directory;
}
