import { existsSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { formatTimestamp } from '../../protocol/freeze.js';
import { checkImplConflicts, type ImplFileConflict } from '../../protocol/impl-conflicts.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { validateImpl } from '../../protocol/validate-impl.js';
import { criticGatePasses, e37Required } from '../../protocol/waves.js';
import { editImpl, loadImpl } from '../../store/manifest-file.js';
import { implDocCandidates } from '../../store/program-impl-docs.js';
import { prepareWave } from '../prepare-wave.js';
import type { WorktreeInfo } from '../worktrees.js';
import { errorText } from '../step-text.js';
import { loadProgramTier, openMainCheckout, type TierOptions } from './tier-common.js';
import { ensureProgramWorktrees, requireTierMayStart, type ProgramWorktree } from './tier-worktrees.js';

/** One IMPL's validation (Go `IMPLValidationResult` keys plus ours). */
export interface TierImplValidation {
  impl_slug: string;
  valid: boolean;
  /** Auto-fixes applied (always 0: prepare-tier does not rewrite IMPL docs; `validate --fix` does). */
  fixed: number;
  errors?: string[];
  /** The IMPL doc validated ('' when none was found). */
  impl_path: string;
  /** E37: not-required · passed · skipped (synthetic PASS written by --skip-critic) · blocked. */
  critic: 'not-required' | 'passed' | 'skipped' | 'blocked' | 'not-checked';
}

/** The `prepare-tier` JSON (Go `PrepareTierResult` keys plus ours). */
export interface PrepareTierResult {
  tier: number;
  conflict_check: { conflicts: ImplFileConflict[]; disjoint: boolean };
  validations: TierImplValidation[];
  branches: ProgramWorktree[];
  success: boolean;
  /** Why it did not succeed (absent on success). */
  errors?: string[];
  /** With `runPrepareWave`: prepare-wave per IMPL (Go `IMPLPrepareWaveResult` keys plus `merge_target`, `failed_step`). */
  prepare_wave_results?: TierPrepareWaveResult[];
}

/** One IMPL's prepare-wave inside prepare-tier. */
export interface TierPrepareWaveResult {
  impl_slug: string;
  success: boolean;
  worktrees: WorktreeInfo[];
  /** The branch the IMPL's wave merges into (P5: its IMPL branch unless `mergeTarget` was given). */
  merge_target: string;
  error?: string;
}

export interface PrepareTierOptions extends TierOptions {
  /** E37: write a synthetic PASS critic report where the critic gate would block. */
  skipCritic?: boolean;
  /** Then run prepare-wave for every IMPL of the tier, one after the other (state committed between them). */
  runPrepareWave?: boolean;
  /** The wave prepare-wave prepares (default 1). */
  wave?: number;
  /** The branch every IMPL's wave merges into; default — and what P5 asks — each IMPL's own IMPL branch. */
  mergeTarget?: string;
  now?: () => Date;
  signal?: AbortSignal;
}

/**
 * E28A/E28B/E37, before a tier's waves run: (1) P1 — the tier's IMPLs own disjoint files (a
 * conflict stops here, `success: false`); (2) every IMPL doc exists and validates (E16; all
 * failures collected); (3) E37 — where the critic threshold is met the critic gate must pass
 * (auto mode), `skipCritic` writes a synthetic PASS instead; (4) only when all of that holds, the
 * IMPL branches and worktrees ({@link ensureProgramWorktrees}). IMPL docs are never rewritten
 * (Go applies gate-type fixes and saves them); a missing IMPL doc is a validation failure
 * (exit 1), not a crash. Bad input (manifest, tier, repository) throws a coded error (exit 2).
 */
export async function prepareTier(options: PrepareTierOptions): Promise<PrepareTierResult> {
  const loaded = await loadProgramTier(options.programPath, options.tier);
  const checkout = await openMainCheckout(options.repoRoot, options.env);
  // P3: no tier is prepared before every earlier tier is complete (nothing changed otherwise).
  await requireTierMayStart(loaded, checkout, 'prepare-tier');
  const now = options.now ?? (() => new Date());

  // The IMPL docs of the tier (abs_path, docs/IMPL/, docs/IMPL/complete/, …), in tier order.
  const docs: Array<{ slug: string; path: string; manifest: ImplManifest | null; findings: string[] }> = [];
  const missing: string[] = [];
  for (const slug of loaded.slugs) {
    const entry = loaded.manifest.impls.find((impl) => impl.slug === slug);
    const found = implDocCandidates(checkout.root, slug, entry?.abs_path).find((candidate) => existsSync(candidate));
    if (found === undefined) {
      missing.push(slug);
      continue;
    }
    const { parsed } = await loadImpl(found);
    const findings = [...parsed.findings];
    if (parsed.manifest) findings.push(...validateImpl({ manifest: parsed.manifest, locate: parsed.locate }));
    const errors = findings.filter((finding) => finding.severity === 'error' || finding.severity === 'fatal').map((finding) => `${finding.code}: ${finding.message}${finding.line !== undefined ? ` (line ${finding.line})` : ''}`);
    docs.push({ slug, path: found, manifest: parsed.manifest, findings: errors });
  }

  // 1. P1 across the tier's IMPLs (those with a doc).
  const report = checkImplConflicts(docs.filter((doc) => doc.manifest !== null).map((doc) => ({ slug: doc.slug, manifest: doc.manifest! })));
  const result: PrepareTierResult = {
    tier: loaded.tier,
    conflict_check: { conflicts: report.conflicts, disjoint: report.conflicts.length === 0 },
    validations: [],
    branches: [],
    success: false,
  };
  if (report.conflicts.length > 0) {
    result.errors = [`P1: IMPLs of tier ${loaded.tier} own the same files: ${report.conflicts.map((conflict) => `${conflict.file} (${conflict.impls.join(', ')})`).join('; ')} — move one IMPL to another tier or change its ownership`];
    return result;
  }

  // 2 + 3. Validation and the E37 critic gate, per IMPL; every failure collected.
  for (const slug of loaded.slugs) {
    const doc = docs.find((candidate) => candidate.slug === slug);
    if (doc === undefined) {
      const tried = implDocCandidates(checkout.root, slug).filter((candidate) => candidate.endsWith('.yaml')).slice(0, 2);
      result.validations.push({ impl_slug: slug, valid: false, fixed: 0, impl_path: '', critic: 'not-checked', errors: [`N005_IMPL_NOT_FOUND: no IMPL doc for ${slug} (looked in ${tried.map((file) => path.relative(checkout.root, file)).join(', ')}, …) — scout it first (E28)`] });
      continue;
    }
    const validation: TierImplValidation = { impl_slug: slug, valid: doc.findings.length === 0, fixed: 0, impl_path: doc.path, critic: 'not-checked', ...(doc.findings.length > 0 ? { errors: [...doc.findings] } : {}) };
    result.validations.push(validation);
    if (!validation.valid || doc.manifest === null) continue;
    // E37 (auto mode, as the tier loop runs): required only at the threshold.
    if (!e37Required(doc.manifest)) {
      validation.critic = 'not-required';
    } else if (criticGatePasses(doc.manifest, { auto: true })) {
      validation.critic = 'passed';
    } else if (options.skipCritic) {
      const critic = { verdict: 'PASS', summary: 'Skipped by operator (prepare-tier --skip-critic)', reviewed_at: formatTimestamp(now()), issue_count: 0, agent_reviews: {} };
      try {
        await editImpl(doc.path, () => ({ edits: [{ path: ['critic_report'], value: critic }], outcome: undefined }));
        validation.critic = 'skipped';
      } catch (error) {
        validation.valid = false;
        validation.critic = 'blocked';
        validation.errors = [`P009_CRITIC_GATE_FAILED: E37: could not write the synthetic PASS critic report: ${errorText(error)}`];
      }
    } else {
      validation.valid = false;
      validation.critic = 'blocked';
      validation.errors = [`P009_CRITIC_GATE_FAILED: E37 critic gate required but not satisfied (verdict ${doc.manifest.critic_report?.verdict ?? 'none'}) — run \`polywave run-critic\` or pass --skip-critic`];
    }
  }
  const invalid = result.validations.filter((validation) => !validation.valid);
  if (invalid.length > 0) {
    result.errors = invalid.map((validation) => `${validation.impl_slug}: ${(validation.errors ?? []).join('; ')}`);
    return result;
  }

  // 4. E28B: the IMPL branches and worktrees.
  try {
    const created = await ensureProgramWorktrees(loaded, checkout, { ...(options.env ? { env: options.env } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    result.branches = created.worktrees;
    if (!created.success) {
      result.errors = (created.failures ?? []).map((failure) => `G001_WORKTREE_CREATE_FAILED: ${failure.impl_slug}: ${failure.error}`);
      return result;
    }
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.exitCode === 2) throw error;
    result.errors = [`G001_WORKTREE_CREATE_FAILED: ${errorText(error)}`];
    return result;
  }
  result.success = true;

  // 5. Optionally prepare-wave per IMPL, its merges going to its IMPL branch (P5).
  if (options.runPrepareWave) {
    result.prepare_wave_results = [];
    const wave = options.wave ?? 1;
    for (const branch of result.branches) {
      const doc = docs.find((candidate) => candidate.slug === branch.impl_slug)!;
      const mergeTarget = options.mergeTarget ?? branch.branch;
      const entry: TierPrepareWaveResult = { impl_slug: branch.impl_slug, success: false, worktrees: [], merge_target: mergeTarget };
      try {
        const prepared = await prepareWave({
          implPath: doc.path,
          wave,
          repoDir: checkout.root,
          mergeTarget,
          commitState: true,
          now,
          ...(options.skipCritic ? { skipCritic: true } : {}),
          ...(options.env ? { env: options.env } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        entry.success = prepared.success;
        entry.worktrees = prepared.worktrees;
        const failed = prepared.steps.find((step) => step.status === 'failed');
        if (!prepared.success) entry.error = failed ? `[${failed.step}] ${failed.detail}` : 'prepare-wave failed';
      } catch (error) {
        entry.error = PolywaveError.isInstance(error) ? `${error.code}: ${error.message}` : errorText(error);
      }
      result.prepare_wave_results.push(entry);
    }
    const failures = result.prepare_wave_results.filter((entry) => !entry.success);
    if (failures.length > 0) {
      result.success = false;
      result.errors = failures.map((entry) => `N001_PREPARE_WAVE_FAILED: ${entry.impl_slug}: ${entry.error ?? 'failed'}`);
    }
  }
  return result;
}
