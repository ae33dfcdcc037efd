import path from 'node:path';
import { importImpls } from '../../engine/program/import-impls.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { dateOption } from './close-impl.js';
import { repoDirOption } from './repo-dir-option.js';
import { requireOption } from './shared.js';
import { withProgram } from '../replan-recovery.js';

/**
 * The `--program` value: an existing manifest (path, file name or slug), else the file to create —
 * a path as given, or `<repo>/docs/PROGRAM/PROGRAM-<slug>.yaml` for a slug.
 */
function programTarget(reference: string, repoRoot: string, io: CommandIo): string {
  try {
    return resolveManifestPath(reference, { cwd: io.cwd, kind: 'program' }).path;
  } catch (error) {
    if (!PolywaveError.isInstance(error) || error.code !== 'N005_IMPL_NOT_FOUND') throw error;
  }
  if (reference.includes('/') || reference.includes(path.sep) || /\.ya?ml$/.test(reference)) return path.resolve(io.cwd, reference);
  const slug = reference.replace(/^PROGRAM-/, '');
  return path.join(repoRoot, 'docs', 'PROGRAM', `PROGRAM-${slug}.yaml`);
}

/**
 * `import-impls --program P (--from-impls a,b | --discover) [--repo-dir D]` — adds existing IMPL
 * docs to a PROGRAM (created in state PLANNING when missing); slugs already present are skipped;
 * status from the IMPL state; IMPLs sharing files with IMPLs of a tier go to a later tier. Prints
 * `{manifest_path, impls_imported[{slug, title, status, assigned_tier, agent_count, wave_count}],
 * impls_discovered?, tier_assignments, p1_conflicts?, p2_conflicts?, created, updated, skipped?,
 * warnings?}`. Exit 0; 1 no IMPL docs found; 2 bad input.
 */
async function runCommand(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const reference = requireOption(options, 'program', '--program');
  const references = Array.isArray(options.fromImpls) ? (options.fromImpls as string[]) : [];
  const discover = options.discover === true;
  if (discover === references.length > 0) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: discover ? 'use either --discover or --from-impls, not both' : 'import-impls: must specify --discover or --from-impls' });
  }
  const repoRoot = repoDirOption(options, io) ?? io.cwd;
  const programPath = programTarget(reference, repoRoot, io);
  const result = await importImpls({ programPath, repoRoot, date: dateOption({}, io), discover, implReferences: references });
  for (const warning of result.warnings ?? []) io.stderr(`polywave: warning: ${warning}\n`);
  printJson(io, { ...result, manifest_path: path.relative(io.cwd, programPath) || programPath });
  return 0;
}

/** P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  if (typeof options.program !== 'string' || options.program.trim() === '') return runCommand(args, options, io);
  const programPath = programTarget(options.program, repoDirOption(options, io) ?? io.cwd, io);
  return withProgram(programPath, io, { lock: true }, () => runCommand(args, options, io));
}
