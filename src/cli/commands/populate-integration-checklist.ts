import path from 'node:path';
import { populateIntegrationChecklist } from '../../engine/integration-checklist.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { implPathFrom } from './shared.js';

/**
 * `populate-integration-checklist <impl> [--repo-root D]` — M5/E16D before the waves run:
 * `post_merge_checklist` groups from the `action: new` rows of file_ownership (API handlers,
 * React components, CLI commands, background services) and the wiring declarations (E35).
 * Idempotent. Prints `{success, groups_added, items_added, groups[{title, item_count}]}`.
 * Exit 0, 2 bad input (unreadable or unusable manifest; nothing written).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const explicit = typeof options.repoRoot === 'string' && options.repoRoot.trim() !== '' ? path.resolve(io.cwd, options.repoRoot) : repoDirOption(options, io);
  const repoRoot = explicit ?? projectRootOf(implPath, io.cwd);
  printJson(io, await populateIntegrationChecklist({ implPath, repoRoot }));
  return 0;
}
