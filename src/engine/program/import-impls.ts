import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseProgram } from '../../protocol/parse-program.js';
import { validateProgramImport } from '../../protocol/program/import-mode.js';
import { programCodes } from '../../protocol/program/program-rules.js';
import { completionCounters, planProgramImport, tiersFromEntries, type ImportedImpl, type ProgramImportPlan } from '../../protocol/program/tier-assignment.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import type { ProgramManifest } from '../../protocol/schema/program-schema.js';
import { applyEdits, type YamlEdit } from '../../protocol/yaml/index.js';
import { listManifestFiles } from '../../store/list-manifests.js';
import { updateFileLocked } from '../../store/locked-write.js';
import { unreadableManifestError } from '../../store/manifest-file.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
import { completionEdits } from './completion-edits.js';
import { renderProgramYaml } from './create-program.js';
import { requireProgramManifest } from './program-file.js';
import { loadSourceImpl, loadSourceImpls, type LoadedSource } from './program-sources.js';

/** Options of {@link importImpls}. */
export interface ImportImplsOptions {
  /** The PROGRAM manifest (created in state PLANNING when missing). */
  programPath: string;
  repoRoot: string;
  /** IMPL slugs, file names or paths. */
  implReferences?: readonly string[];
  /** Import every `docs/IMPL/IMPL-*.yaml` and `docs/IMPL/complete/IMPL-*.yaml` instead. */
  discover?: boolean;
  /** `created` / `updated` (YYYY-MM-DD). */
  date: string;
}

/** The import-impls JSON (Go `ImportIMPLsData` keys, plus `skipped` and `warnings`). */
export interface ImportImplsResult {
  manifest_path: string;
  impls_imported: ImportedImpl[];
  impls_discovered?: string[];
  tier_assignments: Record<string, number>;
  p1_conflicts?: string[];
  p2_conflicts?: string[];
  /** The PROGRAM file was created. */
  created: boolean;
  /** An existing PROGRAM file was changed. */
  updated: boolean;
  /** Slugs the PROGRAM already had (not imported again). */
  skipped?: string[];
  /** Discovered IMPL docs that could not be read (skipped). */
  warnings?: string[];
}

/** Slug of a PROGRAM file name: `PROGRAM-<slug>.yaml` → `<slug>`. */
export function programSlugFromPath(programPath: string): string {
  return path.basename(programPath).replace(/\.ya?ml$/, '').replace(/^PROGRAM-/, '');
}

/** Edits that add the planned entries to an existing manifest: impls appended, slugs added to their tiers (new tiers appended in order), counters. */
export function importEdits(manifest: ProgramManifest, plan: ProgramImportPlan, date: string): YamlEdit[] {
  if (plan.entries.length === 0) return [];
  const edits: YamlEdit[] = [];
  plan.entries.forEach((entry, offset) => edits.push({ path: ['impls', manifest.impls.length + offset], value: entry }));
  const tiers = manifest.tiers.map((tier) => ({ ...tier, impls: [...tier.impls] }));
  const appended: Array<{ number: number; impls: string[] }> = [];
  for (const { number, impls } of tiersFromEntries(plan.entries)) {
    const index = tiers.findIndex((tier) => tier.number === number);
    if (index < 0) {
      appended.push({ number, impls });
      continue;
    }
    for (const slug of impls) {
      edits.push({ path: ['tiers', index, 'impls', tiers[index]!.impls.length], value: slug });
      tiers[index]!.impls.push(slug);
    }
  }
  appended.forEach((tier, offset) => edits.push({ path: ['tiers', manifest.tiers.length + offset], value: tier }));
  const after = { impls: [...manifest.impls, ...plan.entries], tiers: [...tiers, ...appended], completion: manifest.completion };
  edits.push(...completionEdits(after, ['tiers_complete', 'tiers_total', 'impls_complete', 'impls_total', 'total_agents', 'total_waves']));
  if (manifest.updated !== undefined && manifest.updated !== date) edits.push({ path: ['updated'], value: date });
  return edits;
}

async function discoverSources(repoRoot: string): Promise<{ sources: LoadedSource[]; discovered: string[]; warnings: string[] }> {
  const discovered = listManifestFiles(path.join(repoRoot, 'docs', 'IMPL'), 'IMPL');
  const sources: LoadedSource[] = [];
  const warnings: string[] = [];
  const seen = new Set<string>();
  for (const implPath of discovered) {
    try {
      const source = await loadSourceImpl(implPath, repoRoot);
      if (seen.has(source.slug)) {
        warnings.push(`${implPath}: slug "${source.slug}" already discovered; skipped`);
        continue;
      }
      seen.add(source.slug);
      sources.push(source);
    } catch (error) {
      if (!PolywaveError.isInstance(error)) throw error;
      warnings.push(`${implPath}: ${error.message}; skipped`);
    }
  }
  return { sources, discovered, warnings };
}

/**
 * import-impls (program-manifest.txt §13.4, E28A): adds existing IMPL docs to a PROGRAM — a new
 * one (state PLANNING, slug and title from the file name) or an existing one (locked,
 * format-preserving edits: entries appended, comments kept). Slugs already present are skipped.
 * Status from the IMPL state (`programStatusOfImpl`); tiers from file overlap against the existing
 * entries too (`planProgramImport`). P1/P2 findings of the result (E28A import mode, against the
 * IMPL docs on disk) are reported, not fatal. Refuses (nothing written): no IMPL found (N005,
 * exit 1); an explicitly named IMPL that cannot be read, an unreadable PROGRAM (exit 2).
 */
export async function importImpls(options: ImportImplsOptions): Promise<ImportImplsResult> {
  const found = options.discover
    ? await discoverSources(options.repoRoot)
    : { sources: await loadSourceImpls(options.implReferences ?? [], options.repoRoot), discovered: undefined, warnings: [] as string[] };
  if (found.sources.length === 0) {
    throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: options.discover ? `import-impls: no IMPL docs found in ${path.join(options.repoRoot, 'docs', 'IMPL')} (or complete/)` : 'import-impls: no IMPL docs given', exitCode: 1 });
  }

  let plan: ProgramImportPlan | undefined;
  let created = false;
  await mkdir(path.dirname(options.programPath), { recursive: true });
  const written = await updateFileLocked(
    options.programPath,
    async (current) => {
      if (!existsSync(options.programPath)) {
        created = true;
        plan = planProgramImport({ existing: { impls: [], tiers: [] }, existingDocs: new Map(), candidates: found.sources });
        const slug = programSlugFromPath(options.programPath);
        const tiers = tiersFromEntries(plan.entries);
        const manifest = { title: slug, program_slug: slug, state: 'PLANNING', created: options.date, updated: options.date, impls: plan.entries, tiers, completion: completionCounters({ impls: plan.entries, tiers }) };
        return renderProgramYaml(manifest, `PROGRAM: ${slug} (import-impls)`);
      }
      const parsed = parseProgram(current);
      if (parsed.fatal) throw unreadableManifestError(options.programPath, parsed.findings);
      const manifest = requireProgramManifest(parsed, options.programPath);
      const docs = await readProgramImplDocs(options.repoRoot, manifest);
      const existingDocs = new Map<string, ImplManifest>();
      for (const [slug, doc] of docs) if (doc.manifest) existingDocs.set(slug, doc.manifest);
      plan = planProgramImport({ existing: manifest, existingDocs, candidates: found.sources });
      const edits = importEdits(manifest, plan, options.date);
      return edits.length === 0 ? current : applyEdits(current, edits);
    },
    { allowMissing: true },
  );

  // E28A import mode on the result: P1 (disjoint files per tier) and P2 (frozen contracts) against the docs on disk.
  const after = parseProgram(written.text);
  const p1: string[] = [];
  const p2: string[] = [];
  if (after.manifest) {
    const docs = await readProgramImplDocs(options.repoRoot, after.manifest);
    for (const finding of validateProgramImport(after.manifest, docs)) {
      if (finding.code === programCodes.p1FileOverlap) p1.push(finding.message);
      if (finding.code === programCodes.p2ContractRedefinition) p2.push(finding.message);
    }
  }
  const result = plan!;
  return {
    manifest_path: options.programPath,
    impls_imported: result.imported,
    ...(found.discovered !== undefined ? { impls_discovered: found.discovered } : {}),
    tier_assignments: result.tier_assignments,
    ...(p1.length > 0 ? { p1_conflicts: p1 } : {}),
    ...(p2.length > 0 ? { p2_conflicts: p2 } : {}),
    created,
    updated: !created && written.changed,
    ...(result.skipped.length > 0 ? { skipped: result.skipped } : {}),
    ...(found.warnings.length > 0 ? { warnings: found.warnings } : {}),
  };
}
