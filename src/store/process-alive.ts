/**
 * Whether a process id names a process on this machine — the one check behind every "is the writer /
 * owner / holder still there" decision (lock holders, temp files of atomic writes, scratch and warm-up
 * directories, worker records). `kill(pid, 0)` sends nothing: it succeeds for a process we may signal,
 * fails with EPERM for one owned by another user (it exists), ESRCH when there is none. Anything else is
 * taken as "exists": what is not provably dead is never cleaned up.
 */
export function processExists(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
