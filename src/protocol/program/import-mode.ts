import type { Finding } from '../../errors/finding.js';
import type { Locate } from '../parse-impl.js';
import type { ImplManifest } from '../schema/impl-schema.js';
import type { ProgramImpl, ProgramManifest } from '../schema/program-schema.js';
import { resolveFreezeAt } from './freeze-at.js';
import { programFinding, formatProgramPath } from './program-rule.js';
import { contractLocationFile, normalizeRelativePath, programCodes } from './program-rules.js';

/**
 * One IMPL doc as the caller (the CLI) found it on disk for a program IMPL slug:
 * `docs/IMPL/IMPL-<slug>.yaml` or `docs/IMPL/complete/IMPL-<slug>.yaml` (or `abs_path`).
 * `manifest` is null when the file exists but does not parse; `parseError` then says why.
 */
export interface ProgramImplDoc {
  path: string;
  manifest: ImplManifest | null;
  parseError?: string;
}

/** Options of {@link validateProgramImport}. */
export interface ValidateProgramImportOptions {
  /** Line/column lookup of the PROGRAM manifest (from `parseProgram`). */
  locate?: Locate;
}

const noLocation: Locate = () => undefined;

/**
 * IMPL doc states accepted for program status `reviewed` (E28A state consistency): Go's
 * "REVIEWED or later" set plus the spec's `SCOUT_COMPLETE` (program-manifest.txt §13.4).
 */
export const reviewedOrLaterStates: readonly string[] = [
  'SCOUT_COMPLETE',
  'REVIEWED',
  'SCAFFOLD_PENDING',
  'WAVE_PENDING',
  'WAVE_EXECUTING',
  'WAVE_MERGING',
  'WAVE_VERIFIED',
  'COMPLETE',
];

function quote(value: string | undefined): string {
  return JSON.stringify(value ?? '');
}

/** Repository of an ownership row for P1: the row's `repo`, else the doc's `repository`, by base name. */
function repoKey(row: { repo?: string | undefined }, doc: ImplManifest): string {
  const raw = (row.repo ?? '').trim() || (doc.repository ?? '').trim();
  const trimmed = raw.replace(/[\\/]+$/, '');
  return trimmed.split(/[\\/]/).pop() ?? '';
}

/** Tiers in listing order with their distinct IMPL slugs. */
function tierListing(manifest: ProgramManifest): Array<{ number: number | undefined; slugs: string[] }> {
  return manifest.tiers.map((tier) => ({ number: tier.number, slugs: [...new Set(tier.impls)] }));
}

/** Tier numbers whose every listed IMPL has manifest status `complete` (non-empty tiers only). */
export function completedTiers(manifest: ProgramManifest, statusOf: (slug: string) => string | undefined): Set<number> {
  const complete = new Set<number>();
  for (const tier of manifest.tiers) {
    if (tier.number === undefined || tier.impls.length === 0) continue;
    if (tier.impls.every((slug) => statusOf(slug) === 'complete')) complete.add(tier.number);
  }
  return complete;
}

function manifestStatusOf(manifest: ProgramManifest): (slug: string) => string | undefined {
  const statuses = new Map<string, string | undefined>();
  for (const impl of manifest.impls) if (impl.slug !== undefined && !statuses.has(impl.slug)) statuses.set(impl.slug, impl.status);
  return (slug) => statuses.get(slug);
}

/**
 * Program contracts frozen now (P2/E30): `freeze_at` resolves to tier N (see `resolveFreezeAt`)
 * and every IMPL of tier N has status `complete`. Returns contract name → freeze tier.
 */
export function frozenProgramContracts(manifest: ProgramManifest): Map<string, number> {
  const complete = completedTiers(manifest, manifestStatusOf(manifest));
  const frozen = new Map<string, number>();
  for (const contract of manifest.program_contracts) {
    const name = (contract.name ?? '').trim();
    if (name === '' || frozen.has(name)) continue;
    const point = resolveFreezeAt(manifest, contract.freeze_at);
    if (point.kind === 'tier' && complete.has(point.tier)) frozen.set(name, point.tier);
  }
  return frozen;
}

/**
 * Import-mode validation (program-manifest.txt §13.4, E28A; Go `ValidateProgramImportMode`).
 * Pure: the caller reads the IMPL docs and passes them keyed by program IMPL slug (absent key =
 * no file found). Checks, per IMPL in manifest order, then P1 per tier:
 *
 * - V031: an IMPL with status `reviewed`/`complete` has a doc, and the doc parses.
 * - V032: its doc state is consistent — `reviewed` needs REVIEWED-or-later
 *   ({@link reviewedOrLaterStates}), `complete` needs COMPLETE.
 * - P2 (V030): no IMPL doc (any status, whenever provided) redefines — by interface contract
 *   name — a program contract frozen at a tier *before* the IMPL's tier. Go flags IMPLs of the
 *   freezing tier too, i.e. the producer that defined the contract; we do not.
 * - P1 (V029): within each tier (as listed in `tiers`), the provided docs' `file_ownership` is
 *   disjoint per (repo, file). Repo = row `repo`, else doc `repository`, compared by base name;
 *   an unknown repo conflicts with any repo (conservative). Go ignores repo and also reports an
 *   IMPL against itself when it lists a file twice; we report each other-IMPL pair once.
 */
export function validateProgramImport(
  manifest: ProgramManifest,
  implDocs: ReadonlyMap<string, ProgramImplDoc>,
  options: ValidateProgramImportOptions = {},
): Finding[] {
  const locate = options.locate ?? noLocation;
  const findings: Finding[] = [];
  const frozen = frozenProgramContracts(manifest);
  // Outside round P19-04: a contract with the engine's freeze record (freeze-contracts wrote `frozen_blob` when its tier
  // completed) stays frozen whatever the tiers say now — a plan re-ordered by hand (the IMPLs that produced it moved to a
  // later tier, a pending IMPL moved to its tier) no longer has that tier complete, and its IMPLs were exempt as
  // producers: the "tier-1" IMPL changed the frozen file, caught only by the freeze after finalize-tier merged it.
  // Such a freeze exempts only the IMPLs that are `complete` (its producers), in any tier.
  const recorded = new Map<string, number>();
  for (const contract of manifest.program_contracts) {
    const name = (contract.name ?? '').trim();
    if (name !== '' && !recorded.has(name) && (contract.frozen_blob ?? '').trim() !== '' && contract.frozen_at_tier !== undefined) recorded.set(name, contract.frozen_at_tier);
  }
  const frozenAtTier = (name: string): number | undefined => frozen.get(name) ?? recorded.get(name);
  /** Whether the IMPL (status, tier) may define or own frozen contract `name` (frozen at tier `frozenAt`): a producer. */
  const producer = (name: string, frozenAt: number, status: string, implTier: number | undefined): boolean =>
    implTier !== undefined && implTier <= frozenAt && (!recorded.has(name) || status === 'complete');
  // Frozen contract → its file (location, normalized), for P2 by file ownership.
  const frozenFiles = new Map<string, Array<{ name: string; tier: number }>>();
  for (const contract of manifest.program_contracts) {
    const name = (contract.name ?? '').trim();
    const tier = frozenAtTier(name);
    const location = contractLocationFile(contract.location);
    if (tier === undefined || location === '') continue;
    frozenFiles.set(location, [...(frozenFiles.get(location) ?? []).filter((entry) => entry.name !== name), { name, tier }]);
  }
  const tierOf = new Map<string, number>();
  for (const tier of manifest.tiers) for (const slug of tier.impls) if (tier.number !== undefined && !tierOf.has(slug)) tierOf.set(slug, tier.number);

  manifest.impls.forEach((impl, index) => {
    const slug = impl.slug ?? '';
    if (slug === '') return;
    const status = impl.status ?? '';
    const preExisting = status === 'reviewed' || status === 'complete';
    const doc = implDocs.get(slug);
    if (preExisting && doc === undefined) {
      findings.push(
        programFinding(
          locate,
          programCodes.implFileMissing,
          `IMPL ${quote(slug)} has status ${quote(status)} but IMPL-${slug}.yaml not found in docs/IMPL/ or docs/IMPL/complete/`,
          ['impls', index],
        ),
      );
      return;
    }
    if (doc === undefined) return;
    if (doc.manifest === null) {
      if (preExisting) {
        findings.push(
          programFinding(
            locate,
            programCodes.implFileMissing,
            `IMPL ${quote(slug)}: failed to parse ${doc.path}: ${doc.parseError ?? 'not a valid IMPL manifest'}`,
            ['impls', index],
          ),
        );
      }
      return;
    }
    const state = doc.manifest.state ?? '';
    if (status === 'reviewed' && !reviewedOrLaterStates.includes(state)) {
      findings.push(
        programFinding(
          locate,
          programCodes.implStateMismatch,
          `IMPL ${quote(slug)} has program status ${quote(status)} but IMPL doc state is ${quote(state)} (expected REVIEWED or later)`,
          ['impls', index, 'status'],
        ),
      );
    }
    if (status === 'complete' && state !== 'COMPLETE') {
      findings.push(
        programFinding(
          locate,
          programCodes.implStateMismatch,
          `IMPL ${quote(slug)} has program status ${quote(status)} but IMPL doc state is ${quote(state)} (expected COMPLETE)`,
          ['impls', index, 'status'],
        ),
      );
    }
    // P2: a frozen program contract may be consumed, never redefined, by a later tier.
    const implTier = tierOf.get(slug) ?? impl.tier;
    doc.manifest.interface_contracts.forEach((contract, contractIndex) => {
      const name = (contract.name ?? '').trim();
      const frozenAt = frozenAtTier(name);
      if (frozenAt === undefined || producer(name, frozenAt, status, implTier)) return;
      findings.push({
        code: programCodes.p2ContractRedefinition,
        message: `IMPL ${quote(slug)} redefines frozen program contract ${quote(name)}`,
        severity: 'error',
        field: formatProgramPath(['interface_contracts', contractIndex, 'name']),
        file: doc.path,
      });
    });
    // P2 by ownership: an agent that owns the frozen contract's file (any action) rewrites what
    // the consumers were built against — caught here, before a wave, not by the tier gate after.
    if (frozenFiles.size > 0 && implTier !== undefined) {
      doc.manifest.file_ownership.forEach((row, rowIndex) => {
        const file = normalizeRelativePath(row.file ?? '');
        for (const contract of frozenFiles.get(file) ?? []) {
          if (producer(contract.name, contract.tier, status, implTier)) continue;
          findings.push({
            code: programCodes.p2ContractRedefinition,
            message: `IMPL ${quote(slug)} owns ${file} (agent ${row.agent ?? '?'}, action ${row.action ?? 'unspecified'}), the file of program contract ${quote(contract.name)} frozen at tier ${contract.tier}: a frozen contract is consumed, never modified (P2) — move the change out of ${file} or re-plan the contract`,
            severity: 'error',
            field: formatProgramPath(['file_ownership', rowIndex, 'file']),
            file: doc.path,
          });
        }
      });
    }
  });

  // P1: IMPLs of one tier own disjoint files (per repository).
  for (const tier of tierListing(manifest)) {
    const owners = new Map<string, Array<{ slug: string; repo: string }>>();
    for (const slug of tier.slugs) {
      const doc = implDocs.get(slug);
      if (!doc?.manifest) continue;
      const seen = new Set<string>();
      doc.manifest.file_ownership.forEach((row, rowIndex) => {
        const file = normalizeRelativePath(row.file ?? '');
        if (file === '') return;
        const repo = repoKey(row, doc.manifest!);
        const key = JSON.stringify([repo, file]);
        if (seen.has(key)) return;
        seen.add(key);
        const entries = owners.get(file) ?? [];
        const other = entries.find((entry) => entry.slug !== slug && (entry.repo === '' || repo === '' || entry.repo === repo));
        if (other) {
          const inRepo = repo !== '' ? ` (repo ${quote(repo)})` : other.repo !== '' ? ` (repo ${quote(other.repo)})` : '';
          findings.push({
            code: programCodes.p1FileOverlap,
            message: `File ${file}${inRepo} owned by both ${other.slug} and ${slug} in tier ${tier.number ?? '?'} (violates P1 disjoint ownership)`,
            severity: 'error',
            field: formatProgramPath(['file_ownership', rowIndex, 'file']),
            file: doc.path,
          });
        }
        entries.push({ slug, repo });
        owners.set(file, entries);
      });
    }
  }
  return findings;
}

/** The statuses the tier loop itself writes or runs from; see {@link isHeldForHuman}. */
const loopImplStatuses: ReadonlySet<string> = new Set(['pending', 'scouting', 'reviewed', 'complete', 'executing']);

/** The E28A partition of one tier's IMPLs (see {@link partitionImplsByStatus}). */
export interface TierPartition {
  /** `pending` / `scouting`: run the Scout (E31). */
  needsScout: ProgramImpl[];
  /** `reviewed` / `complete` / `executing`: an IMPL doc exists; validate it, skip the Scout. */
  preExisting: ProgramImpl[];
  /** `blocked`, `not-suitable` or an unknown status: neither scouted nor executed automatically. */
  held: ProgramImpl[];
}

/**
 * E28A: splits the IMPLs listed in tier `tierNumber` by program status. Unlike Go (which sends
 * every other status to needsScout), `executing` IMPLs are pre-existing — re-scouting them would
 * discard work — and blocked/unknown ones are held for a human. Unknown slugs are skipped.
 */
export function partitionImplsByStatus(manifest: ProgramManifest, tierNumber: number): TierPartition {
  const partition: TierPartition = { needsScout: [], preExisting: [], held: [] };
  const tier = manifest.tiers.find((candidate) => candidate.number === tierNumber);
  if (!tier) return partition;
  for (const slug of new Set(tier.impls)) {
    const impl = manifest.impls.find((candidate) => candidate.slug === slug);
    if (!impl) continue;
    if (impl.status === 'pending' || impl.status === 'scouting') partition.needsScout.push(impl);
    else if (isHeldForHuman(impl.status)) partition.held.push(impl);
    else partition.preExisting.push(impl);
  }
  return partition;
}

/**
 * A status the tier loop leaves to a human: anything but the loop's own (`blocked`, `not-suitable`, an unknown value).
 * The start partition holds these, and the loop's own status writes never overwrite them (P15-06, P16-24): one list, so
 * the two cannot drift apart.
 */
export function isHeldForHuman(status: string | undefined): boolean {
  return !loopImplStatuses.has(status ?? '');
}
