import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { PolywaveError } from '../errors/polywave-error.js';

/**
 * The E40 observability store: one SQLite file (better-sqlite3, WAL), events as a JSON payload
 * plus the indexed columns queries filter on. Schema in docs/observability.md; versioned through
 * SQLite's `user_version` with forward-only migrations.
 */
export const SCHEMA_VERSION = 2;

export type Database = BetterSqlite3.Database;

/** One stored event as written (the payload is the whole bus event, JSON). */
export interface NewEventRow {
  run_id: string;
  seq: number;
  /** Milliseconds since the epoch, when the recorder received the event. */
  ts: number;
  type: string;
  activity_type: string | null;
  slug: string | null;
  wave: number | null;
  agent: string | null;
  program: string | null;
  payload: string;
}

export interface EventRow extends NewEventRow {
  id: number;
}

export interface RunRow {
  run_id: string;
  started_at: number;
  command: string;
  cwd: string | null;
  pid: number | null;
  /**
   * The repository roots the run worked on (schema 2): a JSON array of absolute paths — the
   * `--repo-dir` / the IMPL's repository, and every repository of a cross-repo wave. Null when the
   * run never said (older runs, commands that touch no repository): readers fall back to `cwd`.
   */
  repos?: string | null;
}

/** Migration N takes a database at user_version N-1 to N (index 0 is migration 1). */
const migrations: ReadonlyArray<(db: Database) => void> = [
  (db) => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        ts INTEGER NOT NULL,
        type TEXT NOT NULL,
        activity_type TEXT,
        slug TEXT,
        wave INTEGER,
        agent TEXT,
        program TEXT,
        payload TEXT NOT NULL
      );
      CREATE UNIQUE INDEX IF NOT EXISTS events_run_seq ON events(run_id, seq);
      CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
      CREATE INDEX IF NOT EXISTS events_type ON events(type);
      CREATE INDEX IF NOT EXISTS events_slug ON events(slug);
      CREATE INDEX IF NOT EXISTS events_agent ON events(agent);
      CREATE INDEX IF NOT EXISTS events_program ON events(program);
      CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        started_at INTEGER NOT NULL,
        command TEXT NOT NULL,
        cwd TEXT,
        pid INTEGER
      );
    `);
  },
  // 2: the repositories a run worked on (its cwd is only where it was started: `demo --dir`, `run --repo-dir`).
  (db) => {
    const present = (db.prepare("SELECT name FROM pragma_table_info('runs')").all() as Array<{ name: string }>).some((column) => column.name === 'repos');
    if (!present) db.exec('ALTER TABLE runs ADD COLUMN repos TEXT');
  },
];

let driver: typeof BetterSqlite3 | undefined;

/** better-sqlite3 is loaded on first use only: commands that never touch the store never pay for it. */
function loadDriver(): typeof BetterSqlite3 {
  driver ??= createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
  return driver;
}

export interface OpenOptions {
  /** Open for reading only; a missing file then returns undefined instead of being created. */
  readonly?: boolean;
  /** How long a statement waits for another process's lock before SQLITE_BUSY (ms). */
  busyTimeoutMs?: number;
}

/** A database written by a newer polywave: never touched (recording off, queries refused). */
export class FutureSchemaError extends PolywaveError {
  constructor(file: string, version: number) {
    super({ code: 'EVENT_STORE_FUTURE_SCHEMA', message: `${file} has schema version ${version}, newer than this polywave's ${SCHEMA_VERSION} (upgrade polywave, or use --store for another file)`, details: { version, supported: SCHEMA_VERSION } });
  }
}

function schemaVersion(db: Database): number {
  return Number(db.pragma('user_version', { simple: true }));
}

/** Applies the missing migrations in one IMMEDIATE transaction (two processes creating the store at once: the second sees the first's version). */
function migrate(db: Database, file: string): void {
  const apply = db.transaction(() => {
    const current = schemaVersion(db);
    if (current > SCHEMA_VERSION) throw new FutureSchemaError(file, current);
    for (let version = current; version < SCHEMA_VERSION; version += 1) migrations[version]!(db);
    if (current !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  apply.immediate();
}

/**
 * Opens (and creates, migrates) the store at `file`. Throws FutureSchemaError for a newer
 * schema and the driver's SqliteError for anything else (corrupt file, read-only, locked).
 */
export function openEventStore(file: string, options: OpenOptions = {}): Database | undefined {
  if (options.readonly && !existsSync(file)) return undefined;
  const Driver = loadDriver();
  if (options.readonly) {
    const db = new Driver(file, { readonly: true, fileMustExist: true, timeout: options.busyTimeoutMs ?? 5000 });
    try {
      const version = schemaVersion(db);
      if (version > SCHEMA_VERSION) throw new FutureSchemaError(file, version);
      if (version < SCHEMA_VERSION) {
        // An older (or still empty) store: migrating needs a writer.
        db.close();
        return openEventStore(file, { busyTimeoutMs: options.busyTimeoutMs ?? 5000 });
      }
      return db;
    } catch (error) {
      if (db.open) db.close();
      throw error;
    }
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new Driver(file, { timeout: options.busyTimeoutMs ?? 5000 });
  try {
    const version = schemaVersion(db);
    if (version > SCHEMA_VERSION) throw new FutureSchemaError(file, version);
    setWalMode(db, options.busyTimeoutMs ?? 5000);
    // WAL + NORMAL: a crash of the process loses nothing committed; an OS crash may lose the last batches (observability, not state).
    db.pragma('synchronous = NORMAL');
    if (version < SCHEMA_VERSION) migrate(db, file);
    return db;
  } catch (error) {
    if (db.open) db.close();
    throw error;
  }
}

/** Sets how long statements wait for another writer (ms). */
export function setBusyTimeout(db: Database, milliseconds: number): void {
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(milliseconds))}`);
}

const insertSql = 'INSERT OR IGNORE INTO events (run_id, seq, ts, type, activity_type, slug, wave, agent, program, payload) VALUES (@run_id, @seq, @ts, @type, @activity_type, @slug, @wave, @agent, @program, @payload)';
const statementCache = new WeakMap<Database, BetterSqlite3.Statement>();

/** Writes `rows` in one transaction; (run_id, seq) is unique, so a batch written twice is stored once. */
export function insertEvents(db: Database, rows: readonly NewEventRow[], run?: RunRow): number {
  let statement = statementCache.get(db);
  if (!statement) {
    statement = db.prepare(insertSql);
    statementCache.set(db, statement);
  }
  const insert = statement;
  const write = db.transaction(() => {
    // A run row is stored with its first batch, and again (its repos only) when the run named more repositories.
    if (run) db.prepare('INSERT INTO runs (run_id, started_at, command, cwd, pid, repos) VALUES (@run_id, @started_at, @command, @cwd, @pid, @repos) ON CONFLICT(run_id) DO UPDATE SET repos = COALESCE(excluded.repos, runs.repos)').run({ ...run, repos: run.repos ?? null });
    let written = 0;
    for (const row of rows) written += insert.run(row).changes;
    return written;
  });
  return write.immediate();
}

/** Filters of `query events` / `events export` (all optional; AND-ed). */
export interface EventFilter {
  /** Matches `type` or, for `activity` events, `activity_type`. */
  types?: string[];
  impl?: string;
  program?: string;
  agent?: string;
  run?: string;
  /** Inclusive lower bound, ms since the epoch. */
  since?: number;
  /** Exclusive upper bound, ms since the epoch. */
  until?: number;
  /** Only rows stored after this row id (`--follow`). */
  afterId?: number;
}

function whereClause(filter: EventFilter): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filter.types && filter.types.length > 0) {
    const marks = filter.types.map(() => '?').join(', ');
    clauses.push(`(type IN (${marks}) OR activity_type IN (${marks}))`);
    params.push(...filter.types, ...filter.types);
  }
  if (filter.impl !== undefined) {
    clauses.push('slug = ?');
    params.push(filter.impl);
  }
  if (filter.program !== undefined) {
    clauses.push('program = ?');
    params.push(filter.program);
  }
  if (filter.agent !== undefined) {
    clauses.push('agent = ?');
    params.push(filter.agent);
  }
  if (filter.run !== undefined) {
    clauses.push('run_id = ?');
    params.push(filter.run);
  }
  if (filter.since !== undefined) {
    clauses.push('ts >= ?');
    params.push(filter.since);
  }
  if (filter.until !== undefined) {
    clauses.push('ts < ?');
    params.push(filter.until);
  }
  if (filter.afterId !== undefined) {
    clauses.push('id > ?');
    params.push(filter.afterId);
  }
  return { sql: clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '', params };
}

const columns = 'id, run_id, seq, ts, type, activity_type, slug, wave, agent, program, payload';

/** The newest `limit` matching events, oldest first (what a log reader expects). */
export function queryLatestEvents(db: Database, filter: EventFilter, limit: number): EventRow[] {
  const where = whereClause(filter);
  const rows = db.prepare(`SELECT ${columns} FROM events ${where.sql} ORDER BY id DESC LIMIT ?`).all(...where.params, limit) as EventRow[];
  return rows.reverse();
}

/** Matching events in storage order, after `filter.afterId` (tailing and export); lazily iterated. */
export function iterateEvents(db: Database, filter: EventFilter, limit?: number): IterableIterator<EventRow> {
  const where = whereClause(filter);
  const statement = db.prepare(`SELECT ${columns} FROM events ${where.sql} ORDER BY id ASC${limit === undefined ? '' : ' LIMIT ?'}`);
  return statement.iterate(...where.params, ...(limit === undefined ? [] : [limit])) as IterableIterator<EventRow>;
}

/** The largest row id stored (0 when empty): where `--follow` starts. */
export function lastEventId(db: Database): number {
  return Number((db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM events').get() as { id: number }).id);
}

/** Events of one IMPL (or program) of the given types, in storage order: what `metrics` aggregates. */
export function eventsForMetrics(db: Database, scope: { impl?: string; program?: string }, types: readonly string[]): EventRow[] {
  const marks = types.map(() => '?').join(', ');
  const [column, value] = scope.program !== undefined ? ['program', scope.program] : ['slug', scope.impl];
  return db.prepare(`SELECT ${columns} FROM events WHERE ${column} = ? AND type IN (${marks}) ORDER BY id ASC`).all(value, ...types) as EventRow[];
}

/** Deletes events older than `before` (ms) and the runs left without events; returns how many events went. */
export function pruneEvents(db: Database, before: number): { events: number; runs: number } {
  const prune = db.transaction(() => {
    const events = db.prepare('DELETE FROM events WHERE ts < ?').run(before).changes;
    const runs = db.prepare('DELETE FROM runs WHERE started_at < ? AND NOT EXISTS (SELECT 1 FROM events WHERE events.run_id = runs.run_id)').run(before).changes;
    return { events, runs };
  });
  const result = prune.immediate();
  db.pragma('wal_checkpoint(TRUNCATE)');
  return result;
}

/** Runs of the store (newest first). */
export function listRuns(db: Database, limit: number): RunRow[] {
  return db.prepare('SELECT run_id, started_at, command, cwd, pid, repos FROM runs ORDER BY started_at DESC LIMIT ?').all(limit) as RunRow[];
}

/**
 * `journal_mode = WAL`, unless the store is in WAL already. Switching takes a lock for which SQLite
 * does not call the busy handler: two processes opening a brand-new store at once (a server polling
 * for a rotated store while a run creates it) got "database is locked" at once. Retried until
 * `timeoutMs`.
 */
function setWalMode(db: Database, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal') return;
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait);
    }
  }
}
