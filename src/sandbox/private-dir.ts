import { lstatSync, mkdirSync } from 'node:fs';

/**
 * True when `dir` is ours alone: a real directory (not a symbolic link), owned by this user, closed
 * to others (mode & 077 = 0). Created (0700) first when `create` and absent. The one rule for the
 * per-user `<tmp>/polywave-<uid>/` directory that the list-impls cache and the resident socket share
 * (another user may have made it first, or put a link there).
 */
export function privateUserDir(dir: string, create: boolean): boolean {
  if (typeof process.getuid !== 'function') return false;
  try {
    if (create) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stats = lstatSync(dir);
    return stats.isDirectory() && !stats.isSymbolicLink() && stats.uid === process.getuid() && (stats.mode & 0o077) === 0;
  } catch {
    return false;
  }
}
