import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { privateUserDir } from '../../sandbox/private-dir.js';

/**
 * What list-impls takes from one manifest: its summary fields, or why it is skipped. A pure
 * function of the file's content (and of the code that parsed it).
 */
export type CachedOutcome =
  | { summary: { feature_slug: string; verdict: string; state: string; current_wave: number; total_waves: number } }
  | { error: string };

interface Entry {
  /** dev:ino:size:mtimeMs:ctimeMs of the file when it was parsed. */
  stamp: string;
  outcome: CachedOutcome;
}

interface CacheFile {
  v: 1;
  /** The code that produced the entries (the URL of the bundled chunk, whose name is its content hash). */
  code: string;
  entries: Record<string, Entry>;
}

/** Cache files of directories not listed for this long are removed (temporary directories of tests, moved checkouts). */
const unusedMs = 7 * 24 * 60 * 60_000;

/** Files changed this recently are never cached: a later change within the timestamp granularity could go unseen (git's "racy" entries). */
const racyMs = 1000;

/**
 * The parse results of `list-impls`, kept between calls (issue 13: hooks list the IMPLs again and
 * again; parsing the YAML is nearly all of a call's own cost, ~10 ms per 30 KB manifest). An entry
 * is used only while the file's device, inode, size, mtime and ctime are what they were when it
 * was parsed (any write or rename changes ctime), and only by the same code: the cache is on only
 * when the CLI runs from its bundle, whose chunk names are content hashes (`code`). Files changed
 * in the last second are parsed and not stored.
 *
 * Kept in `<os temp dir>/polywave-<uid>/` (mode 0700; not used unless it is the caller's and
 * closed to others, as for any file trusted from a shared directory), one JSON file per listed
 * directory, replaced by rename (concurrent calls: the last one wins; either one is a valid cache).
 * Off where there is no uid (Windows) and with POLYWAVE_NO_CACHE=1. Any failure to read or write
 * it is ignored: the manifests are parsed as without a cache.
 */
export class ListImplsCache {
  private readonly entries: Record<string, Entry>;
  private readonly fresh: Record<string, Entry> = {};
  private changed = false;

  private constructor(
    private readonly file: string,
    private readonly code: string,
    previous: CacheFile | undefined,
  ) {
    this.entries = previous?.code === code ? previous.entries : {};
  }

  /** The cache for `directory`, or undefined when caching is off here. */
  static open(directory: string, code: string, env: Readonly<Record<string, string | undefined>>): ListImplsCache | undefined {
    if (env.POLYWAVE_NO_CACHE === '1' || !code.includes('/dist/bundle/') || typeof process.getuid !== 'function') return undefined;
    const uid = process.getuid();
    const cacheDir = path.join(os.tmpdir(), `polywave-${uid}`);
    if (!privateUserDir(cacheDir, true)) return undefined;
    const file = path.join(cacheDir, `list-impls-${hashName(directory)}.json`);
    let previous: CacheFile | undefined;
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as CacheFile;
      if (parsed && parsed.v === 1 && typeof parsed.entries === 'object' && parsed.entries !== null) previous = parsed;
    } catch {
      previous = undefined;
    }
    return new ListImplsCache(file, code, previous);
  }

  /** The stored outcome for `file` if the file is unchanged since; undefined otherwise (parse it). */
  lookup(file: string): CachedOutcome | undefined {
    const entry = Object.hasOwn(this.entries, file) ? this.entries[file] : undefined;
    if (!entry) return undefined;
    const stats = statOrUndefined(file);
    if (!stats || stampOf(stats) !== entry.stamp) return undefined;
    this.fresh[file] = entry;
    return entry.outcome;
  }

  /** Records the outcome of parsing `file`, read with the given stats (taken before the read). */
  store(file: string, statsBeforeRead: Stats | undefined, outcome: CachedOutcome): void {
    if (!statsBeforeRead || Math.max(statsBeforeRead.mtimeMs, statsBeforeRead.ctimeMs) > Date.now() - racyMs) return;
    // Changed while it was read: do not store what may be half of each version.
    const after = statOrUndefined(file);
    if (!after || stampOf(after) !== stampOf(statsBeforeRead)) return;
    this.fresh[file] = { stamp: stampOf(statsBeforeRead), outcome };
    this.changed = true;
  }

  /** Writes the entries of this call's files (entries of files no longer listed are dropped). */
  save(): void {
    if (!this.changed && Object.keys(this.fresh).length === Object.keys(this.entries).length) return;
    const contents: CacheFile = { v: 1, code: this.code, entries: this.fresh };
    const temp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(temp, JSON.stringify(contents), { mode: 0o600 });
      renameSync(temp, this.file);
    } catch {
      // A cache that cannot be written is only a slower next call.
    }
    pruneUnused(path.dirname(this.file));
  }
}

/** Removes the cache files of directories not listed for a week (and temp files of killed writers). */
function pruneUnused(cacheDir: string): void {
  try {
    const now = Date.now();
    for (const name of readdirSync(cacheDir)) {
      if (!name.startsWith('list-impls-')) continue;
      const file = path.join(cacheDir, name);
      const age = now - statSync(file).mtimeMs;
      if (age > unusedMs || (name.endsWith('.tmp') && age > 60_000)) rmSync(file, { force: true });
    }
  } catch {
    // pruned by a concurrent call, or not at all: harmless
  }
}

/** The file's stats, or undefined when it cannot be stat'ed. */
export function statOrUndefined(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

function stampOf(stats: Stats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
}

/** FNV-1a of the directory path: a file name per directory without loading node:crypto. */
function hashName(text: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${hash.toString(16).padStart(8, '0')}-${text.length}`;
}
