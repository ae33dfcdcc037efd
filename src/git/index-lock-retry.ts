/**
 * Two git processes writing one checkout's index meet on `index.lock`; git does not wait for the
 * other one, it fails at once ("Unable to create '…/index.lock': File exists", exit 128) before
 * changing anything. polywave runs git in the same checkout from parallel steps (a PROGRAM tier
 * scouts, prepares and commits several IMPLs at once) and users run their own git (an editor's
 * `git status`), so such a failure is retried a few times, ~1.5 s in all. A lock that outlives the
 * retries is a stale one (a killed git): the caller's own stale-lock handling and hints take over.
 *
 * Commands that may have done part of their work before they took the lock (stash, rebase, am,
 * cherry-pick/revert sequences) are not retried.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

const contention = /Unable to create '[^']*index\.lock': File exists/;
const notRetried = new Set(['stash', 'rebase', 'am', 'cherry-pick', 'revert', 'bisect', 'filter-branch']);

/** Delays (ms) before each retry of a command that met another git process's index.lock. */
export const indexLockRetryDelaysMs: readonly number[] = [20, 40, 80, 160, 320, 480, 500];

/**
 * The other meeting of parallel git processes: `git worktree add` creates
 * `.git/worktrees/<name>/commondir` (and `gitdir`) and writes it afterwards, not atomically, so a
 * command listing the worktrees at that moment reads an empty file and dies ("fatal: failed to
 * read …/worktrees/<name>/commondir: Success", exit 128). A PROGRAM tier prepares several IMPLs'
 * agent worktrees at once: one IMPL's `worktree list` met another's `worktree add` and the IMPL
 * stopped BLOCKED (bench:program's rare BLOCKED round). Only read-only commands are re-run on it.
 */
const halfWrittenWorktree = /failed to read [^\n]*[/\\]worktrees[/\\][^/\\\n]+[/\\](?:commondir|gitdir)\b/;
/**
 * And its mirror: another process's `git worktree remove` deleted `.git/worktrees/<name>` while this
 * command walked the entries ("fatal: Invalid path '…/worktrees/<name>': No such file or
 * directory", exit 128) — cleanup removes a wave's worktrees at once; one removal failed on
 * another's vanished entry (seen in CI). It fails while reading the list, before changing anything,
 * so read-only commands and `worktree remove` itself are re-run.
 */
const vanishedWorktree = /Invalid path '[^'\n]*[/\\]worktrees[/\\][^'/\\\n]+': No such file or directory/;
const worktreeRemove = (args: readonly string[]): boolean => {
  const [command, sub] = args.filter((arg) => !arg.startsWith('-'));
  return command === 'worktree' && sub === 'remove';
};
const readOnly = (args: readonly string[]): boolean => {
  const [command, sub] = args.filter((arg) => !arg.startsWith('-'));
  return (command === 'worktree' && sub === 'list') || command === 'for-each-ref' || command === 'rev-parse' || command === 'status' || command === 'show-ref';
};

/**
 * True when `stderr` says the command failed on another process's index.lock and `args` may be
 * re-run, or a read-only command met a worktree entry another `git worktree add` was writing.
 */
export function retriableIndexLockFailure(args: readonly string[], exitCode: number | null, stderr: string): boolean {
  if (exitCode !== 128) return false;
  if (halfWrittenWorktree.test(stderr)) return readOnly(args);
  if (vanishedWorktree.test(stderr)) return readOnly(args) || worktreeRemove(args);
  if (!contention.test(stderr)) return false;
  return !args.some((arg) => notRetried.has(arg));
}

/** How old a half-written worktree entry must be to be a killed `git worktree add`'s, not one in flight (git writes `commondir` right after `gitdir`). */
export const deadWorktreeEntryAgeMs = 10_000;

/**
 * A `git worktree add` killed between writing `gitdir` and `commondir` leaves an entry that makes
 * every `git worktree list` fail ("failed to read …/worktrees/<name>/commondir") until someone
 * deletes it; the retries above only wait for an add in flight. When `stderr` names such an entry,
 * still locked `initializing` and untouched for {@link deadWorktreeEntryAgeMs}, it is removed —
 * with its worktree directory when that holds nothing but the `.git` file git wrote first (the
 * checkout comes after `commondir`, so no work can be there). `cwd`: where the git command ran.
 * Returns true when it removed one.
 */
export function clearDeadHalfWrittenWorktree(stderr: string, cwd: string, now = Date.now()): boolean {
  const match = /failed to read ([^\n]*[/\\]worktrees[/\\][^/\\\n]+)[/\\](?:commondir|gitdir)\b/.exec(stderr);
  if (!match) return false;
  // git names it relative to the directory it ran in (`.git/worktrees/<name>`) or absolute.
  const admin = path.resolve(cwd, match[1]!);
  try {
    if (readFileSync(path.join(admin, 'locked'), 'utf8').trim() !== 'initializing') return false;
  } catch {
    // no `locked` file: not an add git left half-way
    return false;
  }
  let newest = 0;
  try {
    for (const name of readdirSync(admin)) newest = Math.max(newest, statSync(path.join(admin, name)).mtimeMs);
    newest = Math.max(newest, statSync(admin).mtimeMs);
  } catch {
    return false;
  }
  if (now - newest < deadWorktreeEntryAgeMs) return false;
  let worktree: string | undefined;
  try {
    const gitdir = readFileSync(path.join(admin, 'gitdir'), 'utf8').trim();
    if (gitdir !== '') worktree = path.dirname(path.resolve(admin, gitdir));
  } catch {
    // no gitdir: git never made the worktree's `.git` file
  }
  if (worktree !== undefined) {
    let names: string[];
    try {
      names = readdirSync(worktree);
    } catch {
      names = [];
    }
    if (names.some((name) => name !== '.git')) {
      // Files beside the `.git` file: not what a killed add leaves; the registration stays for a human.
      return false;
    }
    rmSync(worktree, { recursive: true, force: true });
  }
  rmSync(admin, { recursive: true, force: true });
  return true;
}
