import { PolywaveError } from '../../errors/polywave-error.js';
import { checkImplConflicts, type ImplConflictReport } from '../../protocol/impl-conflicts.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
import { loadProgramManifest, requireTier } from './program-file.js';

/** The check-program-conflicts result: Go's ConflictReport for the tier, plus the IMPLs without a doc yet. */
export interface ProgramTierConflicts extends ImplConflictReport {
  /** Tier IMPLs with no IMPL doc on disk (not scouted yet): they own nothing we can check. */
  impls_without_doc?: string[];
}

/**
 * P1 for one tier (check-program-conflicts, E28): the IMPL docs of the tier's IMPLs (found as
 * program-status finds them: `abs_path`, docs/IMPL/, complete/) must own disjoint files per
 * repository. Returns `checkImplConflicts`' report over those docs; conflicts are data (the CLI
 * exits 1, "BLOCKED"). Throws X001 (exit 2) for a tier the manifest does not have, and a coded
 * error (exit 2) for a tier IMPL whose doc exists but does not parse (its ownership is unknown).
 */
export async function checkProgramTierConflicts(options: { programPath: string; repoRoot: string; tier: number }): Promise<ProgramTierConflicts> {
  const { manifest } = await loadProgramManifest(options.programPath);
  const tier = requireTier(manifest, options.tier, options.programPath);
  const docs = await readProgramImplDocs(options.repoRoot, manifest);
  const impls = [];
  const withoutDoc: string[] = [];
  for (const slug of tier.impls) {
    const doc = docs.get(slug);
    if (doc === undefined) {
      withoutDoc.push(slug);
      continue;
    }
    if (doc.manifest === null) {
      throw new PolywaveError({ code: 'V046_PARSE_ERROR', message: `${doc.path}: ${doc.parseError ?? 'not a valid IMPL manifest'} (the file ownership of IMPL "${slug}" is unknown)` });
    }
    impls.push({ slug, manifest: doc.manifest });
  }
  const report = checkImplConflicts(impls);
  return { ...report, ...(withoutDoc.length > 0 ? { impls_without_doc: withoutDoc } : {}) };
}
