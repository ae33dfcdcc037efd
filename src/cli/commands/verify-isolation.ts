import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { verifyIsolation } from '../../engine/isolation-hook.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { requireOption } from './shared.js';

/**
 * `verify-isolation --branch B [--cwd D]` — an agent's E4 layer 3 self-check: inside a linked
 * worktree under .claude/worktrees/, on branch B, listed by git. Prints `{ok, branch, errors?}`;
 * exit 1 when not isolated.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const branch = requireOption(options, 'branch', '--branch');
  const cwd = typeof options.cwd === 'string' && options.cwd.trim() !== '' ? path.resolve(io.cwd, options.cwd) : io.cwd;
  const result = await verifyIsolation(createGit(cwd, { env: io.env }), branch);
  printJson(io, result);
  return result.ok ? 0 : 1;
}
