import path from 'node:path';
import type { CommandIo } from '../io.js';

/** `--repo-dir` resolved against the command's cwd, if given. */
export function repoDirOption(options: Record<string, unknown>, io: CommandIo): string | undefined {
  return typeof options.repoDir === 'string' && options.repoDir.trim() !== '' ? path.resolve(io.cwd, options.repoDir) : undefined;
}
