import { lstat, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gitCommonDirOf } from '../store/lock-location.js';
import { updateFileLocked } from '../store/locked-write.js';

/** E38: cached gate results expire after 5 minutes. */
export const defaultGateCacheTtlMs = 5 * 60_000;

/** Where the cache lives, relative to the repository root (E38). */
export const gateCacheRelativePath = path.join('.polywave-state', 'gate-cache.json');

/** One cached (passing) gate result. */
export interface GateCacheEntry {
  gate_type: string;
  command: string;
  cwd: string;
  /** HEAD commit the result was computed at (for the E38 "cached at SHA" message). */
  head: string;
  passed: boolean;
  exit_code: number;
  output: string;
  output_truncated: boolean;
  full_output_path?: string;
  duration_ms: number;
  /** ISO time, for people reading the file. */
  cached_at: string;
  /** Milliseconds since the epoch, what the TTL check uses. */
  cached_at_ms: number;
}

interface GateCacheFile {
  version: 1;
  entries: Record<string, GateCacheEntry>;
}

/** Options of {@link GateCache}. */
export interface GateCacheOptions {
  /** Time to live of an entry. Default 5 min (E38). */
  ttlMs?: number;
  /** The clock (injectable for tests). */
  now?: () => Date;
  /** Lock wait for writers. Default 30 s. */
  lockTimeoutMs?: number;
}

/**
 * The E38 gate-result cache, `<repo>/.polywave-state/gate-cache.json`. Reads never lock (writes
 * are atomic renames, so a reader sees a whole file); every write is a locked read-modify-write
 * (`updateFileLocked`), so several processes adding entries at once lose none. Writes also drop
 * expired entries, so the file stays small. The cache is best effort: a broken or unreadable
 * file is a miss, and a failed write is ignored.
 */
export class GateCache {
  /** The cache file of `repoDir` itself; a linked worktree's entries go to {@link location} instead. */
  readonly filePath: string;
  private located: Promise<string> | undefined;
  private readonly ttlMs: number;
  private readonly now: () => Date;
  private readonly lockTimeoutMs: number | undefined;
  /** Writes of this process, one at a time (the file lock serializes processes). */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(repoDir: string, options: GateCacheOptions = {}) {
    this.filePath = path.join(path.resolve(repoDir), gateCacheRelativePath);
    this.ttlMs = options.ttlMs ?? defaultGateCacheTtlMs;
    this.now = options.now ?? (() => new Date());
    this.lockTimeoutMs = options.lockTimeoutMs;
  }

  /**
   * Where the entries really live. A linked worktree — an agent's — never keeps them in its own
   * tree: the agent can write there (the dirty check ignores `.polywave*`), so it could plant a
   * "passed" entry for its final tree and have finalize-wave's pre-merge gates skipped as cached.
   * They go to the main checkout's `.polywave-state/gate-cache.json` (read-only to every agent
   * sandbox; keys carry HEAD, the diff and the directory, so worktrees never share an entry by
   * mistake), or `<common dir>/polywave-state/` for a bare repository's worktrees.
   */
  location(): Promise<string> {
    this.located ??= linkedWorktreeCacheFile(path.dirname(path.dirname(this.filePath))).then((file) => file ?? this.filePath);
    return this.located;
  }

  /** The unexpired entry for `key`, if any. */
  async get(key: string): Promise<GateCacheEntry | undefined> {
    await this.writes;
    const file = parseCacheFile(await readFile(await this.location(), 'utf8').catch(() => ''));
    const entry = file.entries[key];
    if (!entry || !this.isFresh(entry, this.now().getTime())) return undefined;
    return entry;
  }

  /** Stores `entry` under `key` (cached_at set from the clock). */
  async put(key: string, entry: Omit<GateCacheEntry, 'cached_at' | 'cached_at_ms'>): Promise<void> {
    const at = this.now();
    const complete: GateCacheEntry = { ...entry, cached_at: at.toISOString(), cached_at_ms: at.getTime() };
    await this.write((file, nowMs) => {
      for (const [existingKey, existing] of Object.entries(file.entries)) {
        if (!this.isFresh(existing, nowMs)) delete file.entries[existingKey];
      }
      file.entries[key] = complete;
    });
  }

  /** Drops every entry (after a fix-mode gate rewrote files, E21). */
  async invalidate(): Promise<void> {
    await this.write((file) => {
      file.entries = {};
    });
  }

  /** Number of unexpired entries (for tests and diagnostics). */
  async size(): Promise<number> {
    await this.writes;
    const file = parseCacheFile(await readFile(await this.location(), 'utf8').catch(() => ''));
    const nowMs = this.now().getTime();
    return Object.values(file.entries).filter((entry) => this.isFresh(entry, nowMs)).length;
  }

  private isFresh(entry: GateCacheEntry, nowMs: number): boolean {
    if (typeof entry.cached_at_ms !== 'number') return false;
    const age = nowMs - entry.cached_at_ms;
    return age >= 0 && age < this.ttlMs;
  }

  private write(change: (file: GateCacheFile, nowMs: number) => void): Promise<void> {
    const run = async (): Promise<void> => {
      try {
        const filePath = await this.location();
        await mkdir(path.dirname(filePath), { recursive: true });
        await updateFileLocked(
          filePath,
          (current) => {
            const file = parseCacheFile(current);
            change(file, this.now().getTime());
            return `${JSON.stringify(file, null, 2)}\n`;
          },
          { allowMissing: true, maxBytes: 256 * 1024 * 1024, ...(this.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: this.lockTimeoutMs }) },
        );
      } catch {
        // Best effort: a cache that cannot be written only costs a re-run next time.
      }
    };
    const next = this.writes.then(run, run);
    this.writes = next;
    return next;
  }
}

function parseCacheFile(text: string): GateCacheFile {
  if (text.trim() === '') return { version: 1, entries: {} };
  try {
    const data = JSON.parse(text) as Partial<GateCacheFile>;
    if (data && typeof data === 'object' && data.entries && typeof data.entries === 'object' && !Array.isArray(data.entries)) {
      const entries: Record<string, GateCacheEntry> = {};
      for (const [key, value] of Object.entries(data.entries)) {
        if (value && typeof value === 'object' && typeof (value as GateCacheEntry).cached_at_ms === 'number') entries[key] = value as GateCacheEntry;
      }
      return { version: 1, entries };
    }
  } catch {
    // A corrupt cache (or the Go tool's shape) is an empty cache.
  }
  return { version: 1, entries: {} };
}

/** The cache file for a linked worktree at `repoDir` (its `.git` is a file); undefined for a main checkout or no repository. */
async function linkedWorktreeCacheFile(repoDir: string): Promise<string | undefined> {
  const dotGit = await lstat(path.join(repoDir, '.git')).catch(() => undefined);
  if (!dotGit?.isFile()) return undefined;
  const common = await gitCommonDirOf(repoDir).catch(() => undefined);
  if (!common) return undefined;
  return path.basename(common) === '.git' ? path.join(path.dirname(common), gateCacheRelativePath) : path.join(common, 'polywave-state', 'gate-cache.json');
}
