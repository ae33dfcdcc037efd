import { checkImplConflicts, type ImplConflictReport } from '../impl-conflicts.js';
import type { ImplManifest } from '../schema/impl-schema.js';
import type { ProgramImplStatus, ProgramManifest } from '../schema/program-schema.js';
import { completedTiers } from './import-mode.js';
import { implStateToProgramStatus } from './status.js';

/** An IMPL doc that becomes an entry of a PROGRAM (create-program, import-impls). */
export interface ProgramSourceImpl {
  slug: string;
  manifest: ImplManifest;
  /** Recorded as `abs_path` when given (an IMPL doc outside `<repo>/docs/IMPL/`, e.g. another repository). */
  absPath?: string;
}

/** One `impls` entry as written to the manifest (Go's `omitempty` fields left out when empty). */
export interface ProgramImplEntry {
  slug: string;
  abs_path?: string;
  title: string;
  tier: number;
  depends_on?: string[];
  estimated_agents?: number;
  estimated_waves?: number;
  status: ProgramImplStatus;
}

/** One `tiers` entry as written. */
export interface ProgramTierEntry {
  number: number;
  impls: string[];
}

/** The `completion` counters (program-manifest.txt §8). */
export interface ProgramCompletionCounters {
  tiers_complete: number;
  tiers_total: number;
  impls_complete: number;
  impls_total: number;
  total_agents: number;
  total_waves: number;
}

/**
 * Program status of an IMPL doc (§13.4 status mapping, extended as E32 program-status maps it):
 * REVIEWED / SCOUT_COMPLETE / SCAFFOLD_PENDING → `reviewed`, COMPLETE → `complete`, `WAVE_*` →
 * `executing` (never re-scouted), scouting states → `scouting`, BLOCKED → `blocked`,
 * NOT_SUITABLE → `not-suitable`, anything else → `pending`. Go maps REVIEWED to `pending` and
 * writes `in-progress`, which its own validator rejects.
 */
export function programStatusOfImpl(manifest: ImplManifest): ProgramImplStatus {
  return implStateToProgramStatus(manifest.state) ?? 'pending';
}

/** Which IMPLs share a file (per repository) with which (P1), from {@link checkImplConflicts}'s conflicts. */
export function overlapsOf(report: Pick<ImplConflictReport, 'conflicts'>): Map<string, Set<string>> {
  const overlaps = new Map<string, Set<string>>();
  for (const conflict of report.conflicts) {
    for (const a of conflict.impls) {
      for (const b of conflict.impls) {
        if (a === b) continue;
        const set = overlaps.get(a) ?? new Set<string>();
        set.add(b);
        overlaps.set(a, set);
      }
    }
  }
  return overlaps;
}

/**
 * P1 tier assignment: each slug, in the given order, goes to the lowest tier (≥ 1) holding none of
 * the IMPLs it shares files with — the IMPLs already placed and the `fixed` ones (existing
 * entries of the PROGRAM keep their tiers). Overlap therefore pushes an IMPL to a later tier;
 * without `fixed` this is exactly `checkImplConflicts`' `tier_suggestion`. Deterministic.
 */
export function assignTiersByOverlap(
  slugs: readonly string[],
  overlaps: ReadonlyMap<string, ReadonlySet<string>>,
  fixed: ReadonlyMap<string, number> = new Map(),
): Record<string, number> {
  const members = new Map<number, string[]>();
  for (const [slug, tier] of fixed) members.set(tier, [...(members.get(tier) ?? []), slug]);
  const assignments: Record<string, number> = {};
  for (const slug of slugs) {
    if (Object.hasOwn(assignments, slug)) continue;
    const overlapping = overlaps.get(slug) ?? new Set<string>();
    let tier = 1;
    while ((members.get(tier) ?? []).some((member) => overlapping.has(member))) tier += 1;
    members.set(tier, [...(members.get(tier) ?? []), slug]);
    assignments[slug] = tier;
  }
  return assignments;
}

/** The `impls` entry for an IMPL doc placed in `tier`; `dependsOn` = the overlapping IMPLs of earlier tiers (sorted). */
export function programImplEntry(source: ProgramSourceImpl, tier: number, dependsOn: readonly string[]): ProgramImplEntry {
  const waves = source.manifest.waves ?? [];
  const agents = waves.reduce((total, wave) => total + (wave.agents ?? []).length, 0);
  // Key order as the spec lists the fields (§5.1); optional ones only when known.
  const entry: Record<string, unknown> = { slug: source.slug };
  if (source.absPath) entry.abs_path = source.absPath;
  entry.title = (source.manifest.title ?? '').trim() || source.slug;
  entry.tier = tier;
  if (dependsOn.length > 0) entry.depends_on = [...dependsOn].sort();
  if (agents > 0) entry.estimated_agents = agents;
  if (waves.length > 0) entry.estimated_waves = waves.length;
  entry.status = programStatusOfImpl(source.manifest);
  return entry as unknown as ProgramImplEntry;
}

/** Tiers from the entries' `tier` numbers: one entry per used number, ascending, slugs in entry order. */
export function tiersFromEntries(entries: ReadonlyArray<{ slug: string; tier: number }>): ProgramTierEntry[] {
  const byTier = new Map<number, string[]>();
  for (const entry of entries) byTier.set(entry.tier, [...(byTier.get(entry.tier) ?? []), entry.slug]);
  return [...byTier.entries()].sort((a, b) => a[0] - b[0]).map(([number, impls]) => ({ number, impls }));
}

/**
 * The completion counters of a manifest as it stands (§8, §15.5): totals from the `tiers` and
 * `impls` lists, `impls_complete` = entries with status `complete`, `tiers_complete` = non-empty
 * tiers whose every IMPL is complete. `total_agents` / `total_waves` are the sums of the
 * estimates (kept when no entry has an estimate and `previous` has a value).
 */
export function completionCounters(manifest: CountableProgram, previous?: Partial<ProgramCompletionCounters>): ProgramCompletionCounters {
  const statuses = new Map<string, string | undefined>();
  for (const impl of manifest.impls) if (impl.slug !== undefined && !statuses.has(impl.slug)) statuses.set(impl.slug, impl.status);
  const agents = manifest.impls.reduce((total, impl) => total + (impl.estimated_agents ?? 0), 0);
  const waves = manifest.impls.reduce((total, impl) => total + (impl.estimated_waves ?? 0), 0);
  const anyEstimate = manifest.impls.some((impl) => impl.estimated_agents !== undefined || impl.estimated_waves !== undefined);
  return {
    tiers_complete: completedTiers(manifest as unknown as ProgramManifest, (slug) => statuses.get(slug)).size,
    tiers_total: manifest.tiers.length,
    impls_complete: manifest.impls.filter((impl) => impl.status === 'complete').length,
    impls_total: manifest.impls.length,
    total_agents: anyEstimate || previous?.total_agents === undefined ? agents : previous.total_agents,
    total_waves: anyEstimate || previous?.total_waves === undefined ? waves : previous.total_waves,
  };
}

/** What {@link completionCounters} reads: the normalized manifest or freshly built entries. */
export interface CountableProgram {
  impls: ReadonlyArray<{ slug?: string | undefined; status?: string | undefined; estimated_agents?: number | undefined; estimated_waves?: number | undefined }>;
  tiers: ReadonlyArray<{ number?: number | undefined; impls: readonly string[] }>;
}

/** The result of {@link buildProgramFromImpls}: the `create-program` JSON parts. */
export interface BuiltProgram {
  /** The manifest data, in the spec's key order. */
  manifest: {
    title: string;
    program_slug: string;
    state: 'REVIEWED';
    created: string;
    updated: string;
    impls: ProgramImplEntry[];
    tiers: ProgramTierEntry[];
    completion: ProgramCompletionCounters;
  };
  conflict_report: ImplConflictReport;
  tier_assignments: Record<string, number>;
}

/** Go's derived names: slug `a-and-b`, title `Auto-generated PROGRAM: <IMPL titles>`. */
export function derivedProgramNames(impls: readonly ProgramSourceImpl[]): { slug: string; title: string } {
  return {
    slug: impls.map((impl) => impl.slug).join('-and-'),
    title: `Auto-generated PROGRAM: ${impls.map((impl) => (impl.manifest.title ?? '').trim() || impl.slug).join(', ')}`,
  };
}

/**
 * create-program (E28, P1): a PROGRAM from existing IMPL docs. Tiers come from file-ownership
 * overlap (`checkImplConflicts`' tier suggestion: IMPLs sharing a file never share a tier); an
 * IMPL pushed behind overlapping IMPLs `depends_on` them, so the order is explicit and validates.
 * State `REVIEWED` (the IMPLs are already planned, as Go writes it); `created`/`updated` = `date`
 * (YYYY-MM-DD, spec §3). Pure.
 */
export function buildProgramFromImpls(options: { impls: readonly ProgramSourceImpl[]; slug?: string; title?: string; date: string }): BuiltProgram {
  const report = checkImplConflicts(options.impls.map((impl) => ({ slug: impl.slug, manifest: impl.manifest })));
  const overlaps = overlapsOf(report);
  const assignments = assignTiersByOverlap(
    options.impls.map((impl) => impl.slug),
    overlaps,
  );
  const entries = options.impls.map((impl) => {
    const tier = assignments[impl.slug]!;
    const before = [...(overlaps.get(impl.slug) ?? [])].filter((other) => (assignments[other] ?? tier) < tier);
    return programImplEntry(impl, tier, before);
  });
  const tiers = tiersFromEntries(entries);
  const derived = derivedProgramNames(options.impls);
  return {
    manifest: {
      title: options.title?.trim() || derived.title,
      program_slug: options.slug?.trim() || derived.slug,
      state: 'REVIEWED',
      created: options.date,
      updated: options.date,
      impls: entries,
      tiers,
      completion: completionCounters({ impls: entries, tiers }),
    },
    conflict_report: report,
    tier_assignments: assignments,
  };
}

/** One imported IMPL in the import-impls JSON (Go `ImportedIMPL`). */
export interface ImportedImpl {
  slug: string;
  title: string;
  status: string;
  assigned_tier: number;
  agent_count: number;
  wave_count: number;
}

/** The plan of {@link planProgramImport}. */
export interface ProgramImportPlan {
  /** New `impls` entries, in candidate order. */
  entries: ProgramImplEntry[];
  imported: ImportedImpl[];
  /** Candidates whose slug the PROGRAM (or an earlier candidate) already has. */
  skipped: string[];
  /** Tier of every imported IMPL. */
  tier_assignments: Record<string, number>;
}

/**
 * import-impls (§13.4, E28A): which candidates to add and where. Slugs already in the PROGRAM
 * are skipped. Each new IMPL goes to the lowest tier in which it shares no file (P1, per
 * repository) with an IMPL already there — the existing entries (at their tiers; their docs in
 * `existingDocs`, an entry without a doc owns nothing we know of) and the candidates placed
 * before it. Go only compares the new IMPLs with one another. Pure.
 */
export function planProgramImport(options: {
  existing: Pick<ProgramManifest, 'impls' | 'tiers'>;
  existingDocs: ReadonlyMap<string, ImplManifest>;
  candidates: readonly ProgramSourceImpl[];
}): ProgramImportPlan {
  const present = new Set(options.existing.impls.map((impl) => impl.slug).filter((slug): slug is string => !!slug));
  const skipped: string[] = [];
  const fresh: ProgramSourceImpl[] = [];
  for (const candidate of options.candidates) {
    if (present.has(candidate.slug)) {
      skipped.push(candidate.slug);
      continue;
    }
    present.add(candidate.slug);
    fresh.push(candidate);
  }
  const fixed = new Map<string, number>();
  for (const tier of options.existing.tiers) for (const slug of tier.impls) if (tier.number !== undefined && !fixed.has(slug)) fixed.set(slug, tier.number);
  for (const impl of options.existing.impls) if (impl.slug && impl.tier !== undefined && !fixed.has(impl.slug)) fixed.set(impl.slug, impl.tier);

  const known = [...options.existingDocs.entries()].filter(([slug]) => fixed.has(slug)).map(([slug, manifest]) => ({ slug, manifest }));
  const report = checkImplConflicts([...known, ...fresh.map((impl) => ({ slug: impl.slug, manifest: impl.manifest }))]);
  const overlaps = overlapsOf(report);
  const placed = assignTiersByOverlap(
    fresh.map((impl) => impl.slug),
    overlaps,
    fixed,
  );
  const tierOf = (slug: string) => placed[slug] ?? fixed.get(slug);
  const entries: ProgramImplEntry[] = [];
  const imported: ImportedImpl[] = [];
  const assignments: Record<string, number> = {};
  for (const impl of fresh) {
    const tier = placed[impl.slug]!;
    const before = [...(overlaps.get(impl.slug) ?? [])].filter((other) => (tierOf(other) ?? tier) < tier);
    const entry = programImplEntry(impl, tier, before);
    entries.push(entry);
    assignments[impl.slug] = tier;
    imported.push({ slug: entry.slug, title: entry.title, status: entry.status, assigned_tier: tier, agent_count: entry.estimated_agents ?? 0, wave_count: entry.estimated_waves ?? 0 });
  }
  return { entries, imported, skipped, tier_assignments: assignments };
}
