import { predictWaveConflicts } from '../../engine/finalize-wave.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { finalizeOptionsFrom } from './finalize-wave.js';

/**
 * `predict-conflicts <impl> --wave N` — E11 from the agents' real diffs (files touched by several
 * agents, undeclared modifications, report vs diff) plus `git merge-tree` textual conflicts.
 * Prints `{conflicts_detected (Go's count: files changed by several agents), conflicts[{file, agents}], warnings?,
 * blocking_findings (ours: every blocking finding), …}`; exit 1 when any blocking finding.
 * Writes nothing.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const result = await predictWaveConflicts({ ...finalizeOptionsFrom('predict-conflicts', args, { ...options, jsonOnly: true }, io), dryRun: true });
  printJson(io, result);
  return result.success && !result.blocking_findings ? 0 : 1;
}
