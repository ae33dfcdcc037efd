/**
 * The on-disk cache of per-file facts, keyed by git blob id + language + engine version, under
 * `<git-common-dir>/polywave/analysis-cache/<version>/`. Shared by every worktree of a repository
 * (the common dir), safe with concurrent processes: an entry is written to a unique temporary file
 * and renamed into place (rename is atomic; two writers of the same key write the same bytes).
 * Self-invalidating: the version is a hash of the engine's queries and format number, so a changed
 * extractor writes to a new directory (old ones are left for `git gc`-style manual cleanup).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
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

/**
 * The cached facts, or undefined (missing or unreadable entries are a miss, never an error).
 * Synchronous on purpose: thousands of small reads are several times faster than through the
 * promise API's thread pool round trips (measured in bench/analysis.mjs).
 */
export function readCached(dir: string, blob: string, lang: Lang): FileFacts | undefined {
  try {
    const facts = JSON.parse(readFileSync(entryPath(dir, blob, lang), 'utf8')) as FileFacts;
    return typeof facts.refs === 'string' && Array.isArray(facts.symbols) && Array.isArray(facts.imports) ? facts : undefined;
  } catch {
    return undefined;
  }
}

const madeDirs = new Set<string>();

/** Stores facts (best effort: a read-only git dir only costs the cache). */
export function writeCached(dir: string, blob: string, lang: Lang, facts: FileFacts): void {
  const target = entryPath(dir, blob, lang);
  const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const parent = path.dirname(target);
    if (!madeDirs.has(parent)) {
      mkdirSync(parent, { recursive: true });
      madeDirs.add(parent);
    }
    const text = JSON.stringify(facts);
    try {
      writeFileSync(temporary, text);
    } catch {
      // The directory went away (the cache was cleared while this process ran): make it again.
      mkdirSync(parent, { recursive: true });
      writeFileSync(temporary, text);
    }
    renameSync(temporary, target);
  } catch {
    try {
      unlinkSync(temporary);
    } catch {
      // nothing written
    }
  }
}

/** Definitions and imports of one file (no references): what a dependency graph needs. */
export interface HeadEntry {
  file: string;
  blob: string;
  lang: Lang;
  symbols: FileFacts['symbols'];
  imports: FileFacts['imports'];
}

const keptTreePacks = 4;

/**
 * A tree pack: the heads of every file of one listing (paths + blob ids), in one file keyed by a
 * hash of that listing. A whole-repository question (dependency graph, all symbols) on an
 * unchanged tree then reads one small file instead of thousands of entries. The newest few packs
 * are kept; older ones are removed (best effort).
 */
export function treePackKey(entries: ReadonlyArray<{ file: string; blob: string; lang: Lang }>): string {
  const hash = createHash('sha1');
  for (const entry of entries) hash.update(`${entry.file}\0${entry.blob}\0${entry.lang}\n`);
  return hash.digest('hex');
}

export function readTreePack(dir: string, key: string): HeadEntry[] | undefined {
  try {
    const heads = JSON.parse(readFileSync(path.join(dir, 'trees', `${key}.json`), 'utf8')) as HeadEntry[];
    return Array.isArray(heads) ? heads : undefined;
  } catch {
    return undefined;
  }
}

export function writeTreePack(dir: string, key: string, heads: readonly HeadEntry[]): void {
  writePacked(path.join(dir, 'trees'), `${key}.json`, JSON.stringify(heads));
}

/** Resolved dependency edges of a whole tree (files + indexes), keyed by the listing's fingerprint. */
export interface GraphPack {
  files: string[];
  deps: number[][];
}

export function readGraphPack(dir: string, fingerprint: string): GraphPack | undefined {
  try {
    const pack = JSON.parse(readFileSync(path.join(dir, 'graphs', `${fingerprint}.json`), 'utf8')) as GraphPack;
    return Array.isArray(pack.files) && Array.isArray(pack.deps) ? pack : undefined;
  } catch {
    return undefined;
  }
}

export function writeGraphPack(dir: string, fingerprint: string, pack: GraphPack): void {
  writePacked(path.join(dir, 'graphs'), `${fingerprint}.json`, JSON.stringify(pack));
}

function writePacked(folder: string, name: string, text: string): void {
  const target = path.join(folder, name);
  const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    mkdirSync(folder, { recursive: true });
    writeFileSync(temporary, text);
    renameSync(temporary, target);
    const packs = readdirSync(folder)
      .filter((entry) => entry.endsWith('.json'))
      .map((entry) => ({ entry, mtime: statSync(path.join(folder, entry)).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime);
    for (const old of packs.slice(keptTreePacks)) unlinkSync(path.join(folder, old.entry));
  } catch {
    try {
      unlinkSync(temporary);
    } catch {
      // nothing written
    }
  }
}
