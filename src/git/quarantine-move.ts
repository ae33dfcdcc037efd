/**
 * The one way anything goes into polywave's quarantine (`<git common dir>/polywave/quarantine/…`): moved, never
 * deleted, and renamed so that nothing takes it for code any more. Outside attack X28-09: a leftover test file moved
 * there under its own name (`helpers.test.js`) was found and run by the user's `npm test` (`node --test` searches
 * `.git` too), outside any sandbox. Every file moved in — and every file inside a directory moved in — gets
 * {@link quarantineSuffix}: no test runner's pattern (`*.test.js`, `test_*.py`, `*_test.go`), loader or shell glob
 * matches it, and a moved `.git` is no longer a repository git would enter. To look at one, drop the suffix.
 */
import { lstat, mkdir, readdir, rename } from 'node:fs/promises';
import path from 'node:path';

/** Appended to the name of every file in the quarantine. */
export const quarantineSuffix = '.quarantined';

/**
 * Moves `from` (a file, a link as a link, or a directory) to `to` inside the quarantine, its parents made
 * (`mode` for them); a file gets the suffix, a directory keeps its name and every file below it gets it.
 * Resolves the path it now has.
 */
export async function moveToQuarantine(from: string, to: string, options: { mode?: number } = {}): Promise<string> {
  const stats = await lstat(from);
  await mkdir(path.dirname(to), { recursive: true, ...(options.mode !== undefined ? { mode: options.mode } : {}) });
  const destination = stats.isDirectory() ? to : `${to}${quarantineSuffix}`;
  await rename(from, destination);
  if (stats.isDirectory()) await neutralize(destination);
  return destination;
}

async function neutralize(directory: string): Promise<void> {
  const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const at = path.join(directory, entry.name);
    if (entry.isDirectory()) await neutralize(at);
    else if (!entry.name.endsWith(quarantineSuffix)) await rename(at, `${at}${quarantineSuffix}`).catch(() => undefined);
  }
}
