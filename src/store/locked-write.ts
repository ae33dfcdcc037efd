import { open } from 'node:fs/promises';
import path from 'node:path';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { checkGuardedFile, fileMode, removeOrphans, writeViaTemp, type AtomicWriteHooks } from './atomic-file.js';
import { recoverInterruptedCommit } from './group-commit.js';
import { acquireKernelLock } from './kernel-lock.js';
import { resolveLockLocation, type LockLocation } from './lock-location.js';
import { readTextFile } from './read-text.js';

export { defaultLockTimeoutMs } from './kernel-lock.js';
export { writeFileAtomic } from './atomic-file.js';

/** Options of {@link withFileLock} and {@link updateFileLocked}. */
export interface FileLockOptions {
  /**
   * How long to wait while the lock stays with the same holder. Default 30 s. The wait restarts
   * when the lock changes hands (a queue of writers is progress), up to 10 times this in total.
   */
  lockTimeoutMs?: number;
}

/** Options of {@link updateFileLocked}. */
export interface UpdateFileOptions extends FileLockOptions {
  /** Treat a missing file as empty text (it is then created). Default false. */
  allowMissing?: boolean;
  /** Size cap for reading the current file. Default 10 MiB. */
  maxBytes?: number;
  /** Crash-test hooks of the atomic write. */
  hooks?: AtomicWriteHooks;
  /**
   * Keep a UTF-8 byte order mark: `update` sees the text without it (as every reader does), and
   * when the file on disk started with one, the written text starts with one again. Default false
   * (the BOM is dropped on write).
   */
  keepBom?: boolean;
  /**
   * When `filePath` is a symlink, read and replace the file it points to (the link stays). Default
   * false: the link itself is replaced by a regular file in its directory — a writer of a path an
   * untrusted party may have planted a link at must never write through it. Either way the lock is
   * the real file's (lock-location.ts), shared by every path of it.
   */
  followSymlink?: boolean;
}

/**
 * Runs `action` while holding the cross-process lock of `filePath` — a kernel lock (flock /
 * open-file-description lock, see kernel-lock.ts) on a lock file outside the working tree (see
 * lock-location.ts): waiters sleep in the kernel's queue, a holder that dies releases it. On
 * taking the lock, first finishes or discards a group commit a dead holder left half done
 * (group-commit.ts) and removes orphaned temp files and old-style lock files beside the file;
 * then runs `action` with the lock's location. Always releases in `finally`. Throws a
 * PolywaveError `N094_MANIFEST_SAVE_FAILED` (exit 2) naming the holder when the lock stays with
 * one holder for `lockTimeoutMs`.
 */
export async function withFileLock<Result>(filePath: string, action: (location: LockLocation) => Promise<Result> | Result, options: FileLockOptions = {}): Promise<Result> {
  const location = await resolveLockLocation(filePath);
  const lock = await acquireKernelLock(location.lockPath, { target: location.target, ...(options.lockTimeoutMs !== undefined ? { timeoutMs: options.lockTimeoutMs } : {}) });
  try {
    await recoverInterruptedCommit(location);
    await removeOrphans(location.target);
    // A symlink's own directory may hold temp files of writes that replaced the link.
    if (path.resolve(filePath) !== location.target) await removeOrphans(path.resolve(filePath));
    return await action(location);
  } finally {
    await lock.release();
  }
}

/**
 * Read-modify-write of a text file, safe across processes: under {@link withFileLock} it reads
 * the current text, calls `update`, and when the result differs writes it atomically (temp file
 * `.<name>.<pid>.<random>.tmp` in the same directory, fsync, original mode kept, rename, fsync of
 * the directory). With `followSymlink` a symlink is written through (see the option). If `update`
 * throws, nothing is written and the error propagates. Returns whether the file changed and its
 * final text.
 */
export async function updateFileLocked(
  filePath: string,
  update: (current: string) => string | Promise<string>,
  options: UpdateFileOptions = {},
): Promise<{ changed: boolean; text: string }> {
  return withFileLock(
    filePath,
    async (location) => {
      // location.target is the real path: a symlinked file is written through its link on request.
      const writePath = options.followSymlink ? location.target : filePath;
      const { text: current, mode } = await readCurrent(writePath, options);
      const next = await update(current);
      if (typeof next !== 'string') {
        throw new PolywaveError({ code: codes.saveFailed, message: `cannot write ${filePath}: the update did not return text`, exitCode: 2 });
      }
      if (next === current) return { changed: false, text: current };
      const bom = options.keepBom && (await startsWithBom(writePath)) ? '\uFEFF' : '';
      await writeViaTemp(writePath, bom + next, mode, options.hooks);
      return { changed: true, text: next };
    },
    options,
  );
}

/** Whether the file's first bytes are a UTF-8 byte order mark (false when it cannot be read). */
async function startsWithBom(filePath: string): Promise<boolean> {
  try {
    const handle = await open(filePath, 'r');
    try {
      const buffer = Buffer.alloc(3);
      const { bytesRead } = await handle.read(buffer, 0, 3, 0);
      return bytesRead === 3 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf;
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
}

/** The current text and mode of a file (under its lock; a guarded file is first put back: atomic-file.ts guardFile); a missing file is '' when `allowMissing`. */
export async function readCurrent(filePath: string, options: { allowMissing?: boolean; maxBytes?: number } = {}): Promise<{ text: string; mode: number | undefined }> {
  // X44-01: a file an agent must not change while it runs holds polywave's last write again before it is read for an edit.
  await checkGuardedFile(filePath);
  try {
    const text = await readTextFile(filePath, options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes });
    return { text, mode: await fileMode(filePath) };
  } catch (error) {
    const missing = PolywaveError.isInstance(error) && error.code === codes.fileNotFound;
    if (missing && options.allowMissing) return { text: '', mode: undefined };
    if (PolywaveError.isInstance(error)) throw error;
    throw new PolywaveError({ code: codes.fileUnreadable, message: `cannot read ${filePath}: ${String(error)}`, exitCode: 2, cause: error });
  }
}
