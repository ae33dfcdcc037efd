import { randomBytes } from 'node:crypto';
import { chmod, lstat, open, readFile, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { processExists } from './process-alive.js';

/**
 * Atomic replacement of a file: the new text goes to a temp file in the same directory (rename
 * is atomic only within one file system), is fsynced, gets the original mode and is renamed over
 * the file; then the directory is fsynced. Readers see the old or the new text, never a mix.
 *
 * Temp names are `.<name>.<pid>.<12 hex>.tmp` ({@link tempPathFor}; every atomic writer of the
 * code base names its temp files so). A process killed between writing and renaming leaves one
 * behind (e.g. `docs/.CONTEXT.md.<pid>.<hex>.tmp`, an untracked file in the checkout):
 * {@link removeOrphans} deletes them under the file's lock (every locked writer of the file writes
 * its temp files only while holding the lock, so any found then is an orphan), together with the
 * `<name>.lock*` files of the lock of earlier versions, and, from the same listing, the temp files
 * of other files in that directory whose writer is dead ({@link staleTempNames}).
 */

/** Hooks for crash tests: called at the named points of a write. */
export interface AtomicWriteHooks {
  /** The temp file is written and synced, not yet renamed. */
  beforeRename?: () => void | Promise<void>;
}

const tempPattern = /^\..+\.\d+\.[0-9a-f]{12}\.tmp$/;
const legacyLockPattern = /^(?:IMPL|PROGRAM)-.+\.(?:ya?ml|md)\.lock(?:\.break)?(?:\.\d+\.[0-9a-f]{12}\.tmp)?$/;

/** The temp file name for `filePath` (same directory): `.<name>.<pid>.<12 hex>.tmp`. */
export function tempPathFor(filePath: string): string {
  return path.join(path.dirname(filePath), `.${path.basename(filePath)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** Whether `relativePath` is a temp file of an atomic write of `filePath` (`.<name>.<pid>.<12 hex>.tmp` beside it; both relative to one root). */
export function isTempOf(relativePath: string, filePath: string): boolean {
  const normalized = relativePath.replace(/\\/g, '/');
  const target = filePath.replace(/\\/g, '/');
  if (path.posix.dirname(normalized) !== path.posix.dirname(target)) return false;
  const name = path.posix.basename(normalized);
  const base = `.${path.posix.basename(target)}.`;
  return name.startsWith(base) && /^\d+\.[0-9a-f]{12}\.tmp$/.test(name.slice(base.length));
}

/** A temp file left this long by a dead writer is removed (an atomic write takes milliseconds). */
export const staleTempAgeMs = 10_000;

/** Whether process `pid` exists here (EPERM: it exists, owned by someone else). */
function processAlive(pid: number): boolean {
  return pid === process.pid || processExists(pid);
}

/**
 * The names among `names` (entries of `directory`) that are temp files of an atomic write whose
 * writer is gone: `.<name>.<pid>.<hex>.tmp` with no process `pid` here and older than
 * {@link staleTempAgeMs} (never a live writer's, never one just made).
 */
export async function staleTempNames(directory: string, names: readonly string[], now = Date.now()): Promise<string[]> {
  const candidates = names.flatMap((name) => {
    const match = /^\..+\.(\d+)\.[0-9a-f]{8,12}\.tmp$/.exec(name);
    return match && !processAlive(Number(match[1])) ? [name] : [];
  });
  const old = await Promise.all(candidates.map((name) => stat(path.join(directory, name)).then((info) => now - info.mtimeMs >= staleTempAgeMs, () => false)));
  return candidates.filter((_, index) => old[index]);
}

/**
 * True for a path (relative to the repository root) that our writes may leave under `docs/`
 * beside a manifest or CONTEXT.md: a temp file of the atomic rename (`.<name>.<pid>.<hex>.tmp`) or
 * a manifest lock file of earlier versions (`IMPL-x.yaml.lock`, `IMPL-x.yaml.lock.<pid>.<hex>.tmp`,
 * `IMPL-x.yaml.lock.break`). Commits of Polywave's own files skip these.
 */
export function isManifestScratchPath(relativePath: string): boolean {
  const normalized = relativePath.replace(/\\/g, '/').replace(/^\.\//, '');
  if (!normalized.startsWith('docs/')) return false;
  const name = path.posix.basename(normalized);
  return tempPattern.test(name) || legacyLockPattern.test(name);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Removes, beside `filePath`, the temp files of its atomic writes (`.<name>.<pid>.<hex>.tmp`) and
 * the lock files of earlier versions (`<name>.lock`, `<name>.lock.*.tmp`, `<name>.lock.break*`),
 * and the temp files of other files there whose writer is dead ({@link staleTempNames}).
 * Call only while holding the file's lock. Returns the names removed.
 */
export async function removeOrphans(filePath: string): Promise<string[]> {
  const name = escapeRegExp(path.basename(filePath));
  const ours = new RegExp(`^(?:\\.${name}\\.\\d+\\.[0-9a-f]{12}\\.tmp|${name}\\.lock(?:\\.break)?(?:\\.\\d+\\.[0-9a-f]{12}\\.tmp)?)$`);
  let names: string[];
  try {
    names = await readdir(path.dirname(filePath));
  } catch {
    return [];
  }
  const orphans = names.filter((entry) => ours.test(entry));
  // A dead writer's temp of another file here (a SIGKILL inside its write): nothing renames it any more.
  const stale = await staleTempNames(path.dirname(filePath), names.filter((entry) => !ours.test(entry) && entry.endsWith('.tmp')));
  const removed = [...orphans, ...stale];
  await Promise.all(removed.map((entry) => unlink(path.join(path.dirname(filePath), entry)).catch(() => undefined)));
  return removed;
}

/** The current mode bits of a file, or undefined when it does not exist. */
export async function fileMode(filePath: string): Promise<number | undefined> {
  try {
    return (await stat(filePath)).mode & 0o7777;
  } catch {
    return undefined;
  }
}

/**
 * Writes `text` to `filePath` atomically (temp file in the same directory, fsync, rename, fsync
 * of the directory). Keeps the mode of an existing file; `mode` sets it for a new one. Does not
 * lock: use updateFileLocked for files that other processes may update.
 */
export async function writeFileAtomic(filePath: string, text: string, options: { mode?: number } = {}): Promise<void> {
  await writeViaTemp(filePath, text, options.mode ?? (await fileMode(filePath)));
}

/**
 * The last text this process wrote to each file by {@link writeViaTemp} (outside attack X43-19): a write by rename
 * replaces the file a running agent's sandbox had bound read-only, so the agent's stop audit compares the manifest with
 * the orchestrator's own last write and puts that back over any other change (run-agent.ts).
 */
const lastWrites = new Map<string, { text: string; sequence: number }>();
let writeSequence = 0;

/** The number of atomic writes this process has made so far (compare with {@link lastAtomicWrite}'s `sequence`). */
export function atomicWriteSequence(): number {
  return writeSequence;
}

/** The text this process last wrote to `filePath` by an atomic write, and that write's sequence number. */
export function lastAtomicWrite(filePath: string): { text: string; sequence: number } | undefined {
  return lastWrites.get(path.resolve(filePath));
}

/**
 * Outside attack X44-01/12: an orchestrator-written file (the IMPL doc, the PROGRAM manifest, a tier sibling's doc) an
 * agent in the main checkout could change while it runs (it owns a file beside it, or the doc is at the top of the
 * repository) is read-modify-written by the orchestrator meanwhile (the agent's report, a status change): a change of
 * the agent's between two saves was read, kept and saved as the orchestrator's own text, so the stop audit (which
 * compares with the last write) saw nothing. While a guard is held, every read-modify-write of the file under its lock
 * ({@link checkGuardedFile}, locked-write.ts readCurrent) and every atomic write of it first checks the file is what
 * this process last wrote (or its text when the guard was taken): any other text is put back first and the guard
 * remembers it ({@link FileGuard.tampered}); a write whose text was not read through that check is refused then.
 */
export interface FileGuard {
  readonly path: string;
  /** The text the file must hold: this process's last write of it, else its text when the guard was taken. */
  readonly expected: () => string;
  /** Whether any other text was found (and put back) while the guard was held. */
  readonly tampered: () => boolean;
  /** Ends the guard (idempotent). */
  readonly release: () => void;
}

interface GuardState {
  text: string;
  tampered: boolean;
}

const guards = new Map<string, Set<GuardState>>();

/** Guards `filePath` (its text now, or what the caller knows it to be: `text`) until released; see {@link FileGuard}. */
export function guardFile(filePath: string, text: string): FileGuard {
  const key = path.resolve(filePath);
  const state: GuardState = { text, tampered: false };
  let set = guards.get(key);
  if (!set) guards.set(key, (set = new Set()));
  set.add(state);
  return {
    path: key,
    expected: () => state.text,
    tampered: () => state.tampered,
    release: () => {
      const current = guards.get(key);
      current?.delete(state);
      if (current?.size === 0) guards.delete(key);
    },
  };
}

/** The text a guarded file must hold (the newest of its guards' expectations), or undefined when it is not guarded. */
function guardedText(key: string): string | undefined {
  const set = guards.get(key);
  if (!set || set.size === 0) return undefined;
  let text: string | undefined;
  for (const state of set) text = state.text;
  return text;
}

/**
 * For a guarded file ({@link guardFile}): when it is not a regular file holding the text this process last wrote, puts
 * that text back (atomically) and marks its guards tampered. Returns true when it put the text back. Call under the
 * file's lock before reading it for a read-modify-write.
 */
export async function checkGuardedFile(filePath: string): Promise<boolean> {
  const key = path.resolve(filePath);
  const expected = guardedText(key);
  if (expected === undefined) return false;
  const isFile = await lstat(key).then(
    (info) => info.isFile(),
    () => false,
  );
  const current = isFile ? await readFile(key, 'utf8').catch(() => undefined) : undefined;
  if (current === expected) return false;
  for (const state of guards.get(key) ?? []) state.tampered = true;
  await writeViaTemp(key, expected, await fileMode(key).then((mode) => (isFile ? mode : undefined)), {}, { unchecked: true });
  return true;
}

/** The code of a guarded file's write refused because the file held another text than polywave's last write (X44-01). */
export const guardedFileChangedCode = 'SANDBOX_ORCHESTRATOR_FILE_RESTORED';

/** The atomic write itself (see {@link writeFileAtomic}); `mode` undefined = default mode. */
export async function writeViaTemp(filePath: string, text: string, mode: number | undefined, hooks: AtomicWriteHooks = {}, internal: { unchecked?: boolean } = {}): Promise<void> {
  if (!internal.unchecked && (await checkGuardedFile(filePath))) {
    // The text to write was not read through the check (else the file would hold polywave's text now): it may carry
    // the change just put back. Refused; the guard's holder reports the change (run-agent.ts).
    throw new PolywaveError({ code: guardedFileChangedCode, message: `cannot write ${filePath}: it changed since polywave last wrote it (put back; the change is not kept)`, exitCode: 2 });
  }
  const temporary = tempPathFor(filePath);
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
    await hooks.beforeRename?.();
    await rename(temporary, filePath);
    lastWrites.set(path.resolve(filePath), { text, sequence: ++writeSequence });
    for (const state of guards.get(path.resolve(filePath)) ?? []) state.text = text;
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new PolywaveError({ code: codes.saveFailed, message: `cannot write ${filePath}: ${reason}`, exitCode: 2, cause: error });
  }
  await syncDirectory(path.dirname(filePath));
}

/** fsync of a directory (makes a rename durable); ignored where the platform does not support it. */
export async function syncDirectory(directory: string): Promise<void> {
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
