import path from 'node:path';
import { defaultProjectRoot, updateProjectContext } from '../../engine/close-impl.js';
import { createGit } from '../../git/git-cli.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { dateOption } from './close-impl.js';
import { implPathFrom } from './shared.js';

/**
 * `update-context <impl> [--project-root D] [--date YYYY-MM-DD]` — E18: create or update
 * docs/CONTEXT.md (features_completed, decisions, established_interfaces); idempotent; no commit.
 * Prints `{context_path, updated, new_entries}`.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const projectRoot =
    typeof options.projectRoot === 'string' && options.projectRoot.trim() !== ''
      ? path.resolve(io.cwd, options.projectRoot)
      : await defaultProjectRoot(implPath, (directory) => createGit(directory, { env: io.env }));
  const result = await updateProjectContext({
    implPath,
    projectRoot,
    ...(options.date !== undefined ? { date: dateOption(options, io) } : {}),
    fallbackDate: dateOption({}, io),
  });
  printJson(io, result);
  return 0;
}
