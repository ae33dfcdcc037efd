import { readFileSync } from 'node:fs';

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
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  // A zombie (ended, not yet reaped: its parent was killed too and the container's pid 1 does not reap) answers
  // `kill(pid, 0)` but runs nothing and holds nothing — P13-25: a killed git's next-index lock stayed for good.
  return !isZombie(pid);
}

/** Whether process `pid` has ended and waits to be reaped (`/proc/<pid>/stat` state Z or X); false where /proc has no answer. */
function isZombie(pid: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

/**
 * When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`, field 22), or undefined where that cannot
 * be read (not Linux, no such process). With the pid it names one process for good: a pid is reused after its process
 * ended, a (pid, start) pair is not.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // (the command name, in parentheses, may hold spaces and parentheses: the fields after its last `)`)
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start !== undefined && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the process that was `pid` when it started at `start` (see {@link processStartTime}) still runs; without a start, {@link processExists}. */
export function processStillRuns(pid: number, start: string | undefined): boolean {
  // (A19-04: a pid no process can have — past 2^22, Linux's largest pid_max — is nobody's; `kill` throws a type error
  // for one past 2^31, which processExists takes for "exists")
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid > 4_194_304 || !processExists(pid)) return false;
  if (start === undefined) return true;
  const now = processStartTime(pid);
  // (with a start time given, a process whose start cannot be read on Linux is not proof of life)
  return now === undefined ? process.platform !== 'linux' : now === start;
}
