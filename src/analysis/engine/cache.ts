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

/**
 * Facts are stored in packs: one file per call that parsed something (`packs/<id>.pack`), written
 * after the answer (a timer after the analysis call, or at process exit) instead of one file + rename
 * per parsed blob on the answer's path (a cold check-callers parsed ~250 files: 250 temporary files,
 * renames and up to 256 fan-out directories, the largest single cost of a cold call in CPU profiles).
 * A pack is `PWP1\n`, one JSON line `{"<blob>.<lang>": [offset, length], …}`, then the entries'
 * JSON texts (offsets in bytes after the header line): a reader parses only the entries it needs.
 * Packs are immutable once renamed into place; more than {@link maxPacks} are merged into one.
 */
const packMagic = 'PWP1\n';
const maxPacks = 8;
/** Entries kept by a merge (the newest packs' first): bounds the pack a later call reads. */
const maxMergedEntries = 60_000;

/** Facts parsed by this process and not yet written, per cache dir (read back by this process meanwhile). */
const pending = new Map<string, Map<string, string>>();
/** The umask of the call that parsed them, per cache dir: the resident server restores its own after a call. */
const pendingUmask = new Map<string, number>();
let flushTimer: NodeJS.Timeout | undefined;
let exitHook = false;

interface PackView {
  bytes: Buffer;
  bodyStart: number;
  index: Record<string, [number, number]>;
}

/** A reader of the packs of one cache dir, for one call: packs are listed and read on its first miss only. */
export interface CacheReader {
  read(blob: string, lang: Lang): FileFacts | undefined;
}

function packView(file: string): PackView | undefined {
  try {
    const bytes = readFileSync(file);
    if (bytes.toString('latin1', 0, packMagic.length) !== packMagic) return undefined;
    const newline = bytes.indexOf(10, packMagic.length);
    if (newline < 0) return undefined;
    const index = JSON.parse(bytes.toString('utf8', packMagic.length, newline)) as Record<string, [number, number]>;
    return typeof index === 'object' && index !== null ? { bytes, bodyStart: newline + 1, index } : undefined;
  } catch {
    return undefined;
  }
}

/** The pack files of `dir`, newest first. */
function packFiles(dir: string): string[] {
  try {
    const folder = path.join(dir, 'packs');
    return readdirSync(folder)
      .filter((name) => name.endsWith('.pack'))
      .map((name) => ({ file: path.join(folder, name), mtime: statSync(path.join(folder, name), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => b.mtime - a.mtime)
      .map((pack) => pack.file);
  } catch {
    return [];
  }
}

function validFacts(facts: FileFacts): FileFacts | undefined {
  return typeof facts?.refs === 'string' && Array.isArray(facts.symbols) && Array.isArray(facts.imports) ? facts : undefined;
}

/**
 * The cached facts reader of `dir` (missing or unreadable entries are a miss, never an error).
 * Synchronous on purpose: small reads are several times faster than through the promise API's
 * thread pool round trips (measured in bench/analysis.mjs).
 */
export function cacheReader(dir: string): CacheReader {
  let views: PackView[] | undefined;
  return {
    read(blob, lang) {
      const key = `${blob}.${lang}`;
      const waiting = pending.get(dir)?.get(key);
      try {
        if (waiting !== undefined) return validFacts(JSON.parse(waiting) as FileFacts);
        views ??= packFiles(dir).flatMap((file) => packView(file) ?? []);
        for (const view of views) {
          const at = view.index[key];
          if (!Array.isArray(at)) continue;
          const facts = validFacts(JSON.parse(view.bytes.toString('utf8', view.bodyStart + at[0], view.bodyStart + at[0] + at[1])) as FileFacts);
          if (facts) return facts;
        }
      } catch {
        // a damaged entry is a miss
      }
      return undefined;
    },
  };
}

/** Whether `dir` holds any facts: a pack on disk or entries queued for one. */
export function cacheHoldsFacts(dir: string): boolean {
  return (pending.get(dir)?.size ?? 0) > 0 || packFiles(dir).length > 0;
}

/** One entry (tests, single reads); a call reading many uses {@link cacheReader}. */
export function readCached(dir: string, blob: string, lang: Lang): FileFacts | undefined {
  return cacheReader(dir).read(blob, lang);
}

/**
 * Stores facts (best effort: a read-only git dir only costs the cache). Queued: written as one pack
 * by {@link flushCache} — after the current analysis call (scope.ts), on a timer, or at exit.
 */
export function writeCached(dir: string, blob: string, lang: Lang, facts: FileFacts): void {
  let entries = pending.get(dir);
  if (!entries) {
    entries = new Map();
    pending.set(dir, entries);
  }
  entries.set(`${blob}.${lang}`, JSON.stringify(facts));
  // The umask of the call that parsed them (a resident server's caller's): read once per queued pack. A call
  // flushes what an earlier call queued before it writes (scope.ts beforeCallHooks), so one pack has one caller.
  if (!pendingUmask.has(dir)) pendingUmask.set(dir, currentUmask());
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => flushCache());
  }
}

/**
 * The process's umask, read without changing it: `process.umask()` with no argument sets it to 0 for a
 * moment (DEP0139), when files created on other threads get mode 0666. Linux reports it in /proc.
 */
export function currentUmask(): number {
  try {
    const match = /^Umask:\s*([0-7]+)\s*$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (match) return Number.parseInt(match[1]!, 8);
  } catch {
    // no /proc (macOS): the only way left
  }
  return process.umask();
}

/** Writes the queued facts now if any are queued (before another call queues its own). */
export function flushPendingCache(): void {
  if (pending.size > 0) flushCache();
}

/** Writes the queued facts soon (after the current turn of the event loop: an answer being sent goes first). */
export function scheduleCacheFlush(): void {
  if (flushTimer || pending.size === 0) return;
  flushTimer = setTimeout(() => {
    flushTimer = undefined;
    flushCache();
  }, 0);
  flushTimer.unref?.();
}

/** Writes every queued entry: one pack per cache dir; merges the packs when there are too many. */
export function flushCache(): void {
  if (flushTimer) {
    clearTimeout(flushTimer);
    flushTimer = undefined;
  }
  const queued = [...pending];
  pending.clear();
  for (const [dir, entries] of queued) {
    const folder = path.join(dir, 'packs');
    const mask = pendingUmask.get(dir);
    pendingUmask.delete(dir);
    let own: number | undefined;
    try {
      own = mask === undefined ? undefined : process.umask(mask);
    } catch {
      // a worker thread cannot set it: the process's own applies
    }
    try {
      writePack(folder, entries);
      const packs = packFiles(dir);
      if (packs.length > maxPacks) mergePacks(folder, packs);
    } finally {
      if (own !== undefined) process.umask(own);
    }
  }
}

/** Writes one pack of `entries` (key → JSON text) into `folder`; its name is unique (process, time, random). */
function writePack(folder: string, entries: ReadonlyMap<string, string>): void {
  const index: Record<string, [number, number]> = {};
  const bodies: Buffer[] = [];
  let offset = 0;
  for (const [key, text] of entries) {
    const body = Buffer.from(text, 'utf8');
    index[key] = [offset, body.length];
    offset += body.length;
    bodies.push(body);
  }
  const name = `${Date.now().toString(36)}-${process.pid}-${randomBytes(4).toString('hex')}.pack`;
  writeAtomically(folder, name, Buffer.concat([Buffer.from(`${packMagic}${JSON.stringify(index)}\n`), ...bodies]));
}

/** Merges `packs` (newest first) into one; the merged packs are removed (a concurrent reader misses, and parses). */
function mergePacks(folder: string, packs: readonly string[]): void {
  const entries = new Map<string, string>();
  for (const file of packs) {
    const view = packView(file);
    if (!view) continue;
    for (const [key, at] of Object.entries(view.index)) {
      if (entries.size >= maxMergedEntries) break;
      if (!entries.has(key) && Array.isArray(at)) entries.set(key, view.bytes.toString('utf8', view.bodyStart + at[0], view.bodyStart + at[0] + at[1]));
    }
  }
  writePack(folder, entries);
  for (const file of packs) {
    try {
      unlinkSync(file);
    } catch {
      // removed by another process's merge
    }
  }
}

/**
 * Makes a cache folder, but never the repository's git directory: facts queued by a call are written after it answered,
 * and a repository removed in between (a deleted clone or worktree, a test's temporary repository) must not be made
 * again as a directory tree holding only the cache. False when the git directory is gone.
 */
function makeCacheFolder(folder: string): boolean {
  const marker = `${path.sep}polywave${path.sep}analysis-cache${path.sep}`;
  const at = folder.lastIndexOf(marker);
  if (at > 0 && !(statSync(folder.slice(0, at), { throwIfNoEntry: false })?.isDirectory() ?? false)) return false;
  mkdirSync(folder, { recursive: true });
  return true;
}

function writeAtomically(folder: string, name: string, bytes: Buffer): void {
  const target = path.join(folder, name);
  const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    if (!makeCacheFolder(folder)) return;
    writeFileSync(temporary, bytes);
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
    if (!makeCacheFolder(folder)) return;
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
