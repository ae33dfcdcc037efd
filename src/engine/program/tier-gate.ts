import { runGates, toGoGateResult, type GateEventSink, type GoGateResult } from '../../gates/index.js';
import { activityEvent } from '../../protocol/e40.js';
import { programStatus } from '../../protocol/program/index.js';
import { contractLocationFile } from '../../protocol/program/program-rules.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
import { loadProgramTier, openMainCheckout, type LoadedTier, type MainCheckout, type TierOptions } from './tier-common.js';

/** E40: tier_gate_passed / tier_gate_failed with the PROGRAM slug and the tier. */
function emitTierGate(result: TierGateResult, loaded: LoadedTier, events: GateEventSink | undefined): TierGateResult {
  events?.emit(
    activityEvent(result.passed ? 'tier_gate_passed' : 'tier_gate_failed', {
      tier: loaded.tier,
      ...(loaded.manifest.program_slug ? { program: loaded.manifest.program_slug } : {}),
      details: result.passed ? `${result.gate_results.length} gate(s) passed` : (result.reason ?? 'failed'),
    }),
  );
  return result;
}

/** Go's tier-gate timeout per command: 5 minutes (a gate's own `timeout_seconds` wins). */
export const defaultTierGateTimeoutMs = 5 * 60_000;

/** One IMPL of the tier (Go `ImplTierStatus` `{slug, status}` plus where the status came from). */
export interface TierImplStatus {
  slug: string;
  /** Effective status: the IMPL doc's state mapped (E32) when it maps, else the PROGRAM's status. */
  status: string;
  /** Status written in the PROGRAM manifest ('' when none). */
  manifest_status: string;
  /** `state` of the IMPL doc on disk, null when no doc was found. */
  disk_state: string | null;
}

/** The `tier-gate` JSON (Go `TierGateData` keys; `gate_results[]` in the Go run-gates shape plus ours). */
export interface TierGateResult {
  tier_number: number;
  passed: boolean;
  gate_results: GoGateResult[];
  impl_statuses: TierImplStatus[];
  all_impls_done: boolean;
  /** Why it did not pass (absent when it passed). */
  reason?: string;
  /** P2: frozen contracts whose file at HEAD is not the blob recorded when they froze (the tier then fails). */
  p2_violations?: FrozenContractViolation[];
}

/** A frozen program contract whose file changed after its freeze (P2). */
export interface FrozenContractViolation {
  contract: string;
  location: string;
  frozen_at_tier: number;
  frozen_blob: string;
  /** The file's blob at HEAD, null when HEAD no longer has the file. */
  current_blob: string | null;
}

/**
 * P2 on the main line: every contract frozen (with the freeze record
 * freeze-contracts wrote) must still have the recorded blob at HEAD — whoever changed it, an IMPL
 * that owned the file or a hand edit.
 */
export async function frozenContractViolations(loaded: LoadedTier, checkout: MainCheckout): Promise<FrozenContractViolation[]> {
  return frozenContractChanges(loaded.manifest, loaded.tier, checkout.git);
}

/**
 * P2 for tier `_tier` against HEAD of `git`'s checkout: the contracts with a freeze record whose blob changed (P18-06: also
 * at a tier's start). Every recorded freeze counts, not only those of earlier tiers (P19-04): a freeze is recorded only
 * once its tier completed, and a plan re-ordered afterwards may run a tier numbered at or below it.
 */
export async function frozenContractChanges(manifest: LoadedTier['manifest'], _tier: number, git: MainCheckout['git']): Promise<FrozenContractViolation[]> {
  const violations: FrozenContractViolation[] = [];
  for (const contract of manifest.program_contracts ?? []) {
    const recorded = (contract.frozen_blob ?? '').trim();
    const location = contractLocationFile(contract.location);
    // (P19-04: every recorded freeze, whatever its tier — a plan re-ordered after it may run a tier numbered at or below it)
    if (recorded === '' || location === '' || contract.frozen_at_tier === undefined) continue;
    const probe = await git.run(['rev-parse', '--verify', '--quiet', `HEAD:${location}`], { allowExitCodes: [1, 128] });
    const current = probe.exitCode === 0 ? probe.stdout.trim() : null;
    if (current === recorded) continue;
    violations.push({ contract: contract.name ?? '', location, frozen_at_tier: contract.frozen_at_tier, frozen_blob: recorded, current_blob: current });
  }
  return violations;
}

export interface TierGateOptions extends TierOptions {
  signal?: AbortSignal;
  /** Per-gate timeout for gates without `timeout_seconds` (default 5 min, as Go). */
  gateTimeoutMs?: number;
  now?: () => Date;
  /** Run the gates in the OS sandbox where available (default true, like every gate). */
  sandbox?: boolean;
  events?: GateEventSink;
}

/**
 * E29/P3: the tier gate. Every IMPL of the tier must be `complete` — the PROGRAM's status
 * cross-checked with the IMPL doc on disk (E32: a doc in COMPLETE counts even when the manifest
 * is stale; a doc still in a WAVE_* state does not, whatever the manifest says) — and then every
 * `tier_gates` command runs in a throwaway checkout of the main checkout's tree through the quality-gate runner (sandboxed
 * where available, timeouts, process groups killed; no cache: the tier gate is a verification);
 * a failing `required` gate fails the tier, an optional one is reported only. Gates are not run
 * while an IMPL is unfinished (as Go). Bad input throws a coded PolywaveError (exit 2).
 */
export async function runTierGate(options: TierGateOptions): Promise<TierGateResult> {
  const loaded = await loadProgramTier(options.programPath, options.tier);
  const checkout = await openMainCheckout(options.repoRoot, options.env);
  return runLoadedTierGate(loaded, checkout, options);
}

/**
 * {@link runTierGate} for a loaded tier. `finishedSlugs`: IMPLs the caller has found finished
 * (every wave verified) and is about to close — finalize-tier counts them as complete, so that
 * a failing gate leaves nothing marked complete.
 */
export async function runLoadedTierGate(loaded: LoadedTier, checkout: MainCheckout, options: Omit<TierGateOptions, keyof TierOptions> & { env?: TierOptions['env']; finishedSlugs?: ReadonlySet<string> }): Promise<TierGateResult> {
  const docs = await readProgramImplDocs(checkout.root, loaded.manifest);
  const states = new Map<string, string | undefined>();
  for (const [slug, doc] of docs) states.set(slug, doc.manifest?.state);
  const status = programStatus(loaded.manifest, states);
  const tierStatus = status.tier_statuses.find((tier) => tier.number === loaded.tier);
  const implStatuses: TierImplStatus[] = loaded.slugs.map((slug) => {
    const entry = tierStatus?.impl_statuses.find((candidate) => candidate.slug === slug);
    const known = loaded.manifest.impls.some((impl) => impl.slug === slug);
    const effective = options.finishedSlugs?.has(slug) ? 'complete' : !known && entry?.disk_state == null ? 'not_found' : (entry?.status ?? 'pending');
    return { slug, status: effective, manifest_status: entry?.manifest_status ?? '', disk_state: entry?.disk_state ?? null };
  });
  const allDone = implStatuses.every((entry) => entry.status === 'complete');
  const result: TierGateResult = { tier_number: loaded.tier, passed: false, gate_results: [], impl_statuses: implStatuses, all_impls_done: allDone };
  // P3: tier N's gate only after every earlier tier is complete (its IMPLs, as the docs say).
  const earlier = status.tier_statuses.filter((tier) => tier.number < loaded.tier && !tier.complete);
  if (earlier.length > 0) {
    result.reason = `P3: earlier tier(s) not complete: ${earlier.map((tier) => `tier ${tier.number} (${tier.impl_statuses.filter((entry) => entry.status !== 'complete').map((entry) => `${entry.slug} ${entry.status}`).join(', ')})`).join('; ')}`;
    return emitTierGate(result, loaded, options.events);
  }
  if (!allDone) {
    const open = implStatuses.filter((entry) => entry.status !== 'complete');
    result.reason = `not all IMPLs of tier ${loaded.tier} are complete: ${open.map((entry) => `${entry.slug} (${entry.status})`).join(', ')}`;
    return emitTierGate(result, loaded, options.events);
  }
  const violations = await frozenContractViolations(loaded, checkout);
  if (violations.length > 0) {
    result.p2_violations = violations;
    result.reason = `P2_FROZEN_CONTRACT_CHANGED: ${violations.map((item) => `frozen contract ${item.contract} (${item.location}, frozen at tier ${item.frozen_at_tier}) ${item.current_blob === null ? 'is gone from HEAD' : `changed: blob ${item.frozen_blob.slice(0, 12)} → ${item.current_blob.slice(0, 12)}`}`).join('; ')} — a later tier must consume a frozen contract, not modify it (revert the change or re-plan with program-replan)`;
    return emitTierGate(result, loaded, options.events);
  }
  const gates = loaded.manifest.tier_gates ?? [];
  if (gates.length === 0) {
    result.passed = true;
    return emitTierGate(result, loaded, options.events);
  }
  const run = await runGates({
    repoDir: checkout.root,
    gates,
    noCache: true,
    // Outside attack P12-33: the tier gate runs the tier's merged agent code (its tests); run in the main checkout, that
    // code wrote the checkout — the PROGRAM manifest among it (a frozen contract's freeze_at, the tier gate's own
    // command), which finalize-tier then committed. Like verify-build: a throwaway checkout of the merged tree, in which
    // the main checkout is hidden.
    throwawayCheckout: true,
    defaultTimeoutMs: options.gateTimeoutMs ?? defaultTierGateTimeoutMs,
    configSearchDirs: [checkout.root],
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
    ...(options.events ? { events: options.events, labels: { tier: loaded.tier, scope: 'tier', ...(loaded.manifest.program_slug ? { program: loaded.manifest.program_slug } : {}) } } : {}),
  });
  result.gate_results = run.results.map(toGoGateResult);
  result.passed = run.passed;
  if (!run.passed) {
    const failing = run.results.filter((gate) => gate.required && !gate.passed);
    result.reason = `required tier gate(s) failed: ${failing.map((gate) => `${gate.type} \`${gate.command}\` (${gate.timed_out ? 'timed out' : `exit ${gate.exit_code}`})`).join('; ')}`;
  }
  return emitTierGate(result, loaded, options.events);
}
