import { PolywaveError } from '../errors/polywave-error.js';

/**
 * A git command failed. Carries the arguments, exit code and stderr (DESIGN §5: the git port
 * throws, it never returns `false`).
 */
export class GitError extends PolywaveError {
  readonly args: readonly string[];
  readonly gitExitCode: number | null;
  readonly stderr: string;

  constructor(options: { args: readonly string[]; exitCode: number | null; stderr: string; cwd: string; code?: string }) {
    const firstLine = options.stderr.trim().split('\n')[0] ?? '';
    super({
      code: options.code ?? 'G000_GIT_FAILED',
      message: `git ${options.args.join(' ')} failed${options.exitCode === null ? '' : ` (exit ${options.exitCode})`} in ${options.cwd}${firstLine ? `: ${firstLine}` : ''}`,
      exitCode: 2,
      details: { args: options.args, exit_code: options.exitCode, stderr: options.stderr, cwd: options.cwd },
    });
    this.args = options.args;
    this.gitExitCode = options.exitCode;
    this.stderr = options.stderr;
  }
}
