import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { GitError } from '../../git/git-error.js';
import { hardenGitArgs, hostGitProcessEnvironment } from '../../git/harden.js';

/**
 * Many `git worktree add <path> <branch>` at once, forked by one small `/bin/sh` instead of one
 * Node child process each. Measured on the 2-CPU development VMs: a spawn from Node costs about
 * twice a fork from sh (51 vs 23 ms per `git --version`) and grows with the Node heap (134 ms
 * with a 200 MB heap), which made a 32-agent wave ~1.9× slower than the plain shell loop of
 * the same git commands. The commands are exactly the ones the Git port would run (same
 * environment rules); each one's exit code and output come back per item, so callers keep
 * per-agent failures and retry git's lock contention through the port.
 *
 * Returns undefined when no POSIX shell is available (the caller then uses the port).
 * Used only when the caller knows the environment (the CLI always passes it).
 */
export interface BatchItem {
  path: string;
  branch: string;
}

/** Per item: undefined on success, else the GitError of that `git worktree add`. */
export type BatchOutcome = GitError | undefined;

// $3: the hardening -c pairs of git/harden.ts (X8 #2: `-c core.fsmonitor=false -c submodule.recurse=false`,
// which the port puts on every git it runs) — constant words without blanks, split on purpose.
const script = `set -u
dir=$1; limit=$2; hard=$3; shift 3
i=0; running=0
while [ $# -ge 2 ]; do
  wt=$1; br=$2; shift 2
  if [ "$limit" -le 1 ]; then
    git $hard worktree add --quiet -- "$wt" "$br" >"$dir/$i.out" 2>&1; echo $? >"$dir/$i.rc"
  else
    ( git $hard worktree add --quiet -- "$wt" "$br" >"$dir/$i.out" 2>&1; echo $? >"$dir/$i.rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$limit" ]; then wait; running=0; fi
  fi
  i=$((i + 1))
done
wait
`;

export async function addWorktreesBatch(options: {
  cwd: string;
  items: readonly BatchItem[];
  concurrency: number;
  /** The environment the Git port uses (read once by the CLI); required — engine code never reads process.env. */
  env: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal | undefined;
}): Promise<BatchOutcome[] | undefined> {
  // The port's environment rules exactly: no credentials (a checkout filter runs during the add), the user's HOME (X23-08).
  const environment = hostGitProcessEnvironment(['worktree', 'add'], options.env);

  const directory = await mkdtemp(path.join(os.tmpdir(), 'polywave-wt-'));
  try {
    const hardening = hardenGitArgs(['worktree']).slice(0, -1).join(' ');
    const args = ['-c', script, 'sh', directory, String(Math.max(1, options.concurrency)), hardening, ...options.items.flatMap((item) => [item.path, item.branch])];
    const started = await new Promise<boolean>((resolve, reject) => {
      const child = spawn('sh', args, { cwd: options.cwd, env: environment, stdio: 'ignore', ...(options.signal ? { signal: options.signal } : {}) });
      child.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? resolve(false) : reject(error)));
      child.on('close', () => resolve(true));
    });
    if (!started) return undefined;
    return await Promise.all(
      options.items.map(async (item, index) => {
        const args = ['worktree', 'add', '--quiet', '--', item.path, item.branch];
        const [rc, output] = await Promise.all([
          readFile(path.join(directory, `${index}.rc`), 'utf8').catch(() => ''),
          readFile(path.join(directory, `${index}.out`), 'utf8').catch(() => ''),
        ]);
        const exitCode = Number.parseInt(rc.trim(), 10);
        if (exitCode === 0) return undefined;
        return new GitError({ args, exitCode: Number.isNaN(exitCode) ? null : exitCode, stderr: output || 'git worktree add did not run', cwd: options.cwd, code: 'G001_WORKTREE_CREATE_FAILED' });
      }),
    );
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
