import { randomBytes } from 'node:crypto';
import { chmod, link, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { readTextFile } from './read-text.js';

/** Default time to wait for a lock before giving up. */
export const defaultLockTimeoutMs = 30_000;
/** Default age after which a lock is considered abandoned even if its owner seems alive. */
export const defaultStaleLockMs = 10 * 60_000;
/** A lock file with no readable owner record (creator died mid-write) is stale after this. */
const unreadableLockGraceMs = 5_000;

/** Options of {@link withFileLock} and {@link updateFileLocked}. */
export interface FileLockOptions {
  /**
   * How long to wait while the lock stays with the same holder. Default 30 s. The wait
   * restarts when the lock changes hands (a queue of writers is progress), up to 10 times
   * this in total.
   */
  lockTimeoutMs?: number;
  /**
   * Age after which a lock is broken regardless of its owner. Default 10 min. A lock whose
   * owner process is dead on this host is broken at once.
   */
  staleLockMs?: number;
}

/** Options of {@link updateFileLocked}. */
export interface UpdateFileOptions extends FileLockOptions {
  /** Treat a missing file as empty text (it is then created). Default false. */
  allowMissing?: boolean;
  /** Size cap for reading the current file. Default 10 MiB. */
  maxBytes?: number;
}

/** The record written into a lock file. */
export interface LockOwner {
  pid: number;
  hostname: string;
  createdAt: string;
  token: string;
}

interface HeldLock {
  lockPath: string;
  token: string;
}

/**
 * Runs `action` while holding the cross-process lock `<path>.lock`. The lock file is created
 * exclusively and complete (pid, hostname, timestamp, random token). Waiters retry with
 * randomized backoff; a lock whose owner process is dead on this host, or that is older than
 * `staleLockMs`, is broken (serialised through `<lock>.break`, and only if it is still exactly
 * the lock judged stale). Always releases in `finally`, removing only a lock carrying our
 * token. When one holder keeps the lock for `lockTimeoutMs` (or the total wait exceeds 10×
 * that) throws a PolywaveError `N094_MANIFEST_SAVE_FAILED` (exit 2) naming the lock file and
 * its holder.
 */
export async function withFileLock<Result>(filePath: string, action: () => Promise<Result> | Result, options: FileLockOptions = {}): Promise<Result> {
  const lock = await acquireLock(`${filePath}.lock`, options);
  try {
    return await action();
  } finally {
    await releaseLock(lock);
  }
}

/**
 * Read-modify-write of a text file, safe across processes: under {@link withFileLock} it reads
 * the current text, calls `update`, and when the result differs writes it to a temp file in the
 * same directory (`.<name>.<pid>.<random>.tmp`), fsyncs it, keeps the original file mode and
 * renames it over the original. If `update` throws, nothing is written and the error
 * propagates. Returns whether the file changed and its final text.
 */
export async function updateFileLocked(
  filePath: string,
  update: (current: string) => string | Promise<string>,
  options: UpdateFileOptions = {},
): Promise<{ changed: boolean; text: string }> {
  return withFileLock(
    filePath,
    async () => {
      let current = '';
      let mode: number | undefined;
      try {
        current = await readTextFile(filePath, options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes });
        mode = (await stat(filePath)).mode & 0o7777;
      } catch (error) {
        const missing = PolywaveError.isInstance(error) && error.code === codes.fileNotFound;
        if (!(missing && options.allowMissing)) {
          if (PolywaveError.isInstance(error)) throw error;
          throw new PolywaveError({ code: codes.fileUnreadable, message: `cannot read ${filePath}: ${String(error)}`, exitCode: 2, cause: error });
        }
      }
      const next = await update(current);
      if (typeof next !== 'string') {
        throw new PolywaveError({ code: codes.saveFailed, message: `cannot write ${filePath}: the update did not return text`, exitCode: 2 });
      }
      if (next === current) return { changed: false, text: current };
      await writeViaTemp(filePath, next, mode);
      return { changed: true, text: next };
    },
    options,
  );
}

/**
 * Writes `text` to `filePath` atomically (temp file in the same directory, fsync, rename), so
 * readers see the old or the new content, never a mix. Keeps the mode of an existing file;
 * `mode` sets it for a new one. Does not lock: use {@link updateFileLocked} for files that
 * other processes may update.
 */
export async function writeFileAtomic(filePath: string, text: string, options: { mode?: number } = {}): Promise<void> {
  let mode = options.mode;
  if (mode === undefined) {
    try {
      mode = (await stat(filePath)).mode & 0o7777;
    } catch {
      mode = undefined;
    }
  }
  await writeViaTemp(filePath, text, mode);
}

async function writeViaTemp(filePath: string, text: string, mode: number | undefined): Promise<void> {
  const directory = path.dirname(filePath);
  const temporary = path.join(directory, `.${path.basename(filePath)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fail = (error: unknown): PolywaveError => {
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    return new PolywaveError({ code: codes.saveFailed, message: `cannot write ${filePath}: ${reason}`, exitCode: 2, cause: error });
  };
  try {
    const handle = await open(temporary, 'wx', mode ?? 0o666);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    // open() applies the umask; restore the original file's exact mode.
    if (mode !== undefined) await chmod(temporary, mode);
    await rename(temporary, filePath);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw fail(error);
  }
  await syncDirectory(directory);
}

async function syncDirectory(directory: string): Promise<void> {
  try {
    const handle = await open(directory, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Not supported on every platform/file system; the rename itself is already atomic.
  }
}

/** Waiters look at the lock file (staleness, who holds it) at most this often. */
const inspectIntervalMs = 100;
/** However much progress others make, a waiter gives up after this many lock timeouts. */
const hardCapFactor = 10;
/** A `.break` lock (a breaker crashed mid-break) is ignored after this long. */
const breakLockStaleMs = 30_000;

interface LockSnapshot {
  raw: string;
  owner: LockOwner | undefined;
  identity: string;
  mtimeMs: number;
}

async function acquireLock(lockPath: string, options: FileLockOptions): Promise<HeldLock> {
  const timeoutMs = options.lockTimeoutMs ?? defaultLockTimeoutMs;
  const staleLockMs = options.staleLockMs ?? defaultStaleLockMs;
  const start = Date.now();
  const token = randomBytes(12).toString('hex');
  const observed = new Map<string, number>();
  let delayMs = 4;
  let lastInspection = 0;
  let holder: string | undefined;
  let holderSeenAt = start;
  for (;;) {
    const owner: LockOwner = { pid: process.pid, hostname: os.hostname(), createdAt: new Date().toISOString(), token };
    if (await createExclusive(lockPath, `${JSON.stringify(owner)}\n`)) return { lockPath, token };
    const now = Date.now();
    if (now - lastInspection >= inspectIntervalMs) {
      lastInspection = now;
      const inspection = await inspectLock(lockPath, staleLockMs, observed);
      if (inspection.retryNow) continue;
      // The timeout measures lack of progress: it restarts whenever another process takes over.
      if (inspection.holder !== holder) {
        holder = inspection.holder;
        holderSeenAt = now;
      }
    }
    if (now - holderSeenAt >= timeoutMs || now - start >= timeoutMs * hardCapFactor) {
      const description = await describeHolder(lockPath);
      throw new PolywaveError({
        code: codes.lockTimeout,
        message: `timed out after ${Math.round((now - start) / 1000)}s waiting for lock ${lockPath}${description}`,
        exitCode: 2,
        details: { lockPath },
      });
    }
    await sleep(delayMs * (0.5 + Math.random()));
    delayMs = Math.min(delayMs * 1.5, 100);
  }
}

/**
 * Creates `filePath` with `content` only if it does not exist. The content is written to a
 * temp file first and hard-linked into place, so the file never exists half-written (a reader
 * never mistakes a lock being created for an abandoned empty one). Falls back to
 * `open(..., 'wx')` where hard links are not supported.
 */
async function createExclusive(filePath: string, content: string): Promise<boolean> {
  const temporary = `${filePath}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, content, { flag: 'wx', mode: 0o644 });
  } catch (error) {
    throw lockFileError(filePath, error);
  }
  try {
    await link(temporary, filePath);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw lockFileError(filePath, error);
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  try {
    const handle = await open(filePath, 'wx', 0o644);
    try {
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw lockFileError(filePath, error);
  }
}

function lockFileError(filePath: string, error: unknown): PolywaveError {
  const reason = (error as NodeJS.ErrnoException).code ?? String(error);
  return new PolywaveError({ code: codes.saveFailed, message: `cannot create lock file ${filePath}: ${reason}`, exitCode: 2, cause: error });
}

async function releaseLock(lock: HeldLock): Promise<void> {
  try {
    const snapshot = await readLockSnapshot(lock.lockPath);
    if (snapshot?.owner?.token === lock.token) await unlink(lock.lockPath);
  } catch {
    // Already gone (broken as stale by someone else): nothing to release.
  }
}

/** Content and identity of a lock file, read through one descriptor; undefined if absent. */
async function readLockSnapshot(lockPath: string): Promise<LockSnapshot | undefined> {
  let handle;
  try {
    handle = await open(lockPath, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const stats = await handle.stat();
    const raw = await handle.readFile('utf8');
    const owner = parseOwner(raw);
    return { raw, owner, identity: owner?.token ?? `${stats.dev}:${stats.ino}:${stats.mtimeMs}:${stats.size}:${raw}`, mtimeMs: stats.mtimeMs };
  } finally {
    await handle.close();
  }
}

function parseOwner(raw: string): LockOwner | undefined {
  try {
    const value = JSON.parse(raw) as Partial<LockOwner>;
    if (typeof value.pid === 'number' && typeof value.hostname === 'string' && typeof value.token === 'string' && typeof value.createdAt === 'string') {
      return value as LockOwner;
    }
  } catch {
    // fall through
  }
  return undefined;
}

function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when the lock snapshot belongs to an abandoned lock. */
function isStale(snapshot: LockSnapshot, staleLockMs: number, observed: Map<string, number>, now: number): boolean {
  const owner = snapshot.owner;
  if (owner === undefined) {
    // Not written by us (locks appear complete): judge by how long *we* have seen it unchanged.
    const firstSeen = observed.get(snapshot.identity) ?? now;
    observed.set(snapshot.identity, firstSeen);
    return now - firstSeen > Math.min(unreadableLockGraceMs, staleLockMs);
  }
  if (owner.hostname === os.hostname() && !isProcessAlive(owner.pid)) return true;
  const createdAt = Date.parse(owner.createdAt);
  return now - (Number.isNaN(createdAt) ? snapshot.mtimeMs : createdAt) > staleLockMs;
}

/**
 * Looks at the lock at `lockPath`: removes it if it is stale (`retryNow`), else reports an
 * identity of its holder so waiters can tell whether the lock changed hands. Breaking is
 * serialised through `<lock>.break` and confirmed by re-reading the lock: only the exact lock
 * judged stale (same unique token) is removed.
 */
async function inspectLock(lockPath: string, staleLockMs: number, observed: Map<string, number>): Promise<{ retryNow: boolean; holder?: string }> {
  let snapshot: LockSnapshot | undefined;
  try {
    snapshot = await readLockSnapshot(lockPath);
  } catch {
    return { retryNow: false };
  }
  if (snapshot === undefined) return { retryNow: true };
  if (!isStale(snapshot, staleLockMs, observed, Date.now())) return { retryNow: false, holder: snapshot.identity };

  const breakPath = `${lockPath}.break`;
  const breakToken = randomBytes(12).toString('hex');
  const breaker: LockOwner = { pid: process.pid, hostname: os.hostname(), createdAt: new Date().toISOString(), token: breakToken };
  if (!(await createExclusive(breakPath, `${JSON.stringify(breaker)}\n`))) {
    await clearAbandonedBreakLock(breakPath);
    return { retryNow: false, holder: snapshot.identity };
  }
  try {
    const again = await readLockSnapshot(lockPath);
    if (again === undefined) return { retryNow: true };
    if (again.raw !== snapshot.raw || again.identity !== snapshot.identity) return { retryNow: false, holder: again.identity };
    // The judged lock's owner is gone and other breakers wait for .break: nobody else can
    // replace the file between the check above and this unlink.
    await unlink(lockPath).catch(() => undefined);
    return { retryNow: true };
  } finally {
    const current = await readLockSnapshot(breakPath).catch(() => undefined);
    if (current?.owner?.token === breakToken) await unlink(breakPath).catch(() => undefined);
  }
}

async function clearAbandonedBreakLock(breakPath: string): Promise<void> {
  const snapshot = await readLockSnapshot(breakPath).catch(() => undefined);
  if (snapshot === undefined) return;
  const owner = snapshot.owner;
  const deadHere = owner !== undefined && owner.hostname === os.hostname() && !isProcessAlive(owner.pid);
  if (deadHere || Date.now() - snapshot.mtimeMs > breakLockStaleMs) {
    const again = await readLockSnapshot(breakPath).catch(() => undefined);
    if (again?.identity === snapshot.identity) await unlink(breakPath).catch(() => undefined);
  }
}

async function describeHolder(lockPath: string): Promise<string> {
  try {
    const owner = parseOwner(await readFile(lockPath, 'utf8'));
    return owner ? ` (held by pid ${owner.pid} on ${owner.hostname} since ${owner.createdAt})` : '';
  } catch {
    return '';
  }
}
