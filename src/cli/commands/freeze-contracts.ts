import { freezeContracts } from '../../engine/program/program-edits.js';
import { commitFiles } from '../../git/commit-files.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { programPathFrom } from './shared.js';
import { withProgram } from '../replan-recovery.js';

/**
 * `freeze-contracts <program> --tier N [--repo-dir D] [--commit]` — E30: the program contracts
 * that freeze when tier N completes must exist at `location` and be committed; the freeze is then
 * recorded in the manifest (`frozen_at_tier`, `frozen_commit`, `frozen_blob`; Go writes nothing),
 * and with `--commit` the manifest is committed. Prints `{tier_number, contracts_frozen[{name,
 * location, freeze_at, file_exists, committed, frozen_commit?, frozen_blob?}], contracts_skipped,
 * success, errors?, manifest_updated, commit_sha?}`. Exit 0 frozen, 1 freeze errors (nothing
 * written), 2 bad input (tier not in the manifest, unreadable manifest).
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const programPath = programPathFrom(args, io);
  const repoRoot = repoDirOption(options, io) ?? projectRootOf(programPath, io.cwd);
  const tier = Number(options.tier);
  const result = await freezeContracts({ programPath, repoRoot, tier, env: io.env as NodeJS.ProcessEnv });
  let commitSha: string | undefined;
  if (options.commit === true && result.manifest_updated) {
    commitSha = await commitFiles({ cwd: repoRoot, files: [programPath], message: `chore: freeze program contracts at tier ${tier}`, env: io.env });
  }
  printJson(io, { ...result, ...(commitSha !== undefined ? { commit_sha: commitSha } : {}) });
  if (!result.success) {
    io.stderr(`polywave: error[N012_FREEZE_ERROR]: ${result.errors?.length ?? 0} freeze error(s): ${(result.errors ?? []).join('; ')}\n`);
    return 1;
  }
  return 0;
}

/** P13-05/P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: true }, () => runCommand(args, options, io));
}
