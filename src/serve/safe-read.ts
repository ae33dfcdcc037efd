import { constants } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * Reading (and appending to) files of a served repository without trusting them: every file the
 * server touches in a repository goes through here (the file view, IMPL/PROGRAM manifests, agent
 * journals and denials, the rejection log). A committed symlink, a FIFO, a device or a huge file
 * must neither leak what lies outside the repository nor wedge the server (attack report F2, F3, F6).
 *
 * How: realpath inside the root, then `open(O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)` (a FIFO or device
 * never blocks a threadpool thread), `fstat` of that descriptor (a regular file, one link, under the
 * cap), the descriptor's own path (`/proc/self/fd/N`) inside the root again — a parent directory
 * swapped for a symlink between the check and the open is caught here — then the bytes are read from
 * that descriptor, never from the path a second time.
 */

/** A refusal with the HTTP status and the stable code the API answers with. */
export class ConfinedReadError extends Error {
  constructor(
    readonly status: 403 | 404 | 413,
    readonly code: 'SERVE_PATH' | 'SERVE_NOT_FOUND' | 'SERVE_NOT_FILE' | 'SERVE_TOO_LARGE',
    message: string,
  ) {
    super(message);
    this.name = 'ConfinedReadError';
  }
}

export interface ConfinedReadOptions {
  /** Largest file read in full; a larger one is 413 (or, with `tail`, only its last `maxBytes` are read). */
  maxBytes: number;
  /** Read the last `maxBytes` of a larger file (append-only logs: journals, denials) instead of refusing it. */
  tail?: boolean;
  /** The name in messages (default: the path relative to the root). */
  shown?: string;
}

export interface ConfinedRead {
  buffer: Buffer;
  /** Real path the bytes were read from. */
  real: string;
  /** Of the descriptor read (what a cache keys on). */
  size: number;
  mtimeMs: number;
  /** True when `tail` dropped the file's beginning. */
  truncated: boolean;
}

/** Manifests and journals: far above any real one (an IMPL of 50 agents is ~100 KB). */
export const maxManifestBytes = 2 * 1024 * 1024;

const readFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const appendFlags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** True when `real` is `root` or below it, and not inside its `.git`. */
export function insideRoot(root: string, real: string): boolean {
  if (real !== root && !real.startsWith(`${root}${path.sep}`)) return false;
  return !path
    .relative(root, real)
    .split(path.sep)
    .some((segment) => segment.toLowerCase() === '.git');
}

const errno = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;
const showName = (root: string, file: string, shown: string | undefined) => shown ?? (path.relative(root, file).split(path.sep).join('/') || '.');

/** The path the open descriptor refers to (Linux `/proc/self/fd`); undefined where there is no procfs. */
async function descriptorPath(handle: FileHandle): Promise<string | undefined> {
  try {
    const target = await readlink(`/proc/self/fd/${handle.fd}`);
    return target.endsWith(' (deleted)') ? target.slice(0, -' (deleted)'.length) : target;
  } catch {
    return undefined;
  }
}

/** `file` (inside `root`, a real path) opened for reading after the checks above; the caller closes it. */
async function openConfined(root: string, file: string, name: string, flags: number, mode?: number): Promise<{ handle: FileHandle; real: string }> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (error) {
    const creating = errno(error) === 'ENOENT' && (flags & constants.O_CREAT) !== 0;
    const directory = creating ? await realpath(path.dirname(file)).catch(() => undefined) : undefined;
    if (directory === undefined) throw new ConfinedReadError(404, 'SERVE_NOT_FOUND', `${name} does not exist`);
    real = path.join(directory, path.basename(file));
  }
  if (!insideRoot(root, real)) throw new ConfinedReadError(403, 'SERVE_PATH', `${name} leads outside the repository`);
  let handle: FileHandle;
  try {
    handle = await open(real, flags, mode);
  } catch (error) {
    const code = errno(error);
    if (code === 'ELOOP' || code === 'EMLINK') throw new ConfinedReadError(403, 'SERVE_PATH', `${name} became a symbolic link while it was read`);
    // ENXIO: a FIFO without a reader, opened for writing.
    if (code === 'ENXIO') throw new ConfinedReadError(404, 'SERVE_NOT_FILE', `${name} is not a regular file`);
    throw new ConfinedReadError(404, 'SERVE_NOT_FOUND', `${name} does not exist or cannot be opened`);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ConfinedReadError(404, 'SERVE_NOT_FILE', `${name} is not a regular file`);
    // A hard link is invisible to realpath: it may be the same file as one outside the repository (or in .git).
    if (stats.nlink > 1) throw new ConfinedReadError(403, 'SERVE_PATH', `${name} has other hard links: it may be a file outside the repository`);
    const opened = await descriptorPath(handle);
    if (opened !== undefined) {
      if (!insideRoot(root, opened)) throw new ConfinedReadError(403, 'SERVE_PATH', `${name} leads outside the repository`);
    } else {
      // No procfs: the path must still name the inode that was opened.
      const now = await lstat(real).catch(() => undefined);
      if (!now || now.ino !== stats.ino || now.dev !== stats.dev) throw new ConfinedReadError(403, 'SERVE_PATH', `${name} changed while it was read`);
    }
    return { handle, real };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * The bytes of `file`, a path inside `root` (both absolute; `root` a real path), read only when it
 * is a regular file with one link, inside the root after every symlink, and within `maxBytes`.
 * Throws {@link ConfinedReadError}.
 */
export async function readConfined(root: string, file: string, options: ConfinedReadOptions): Promise<ConfinedRead> {
  const name = showName(root, file, options.shown);
  const { handle, real } = await openConfined(root, file, name, readFlags);
  try {
    const stats = await handle.stat();
    let position = 0;
    let truncated = false;
    if (stats.size > options.maxBytes) {
      if (!options.tail) throw new ConfinedReadError(413, 'SERVE_TOO_LARGE', `${name} is over ${options.maxBytes} bytes`);
      // One byte before the last maxBytes: whether they start a line.
      position = stats.size - options.maxBytes - 1;
      truncated = true;
    }
    // One byte more than allowed tells a file that grew past the cap while it was read (with tail: the byte before).
    const buffer = Buffer.alloc(Math.min(stats.size - position, options.maxBytes + 1));
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, position + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled > options.maxBytes && !truncated) {
      if (!options.tail) throw new ConfinedReadError(413, 'SERVE_TOO_LARGE', `${name} is over ${options.maxBytes} bytes`);
      filled = options.maxBytes;
    }
    let bytes = buffer.subarray(0, filled);
    if (truncated) {
      // Start after the first newline: the first line kept is whole.
      const newline = bytes.indexOf(10);
      bytes = newline === -1 ? bytes.subarray(bytes.length) : bytes.subarray(newline + 1);
    }
    return { buffer: bytes, real, size: stats.size, mtimeMs: stats.mtimeMs, truncated };
  } finally {
    await handle.close();
  }
}

/** Like {@link readConfined}; a file that does not exist is `undefined` (every other refusal still throws). */
export async function readConfinedIfExists(root: string, file: string, options: ConfinedReadOptions): Promise<ConfinedRead | undefined> {
  try {
    return await readConfined(root, file, options);
  } catch (error) {
    if (error instanceof ConfinedReadError && error.code === 'SERVE_NOT_FOUND') return undefined;
    throw error;
  }
}

/** The deepest existing ancestor of `directory` (itself included), which must resolve inside `root` (else 403; none at all: 404). */
async function deepestExistingInside(root: string, directory: string, name: string): Promise<string> {
  let existing = directory;
  for (;;) {
    try {
      const real = await realpath(existing);
      if (!insideRoot(root, real)) throw new ConfinedReadError(403, 'SERVE_PATH', `${name} leads outside the repository`);
      return existing;
    } catch (error) {
      if (error instanceof ConfinedReadError) throw error;
      const parent = path.dirname(existing);
      if (parent === existing) throw new ConfinedReadError(404, 'SERVE_NOT_FOUND', `${name}: no directory to create it in`);
      existing = parent;
    }
  }
}

/**
 * Throws the {@link ConfinedReadError} {@link appendConfined} would throw for `file`, creating and
 * writing nothing: its deepest existing directory must be inside the root, and an existing file must
 * open as appendConfined opens it (attack-serve-15 N5: Reject checks its log before the plan changes).
 */
export async function checkAppendConfined(root: string, file: string): Promise<void> {
  const name = showName(root, file, undefined);
  const directory = path.dirname(file);
  const existing = await deepestExistingInside(root, directory, name);
  if (existing === directory && (await lstat(file).catch(() => undefined)) !== undefined) await (await openConfined(root, file, name, appendFlags, 0o644)).handle.close();
}

/**
 * Appends `text` to `file` under `root`, creating it and its directories: the directories must stay
 * inside the root (a committed symlinked `.polywave-state` is refused, not written through) and the
 * file must be a regular file with one link (never a FIFO, which would block, nor a symlink).
 */
export async function appendConfined(root: string, file: string, text: string): Promise<void> {
  const handle = await openAppendConfined(root, file);
  try {
    await handle.appendFile(text);
  } finally {
    await handle.close();
  }
}

/**
 * `file` opened for appending (created when missing) under the confinement of {@link appendConfined}:
 * its directories are created only below an ancestor inside `root`, and the file must resolve
 * inside it, be a regular file with one link and not a symlink. What the run log of a run started
 * from the page is written through (attack-serve-12 F3). Throws {@link ConfinedReadError}.
 */
export async function openAppendConfined(root: string, file: string): Promise<FileHandle> {
  const name = showName(root, file, undefined);
  const directory = path.dirname(file);
  // The deepest existing ancestor must be inside the root before anything is created below it.
  await deepestExistingInside(root, directory, name);
  await mkdir(directory, { recursive: true });
  return (await openConfined(root, file, name, appendFlags, 0o644)).handle;
}
