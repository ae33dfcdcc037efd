import { statSync } from 'node:fs';
import { iterateEvents, lastEventId, openEventStore, type Database, type EventFilter, type EventRow } from '../observability/event-store.js';

/**
 * The server's one read-only view of the event store: polls `max(id)` every `pollMs` (WAL lets it
 * read beside the recorders of other processes) and wakes the SSE clients waiting for newer rows.
 * Each client reads its own rows after its own cursor, so a slow client never holds up the others
 * and never loses a row: while its socket does not drain it simply stops reading (back-pressure).
 */
export class EventTail {
  private db: Database | undefined;
  private latest = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly runCwds = new Map<string, string | null>();
  private openError: string | undefined;
  private isClosed = false;
  /** `dev:ino` of the file the open handle reads. */
  private openedIdentity: string | undefined;
  private gen = 0;

  constructor(
    readonly storePath: string,
    private readonly pollMs = 20,
  ) {}

  /** The database (opened on first need; undefined while the store file does not exist). */
  database(): Database | undefined {
    if (this.db || this.isClosed) return this.db;
    try {
      const identity = this.identity();
      this.db = openEventStore(this.storePath, { readonly: true, busyTimeoutMs: 1000 });
      this.openedIdentity = identity;
      this.openError = undefined;
    } catch (error) {
      this.openError = error instanceof Error ? error.message : String(error);
      this.db = undefined;
    }
    return this.db;
  }

  /** Why the store could not be opened (a corrupt or newer store), if it could not. */
  get error(): string | undefined {
    return this.openError;
  }

  start(): void {
    if (this.timer) return;
    this.poll();
    this.timer = setInterval(() => this.poll(), this.pollMs);
    this.timer.unref();
  }

  /** The largest row id seen by the last poll. */
  get lastId(): number {
    return this.latest;
  }

  /** Bumped each time the store file was replaced (another inode) or deleted: every SSE client then gets `resync`. */
  get generation(): number {
    return this.gen;
  }

  private identity(): string | undefined {
    try {
      const stats = statSync(this.storePath);
      return `${stats.dev}:${stats.ino}`;
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
    this.openedIdentity = undefined;
    this.runCwds.clear();
    this.latest = 0;
    this.gen += 1;
    const woken = [...this.waiters];
    this.waiters.clear();
    for (const wake of woken) wake();
  }

  /** Reads `max(id)` now (also what a new client without Last-Event-ID starts from). */
  poll(): number {
    this.checkReplaced();
    const db = this.database();
    if (!db) return this.latest;
    try {
      const id = lastEventId(db);
      if (id !== this.latest) {
        this.latest = id;
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
    const db = this.database();
    if (!db) return [];
    return [...iterateEvents(db, { ...filter, afterId }, limit)];
  }

  /** The working directory a run recorded (null when unknown): how events are matched to a repository. */
  runCwd(runId: string): string | null {
    if (this.runCwds.has(runId)) return this.runCwds.get(runId)!;
    const db = this.database();
    if (!db) return null;
    const row = db.prepare('SELECT cwd FROM runs WHERE run_id = ?').get(runId) as { cwd: string | null } | undefined;
    const cwd = row?.cwd ?? null;
    if (row) this.runCwds.set(runId, cwd);
    return cwd;
  }

  close(): void {
    this.isClosed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const wake of [...this.waiters]) wake();
    this.waiters.clear();
    try {
      this.db?.close();
    } catch {
      // closing a read-only handle: nothing to lose
    }
    this.db = undefined;
  }
}
