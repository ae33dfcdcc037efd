/**
 * The plan a Scout, critic or Planner writes through an agent CLI that runs whole inside the OS sandbox (the `cli:`
 * backends), with the main checkout read-only: the CLI's file tools write a file by renaming a new one over it,
 * which a file bound writable alone in a read-only directory does not allow. So the CLI writes a COPY in a directory
 * of its own (writable in its sandbox, outside the checkout), seeded with the plan's current text; polywave, outside
 * the sandbox, puts a changed copy in place when the CLI has exited (outside attack X30: an agent with the checkout
 * writable left things no after-run check could tell from your own edits).
 *
 * The copy is read as the regular file it must be (`lstat`, `O_NOFOLLOW`, ≤ 16 MiB), never through a link the agent
 * made: a copy turned into a link to your `~/.ssh/id_rsa` would otherwise put the key into the plan, and the plan
 * into a commit. The plan's own path is checked for links the same way before it is written.
 */
import { constants, lstatSync } from 'node:fs';
import { chmod, lstat, mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Jail } from './jail/types.js';

/** The largest plan copy put back. */
export const planCopyMaxBytes = 16 * 1024 * 1024;

/** The variable naming the plan copy (when the agent writes one plan). */
export const planFileVariable = 'POLYWAVE_PLAN_FILE';

export interface PlanCopy {
  /** The plan file in the checkout (absolute). */
  real: string;
  /** Its path relative to the checkout (as the agent's task names it). */
  relative: string;
  /** The copy the agent writes (absolute, in the copies directory). */
  copy: string;
  /** The plan's text when the copy was made (undefined: there was none). */
  seeded: Buffer | undefined;
}

export interface PlanRedirect {
  /** The directory of the copies: writable in the agent's sandbox. */
  dir: string;
  files: PlanCopy[];
  /** What the agent is told (appended to its prompt). */
  note: string;
  /** Puts every changed copy in place; returns what could not be, each with why (nothing is written for those). */
  putBack(): Promise<Array<{ path: string; reason: string }>>;
}

/** The files `jail`'s policy lets its agent write (owned files, file entries of the writable prefixes), in the checkout, not through a link. */
export function planFileEntries(jail: Jail): string[] {
  const entries = [...new Set([...jail.policy.ownedFiles, ...(jail.policy.writablePrefixes ?? []).filter((entry) => !entry.endsWith('/'))])];
  const files: string[] = [];
  for (const entry of entries) {
    const absolute = path.resolve(jail.root, entry);
    const relative = path.relative(jail.root, absolute);
    if (relative === '' || relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) continue;
    if (throughLink(jail.root, absolute)) continue;
    files.push(absolute);
  }
  return files;
}

/** Whether a directory between `root` and `file` is not a plain directory (a link, a file); an absent one is fine. */
function throughLink(root: string, file: string): boolean {
  const parts = path.relative(root, file).split(path.sep);
  for (let index = 1; index < parts.length; index += 1) {
    try {
      if (!lstatSync(path.join(root, ...parts.slice(0, index))).isDirectory()) return true;
    } catch {
      return false; // absent from here down: made (as directories) when the plan is put back
    }
  }
  return false;
}

/** Reads `file` as a regular file of at most `max` bytes, never through a link; undefined when absent. */
async function readRegular(file: string, max: number): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new Error('it is a symbolic link', { cause: error });
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new Error('it is not a regular file');
    if (stats.size > max) throw new Error(`it is larger than ${max} bytes`);
    const buffer = Buffer.alloc(stats.size);
    const { bytesRead } = await handle.read(buffer, 0, stats.size, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Makes the copies of `jail`'s plan files under `dir` (made here), seeded with their current text. */
export async function preparePlanRedirect(jail: Jail, dir: string): Promise<PlanRedirect> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files: PlanCopy[] = [];
  for (const [index, real] of planFileEntries(jail).entries()) {
    const relative = path.relative(jail.root, real).split(path.sep).join('/');
    const copy = path.join(dir, `${index + 1}-${path.basename(real)}`);
    let seeded: Buffer | undefined;
    try {
      seeded = await readRegular(real, planCopyMaxBytes);
    } catch {
      continue; // not a regular file it could write: left out
    }
    if (seeded !== undefined) await writeFile(copy, seeded, { flag: 'wx', mode: 0o644 });
    files.push({ real, relative, copy, seeded });
  }
  const only = files.length === 1 ? files[0] : undefined;
  const note = files.length === 0
    ? ''
    : [
        '## Where your file goes',
        `The repository (${jail.root}) is read-only to you: write ${files.length === 1 ? 'the file your task names' : 'each file your task names'} at the path below instead${only ? ` ($${planFileVariable})` : ''}. It holds the file's current text when there is one; polywave puts it in place when you exit.`,
        ...files.map((file) => `- ${file.relative} → ${file.copy}`),
      ].join('\n');
  return {
    dir,
    files,
    note,
    async putBack() {
      const refused: Array<{ path: string; reason: string }> = [];
      for (const file of files) {
        let text: Buffer | undefined;
        try {
          text = await readRegular(file.copy, planCopyMaxBytes);
        } catch (error) {
          refused.push({ path: file.relative, reason: `its copy ${file.copy} was not put in place: ${error instanceof Error ? error.message : String(error)}` });
          continue;
        }
        if (text === undefined || (file.seeded !== undefined && text.equals(file.seeded))) continue;
        try {
          await putInPlace(jail.root, file.real, text);
        } catch (error) {
          refused.push({ path: file.relative, reason: `its copy could not be put in place: ${error instanceof Error ? error.message : String(error)}` });
        }
      }
      return refused;
    },
  };
}

/** Writes `text` to `file` (in `root`) by renaming a new file over it, its directories made, never through a link. */
async function putInPlace(root: string, file: string, text: Buffer): Promise<void> {
  const parts = path.relative(root, file).split(path.sep);
  for (let index = 1; index < parts.length; index += 1) {
    const dir = path.join(root, ...parts.slice(0, index));
    try {
      if (!(await lstat(dir)).isDirectory()) throw new Error(`${path.relative(root, dir)} is not a directory`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dir);
    }
  }
  let mode = 0o644;
  try {
    const stats = await lstat(file);
    if (!stats.isFile()) throw new Error('the plan path is not a regular file');
    mode = stats.mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.polywave-${process.pid}-${Date.now()}.tmp`);
  try {
    await writeFile(temporary, text, { flag: 'wx', mode });
    await chmod(temporary, mode);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}
