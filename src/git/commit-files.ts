import { runGit } from './run-git.js';

/**
 * Stages `files` and commits them (only them) with `message`; returns the new commit SHA.
 * Sets POLYWAVE_ALLOW_MAIN_COMMIT=1 so the E43 isolation hook lets the orchestrator through.
 */
export async function commitFiles(options: { cwd: string; files: string[]; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string> {
  // `env` replaces the child environment (as in runGit), so start from the caller's full env.
  const env = { ...(options.env ?? process.env), POLYWAVE_ALLOW_MAIN_COMMIT: '1' };
  await runGit(['add', '--', ...options.files], { cwd: options.cwd, env });
  await runGit(['commit', '--quiet', '-m', options.message, '--', ...options.files], { cwd: options.cwd, env });
  return (await runGit(['rev-parse', 'HEAD'], { cwd: options.cwd, env })).trim();
}
