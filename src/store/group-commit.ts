import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { codes } from '../errors/codes.js';
import { PolywaveError, type ExitCode } from '../errors/polywave-error.js';
import { ensureDirectory, type LockLocation } from './lock-location.js';
import { processExists } from './process-alive.js';

/**
 * Group commit across processes: the durable inbox of a file's edit requests and the commit
 * record that makes applying them exactly-once across crashes.
 *
 * Inbox (`<lock dir>/<name>.<hash>.inbox/`, outside the working tree), one file per request:
 *   `<id>.json`   pending: written by the requesting process as `<id>.json.tmp`, fsynced, renamed;
 *   `<id>.claim`  taken by the lock holder for the write it is preparing (rename from `.json`, so
 *                 a writer that gives up can withdraw its request atomically by unlinking `.json`);
 *   `<id>.done`   the outcome, for the requesting process to pick up under the lock.
 * A holder that crashed leaves `.claim` files: the next holder treats them as pending again.
 *
 * Commit record (`<name>.<hash>.commit.json`): written (fsynced) by the holder after the new file
 * text is in its temp file and before the rename, with the SHA-256 of the text before and after
 * and every request's outcome. Whoever takes the lock next first looks for it
 * ({@link recoverInterruptedCommit}): when the file's content hashes to `after`, the rename
 * happened — the outcomes are delivered and the requests removed, so none is applied twice;
 * otherwise the write never landed and the requests stay pending, so none is lost.
 */

/** One request in the inbox. */
export interface InboxEntry {
  v: 1;
  id: string;
  kind: string;
  pid: number;
  host: string;
  created_at: string;
  request: unknown;
}

/** A coded error as stored in the inbox. */
export interface SerializedError {
  code: string;
  message: string;
  exitCode: ExitCode;
  details?: Record<string, unknown>;
}

/** The outcome of one request. */
export type EntryOutcome = { ok: true; value: unknown } | { ok: false; error: SerializedError };

/** The commit record of a group commit in flight. */
export interface CommitRecord {
  v: 1;
  target: string;
  before: string;
  after: string;
  entries: Array<{ id: string; outcome: EntryOutcome }>;
}

let hostTagValue: string | undefined;
/** This host, shortened (in request ids and inbox records). Computed on first use: read-only commands import this module without writing, and need not load node:crypto. */
function hostTag(): string {
  hostTagValue ??= createHash('sha256').update(os.hostname()).digest('hex').slice(0, 6);
  return hostTagValue;
}
/** A request file older than this whose writer cannot be checked (another host) is dropped. */
const foreignOrphanMs = 60 * 60_000;
let sequence = 0;

/**
 * When process `pid` started (clock ticks since boot, field 22 of `/proc/<pid>/stat`), or undefined
 * where there is no /proc or no such process. With pid numbers reused (pid_max is 32768 on many
 * Linux machines, and a test suite or a busy CI box cycles through them in minutes), a live pid
 * alone does not prove the writer of a request is still there; the pid and its start time do.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // A zombie (killed, not yet reaped by its parent) or a dying process is no writer any more: its
    // /proc entry stays until the parent waits for it, which a busy parent may do only later.
    if (fields[0] === 'Z' || fields[0] === 'X' || fields[0] === 'x') return undefined;
    const start = fields[19];
    return start !== undefined && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

const ownStart = processStartTime(process.pid);

/** A new request id: sorts by creation time, then process (`<pid>.<start time>` where /proc tells it). */
export function newEntryId(): string {
  sequence = (sequence + 1) % 1296;
  return `${Date.now().toString(36).padStart(9, '0')}${sequence.toString(36).padStart(2, '0')}-${hostTag()}-${process.pid}${ownStart ? `.${ownStart}` : ''}-${randomBytes(4).toString('hex')}`;
}

function writerOf(id: string): { host: string; pid: number; start?: string } | undefined {
  const match = /^[0-9a-z]+-([0-9a-f]{6})-(\d+)(?:\.(\d+))?-[0-9a-f]+$/.exec(id);
  if (!match) return undefined;
  return match[3] ? { host: match[1]!, pid: Number(match[2]), start: match[3] } : { host: match[1]!, pid: Number(match[2]) };
}

/** True when the process that wrote request `id` is known to be gone. */
function writerGone(id: string): boolean {
  const writer = writerOf(id);
  if (writer === undefined || writer.host !== hostTag()) return false;
  // A reused pid is another process: the writer is gone when the start time differs (or the pid is free).
  if (writer.start !== undefined && ownStart !== undefined) return processStartTime(writer.pid) !== writer.start;
  return !processExists(writer.pid);
}

/** SHA-256 of text as written (UTF-8), or of a file's bytes ('missing' when it does not exist). */
export function hashText(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

async function hashFile(filePath: string): Promise<string> {
  try {
    return createHash('sha256').update(await readFile(filePath)).digest('hex');
  } catch {
    return 'missing';
  }
}

/** A PolywaveError (or anything thrown) as stored in the inbox. */
export function serializeError(error: unknown): SerializedError {
  if (PolywaveError.isInstance(error)) {
    return { code: error.code, message: error.message, exitCode: error.exitCode, ...(Object.keys(error.details).length > 0 ? { details: error.details } : {}) };
  }
  return { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error), exitCode: 2 };
}

/** The PolywaveError of a stored outcome. */
export function deserializeError(error: SerializedError): PolywaveError {
  return new PolywaveError({ code: error.code, message: error.message, exitCode: error.exitCode, ...(error.details ? { details: error.details } : {}) });
}

/** Durably drops a request into the inbox (temp file, fsync, rename). */
export async function dropEntry(location: LockLocation, entry: Omit<InboxEntry, 'v' | 'pid' | 'host' | 'created_at'>): Promise<void> {
  await ensureDirectory(location.inboxPath);
  const record: InboxEntry = { v: 1, id: entry.id, kind: entry.kind, pid: process.pid, host: hostTag(), created_at: new Date().toISOString(), request: entry.request };
  const finalPath = path.join(location.inboxPath, `${entry.id}.json`);
  const temporary = `${finalPath}.tmp`;
  try {
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(JSON.stringify(record), 'utf8');
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(temporary, finalPath);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw new PolywaveError({ code: codes.saveFailed, message: `cannot queue the edit of ${location.target}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, exitCode: 2, cause: error });
  }
}

/** Withdraws a pending request; false when a lock holder has already taken it (or it is settled). */
export async function withdrawEntry(location: LockLocation, id: string): Promise<boolean> {
  try {
    await unlink(path.join(location.inboxPath, `${id}.json`));
    return true;
  } catch {
    return false;
  }
}

/** The outcome of request `id` if it is settled, removing its files; call under the lock. */
export async function takeSettledOutcome(location: LockLocation, id: string): Promise<EntryOutcome | undefined> {
  const donePath = path.join(location.inboxPath, `${id}.done`);
  let text: string;
  try {
    text = await readFile(donePath, 'utf8');
  } catch {
    return undefined;
  }
  await Promise.all([donePath, path.join(location.inboxPath, `${id}.claim`), path.join(location.inboxPath, `${id}.json`)].map((file) => unlink(file).catch(() => undefined)));
  try {
    return JSON.parse(text) as EntryOutcome;
  } catch {
    return { ok: false, error: { code: codes.saveFailed, message: `the outcome of the edit of ${location.target} is unreadable`, exitCode: 2 } };
  }
}

/** Whether request `id` is still in the inbox (pending, taken or settled). */
export async function entryExists(location: LockLocation, id: string): Promise<boolean> {
  for (const suffix of ['.json', '.claim', '.done']) {
    if (await stat(path.join(location.inboxPath, `${id}${suffix}`)).then(() => true, () => false)) return true;
  }
  return false;
}

/**
 * Under the lock: removes what dead processes left in the inbox, takes every pending request
 * (`.json` → `.claim`, plus the `.claim`s of a holder that crashed) and returns them in creation
 * order. A request that already has an outcome is only cleaned up.
 */
export async function claimPendingEntries(location: LockLocation): Promise<InboxEntry[]> {
  let names: string[];
  try {
    names = await readdir(location.inboxPath);
  } catch {
    return [];
  }
  const inbox = location.inboxPath;
  const settled = new Set(names.filter((name) => name.endsWith('.done')).map((name) => name.slice(0, -'.done'.length)));
  const removals: string[] = [];
  const claims: string[] = [];
  const toClaim: string[] = [];
  const now = Date.now();
  for (const name of names) {
    const id = name.replace(/\.(json|claim|done)(\.tmp)?$/, '');
    if (name.endsWith('.done.tmp')) removals.push(name); // only lock holders write these: an orphan
    else if (name.endsWith('.json.tmp')) {
      if (writerGone(id) || (await isOlderThan(path.join(inbox, name), now - foreignOrphanMs))) removals.push(name);
    } else if (name.endsWith('.done')) {
      if (writerGone(id) || (await isOlderThan(path.join(inbox, name), now - foreignOrphanMs))) removals.push(name);
    } else if (name.endsWith('.json') || name.endsWith('.claim')) {
      if (settled.has(id)) removals.push(name);
      else if (name.endsWith('.json')) toClaim.push(id);
      else claims.push(id);
    }
  }
  await Promise.all(removals.map((name) => unlink(path.join(inbox, name)).catch(() => undefined)));
  await Promise.all(
    toClaim.map((id) =>
      rename(path.join(inbox, `${id}.json`), path.join(inbox, `${id}.claim`)).then(
        () => claims.push(id),
        () => undefined, // withdrawn by its writer meanwhile
      ),
    ),
  );
  const entries = await Promise.all(
    claims.map(async (id): Promise<InboxEntry> => {
      try {
        const value = JSON.parse(await readFile(path.join(inbox, `${id}.claim`), 'utf8')) as InboxEntry;
        return { ...value, id };
      } catch {
        return { v: 1, id, kind: 'unreadable', pid: 0, host: '', created_at: '', request: null };
      }
    }),
  );
  return entries.sort((left, right) => (left.id < right.id ? -1 : left.id > right.id ? 1 : 0));
}

async function isOlderThan(filePath: string, limit: number): Promise<boolean> {
  try {
    return (await stat(filePath)).mtimeMs < limit;
  } catch {
    return false;
  }
}

/** Writes the commit record (temp file, fsync, rename) — after the new text's temp file, before its rename. */
export async function writeCommitRecord(location: LockLocation, record: CommitRecord): Promise<void> {
  const temporary = `${location.commitRecordPath}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(record), 'utf8');
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(temporary, location.commitRecordPath);
}

/** Removes the commit record (the group commit is settled). */
export async function clearCommitRecord(location: LockLocation): Promise<void> {
  await unlink(location.commitRecordPath).catch(() => undefined);
}

/**
 * Delivers outcomes: `<id>.done` for each request (except `skip`, the holder's own, which it
 * returns directly, and those of writers known to be gone), then removes the request files.
 */
export async function settleEntries(location: LockLocation, outcomes: ReadonlyArray<{ id: string; outcome: EntryOutcome }>, options: { skip?: string; afterFirst?: () => void | Promise<void> } = {}): Promise<void> {
  const inbox = location.inboxPath;
  let first = true;
  for (const chunk of chunks(outcomes, 32)) {
    await Promise.all(
      chunk.map(async ({ id, outcome }) => {
        // No outcome for a writer known to be gone (killed while it waited, a holder that died in its
        // own group commit): nobody would pick it up, and it would stay until the next holder.
        if (id !== options.skip && !writerGone(id)) {
          const donePath = path.join(inbox, `${id}.done`);
          await writeFile(`${donePath}.tmp`, JSON.stringify(outcome), { mode: 0o600 });
          await rename(`${donePath}.tmp`, donePath);
        }
        // Only `.claim` can exist: a holder settles what it (or a crashed holder) claimed.
        await unlink(path.join(inbox, `${id}.claim`)).catch(() => undefined);
      }),
    );
    if (first) {
      first = false;
      await options.afterFirst?.();
    }
  }
}

function* chunks<Item>(items: ReadonlyArray<Item>, size: number): Generator<Item[]> {
  for (let index = 0; index < items.length; index += size) yield items.slice(index, index + size);
}

/**
 * Under the lock, before anything else: finishes or discards the group commit of a holder that
 * died. If the file hashes to the record's `after`, the write landed: the outcomes are delivered
 * and the requests removed (never applied again). Otherwise the write did not land: the record
 * is dropped and the requests stay pending for the next write.
 */
export async function recoverInterruptedCommit(location: LockLocation): Promise<'none' | 'settled' | 'discarded'> {
  let text: string;
  try {
    text = await readFile(location.commitRecordPath, 'utf8');
  } catch {
    await unlink(`${location.commitRecordPath}.tmp`).catch(() => undefined);
    return 'none';
  }
  let record: CommitRecord | undefined;
  try {
    record = JSON.parse(text) as CommitRecord;
  } catch {
    record = undefined;
  }
  let result: 'settled' | 'discarded' = 'discarded';
  if (record && Array.isArray(record.entries) && (await hashFile(location.target)) === record.after) {
    await settleEntries(location, record.entries);
    result = 'settled';
  }
  await clearCommitRecord(location);
  await unlink(`${location.commitRecordPath}.tmp`).catch(() => undefined);
  return result;
}
