import { readdir, readlink, realpath, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * A `git merge` (or any index writer) SIGKILLed with a killed run leaves `index.lock` behind; every
 * later index write in that checkout then fails — with dirty files, `git merge` only says "fatal:
 * stash failed". The lock is removed only when it is certainly nobody's:
 *
 * - on Linux, no live process has it open (every `/proc/<pid>/fd` link is checked), twice,
 *   `recheckMs` apart, with its mtime unchanged (git writes the lock while it holds it open, and
 *   renames it away right after closing it: a lock nobody holds for that long is a dead one);
 * - elsewhere (no /proc) it must be older than `minAgeWithoutProcMs`.
 *
 * Returns the path removed, or undefined (no lock, or one that may be in use — left alone).
 */
export async function removeStaleIndexLock(gitDir: string, options: { recheckMs?: number; minAgeWithoutProcMs?: number; now?: () => number; name?: string } = {}): Promise<string | undefined> {
  // `name`: another lock git takes the same way (HEAD.lock, refs/heads/<branch>.lock during a commit).
  const lock = path.join(await realpath(gitDir).catch(() => gitDir), options.name ?? 'index.lock');
  const info = await stat(lock).catch(() => undefined);
  if (!info || !info.isFile()) return undefined;
  const held = await heldByAProcess(lock);
  if (held === true) return undefined;
  if (held === undefined) {
    if ((options.now?.() ?? Date.now()) - info.mtimeMs < (options.minAgeWithoutProcMs ?? 60_000)) return undefined;
  } else {
    await new Promise((resolve) => setTimeout(resolve, options.recheckMs ?? 250));
    const again = await stat(lock).catch(() => undefined);
    if (!again || again.mtimeMs !== info.mtimeMs || (await heldByAProcess(lock)) !== false) return undefined;
  }
  await rm(lock, { force: true });
  return lock;
}

/** True when some process has `file` open, false when none has, undefined when this cannot be known (no /proc). */
async function heldByAProcess(file: string): Promise<boolean | undefined> {
  if (process.platform !== 'linux') return undefined;
  const pids = await readdir('/proc').catch(() => undefined);
  if (!pids) return undefined;
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === file) return true;
    }
  }
  return false;
}

/**
 * What to tell the user when a git command failed while `index.lock` exists in `gitDir` (git's own
 * message can be as vague as "stash failed"); '' when there is no lock.
 */
export async function indexLockHint(gitDir: string): Promise<string> {
  const lock = path.join(await realpath(gitDir).catch(() => gitDir), 'index.lock');
  if (!(await stat(lock).catch(() => undefined))) return '';
  const held = await heldByAProcess(lock);
  return held === true
    ? ` (${lock} is held by a running process: wait for it to finish, then re-run)`
    : ` (${lock} exists: if no git command is running in this checkout, remove it, then re-run)`;
}
