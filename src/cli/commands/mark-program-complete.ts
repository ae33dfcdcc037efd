import { existsSync } from 'node:fs';
import path from 'node:path';
import { markProgramComplete } from '../../engine/program/program-edits.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { dateOption } from './close-impl.js';
import { repoDirOption } from './repo-dir-option.js';
import { withProgram } from '../replan-recovery.js';

/** The `<program>` argument, or the original path of a manifest an interrupted run already archived. */
function programTarget(args: string[], io: CommandIo): string {
  const reference = args[0] ?? '';
  try {
    return resolveManifestPath(reference, { cwd: io.cwd, kind: 'program' }).path;
  } catch (error) {
    const direct = path.resolve(io.cwd, reference.trim());
    if (reference.trim() !== '' && existsSync(path.join(path.dirname(direct), 'complete', path.basename(direct)))) return direct;
    throw error;
  }
}

/**
 * `mark-program-complete <program> [--date YYYY-MM-DD] [--repo-dir D] [--force]` — every tier's
 * IMPLs complete → state COMPLETE + completion_date, archive to docs/PROGRAM/complete/, E18
 * docs/CONTEXT.md, one commit. Prints `{completed, program_slug, date, manifest_path,
 * context_updated, context_path?, archived_path?, commit_sha?, tiers_complete, impls_complete,
 * warnings?}`. Exit 0; 1 an IMPL not complete (N039) or the state is not TIER_VERIFIED (N008,
 * without --force) — nothing changed; 2 bad input.
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const programPath = programTarget(args, io);
  const date = dateOption(options, io);
  const repoRoot = repoDirOption(options, io) ?? projectRootOf(programPath, io.cwd);
  const result = await markProgramComplete({ programPath, repoRoot, date, env: io.env as NodeJS.ProcessEnv, force: options.force === true });
  for (const warning of result.warnings ?? []) io.stderr(`polywave: warning: ${warning}\n`);
  printJson(io, { ...result, manifest_path: path.relative(io.cwd, programPath) || programPath });
  return 0;
}

/** P13-05/P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programTarget(args, io), io, { lock: true }, () => runCommand(args, options, io));
}
