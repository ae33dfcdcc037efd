import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Manifest files named `<prefix>-*.yaml|yml` in `directory` and its `complete/` sub-directory,
 * sorted by path. Missing directories yield nothing.
 */
export function listManifestFiles(directory: string, prefix: 'IMPL' | 'PROGRAM'): string[] {
  const found: string[] = [];
  for (const candidate of [directory, path.join(directory, 'complete')]) {
    let names: string[];
    try {
      names = readdirSync(candidate);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!name.startsWith(`${prefix}-`) || !/\.ya?ml$/.test(name)) continue;
      const full = path.join(candidate, name);
      try {
        if (statSync(full).isFile()) found.push(full);
      } catch {
        // vanished between readdir and stat: skip
      }
    }
  }
  return found.sort();
}
