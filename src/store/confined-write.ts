import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * Writing polywave's own files into a tree an agent (or the code it wrote) can write: the journal
 * of an agent working in the main checkout (`.polywave-state/<slug>/wave<N>/agent-<ID>/`), its
 * denials, recovered context. Such a file may have been swapped for a symlink to `~/.bashrc`, or a
 * directory above it for a symlink out of the repository (outside attack X3 #21): the write must
 * then fail, never go through the link.
 *
 * How (synchronous, for the journal's in-order appends): the directory is created, its real path
 * must lie under the real path of `root`; the file is opened with `O_NOFOLLOW | O_NONBLOCK |
 * O_NOCTTY` (no symlink as the last component; a FIFO never blocks), must be a regular file with
 * one link (a hard link to a file elsewhere is refused), and the descriptor's own path
 * (`/proc/self/fd/N`; an lstat of the path where there is no procfs) must still be under the root —
 * a directory swapped between the check and the open is caught there. Bytes go to that descriptor.
 */
export class ConfinedWriteError extends Error {
  readonly code = 'STATE_PATH_UNSAFE';
  constructor(message: string) {
    super(message);
    this.name = 'ConfinedWriteError';
  }
}

const baseFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

function inside(root: string, real: string): boolean {
  return real === root || real.startsWith(`${root}${path.sep}`);
}

/** The directory polywave's state hangs from: the parent of the last `.polywave-state` segment of `file`, else its directory. */
export function stateRootOf(file: string): string {
  const parts = path.resolve(file).split(path.sep);
  const index = parts.lastIndexOf('.polywave-state');
  return index > 0 ? parts.slice(0, index).join(path.sep) || path.sep : path.dirname(path.resolve(file));
}

/** The real path of `root`, created first when missing (it is polywave's own choice, not the agent's). */
export function realRootOf(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    mkdirSync(root, { recursive: true });
    return realpathSync(root);
  }
}

function descriptorPath(fd: number): string | undefined {
  try {
    const target = readlinkSync(`/proc/self/fd/${fd}`);
    return target.endsWith(' (deleted)') ? target.slice(0, -' (deleted)'.length) : target;
  } catch {
    return undefined;
  }
}

/**
 * Creates `directory` (and its parents) only below an existing ancestor whose real path is under
 * `realRoot`: `mkdir -p` through a planted symlink would create directories elsewhere.
 */
export function ensureConfinedDirSync(directory: string, realRoot: string = realRootOf(stateRootOf(path.join(directory, 'x')))): void {
  let existing = path.resolve(directory);
  for (;;) {
    let real: string | undefined;
    try {
      real = realpathSync(existing);
    } catch {
      real = undefined;
    }
    if (real !== undefined) {
      if (!inside(realRoot, real)) throw new ConfinedWriteError(`refusing to create ${directory}: it leads outside ${realRoot} (a symbolic link?)`);
      break;
    }
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  mkdirSync(directory, { recursive: true });
}

function openConfinedSync(file: string, flags: number, root: string): number {
  const absolute = path.resolve(file);
  const realRoot = realRootOf(root);
  const directory = path.dirname(absolute);
  ensureConfinedDirSync(directory, realRoot);
  const realDirectory = realpathSync(directory);
  if (!inside(realRoot, realDirectory)) throw new ConfinedWriteError(`refusing to write ${absolute}: its directory leads outside ${realRoot} (a symbolic link?)`);
  const real = path.join(realDirectory, path.basename(absolute));
  let fd: number;
  try {
    fd = openSync(real, flags, 0o644);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK' || code === 'ENXIO') throw new ConfinedWriteError(`refusing to write ${absolute}: it is a symbolic link or not a regular file`);
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new ConfinedWriteError(`refusing to write ${absolute}: not a regular file`);
    if (stats.nlink > 1) throw new ConfinedWriteError(`refusing to write ${absolute}: it has other hard links`);
    const opened = descriptorPath(fd);
    if (opened !== undefined) {
      if (!inside(realRoot, opened)) throw new ConfinedWriteError(`refusing to write ${absolute}: it leads outside ${realRoot}`);
    } else {
      const now = lstatSync(real, { throwIfNoEntry: false });
      if (!now || now.ino !== stats.ino || now.dev !== stats.dev) throw new ConfinedWriteError(`refusing to write ${absolute}: it changed while it was opened`);
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function writeAll(fd: number, data: string | Uint8Array): void {
  const buffer = typeof data === 'string' ? Buffer.from(data) : data;
  let offset = 0;
  while (offset < buffer.length) offset += writeSync(fd, buffer, offset, buffer.length - offset);
}

/** Appends `data` to `file` (created when missing) under `root` (default: {@link stateRootOf}); throws {@link ConfinedWriteError}. */
export function appendConfinedSync(file: string, data: string | Uint8Array, root: string = stateRootOf(file)): void {
  const fd = openConfinedSync(file, baseFlags | constants.O_APPEND, root);
  try {
    writeAll(fd, data);
  } finally {
    closeSync(fd);
  }
}

/** Replaces the content of `file` (created when missing) under `root` (default: {@link stateRootOf}); throws {@link ConfinedWriteError}. */
export function writeConfinedSync(file: string, data: string | Uint8Array, root: string = stateRootOf(file)): void {
  // Truncated only after the checks: O_TRUNC at open would empty a hard-linked file elsewhere.
  const fd = openConfinedSync(file, baseFlags, root);
  try {
    ftruncateSync(fd, 0);
    writeAll(fd, data);
  } finally {
    closeSync(fd);
  }
}
