import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: { root: string; version: string } | undefined;

/** The installed polywave package (its bin/ and dist/web/), found upwards from this module (dist/serve/ or dist/bundle/). */
export function packageRoot(): { root: string; version: string } {
  if (cached) return cached;
  let directory = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        const data = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
        if (data.name === 'polywave') {
          cached = { root: directory, version: data.version ?? '0.0.0' };
          return cached;
        }
      } catch {
        // not ours: keep looking
      }
    }
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error('polywave package root not found');
    directory = parent;
  }
}
