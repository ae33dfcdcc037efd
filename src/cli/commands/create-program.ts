import { createProgram } from '../../engine/program/create-program.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { dateOption } from './close-impl.js';
import { repoDirOption } from './repo-dir-option.js';

/**
 * `create-program --from-impls a,b [--slug S] [--title T] [--repo-dir D]` — a PROGRAM manifest
 * from existing IMPL docs; IMPLs that share a file go to different tiers (P1). Writes
 * `docs/PROGRAM/PROGRAM-<slug>.yaml`. Prints `{manifest_path, conflict_report{conflicts,
 * disjoint_sets, tier_suggestion}, tier_assignments, manifest, validation_errors?}`. Exit 0
 * written; 1 the generated manifest would be invalid (validation_errors; nothing written); 2 bad
 * input (fewer than 2 IMPLs, unreadable IMPL, the PROGRAM file exists).
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const references = Array.isArray(options.fromImpls) ? (options.fromImpls as string[]) : [];
  if (references.length === 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--from-impls is required (at least 2 IMPL slugs or paths)' });
  const repoRoot = repoDirOption(options, io) ?? io.cwd;
  const result = await createProgram({
    implReferences: references,
    repoRoot,
    date: dateOption({}, io),
    ...(typeof options.slug === 'string' ? { slug: options.slug } : {}),
    ...(typeof options.title === 'string' ? { title: options.title } : {}),
  });
  printJson(io, {
    manifest_path: result.manifest_path,
    conflict_report: result.conflict_report,
    tier_assignments: result.tier_assignments,
    manifest: result.manifest,
    ...(result.validation_errors !== undefined ? { validation_errors: result.validation_errors } : {}),
  });
  const written = result.written;
  if (!written) {
    io.stderr(`polywave: error[V024_PROGRAM_INVALID]: the generated PROGRAM manifest is invalid (${result.validation_errors?.[0]?.message ?? 'see validation_errors'}); nothing written\n`);
    return 1;
  }
  if (result.conflict_report.conflicts.length > 0) {
    io.stderr(`create-program: ${result.conflict_report.conflicts.length} file conflict(s) across IMPLs; conflicting IMPLs assigned to separate tiers\n`);
  }
  return 0;
}
