import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { checkImplConflicts } from '../../protocol/impl-conflicts.js';
import { implSlugFromPath } from '../../protocol/names.js';
import { loadImpl } from '../../store/manifest-file.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { requireManifest } from './shared.js';

/**
 * `check-impl-conflicts --impls a,b [--impls c] [--repo-dir D]` — P1 across IMPL docs: files
 * owned by more than one of them (per repository), the groups of IMPLs that share files, and a
 * tier per IMPL that keeps each tier disjoint. References are slugs (looked up in
 * `<repo-dir>/docs/IMPL/` and `complete/`), file names or paths. Prints `{conflicts[{file, impls,
 * repos?}], disjoint_sets, tier_suggestion}`. Exit 0 disjoint, 1 conflicts, 2 bad input.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const references = Array.isArray(options.impls) ? (options.impls as string[]) : [];
  if (references.length === 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--impls is required (IMPL slugs or paths, comma-separated or repeated)' });
  const base = repoDirOption(options, io) ?? io.cwd;
  const impls = [];
  for (const reference of references) {
    const implPath = path.isAbsolute(reference) ? reference : resolveManifestPath(reference, { cwd: base, kind: 'impl' }).path;
    const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
    impls.push({ slug: implSlugFromPath(implPath, manifest), manifest });
  }
  const report = checkImplConflicts(impls);
  if (report.conflicts.length > 0) io.stderr(`check-impl-conflicts: ${report.conflicts.length} file ownership conflict(s) detected (P1)\n`);
  printJson(io, report);
  return report.conflicts.length > 0 ? 1 : 0;
}
