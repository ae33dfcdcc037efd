import { verifyWaveCommits } from '../../engine/finalize-wave.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { finalizeOptionsFrom } from './finalize-wave.js';

/**
 * `verify-commits <impl> --wave N [--repo-dir D] [--merge-target B]` — I5: every agent branch has
 * commits beyond the wave's base. Prints `{base_commit, agents[{agent, branch, commit_count,
 * has_commits, cross_repo?}], success, steps}` (also when some agent has none: exit 1).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const result = await verifyWaveCommits(finalizeOptionsFrom('verify-commits', args, { ...options, jsonOnly: true }, io));
  printJson(io, result);
  return result.success ? 0 : 1;
}
