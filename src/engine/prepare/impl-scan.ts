import path from 'node:path';
import { parseImpl } from '../../protocol/parse-impl.js';
import { implSlugFromPath } from '../../protocol/names.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { listManifestFiles } from '../../store/list-manifests.js';
import { readTextFile } from '../../store/read-text.js';

/** One IMPL doc found under `docs/IMPL` (active) or `docs/IMPL/complete` (archived). */
export interface ScannedImpl {
  path: string;
  slug: string;
  state: string;
  archived: boolean;
  manifest: ImplManifest;
}

/** True for the terminal IMPL states (E4a: a worktree of such an IMPL is stale). */
export function isTerminalState(state: string | undefined): boolean {
  const value = (state ?? '').trim();
  return value === 'COMPLETE' || value === 'NOT_SUITABLE';
}

/** Parses every IMPL manifest of `<repoRoot>/docs/IMPL` (+ `complete/`); unreadable ones are skipped. */
export async function scanImpls(repoRoot: string): Promise<ScannedImpl[]> {
  const directory = path.join(repoRoot, 'docs', 'IMPL');
  const found: ScannedImpl[] = [];
  for (const filePath of listManifestFiles(directory, 'IMPL')) {
    try {
      const parsed = parseImpl(await readTextFile(filePath));
      if (parsed.manifest === null) continue;
      found.push({
        path: filePath,
        slug: implSlugFromPath(filePath, parsed.manifest),
        state: (parsed.manifest.state ?? '').trim(),
        archived: path.dirname(filePath) !== directory,
        manifest: parsed.manifest,
      });
    } catch {
      // unreadable manifest: not ours to judge here
    }
  }
  return found;
}
