import type { ProgramManifest } from '../schema/program-schema.js';

/**
 * What a program contract's `freeze_at` names, normalised to a tier number.
 *
 * - `none`: empty/absent `freeze_at` — the contract has no freeze point (never frozen).
 * - `tier`: the contract freezes when tier `tier` completes (E30). `form` says how it was written.
 * - `invalid`: the text names nothing we can resolve; `reason` is a human sentence.
 */
export type FreezePoint =
  | { kind: 'none' }
  | { kind: 'tier'; tier: number; form: 'tier' | 'impl' }
  | { kind: 'invalid'; reason: string };

const completionSuffix = /\s+(?:completion|complete|completed)$/i;
const tierForm = /^tier[\s_-]*(\d+)$/i;
const implPrefix = /^IMPL-/;

/** Tier of an IMPL slug: the first tier listing it, else its own `tier` field. */
export function tierOfImpl(manifest: ProgramManifest, slug: string): number | undefined {
  for (const tier of manifest.tiers) if (tier.impls.includes(slug) && tier.number !== undefined) return tier.number;
  return manifest.impls.find((impl) => impl.slug === slug)?.tier;
}

/**
 * Resolves `freeze_at` to the tier whose completion freezes the contract (program-manifest.txt
 * §4.1/§15.4, E30). The Go SDK has three incompatible readings (reference §7.6); we accept all
 * of them and the spec's own example, and normalise to one tier number:
 *
 * - `tier-N` (Go import mode), `Tier N`, `tier N`, `tier_N`, each optionally followed by
 *   `completion` / `complete` / `completed` (the spec example `"Tier 1 completion"`) → tier N;
 * - an IMPL slug (Go program-status), optionally `IMPL-<slug>` and/or followed by `completion`
 *   (Go FreezeContracts' `IMPL-auth completion`) → the tier holding that IMPL.
 *
 * The tier-number forms win over a same-spelled slug. A tier number that no `tiers` entry has,
 * or text matching neither form, is `invalid` (V053 in validation).
 */
export function resolveFreezeAt(manifest: ProgramManifest, freezeAt: string | undefined): FreezePoint {
  const text = (freezeAt ?? '').trim();
  if (text === '') return { kind: 'none' };
  const known = new Set(manifest.impls.map((impl) => impl.slug).filter((slug): slug is string => !!slug));
  const tierNumbers = new Set(manifest.tiers.map((tier) => tier.number).filter((number): number is number => number !== undefined));

  const base = text.replace(completionSuffix, '');
  const tierMatch = tierForm.exec(base);
  if (tierMatch) {
    const tier = Number(tierMatch[1]);
    if (tierNumbers.has(tier)) return { kind: 'tier', tier, form: 'tier' };
    return { kind: 'invalid', reason: `refers to tier ${tier}, which is not defined in tiers` };
  }

  for (const candidate of [text, base, base.replace(implPrefix, '')]) {
    if (!known.has(candidate)) continue;
    const tier = tierOfImpl(manifest, candidate);
    if (tier !== undefined && tierNumbers.has(tier)) return { kind: 'tier', tier, form: 'impl' };
    return { kind: 'invalid', reason: `refers to IMPL "${candidate}", which is not assigned to a defined tier` };
  }

  return { kind: 'invalid', reason: 'names neither a tier (tier-N, "Tier N completion") nor an IMPL slug' };
}
