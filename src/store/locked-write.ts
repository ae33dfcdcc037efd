import { randomBytes } from 'node:crypto';
import { chmod, link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
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
  /** How long to wait for the lock. Default 30 s. */
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
 * Runs `action` while holding the cross-process lock `<path>.lock` (created exclusively,
 * holding pid, hostname, timestamp and a random token). Waits with randomized backoff; breaks a
 * lock whose owner is dead on this host or that is older than `staleLockMs`, by moving it aside
 * atomically and checking it is still the lock judged stale. Always releases in `finally`
 * (only a lock carrying our token is removed). On timeout throws a PolywaveError
 * `N094_MANIFEST_SAVE_FAILED` (exit 2) naming the lock file and its holder.
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

async function acquireLock(lockPath: string, options: FileLockOptions): Promise<HeldLock> {
  const timeoutMs = options.lockTimeoutMs ?? defaultLockTimeoutMs;
  const staleLockMs = options.staleLockMs ?? defaultStaleLockMs;
  const deadline = Date.now() + timeoutMs;
  const token = randomBytes(12).toString('hex');
  let delayMs = 4;
  for (;;) {
    const owner: LockOwner = { pid: process.pid, hostname: os.hostname(), createdAt: new Date().toISOString(), token };
    try {
      const handle = await open(lockPath, 'wx', 0o644);
      try {
        await handle.writeFile(`${JSON.stringify(owner)}\n`, 'utf8');
      } finally {
        await handle.close();
      }
      return { lockPath, token };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        const reason = (error as NodeJS.ErrnoException).code ?? String(error);
        throw new PolywaveError({ code: codes.saveFailed, message: `cannot create lock file ${lockPath}: ${reason}`, exitCode: 2, cause: error });
      }
    }
    if (await breakStaleLock(lockPath, staleLockMs)) continue;
    if (Date.now() >= deadline) {
      const holder = await describeHolder(lockPath);
      throw new PolywaveError({
        code: codes.lockTimeout,
        message: `timed out after ${Math.round(timeoutMs / 1000)}s waiting for lock ${lockPath}${holder}`,
        exitCode: 2,
        details: { lockPath },
      });
    }
    await sleep(Math.min(delayMs * (0.5 + Math.random()), Math.max(1, deadline - Date.now())));
    delayMs = Math.min(delayMs * 1.5, 100);
  }
}

async function releaseLock(lock: HeldLock): Promise<void> {
  try {
    const owner = parseOwner(await readFile(lock.lockPath, 'utf8'));
    if (owner?.token === lock.token) await unlink(lock.lockPath);
  } catch {
    // Already gone (broken as stale by someone else): nothing to release.
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

/**
 * Removes the lock at `lockPath` if it is stale. Returns true when the caller should retry at
 * once (the lock was removed or is already gone).
 */
async function breakStaleLock(lockPath: string, staleLockMs: number): Promise<boolean> {
  let raw: string;
  let before;
  try {
    before = await stat(lockPath);
    raw = await readFile(lockPath, 'utf8');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
  const owner = parseOwner(raw);
  const now = Date.now();
  let stale: boolean;
  if (owner === undefined) {
    stale = now - before.mtimeMs > Math.min(unreadableLockGraceMs, staleLockMs);
  } else {
    const createdAt = Date.parse(owner.createdAt);
    const age = now - (Number.isNaN(createdAt) ? before.mtimeMs : createdAt);
    stale = (owner.hostname === os.hostname() && !isProcessAlive(owner.pid)) || age > staleLockMs;
  }
  if (!stale) return false;

  // Move it aside atomically, then make sure we moved the lock we judged (not a fresh one that
  // replaced it in between); if not, put that one back.
  const aside = `${lockPath}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    await rename(lockPath, aside);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
  let same: boolean;
  try {
    const moved = await stat(aside);
    same = moved.ino === before.ino && moved.dev === before.dev && (await readFile(aside, 'utf8')) === raw;
  } catch {
    same = false;
  }
  if (!same) {
    await link(aside, lockPath).catch(() => undefined);
  }
  await unlink(aside).catch(() => undefined);
  return same;
}

async function describeHolder(lockPath: string): Promise<string> {
  try {
    const owner = parseOwner(await readFile(lockPath, 'utf8'));
    return owner ? ` (held by pid ${owner.pid} on ${owner.hostname} since ${owner.createdAt})` : '';
  } catch {
    return '';
  }
}
