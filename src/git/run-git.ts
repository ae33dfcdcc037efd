import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { GitError } from './git-error.js';
import { hardenGitArgs, hostGitEnvironmentFor } from './harden.js';
import { clearDeadHalfWrittenWorktree, indexLockRetryDelaysMs, retriableIndexLockFailure } from './index-lock-retry.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { execFileOffloaded, gitSpawnsOffloaded, type OffloadedError } from './spawn-server.js';

export interface RunGitOptions {
  cwd: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** Input written to git's stdin. */
  input?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/**
 * Runs `git <args>` in `cwd` and returns stdout. Throws GitError (args, exit code, stderr) on a
 * non-zero exit, and a coded error when git is not installed.
 */
export async function runGit(args: readonly string[], options: RunGitOptions): Promise<string> {
  // Another git process held the checkout's index.lock: git gives up at once, so wait and retry.
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await runGitOnce(args, options);
    } catch (error) {
      const delay = indexLockRetryDelaysMs[attempt];
      if (delay === undefined || options.signal?.aborted || !(error instanceof GitError) || !retriableIndexLockFailure(args, error.gitExitCode, error.stderr)) throw error;
      // A killed `git worktree add`'s entry never gets written: removed, and the command re-run at once.
      if (clearDeadHalfWrittenWorktree(error.stderr, options.cwd)) continue;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

function runGitOnce(args: readonly string[], options: RunGitOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    // X8 #2: no fsmonitor, no submodule recursion, no external diff (harden.ts).
    const argv = hardenGitArgs(args);
    const env = { ...hostGitEnvironmentFor(args, options.env ?? process.env), GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' } as NodeJS.ProcessEnv;
    const maxBuffer = 256 * 1024 * 1024;
    const settle = (error: OffloadedError | null, stdout: string, stderr: string) => {
      if (!error) {
        resolve(stdout);
        return;
      }
      const spawnError = error as NodeJS.ErrnoException & { code?: string | number };
      if (spawnError.code === 'ENOENT' && !existsSync(options.cwd)) {
        reject(new PolywaveError({ code: 'G000_NOT_A_REPOSITORY', message: `directory does not exist: ${options.cwd}` }));
        return;
      }
      if (spawnError.code === 'ENOENT') {
        reject(new PolywaveError({ code: 'G000_GIT_MISSING', message: 'git is not installed or not on PATH (polywave needs git >= 2.38)' }));
        return;
      }
      reject(new GitError({ args, exitCode: typeof spawnError.code === 'number' ? spawnError.code : null, stderr: String(stderr ?? ''), cwd: options.cwd }));
    };
    if (gitSpawnsOffloaded() && !options.timeoutMs) {
      // A long-running orchestrator (program-execute): started by the git-cli's helper process
      // (spawn-server.ts) with the same arguments, cwd, environment and output limit, so the fork
      // does not hold this process's main thread (the issue-11 checks' runGit calls — config
      // origins, trusted config — were ~1.5 s of a tier's main thread, bench:program).
      execFileOffloaded('git', argv, { cwd: options.cwd, env: env as Record<string, string>, maxBuffer, input: options.input ?? '', ...(options.signal ? { signal: options.signal } : {}) }, settle);
      return;
    }
    const child = execFile('git', argv, { cwd: options.cwd, env, maxBuffer, encoding: 'utf8', ...(options.signal ? { signal: options.signal } : {}), ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}) }, (error, stdout, stderr) => settle(error, stdout, stderr));
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}
