import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { projectRootOf } from '../store/program-impl-docs.js';

/**
 * One `polywave run` per plan at a time, across processes, terminals and `polywave serve`s
 * (attack-serve-15 N1): an exclusive kernel lock (`fs-native-extensions`, the lock the daemon and
 * the manifest writes use) on `.polywave-state/run-locks/<impl>-<hash>.lock`, held for the run's
 * life. The kernel drops it when its holder exits or is killed, so a dead holder's lock is taken
 * over by the next run at once (no stale lock to detect or break); the file keeps the last
 * holder's record (pid, host, since) for the refusal's message and for `polywave serve`, which
 * waits for its child's pid to appear there (or for the child's RUN_IN_PROGRESS exit).
 */

/** The code of the refusal (exit 2): another run of the same plan holds the lock. */
export const runInProgressCode = 'RUN_IN_PROGRESS';

interface NativeLocks {
  tryLock(fd: number): boolean;
  unlock(fd: number): void;
}

/** What the holder writes into the lock file. */
export interface RunLockHolder {
  pid: number;
  hostname: string;
  since: string;
  impl: string;
}

function real(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/**
 * The lock file of the plan `implPath`: in the plan's project (`<root>/docs/IMPL/…` → `<root>`,
 * else `repoDir`), resolved through symlinks, so `run`, `run-wave`, `finalize-wave`, … started
 * from any directory and `polywave serve` all name the same file.
 */
export function runLockPath(repoDir: string, implPath: string): string {
  const impl = real(implPath);
  const name = path.basename(impl).replace(/\.ya?ml$/i, '').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80) || 'impl';
  const hash = createHash('sha256').update(impl).digest('hex').slice(0, 12);
  return path.join(real(projectRootOf(path.resolve(implPath), path.resolve(repoDir))), '.polywave-state', 'run-locks', `${name}-${hash}.lock`);
}

/**
 * The locks this process holds (lock file → its fd and how many holders): the kernel lock is an
 * open-file-description lock, which a second descriptor of the same file conflicts with even in
 * one process, so a nested take (a command that runs another's engine in-process) counts up
 * instead of refusing itself; the kernel lock is dropped when the last holder releases.
 */
const held = new Map<string, { fd: number; count: number; native: NativeLocks }>();

function releaser(file: string): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const entry = held.get(file);
    if (!entry) return;
    entry.count -= 1;
    if (entry.count > 0) return;
    held.delete(file);
    try {
      // attack-serve-17 X1: the lock file goes with its last holder (still holding it, and only if the path still names
      // it), and so do its directory and an empty `.polywave-state/`: a refused or finished command leaves nothing
      // behind. A taker that opened the old file meanwhile sees the path no longer names it and opens the new one.
      const own = fstatSync(entry.fd);
      const now = lstatSync(file);
      if (now.ino === own.ino && now.dev === own.dev) unlinkSync(file);
    } catch {
      // already gone
    } finally {
      try {
        entry.native.unlock(entry.fd);
      } finally {
        closeSync(entry.fd);
      }
    }
    tidy(path.dirname(file));
  };
}

/** Removes the run-locks directory (and its `.gitignore`) when no lock file is left in it, then `.polywave-state/` if empty. */
function tidy(directory: string): void {
  try {
    if (readdirSync(directory).some((name) => name !== '.gitignore')) return;
    unlinkSync(path.join(directory, '.gitignore'));
    rmdirSync(directory);
    rmdirSync(path.dirname(directory));
  } catch {
    // in use again, or not empty: kept
  }
}

/** Whether this process holds the run lock of `implPath` (for tests and diagnostics). */
export function holdsRunLock(repoDir: string, implPath: string): boolean {
  return held.has(runLockPath(repoDir, implPath));
}

/** The record of the lock's last holder (alive or not), if the file holds one. */
export function readRunLockHolder(lockPath: string): RunLockHolder | undefined {
  try {
    const value = JSON.parse(readFileSync(lockPath, 'utf8')) as Partial<RunLockHolder>;
    if (typeof value.pid === 'number' && typeof value.hostname === 'string') return { pid: value.pid, hostname: value.hostname, since: String(value.since ?? ''), impl: String(value.impl ?? '') };
  } catch {
    // no record (never held, or being written)
  }
  return undefined;
}

/**
 * Takes the run lock of `implPath`, or throws RUN_IN_PROGRESS (exit 2) naming the holder, before
 * anything is written. A symlinked `.polywave-state/run-locks` or lock file is refused (never
 * followed out of the repository). Returns the release (also done by the kernel at exit).
 * Re-entrant within one process: a take while this process holds the lock counts up (see `held`).
 */
export function acquireRunLock(repoDir: string, implPath: string): () => void {
  const file = runLockPath(repoDir, implPath);
  const directory = path.dirname(file);
  const shown = path.relative(real(repoDir), file);
  const mine = held.get(file);
  if (mine) {
    mine.count += 1;
    return releaser(file);
  }
  let native: NativeLocks;
  try {
    native = createRequire(import.meta.url)('fs-native-extensions') as NativeLocks;
  } catch (error) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `the kernel file lock that keeps one run per plan is not available on ${process.platform}-${process.arch} (fs-native-extensions: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}); nothing changed` });
  }
  // A last holder removes the file (and an empty directory) as it releases: a take that raced with that starts over.
  for (let attempt = 0; ; attempt += 1) {
    const fd = openLockFile(file, directory, shown);
    if (fd === undefined && attempt < 5) continue;
    if (fd === undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${shown}: the run lock's file kept disappearing while it was taken; nothing changed — try again` });
    if (!native.tryLock(fd)) {
      closeSync(fd);
      const holder = readRunLockHolder(file);
      const who = holder ? `pid ${holder.pid} on ${holder.hostname}${holder.since ? ` since ${holder.since}` : ''}` : 'another process';
      throw new PolywaveError({
        code: runInProgressCode,
        message: `a run of ${path.basename(implPath)} is already in progress (${who}): one run per plan at a time; nothing changed — wait for it to end (or stop it), then run again`,
        exitCode: 2,
      });
    }
    let same: boolean;
    try {
      const own = fstatSync(fd);
      const now = lstatSync(file);
      same = now.ino === own.ino && now.dev === own.dev;
    } catch {
      same = false;
    }
    if (!same) {
      native.unlock(fd);
      closeSync(fd);
      if (attempt < 5) continue;
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${shown}: the run lock's file kept being replaced while it was taken; nothing changed — try again` });
    }
    const record: RunLockHolder = { pid: process.pid, hostname: os.hostname(), since: new Date().toISOString(), impl: real(implPath) };
    ftruncateSync(fd, 0);
    writeSync(fd, `${JSON.stringify(record)}\n`, 0);
    held.set(file, { fd, count: 1, native });
    return releaser(file);
  }
}

/** Creates the lock's directories (never through a link) and opens its file; undefined when a releasing holder removed them meanwhile. */
function openLockFile(file: string, directory: string, shown: string): number | undefined {
  // Each level is created without following a link (a cloned repository can ship `.polywave-state` as a symlink out of it).
  for (const part of [path.dirname(directory), directory]) {
    try {
      mkdirSync(part);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${shown}: cannot create the run lock's directory (${(error as Error).message}); nothing changed` });
    }
    let isDirectory: boolean;
    try {
      isDirectory = lstatSync(part).isDirectory();
    } catch {
      return undefined;
    }
    if (!isDirectory) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${part} is not a directory (a symlink?): the run lock is kept only in the repository's own .polywave-state/; nothing changed` });
  }
  // The lock files are never the repository's content: a `.gitignore` of `*` in their directory keeps
  // `git status` clean (a wave command refused for bad input leaves no untracked `.polywave-state/`).
  try {
    const ignore = openSync(path.join(directory, '.gitignore'), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    try {
      writeSync(ignore, '*\n');
    } finally {
      closeSync(ignore);
    }
  } catch {
    // there already (or not writable: the lock itself reports a real problem below)
  }
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${shown}: ${(error as NodeJS.ErrnoException).code === 'ELOOP' ? 'is a symbolic link: remove it' : (error as Error).message}; nothing changed` });
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${shown} is not a regular file: remove it; nothing changed` });
  }
  return fd;
}

/**
 * Runs `body` holding the run lock of `implPath` (attack-serve-17 X1: `run-wave`, `retry`,
 * `finalize-wave`, `merge-agents` take the lock `polywave run` and `polywave serve` take). A path
 * that names no file takes no lock (the command itself reports the missing manifest, nothing written).
 */
export async function withRunLock<T>(repoDir: string, implPath: string, body: () => Promise<T>): Promise<T> {
  let exists: boolean;
  try {
    const stat = lstatSync(implPath);
    exists = stat.isFile() || stat.isSymbolicLink();
  } catch {
    exists = false;
  }
  const release = exists ? acquireRunLock(repoDir, implPath) : undefined;
  try {
    return await body();
  } finally {
    release?.();
  }
}
