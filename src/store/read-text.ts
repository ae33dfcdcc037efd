import { open, stat } from 'node:fs/promises';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';

/** Default size cap for text files we read: 10 MiB. */
export const defaultMaxTextBytes = 10 * 1024 * 1024;

/** Options of {@link readTextFile}. */
export interface ReadTextOptions {
  /** Refuse files larger than this many bytes (checked before reading). Default 10 MiB. */
  maxBytes?: number;
}

/**
 * Reads a UTF-8 text file defensively. Throws a PolywaveError (exit code 2) with a one-line
 * message: missing file `N005_IMPL_NOT_FOUND`; a directory, another non-regular file or an
 * unreadable file `X002_FILE_READ`; larger than `maxBytes` `RESOURCE_EXHAUSTION` (decided from
 * `stat`, the file is never read whole); NUL bytes or invalid UTF-8 `V046_PARSE_ERROR`.
 * A leading UTF-8 byte order mark is removed.
 */
export async function readTextFile(path: string, options: ReadTextOptions = {}): Promise<string> {
  const maxBytes = options.maxBytes ?? defaultMaxTextBytes;
  let stats;
  try {
    stats = await stat(path);
  } catch (error) {
    throw readError(path, error);
  }
  if (stats.isDirectory()) {
    throw new PolywaveError({ code: codes.notAFile, message: `${path} is a directory, not a file`, exitCode: 2 });
  }
  if (!stats.isFile()) {
    // FIFOs, sockets and devices could block or never end.
    throw new PolywaveError({ code: codes.notAFile, message: `${path} is not a regular file`, exitCode: 2 });
  }
  if (stats.size > maxBytes) throw tooLarge(path, stats.size, maxBytes);

  let bytes: Buffer;
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw readError(path, error);
  }
  try {
    // Read at most maxBytes + 1: the file may have grown since stat.
    const capacity = Math.min(stats.size, maxBytes) + 1;
    const buffer = Buffer.alloc(capacity);
    let length = 0;
    while (length < capacity) {
      const { bytesRead } = await handle.read(buffer, length, capacity - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw tooLarge(path, length, maxBytes);
    bytes = buffer.subarray(0, length);
  } catch (error) {
    if (PolywaveError.isInstance(error)) throw error;
    throw readError(path, error);
  } finally {
    await handle.close().catch(() => undefined);
  }

  const nul = bytes.indexOf(0);
  if (nul !== -1) {
    throw new PolywaveError({ code: codes.binaryInput, message: `${path} contains binary content (NUL byte at offset ${nul})`, exitCode: 2 });
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new PolywaveError({ code: codes.invalidEncoding, message: `${path} is not valid UTF-8 text`, exitCode: 2 });
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function tooLarge(path: string, size: number, maxBytes: number): PolywaveError {
  return new PolywaveError({
    code: codes.fileTooLarge,
    message: `${path} is ${size} bytes, larger than the limit of ${maxBytes} bytes`,
    exitCode: 2,
  });
}

function readError(path: string, error: unknown): PolywaveError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') {
    return new PolywaveError({ code: codes.fileNotFound, message: `file not found: ${path}`, exitCode: 2, cause: error });
  }
  if (code === 'ENOTDIR') {
    return new PolywaveError({ code: codes.fileNotFound, message: `file not found: ${path} (a parent is not a directory)`, exitCode: 2, cause: error });
  }
  if (code === 'EISDIR') {
    return new PolywaveError({ code: codes.notAFile, message: `${path} is a directory, not a file`, exitCode: 2, cause: error });
  }
  const reason = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'ELOOP' ? 'too many symbolic links' : (code ?? (error instanceof Error ? error.message : String(error)));
  return new PolywaveError({ code: codes.fileUnreadable, message: `cannot read ${path}: ${reason}`, exitCode: 2, cause: error });
}
