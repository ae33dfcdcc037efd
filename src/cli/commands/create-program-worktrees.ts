import { createProgramWorktrees } from '../../engine/program/tier-worktrees.js';
import { loadProgramTier } from '../../engine/program/tier-common.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { scopedImportFindings } from '../../orchestrator/program-execute.js';
import { checkImplConflicts } from '../../protocol/impl-conflicts.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { tierOptionsFrom } from './tier-options.js';
import { withProgram } from '../replan-recovery.js';
import { programPathFrom } from './shared.js';

/**
 * `create-program-worktrees <program> --tier N [--repo-dir D]` — E28B/P5: each IMPL's long-lived
 * branch and worktree (idempotent, never deletes a branch). Prints
 * `{tier_number, worktrees[{impl_slug, path, branch, action}], base_branch, base_commit, failures?, success}`;
 * exit 1 when an IMPL's worktree could not be made ready, or the tier is refused as prepare-tier and
 * program-execute refuse it (E28A import validation of its pre-existing IMPLs, P1 across the IMPL docs
 * there are; nothing created), 2 bad input.
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const tierOptions = tierOptionsFrom(args, options, io);
  await refuseUnstartableTier(tierOptions.programPath, tierOptions.repoRoot, tierOptions.tier);
  const result = await createProgramWorktrees(tierOptions);
  printJson(io, result);
  for (const failure of result.failures ?? []) io.stderr(`create-program-worktrees: ${failure.impl_slug}: ${failure.error}\n`);
  return result.success ? 0 : 1;
}

/** E28A + P1 for the tier's IMPLs that are not complete: the first refusal as a coded error (exit 1), nothing created. */
async function refuseUnstartableTier(programPath: string, repoRoot: string, tier: number): Promise<void> {
  const loaded = await loadProgramTier(programPath, tier);
  const impls = loaded.manifest.impls.filter((impl) => loaded.slugs.includes(impl.slug ?? '') && impl.status !== 'complete');
  const docs = await readProgramImplDocs(repoRoot, loaded.manifest);
  const findings = scopedImportFindings(loaded.manifest, docs, impls);
  if (findings.length > 0) {
    throw new PolywaveError({ code: findings[0]!.code, message: `create-program-worktrees --tier ${tier}: ${findings.map((finding) => `${finding.code}: ${finding.message}`).join('; ')} — nothing was created`, exitCode: 1 });
  }
  const conflicts = checkImplConflicts(impls.flatMap((impl) => (docs.get(impl.slug ?? '')?.manifest ? [{ slug: impl.slug ?? '', manifest: docs.get(impl.slug ?? '')!.manifest as ImplManifest }] : [])));
  if (conflicts.conflicts.length > 0) {
    throw new PolywaveError({ code: 'V029_P1_FILE_OVERLAP', message: `create-program-worktrees --tier ${tier}: P1: IMPLs of tier ${tier} own the same files: ${conflicts.conflicts.map((conflict) => `${conflict.file} (${conflict.impls.join(', ')})`).join('; ')} — nothing was created`, exitCode: 1 });
  }
}

/** P13-05/P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: true }, () => runCommand(args, options, io));
}
