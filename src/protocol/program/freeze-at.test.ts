import { describe, expect, it } from 'vitest';
import { programModel } from '../schema/program-schema.js';
import { resolveFreezeAt, tierOfImpl } from './freeze-at.js';

const manifest = programModel.manifest.parse({
  title: 'T',
  program_slug: 't',
  state: 'PLANNING',
  impls: [
    { slug: 'auth', title: 'Auth', tier: 1, status: 'complete' },
    { slug: 'api', title: 'API', tier: 2, status: 'pending' },
    { slug: 'orphan', title: 'Orphan', tier: 7, status: 'pending' },
  ],
  tiers: [
    { number: 1, impls: ['auth'] },
    { number: 2, impls: ['api'] },
  ],
});

describe('resolveFreezeAt', () => {
  it.each([
    ['tier-1', 1, 'tier'],
    ['Tier 1 completion', 1, 'tier'],
    ['tier 2', 2, 'tier'],
    ['TIER_2 completed', 2, 'tier'],
    ['  tier-2  ', 2, 'tier'],
    ['auth', 1, 'impl'],
    ['IMPL-api completion', 2, 'impl'],
    ['api complete', 2, 'impl'],
  ] as const)('%j → tier %i', (text, tier, form) => {
    expect(resolveFreezeAt(manifest, text)).toEqual({ kind: 'tier', tier, form });
  });

  it('absent or empty means no freeze point', () => {
    expect(resolveFreezeAt(manifest, undefined)).toEqual({ kind: 'none' });
    expect(resolveFreezeAt(manifest, '   ')).toEqual({ kind: 'none' });
  });

  it('an undefined tier, an unplaced IMPL or free text is invalid', () => {
    expect(resolveFreezeAt(manifest, 'tier-3')).toEqual({ kind: 'invalid', reason: 'refers to tier 3, which is not defined in tiers' });
    expect(resolveFreezeAt(manifest, 'orphan')).toEqual({ kind: 'invalid', reason: 'refers to IMPL "orphan", which is not assigned to a defined tier' });
    expect(resolveFreezeAt(manifest, 'after lunch')).toEqual({
      kind: 'invalid',
      reason: 'names neither a tier (tier-N, "Tier N completion") nor an IMPL slug',
    });
  });

  it('tierOfImpl prefers the tier listing over the IMPL field', () => {
    expect(tierOfImpl(manifest, 'api')).toBe(2);
    expect(tierOfImpl(manifest, 'orphan')).toBe(7);
    expect(tierOfImpl(manifest, 'ghost')).toBeUndefined();
  });
});
