import path from 'node:path';
import { noHooksGitConfig } from './harden.js';
import { runGit } from './run-git.js';

/**
 * Stages `files` and commits them (only them) with `message`; returns the new commit SHA.
 * Sets POLYWAVE_ALLOW_MAIN_COMMIT=1 (E43 guard bypass) and runs no hook at all (X8 #1, see harden.ts).
 */
export async function commitFiles(options: { cwd: string; files: string[]; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string> {
  // One commit at a time per checkout in this process (the PROGRAM tier loop scouts several IMPLs
  // at once): two `git commit`s would meet on index.lock, and HEAD read after the commit must be ours.
  const key = path.resolve(options.cwd);
  const previous = queues.get(key) ?? Promise.resolve();
  const mine = previous.then(() => commitNow(options));
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return mine;
}

const queues = new Map<string, Promise<void>>();

async function commitNow(options: { cwd: string; files: string[]; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string> {
  // `env` replaces the child environment (as in runGit), so start from the caller's full env.
  const env = { ...(options.env ?? process.env), POLYWAVE_ALLOW_MAIN_COMMIT: '1' };
  await runGit(['add', '--', ...options.files], { cwd: options.cwd, env });
  // X8 #1: no hook — these are polywave's own commits, often of files an agent wrote in this checkout
  // (a scaffold or solo agent), and an in-tree core.hooksPath would run the agent's hook as the user.
  const noHooks = Object.entries(noHooksGitConfig).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  await runGit([...noHooks, 'commit', '--quiet', '-m', options.message, '--', ...options.files], { cwd: options.cwd, env });
  return (await runGit(['rev-parse', 'HEAD'], { cwd: options.cwd, env })).trim();
}
