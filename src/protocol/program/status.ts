import type { ProgramImplStatus, ProgramManifest } from '../schema/program-schema.js';
import { resolveFreezeAt } from './freeze-at.js';

/**
 * E32: the program status of an IMPL whose doc is in `state`. Our mapping (Go's
 * `IMPLStateToStatus` produces `in-progress`/`pending`, which the program validator rejects —
 * reference §12 item 10):
 *
 * - COMPLETE → `complete`
 * - WAVE_PENDING / WAVE_EXECUTING / WAVE_MERGING / WAVE_VERIFIED (any `WAVE_*`) → `executing`
 * - REVIEWED / SCAFFOLD_PENDING / SCOUT_COMPLETE (spec §13.4 name) → `reviewed`
 * - SCOUT_PENDING / SCOUT_VALIDATING / SCOUTING (spec name) / INTERVIEWING (any other `SCOUT_*`)
 *   → `scouting`
 * - BLOCKED → `blocked`; NOT_SUITABLE → `not-suitable`
 * - anything else (empty, unknown) → undefined: the manifest's own status stands.
 */
export function implStateToProgramStatus(state: string | undefined | null): ProgramImplStatus | undefined {
  const value = (state ?? '').trim();
  if (value === 'COMPLETE') return 'complete';
  if (value.startsWith('WAVE_')) return 'executing';
  if (value === 'REVIEWED' || value === 'SCAFFOLD_PENDING' || value === 'SCOUT_COMPLETE') return 'reviewed';
  if (value.startsWith('SCOUT_') || value === 'SCOUTING' || value === 'INTERVIEWING') return 'scouting';
  if (value === 'BLOCKED') return 'blocked';
  if (value === 'NOT_SUITABLE') return 'not-suitable';
  return undefined;
}

/** One IMPL of a tier in the status report. */
export interface ProgramImplStatusEntry {
  slug: string;
  /** Title from the manifest's `impls` entry ('' for an undefined slug). */
  title: string;
  /** Status written in the PROGRAM manifest ('' when the slug or its status is missing). */
  manifest_status: string;
  /** `state` of the IMPL doc on disk, or null when the caller found none. */
  disk_state: string | null;
  /** Effective status: mapped from `disk_state` when it maps, else the manifest status (else `pending`). */
  status: string;
  /** True when the doc's state maps to a different status than the manifest records (P4: manifest stale). */
  mismatch: boolean;
  /** Live wave progress of the IMPL doc, when the caller read it: waves in all, waves complete. */
  waves?: WaveProgress;
}

/** How far an IMPL's waves are (from its doc's completion reports). */
export interface WaveProgress {
  total: number;
  complete: number;
}

/** One tier in the status report (Go `TierStatusDetail`, key `impl_statuses` kept). */
export interface ProgramTierStatus {
  number: number;
  description?: string;
  /** True when every listed IMPL's effective status is `complete` (an empty tier counts, as in Go). */
  complete: boolean;
  impl_statuses: ProgramImplStatusEntry[];
}

/** Freeze state of one program contract (Go `ContractStatus` plus `freeze_tier`). */
export interface ProgramContractStatus {
  name: string;
  location: string;
  freeze_at: string;
  /** Tier whose completion freezes the contract (`resolveFreezeAt`), null when none/invalid. */
  freeze_tier: number | null;
  frozen: boolean;
  /** Present when frozen (Go `frozen_at_tier`). */
  frozen_at_tier?: number;
}

/** The E32 program status report (Go `ProgramStatusData` JSON keys). */
export interface ProgramStatus {
  program_slug: string;
  title: string;
  state: string;
  /** First tier with an incomplete IMPL; the last tier's number when all are complete; 0 without tiers. */
  current_tier: number;
  tier_statuses: ProgramTierStatus[];
  contract_statuses: ProgramContractStatus[];
  completion: {
    tiers_complete: number;
    tiers_total: number;
    impls_complete: number;
    impls_total: number;
    total_agents: number;
    total_waves: number;
  };
}

function normalizeManifestStatus(status: string): string {
  return status === 'in-progress' ? 'executing' : status;
}

/**
 * E32: tier-by-tier program status, cross-checked against the IMPL docs' states. Pure: the caller
 * reads each IMPL doc's `state` (Go looks in docs/IMPL/{complete,in-progress,pending,blocked,
 * not-suitable}/ then docs/IMPL/) and passes slug → state (undefined/absent = no doc).
 *
 * Completion counters are recomputed from effective statuses: `tiers_total`/`impls_total` are
 * the real counts (not the possibly stale manifest numbers, unlike Go), `impls_complete` counts
 * distinct IMPLs; `total_agents`/`total_waves` are the manifest's. A contract is frozen when its
 * `freeze_at` resolves to a tier that is complete.
 */
export function programStatus(manifest: ProgramManifest, implStates: ReadonlyMap<string, string | undefined>, waveProgress: ReadonlyMap<string, WaveProgress> = new Map()): ProgramStatus {
  const implsBySlug = new Map<string, ProgramManifest['impls'][number]>();
  for (const impl of manifest.impls) if (impl.slug !== undefined && !implsBySlug.has(impl.slug)) implsBySlug.set(impl.slug, impl);

  const entryFor = (slug: string): ProgramImplStatusEntry => {
    const impl = implsBySlug.get(slug);
    const manifestStatus = impl?.status ?? '';
    const diskState = implStates.get(slug);
    const mapped = implStateToProgramStatus(diskState);
    const fallback = normalizeManifestStatus(manifestStatus) || 'pending';
    return {
      slug,
      title: impl?.title ?? '',
      manifest_status: manifestStatus,
      disk_state: diskState === undefined || diskState.trim() === '' ? null : diskState,
      status: mapped ?? fallback,
      mismatch: mapped !== undefined && mapped !== normalizeManifestStatus(manifestStatus),
      ...(waveProgress.has(slug) ? { waves: { ...waveProgress.get(slug)! } } : {}),
    };
  };

  const tierStatuses: ProgramTierStatus[] = manifest.tiers.map((tier) => {
    const entries = [...new Set(tier.impls)].map(entryFor);
    const status: ProgramTierStatus = {
      number: tier.number ?? 0,
      complete: entries.every((entry) => entry.status === 'complete'),
      impl_statuses: entries,
    };
    if (tier.description !== undefined && tier.description !== '') status.description = tier.description;
    return status;
  });

  const completeTiers = new Set(tierStatuses.filter((tier) => tier.complete).map((tier) => tier.number));
  const implsComplete = [...implsBySlug.keys()].filter((slug) => entryFor(slug).status === 'complete').length;
  const current = tierStatuses.find((tier) => !tier.complete)?.number ?? tierStatuses[tierStatuses.length - 1]?.number ?? 0;

  const contractStatuses: ProgramContractStatus[] = manifest.program_contracts.map((contract) => {
    const point = resolveFreezeAt(manifest, contract.freeze_at);
    const freezeTier = point.kind === 'tier' ? point.tier : null;
    const frozen = freezeTier !== null && completeTiers.has(freezeTier);
    const status: ProgramContractStatus = {
      name: contract.name ?? '',
      location: contract.location ?? '',
      freeze_at: contract.freeze_at ?? '',
      freeze_tier: freezeTier,
      frozen,
    };
    if (frozen) status.frozen_at_tier = freezeTier;
    return status;
  });

  return {
    program_slug: manifest.program_slug ?? '',
    title: manifest.title ?? '',
    state: manifest.state ?? '',
    current_tier: current,
    tier_statuses: tierStatuses,
    contract_statuses: contractStatuses,
    completion: {
      tiers_complete: tierStatuses.filter((tier) => tier.complete).length,
      tiers_total: manifest.tiers.length,
      impls_complete: implsComplete,
      impls_total: implsBySlug.size,
      total_agents: manifest.completion?.total_agents ?? 0,
      total_waves: manifest.completion?.total_waves ?? 0,
    },
  };
}

/** How a status reads in the E32 summary, in the order groups are listed. */
const statusLabels: ReadonlyArray<[string, string]> = [
  ['complete', 'complete'],
  ['executing', 'in progress'],
  ['reviewed', 'reviewed'],
  ['scouting', 'scouting'],
  ['pending', 'pending'],
  ['blocked', 'blocked'],
  ['not-suitable', 'not suitable'],
];

function describeTier(tier: ProgramTierStatus): string {
  const total = tier.impl_statuses.length;
  if (total === 0) return `Tier ${tier.number}: no IMPLs`;
  const done = tier.impl_statuses.filter((entry) => entry.status === 'complete').length;
  if (done === total) return `Tier ${tier.number}: ${done}/${total} complete ✓`;
  if (tier.impl_statuses.every((entry) => entry.status === 'pending')) return `Tier ${tier.number}: 0/${total} pending`;
  const groups = new Map<string, string[]>();
  for (const entry of tier.impl_statuses) {
    const names = groups.get(entry.status) ?? [];
    // Live progress of a running IMPL: how many of its waves are done.
    names.push(`IMPL-${entry.slug}${entry.status !== 'complete' && entry.status !== 'pending' && entry.waves && entry.waves.total > 0 ? ` (wave ${entry.waves.complete}/${entry.waves.total} done)` : ''}`);
    groups.set(entry.status, names);
  }
  const known = statusLabels.filter(([status]) => groups.has(status)).map(([status, label]) => `${groups.get(status)!.join(', ')} ${label}`);
  const others = [...groups.keys()]
    .filter((status) => !statusLabels.some(([known]) => known === status))
    .sort()
    .map((status) => `${groups.get(status)!.join(', ')} ${status}`);
  return `Tier ${tier.number}: ${done}/${total} complete (${[...known, ...others].join('; ')})`;
}

/**
 * Renders the E32 summary (execution-rules.txt E32 "User reporting"):
 *
 * ```
 * PROGRAM: my-program (Tier 2 of 3)
 *   Tier 1: 3/3 complete ✓
 *   Tier 2: 2/4 complete (IMPL-feature-a, IMPL-feature-b complete; IMPL-feature-c, IMPL-feature-d in progress)
 *   Tier 3: 0/2 pending
 * Overall: 5/9 IMPLs complete (56%)
 * ```
 *
 * followed, only when there are any, by a `Contracts:` section (freeze states) and a
 * `Manifest out of date (P4):` section listing IMPLs whose doc state disagrees with the manifest.
 * No trailing newline.
 */
export function formatProgramStatus(status: ProgramStatus): string {
  const tiers = status.tier_statuses;
  const position = tiers.length === 0 ? 'no tiers' : `Tier ${status.current_tier} of ${tiers.length}`;
  const lines = [`PROGRAM: ${status.program_slug} (${position})`];
  for (const tier of tiers) lines.push(`  ${describeTier(tier)}`);
  const { impls_complete: done, impls_total: total } = status.completion;
  const percent = total === 0 ? 0 : Math.round((done / total) * 100);
  lines.push(`Overall: ${done}/${total} IMPLs complete (${percent}%)`);

  if (status.contract_statuses.length > 0) {
    lines.push('Contracts:');
    for (const contract of status.contract_statuses) {
      const where = contract.location === '' ? '' : ` (${contract.location})`;
      let state: string;
      if (contract.frozen) state = `frozen at tier ${contract.frozen_at_tier}`;
      else if (contract.freeze_tier !== null) state = `freezes after tier ${contract.freeze_tier}`;
      else if (contract.freeze_at === '') state = 'no freeze point';
      else state = `freeze_at ${JSON.stringify(contract.freeze_at)} names no tier`;
      lines.push(`  ${contract.name}${where}: ${state}`);
    }
  }

  const stale = new Map<string, ProgramImplStatusEntry>();
  for (const tier of tiers) for (const entry of tier.impl_statuses) if (entry.mismatch && !stale.has(entry.slug)) stale.set(entry.slug, entry);
  if (stale.size > 0) {
    lines.push('Manifest out of date (P4):');
    for (const entry of stale.values()) {
      lines.push(`  IMPL-${entry.slug}: manifest says ${entry.manifest_status || '(none)'}, IMPL doc state ${entry.disk_state} → ${entry.status}`);
    }
  }
  return lines.join('\n');
}
