import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { EventBus, PolywaveEvent } from '../engine/events.js';
import { FutureSchemaError, insertEvents, openEventStore, setBusyTimeout, type Database, type NewEventRow, type RunRow } from './event-store.js';
import { newRunId } from './run-id.js';

export interface RecorderOptions {
  /** The SQLite file (resolveStoreSettings). */
  storePath: string;
  /** The command that records (`run-wave`, `run`, …): stored with the run. */
  command: string;
  /** Where the one warning line goes when the store cannot be used. */
  warn: (line: string) => void;
  now?: () => Date;
  cwd?: string;
  /** PROGRAM slug for events that carry none. */
  program?: string;
  /** Batch delay: events are written at most this long after they are emitted (default 100 ms). */
  flushDelayMs?: number;
  /** A batch this large is written right away (next tick; default 500). */
  batchSize?: number;
  /** Wait for a locked store during a periodic flush (default 100 ms; the engine's thread waits that long at most). */
  busyTimeoutMs?: number;
  /** Wait for a locked store on close, before giving up on this run's remaining events (default 3000 ms). */
  closeTimeoutMs?: number;
  /** Warn when the store has refused writes (busy) for this long (default 10 s: 20 writers on a loaded machine wait seconds, a stuck lock much longer). */
  lockedWarningMs?: number;
}

export interface Recorder {
  /** ULID-shaped id of this run: every stored event carries it. */
  readonly runId: string;
  /** Events handed to the store so far (written or pending). */
  readonly counts: { received: number; written: number; dropped: number };
  /** True once the store was given up for this run (one warning printed). */
  readonly disabled: boolean;
  /** Writes what is buffered now (synchronously). */
  flush(): void;
  /** Writes the rest, stops listening and closes the database. Idempotent. */
  close(): void;
  /** Adds repository roots this run works on (stored on its run row with the next batch; see {@link recordRunRepositories}). */
  addRepos(roots: readonly string[]): void;
}

/** The recorder listening on each bus, and the open recorders of this process. */
const recordersByBus = new WeakMap<EventBus, Recorder>();
const openRecorders = new Set<Recorder>();

/**
 * Tells the recorder of `bus` which repositories the run works on (absolute roots: `--repo-dir`,
 * the IMPL's repository, each repository of a cross-repo wave). `polywave serve` matches runs to the
 * repositories it serves by these, and by the run's cwd only when it never said. A bus without a
 * recorder of its own (a labelled child bus) reaches the process's recorder when there is exactly one.
 * Never throws; without a recorder it does nothing.
 */
export function recordRunRepositories(bus: EventBus | undefined, roots: readonly string[]): void {
  if (!bus) return;
  const recorder = recordersByBus.get(bus) ?? (openRecorders.size === 1 ? [...openRecorders][0] : undefined);
  try {
    recorder?.addRepos(roots);
  } catch {
    // observability never breaks a run
  }
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? code : '';
}

function isBusy(error: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(error));
}

function describeFailure(error: unknown): string {
  if (error instanceof FutureSchemaError) return error.message;
  const code = sqliteCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) return `not a usable SQLite database (${message}); move it away or use --store`;
  // SQLITE_IOERR_SHMSIZE: the WAL index (-shm) could not be allocated — on Linux, a full file system.
  if (code.startsWith('SQLITE_FULL') || code === 'SQLITE_IOERR_SHMSIZE') return `the disk is full (${code})`;
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || ['EACCES', 'EPERM', 'EROFS'].includes(code)) return `cannot write there (${message})`;
  return `${code ? `${code}: ` : ''}${message}`;
}

/**
 * E40: subscribes to the engine's bus and stores every event, batched, never in the way. The
 * listener only appends to a buffer (with the run id, a per-run sequence number and the time);
 * a short unref'd timer (or a full batch) writes the buffer in one IMMEDIATE transaction. The
 * database is opened on the first write, not on attach. A store that cannot be used — missing
 * or read-only directory, corrupt file, full disk, a future schema — costs exactly one warning
 * line and recording stops for this run; a store locked by another process keeps the events in
 * memory and retries (warning once if it lasts), and on close waits a bounded time, then gives up.
 */
export function attachRecorder(bus: EventBus, options: RecorderOptions): Recorder {
  const now = options.now ?? (() => new Date());
  const flushDelayMs = options.flushDelayMs ?? 100;
  const batchSize = options.batchSize ?? 500;
  const busyTimeoutMs = options.busyTimeoutMs ?? 100;
  const closeTimeoutMs = options.closeTimeoutMs ?? 3000;
  const lockedWarningMs = options.lockedWarningMs ?? 10_000;
  const startedAt = now();
  const runId = newRunId(startedAt);
  const run: RunRow = { run_id: runId, started_at: startedAt.getTime(), command: options.command, cwd: options.cwd ?? null, pid: process.pid };
  const counts = { received: 0, written: 0, dropped: 0 };
  let buffer: NewEventRow[] = [];
  let seq = 0;
  let db: Database | undefined;
  let disabled = false;
  let warned = false;
  let closed = false;
  let runStored = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let busySince: number | undefined;
  let retryDelayMs = flushDelayMs;
  const slugsSeen = new Set<string>();
  let latestWave: number | null = null;
  const repos: string[] = [];
  let reposDirty = false;

  const warnOnce = (reason: string) => {
    if (warned) return;
    warned = true;
    options.warn(`polywave: warning: event store ${options.storePath}: ${reason} — run ${runId} continues without recording events\n`);
  };
  const giveUp = (reason: string) => {
    disabled = true;
    counts.dropped += buffer.length;
    buffer = [];
    if (timer) clearTimeout(timer);
    timer = undefined;
    try {
      db?.close();
    } catch {
      // Closing a broken handle: nothing more to lose.
    }
    db = undefined;
    warnOnce(reason);
  };

  const schedule = (delay: number) => {
    if (timer || disabled || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      writeBuffer(busyTimeoutMs);
    }, delay);
    timer.unref();
  };

  /** One attempt: open if needed, write the buffer. Returns false when the store was busy. */
  function writeBuffer(waitMs: number): boolean {
    if (disabled || buffer.length === 0) return true;
    try {
      if (!db) {
        db = openEventStore(options.storePath, { busyTimeoutMs: waitMs });
        if (!db) throw new Error('the store could not be opened');
      }
      setBusyTimeout(db, waitMs);
      const batch = buffer;
      const dirty = reposDirty;
      const written = insertEvents(db, batch, runStored && !dirty ? undefined : run);
      runStored = true;
      if (dirty) reposDirty = false;
      buffer = buffer.slice(batch.length);
      counts.written += written;
      busySince = undefined;
      retryDelayMs = flushDelayMs;
      if (buffer.length > 0) schedule(0);
      return true;
    } catch (error) {
      if (isBusy(error)) {
        // Another process holds the lock: keep the events, retry later with a growing delay.
        const at = Date.now();
        busySince ??= at;
        if (at - busySince >= lockedWarningMs && !warned) {
          warned = true;
          options.warn(`polywave: warning: event store ${options.storePath} is locked by another process — run ${runId} keeps its events in memory and writes them when it is free\n`);
        }
        retryDelayMs = Math.min(retryDelayMs * 2, 1000);
        schedule(retryDelayMs);
        return false;
      }
      giveUp(describeFailure(error));
      return true;
    }
  }

  const onEvent = (stamped: PolywaveEvent) => {
    if (disabled || closed) return;
    // The bus stamped run_id/seq (see below); the stored payload stays the event as emitted.
    const { run_id: stampedRun, seq: stampedSeq, ...event } = stamped;
    const record = event as unknown as Record<string, unknown>;
    if (stampedRun === runId && typeof stampedSeq === 'number') seq = stampedSeq;
    else seq += 1;
    counts.received += 1;
    // E40: slug and wave on every event. Events without them (gate results) get this run's IMPL
    // and its latest wave in the indexed columns — only while the run has seen exactly one IMPL.
    const slug = text(record.slug);
    const wave = typeof record.wave === 'number' && Number.isFinite(record.wave) ? record.wave : null;
    if (slug) {
      slugsSeen.add(slug);
      if (wave !== null) latestWave = wave;
    }
    const onlySlug = slugsSeen.size === 1 ? [...slugsSeen][0]! : null;
    // Issue 17: an event relayed from a worker carries when it happened there (`at`); never later than now.
    const received = now().getTime();
    const at = typeof record.at === 'number' && Number.isFinite(record.at) && record.at > 0 ? Math.min(record.at, received) : received;
    buffer.push({
      run_id: runId,
      seq,
      ts: at,
      type: typeof record.type === 'string' ? record.type : 'unknown',
      activity_type: text(record.activity_type),
      slug: slug ?? onlySlug,
      wave: wave ?? (slug === null && onlySlug !== null ? latestWave : null),
      agent: text(record.agent),
      program: text(record.program) ?? text(record.program_slug) ?? options.program ?? null,
      payload: safeJson(event),
    });
    if (buffer.length >= batchSize) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      schedule(0);
    } else schedule(flushDelayMs);
  };

  // One sequence for the run: the bus stamps each event once, before any subscriber sees it.
  let stampSeq = 0;
  bus.stampWith((event) => ({ ...event, run_id: runId, seq: ++stampSeq }));
  const unsubscribe = bus.subscribe(onEvent);
  const onExit = () => close();
  process.once('exit', onExit);

  function flush(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    writeBuffer(busyTimeoutMs);
  }

  function addRepos(roots: readonly string[]): void {
    for (const given of roots) {
      if (typeof given !== 'string' || given === '') continue;
      // Canonical (what `polywave serve` compares with: the realpath of each served repository).
      let root = path.resolve(given);
      try {
        root = realpathSync(root);
      } catch {
        // a repository that is gone: its path as given
      }
      if (repos.includes(root)) continue;
      repos.push(root);
      reposDirty = true;
    }
    if (reposDirty) run.repos = JSON.stringify(repos);
  }

  function close(): void {
    if (closed) return;
    closed = true;
    openRecorders.delete(recorder);
    recordersByBus.delete(bus);
    unsubscribe();
    process.removeListener('exit', onExit);
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!disabled && buffer.length > 0) {
      const deadline = Date.now() + closeTimeoutMs;
      // Bounded: a store locked for longer than closeTimeoutMs loses this run's last events (one warning).
      while (buffer.length > 0 && !disabled) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        if (writeBuffer(Math.min(left, 1000))) continue;
      }
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (buffer.length > 0 && !disabled) giveUp(`still locked by another process after ${closeTimeoutMs} ms; ${buffer.length} event(s) of this run not recorded`);
    }
    try {
      db?.close();
    } catch {
      // Nothing to do: the data is committed or given up.
    }
    db = undefined;
  }

  const recorder: Recorder = {
    runId,
    counts,
    get disabled() {
      return disabled;
    },
    flush,
    close,
    addRepos,
  };
  recordersByBus.set(bus, recorder);
  openRecorders.add(recorder);
  return recorder;
}

function safeJson(event: unknown): string {
  try {
    return JSON.stringify(event);
  } catch {
    return JSON.stringify({ type: (event as { type?: unknown })?.type ?? 'unknown', unserializable: true });
  }
}
