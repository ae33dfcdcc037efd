/**
 * The on-disk cache of per-file facts, keyed by git blob id + language + engine version, under
 * `<git-common-dir>/polywave/analysis-cache/<version>/`. Shared by every worktree of a repository
 * (the common dir), safe with concurrent processes: an entry is written to a unique temporary file
 * and renamed into place (rename is atomic; two writers of the same key write the same bytes).
 * Self-invalidating: the version is a hash of the engine's queries and format number, so a changed
 * extractor writes to a new directory (old ones are left for `git gc`-style manual cleanup).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { engineFingerprint, type FileFacts } from './extract.js';
import type { Lang } from './types.js';

export const cacheVersion = createHash('sha1').update(engineFingerprint()).digest('hex').slice(0, 12);

export function cacheDir(commonDir: string): string {
  return path.join(commonDir, 'polywave', 'analysis-cache', cacheVersion);
}

function entryPath(dir: string, blob: string, lang: Lang): string {
  return path.join(dir, blob.slice(0, 2), `${blob.slice(2)}.${lang}.json`);
}

/** The cached facts, or undefined (missing or unreadable entries are a miss, never an error). */
export async function readCached(dir: string, blob: string, lang: Lang): Promise<FileFacts | undefined> {
  try {
    return JSON.parse(await readFile(entryPath(dir, blob, lang), 'utf8')) as FileFacts;
  } catch {
    return undefined;
  }
}

/** Stores facts (best effort: a read-only git dir only costs the cache). */
export async function writeCached(dir: string, blob: string, lang: Lang, facts: FileFacts): Promise<void> {
  const target = entryPath(dir, blob, lang);
  const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(temporary, JSON.stringify(facts));
    await rename(temporary, target);
  } catch {
    await unlink(temporary).catch(() => undefined);
  }
}
