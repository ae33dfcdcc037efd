import { createHash } from 'node:crypto';
import { statSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { iterateEvents, lastEventId, openEventStore, type Database, type EventFilter, type EventRow } from '../observability/event-store.js';

type Statement = ReturnType<Database['prepare']>;

/** How many distinct SQL texts the tail keeps prepared (the SSE filters are few); beyond it the cache starts over. */
const statementCacheSize = 64;
/** After a write notification, one more look this much later: a commit's last WAL write can wake the tail before the writer updated the WAL index. */
const settleMs = 10;

/**
 * The server's one read-only view of the event store. It wakes on the file system's notification
 * that the store (or its WAL) was written — `fs.watch` on the store's directory, filtered to the
 * store's files — and then reads `max(id)` (WAL lets it read beside the recorders of other
 * processes) and wakes the SSE clients waiting for newer rows. A timer poll stays as the fallback:
 * every `pollMs` while no watch could be set up (a missing directory, a file system without
 * notifications), every `watchedPollMs` beside a working watch.
 * Each client reads its own rows after its own cursor, so a slow client never holds up the others
 * and never loses a row: while its socket does not drain it simply stops reading (back-pressure).
 * Per event nothing is opened, stat'ed or prepared: the statements are prepared once per handle
 * and a run's working directory is looked up once.
 */
export class EventTail {
  private db: Database | undefined;
  /** `db` whose prepare() hands out cached statements (what the tail's own queries use). */
  private cached: Database | undefined;
  private latest = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private timerMs = 0;
  private watcher: FSWatcher | undefined;
  private watchTriedAt = 0;
  private pollQueued = false;
  private settleTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly runCwds = new Map<string, string | null>();
  /** Per run: the roots it is matched to repositories by; `final` once they came from the run's recorded repositories. */
  private readonly runRootCache = new Map<string, { roots: readonly string[]; final: boolean; at: number }>();
  private openError: string | undefined;
  private isClosed = false;
  /** `dev:ino` of the file the open handle reads. */
  private openedIdentity: string | undefined;
  private gen = 0;
  private epochMemo: { identity: string; value: string } | undefined;
  /** How many polls ran (tests and benches see that a write woke the tail, not the timer). */
  polls = 0;
  /** Latency tracing (benches): told when a poll sees a newer max id, and when. */
  onAdvance: ((id: number, at: number) => void) | undefined;

  constructor(
    readonly storePath: string,
    private readonly pollMs = 20,
    private readonly watchedPollMs = 250,
  ) {}

  /** The database (opened on first need; undefined while the store file does not exist). */
  database(): Database | undefined {
    if (this.db || this.isClosed) return this.db;
    try {
      const identity = this.identity();
      const db = openEventStore(this.storePath, { readonly: true, busyTimeoutMs: 1000 });
      // Created or replaced while it was opened (the stat before names another file than the one
      // opened, or none): which file the handle reads is unknown — the next poll opens it again. Kept,
      // the next poll saw "replaced" and sent a second resync for one replacement (seen in CI).
      if (db && this.identity() !== identity) {
        db.close();
        return undefined;
      }
      this.db = db;
      this.cached = this.db ? cachingPrepare(this.db) : undefined;
      this.openedIdentity = identity;
      this.openError = undefined;
    } catch (error) {
      this.openError = error instanceof Error ? error.message : String(error);
      this.db = undefined;
      this.cached = undefined;
    }
    return this.db;
  }

  /** Why the store could not be opened (a corrupt or newer store), if it could not. */
  get error(): string | undefined {
    return this.openError;
  }

  start(): void {
    if (this.timer || this.isClosed) return;
    this.watchStore();
    this.poll();
    this.schedulePolls();
  }

  /** True while a file-system watch on the store's directory wakes the tail. */
  get watching(): boolean {
    return this.watcher !== undefined;
  }

  /** The fallback timer: fast without a watch, slow beside one. */
  private schedulePolls(): void {
    const every = this.watcher ? Math.max(this.pollMs, this.watchedPollMs) : this.pollMs;
    if (this.timer && this.timerMs === every) return;
    if (this.timer) clearInterval(this.timer);
    this.timerMs = every;
    this.timer = setInterval(() => {
      if (!this.watcher && Date.now() - this.watchTriedAt >= 1000) this.watchStore();
      this.poll();
    }, every);
    this.timer.unref();
  }

  /**
   * Watches the store's directory (not the file: SQLite deletes and recreates the -wal file, and a
   * replaced store is another inode) and polls when one of the store's files changes. Tried again
   * at most once a second while it fails (the directory may not exist yet).
   */
  private watchStore(): void {
    if (this.watcher || this.isClosed) return;
    this.watchTriedAt = Date.now();
    const base = path.basename(this.storePath);
    try {
      const watcher = watch(path.dirname(this.storePath), { persistent: false }, (_event, name) => {
        if (name === null || name === base || name.startsWith(`${base}-`)) this.notified();
      });
      watcher.on('error', () => {
        // The directory went away (or the watch broke): back to the fast timer until it can be set up again.
        watcher.close();
        if (this.watcher === watcher) this.watcher = undefined;
        if (!this.isClosed && this.timer) this.schedulePolls();
      });
      this.watcher = watcher;
    } catch {
      this.watcher = undefined;
    }
    if (this.timer) this.schedulePolls();
  }

  /** A store file was written: poll once the current callbacks are done (one poll for a burst of notifications), and once more a little later. */
  private notified(): void {
    if (this.isClosed) return;
    if (!this.pollQueued) {
      this.pollQueued = true;
      setImmediate(() => {
        this.pollQueued = false;
        if (!this.isClosed) this.poll();
      });
    }
    if (this.settleTimer === undefined) {
      this.settleTimer = setTimeout(() => {
        this.settleTimer = undefined;
        if (!this.isClosed) this.poll();
      }, settleMs);
      this.settleTimer.unref();
    }
  }

  /** The largest row id seen by the last poll. */
  get lastId(): number {
    return this.latest;
  }

  /**
   * The identity of the store the handle reads, short (attack-serve-15 N7): SSE ids are
   * `<epoch>-<row>`, so a Last-Event-ID from another store — a tab disconnected while the store
   * was replaced or restored, or across a server restart on another `--store` — is told apart
   * from a row of this one (resync) even when its row number is lower. `none` while no store is open.
   */
  get epoch(): string {
    this.database();
    const identity = this.openedIdentity;
    if (identity === undefined) return 'none';
    if (this.epochMemo?.identity !== identity) this.epochMemo = { identity, value: createHash('sha256').update(`${path.resolve(this.storePath)}\0${identity}`).digest('hex').slice(0, 10) };
    return this.epochMemo.value;
  }

  /** Bumped each time the store file was replaced (another inode) or deleted: every SSE client then gets `resync`. */
  get generation(): number {
    return this.gen;
  }

  private identity(): string | undefined {
    try {
      const stats = statSync(this.storePath);
      // The birth time too: a store deleted and restored at once may get the same inode number back.
      return `${stats.dev}:${stats.ino}:${stats.birthtimeMs}`;
    } catch {
      return undefined;
    }
  }

  /**
   * A handle on a deleted or replaced store reads a file nobody writes any more (attack-serve.md
   * F5b): when the path names another inode (or nothing), the handle is dropped and reopened, the
   * cursor starts over from the new store's max id, and the clients are woken to send `resync`.
   */
  private checkReplaced(): void {
    if (!this.db || this.identity() === this.openedIdentity) return;
    try {
      this.db.close();
    } catch {
      // the old handle: nothing to lose
    }
    this.db = undefined;
    this.cached = undefined;
    this.openedIdentity = undefined;
    this.runCwds.clear();
    this.runRootCache.clear();
    this.latest = 0;
    this.gen += 1;
    // The directory may have been replaced with the file (a watch on a deleted directory hears nothing more): watch it anew.
    if (this.timer) {
      this.watcher?.close();
      this.watcher = undefined;
      this.watchStore();
    }
    const woken = [...this.waiters];
    this.waiters.clear();
    for (const wake of woken) wake();
  }

  /** Reads `max(id)` now (also what a new client without Last-Event-ID starts from). */
  poll(): number {
    this.polls += 1;
    this.checkReplaced();
    this.database();
    const db = this.cached;
    if (!db) return this.latest;
    try {
      const id = lastEventId(db);
      if (id !== this.latest) {
        this.latest = id;
        this.onAdvance?.(id, Date.now());
        const woken = [...this.waiters];
        this.waiters.clear();
        for (const wake of woken) wake();
      }
    } catch {
      // A busy or briefly unreadable store: the next poll tries again.
    }
    return this.latest;
  }

  /** True once {@link close} ran: the SSE loops end. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Resolves when a row newer than `afterId` is stored, or after `timeoutMs`, or on `signal`, or on close. */
  waitBeyond(afterId: number, timeoutMs: number, signal: AbortSignal, generation = this.gen): Promise<void> {
    if (this.latest > afterId || signal.aborted || this.isClosed || generation !== this.gen) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** At most `limit` matching rows after `afterId`, materialized (nothing stays open across an await). */
  read(filter: EventFilter, afterId: number, limit: number): EventRow[] {
    this.database();
    const db = this.cached;
    if (!db) return [];
    return [...iterateEvents(db, { ...filter, afterId }, limit)];
  }

  /** The working directory a run recorded (null when unknown): how events are matched to a repository. */
  runCwd(runId: string): string | null {
    if (this.runCwds.has(runId)) return this.runCwds.get(runId)!;
    this.database();
    const db = this.cached;
    if (!db) return null;
    const row = db.prepare('SELECT cwd FROM runs WHERE run_id = ?').get(runId) as { cwd: string | null } | undefined;
    const cwd = row?.cwd ?? null;
    if (row) this.runCwds.set(runId, cwd);
    return cwd;
  }

  /**
   * The directories that match a run to a served repository: the repository roots the run
   * recorded (the `repos` column, schema 2: `--repo-dir`, the IMPL's repository, every repository
   * of a cross-repo wave), or — when it recorded none (older runs, or none yet) — its working
   * directory; [] when unknown. Recorded roots are final and kept; a cwd answer is asked again
   * after {@link rootsRecheckMs} (a live run names its repository after its first events).
   */
  runRoots(runId: string): readonly string[] {
    const cached = this.runRootCache.get(runId);
    if (cached && (cached.final || Date.now() - cached.at < rootsRecheckMs)) return cached.roots;
    this.database();
    const db = this.cached;
    if (!db) return [];
    const row = db.prepare('SELECT cwd, repos FROM runs WHERE run_id = ?').get(runId) as { cwd: string | null; repos: string | null } | undefined;
    if (!row) return [];
    const recorded = parseRoots(row.repos);
    const answer = { roots: recorded.length > 0 ? recorded : row.cwd ? [row.cwd] : [], final: recorded.length > 0, at: Date.now() };
    if (this.runRootCache.size >= runRootCacheSize) this.runRootCache.clear();
    this.runRootCache.set(runId, answer);
    return answer.roots;
  }

  close(): void {
    this.isClosed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.settleTimer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
    for (const wake of [...this.waiters]) wake();
    this.waiters.clear();
    try {
      this.db?.close();
    } catch {
      // closing a read-only handle: nothing to lose
    }
    this.db = undefined;
    this.cached = undefined;
  }
}

/** How long a run's cwd-only answer is kept before the store is asked again whether it recorded its repositories. */
const rootsRecheckMs = 500;
const runRootCacheSize = 10_000;

/** The absolute paths of a `runs.repos` JSON array (anything else: none). */
export function parseRoots(text: string | null): string[] {
  if (!text) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && path.isAbsolute(item)) : [];
  } catch {
    return [];
  }
}

/** True when one of a run's roots ({@link EventTail.runRoots}) is `repoPath` or inside it. */
export function rootsInRepo(roots: readonly string[], repoPath: string): boolean {
  const prefix = `${repoPath}${path.sep}`;
  return roots.some((root) => root === repoPath || root.startsWith(prefix));
}

/**
 * `db` seen through a prepare() that hands out one statement per SQL text ({@link lastEventId}
 * and {@link iterateEvents} prepare on every call). Only prepare() is offered: it is all the
 * tail's queries use. A statement is never shared by two live iterations: {@link EventTail.read}
 * materializes its rows before anything else runs.
 */
function cachingPrepare(db: Database): Database {
  const statements = new Map<string, Statement>();
  const prepare = (sql: string): Statement => {
    let statement = statements.get(sql);
    if (!statement) {
      if (statements.size >= statementCacheSize) statements.clear();
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  return { prepare } as unknown as Database;
}
