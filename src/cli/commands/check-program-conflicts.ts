import { checkProgramTierConflicts } from '../../engine/program/program-conflicts.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { programPathFrom } from './shared.js';
import { withProgram } from '../replan-recovery.js';

/**
 * `check-program-conflicts <program> --tier N [--repo-dir D]` — P1 for one tier: the tier's IMPL
 * docs must own disjoint files. Prints `{conflicts[{file, impls, repos?}], disjoint_sets,
 * tier_suggestion, impls_without_doc?}`. Exit 0 disjoint, 1 conflicts ("BLOCKED"), 2 bad input
 * (tier not in the manifest, unreadable manifest or IMPL doc).
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const programPath = programPathFrom(args, io);
  const repoRoot = repoDirOption(options, io) ?? projectRootOf(programPath, io.cwd);
  const tier = Number(options.tier);
  const report = await checkProgramTierConflicts({ programPath, repoRoot, tier });
  printJson(io, report);
  if (report.conflicts.length > 0) {
    io.stderr(`check-program-conflicts: BLOCKED — ${report.conflicts.length} conflict(s) detected in tier ${tier}\n`);
    return 1;
  }
  return 0;
}

/** P13-05/P13-07: a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: false }, () => runCommand(args, options, io));
}
