import { describe, expect, it } from 'vitest';
import { buildProgramSchemas, programImplStatuses, programModel, programStates } from './program-schema.js';
import { findUnknownKeys } from './unknown-keys.js';

const exportSchemas = buildProgramSchemas('export');

const full = {
  title: 'Greenfield API and Dashboard',
  program_slug: 'greenfield-api',
  state: 'PLANNING',
  created: '2026-03-17',
  updated: '2026-03-17',
  completion_date: '2026-03-31',
  requirements: 'docs/REQUIREMENTS.md',
  program_contracts: [
    {
      name: 'UserSession',
      description: 'Core session type',
      definition: 'type UserSession struct {}',
      consumers: [{ impl: 'auth', usage: 'Creates sessions' }],
      location: 'pkg/types/session.go',
      freeze_at: 'Tier 1 completion',
    },
  ],
  impls: [
    {
      slug: 'auth',
      abs_path: '/repo/docs/IMPL/IMPL-auth.yaml',
      title: 'Auth',
      tier: 1,
      depends_on: [],
      estimated_agents: 2,
      estimated_waves: 1,
      key_outputs: ['pkg/auth/*.go'],
      status: 'pending',
      priority_score: 100,
      priority_reasoning: 'unblocks everything',
      serial_waves: [1],
    },
  ],
  tiers: [{ number: 1, impls: ['auth'], description: 'Foundation', concurrency_cap: 2 }],
  tier_gates: [{ type: 'build', command: 'go build ./...', required: true, description: 'Full build' }],
  completion: { tiers_complete: 0, tiers_total: 1, impls_complete: 0, impls_total: 1, total_agents: 2, total_waves: 1 },
  pre_mortem: [{ scenario: 'Drift', likelihood: 'medium', impact: 'high', mitigation: 'Freeze' }],
};

describe('program schema', () => {
  it('defines every field of the spec and the Go structs (no unknown keys in a full manifest)', () => {
    expect(findUnknownKeys(programModel.manifest, full)).toEqual([]);
    expect(exportSchemas.manifest.safeParse(full).success).toBe(true);
  });

  it('lists the spec states (REPLANNING included) and the accepted IMPL statuses', () => {
    expect(programStates).toContain('REPLANNING');
    expect(programStates).toHaveLength(10);
    expect(programImplStatuses).toEqual(['pending', 'scouting', 'reviewed', 'executing', 'complete', 'blocked', 'not-suitable']);
  });

  it('export mode is strict: enums, patterns, required fields, no extra keys', () => {
    expect(exportSchemas.manifest.safeParse({ ...full, state: 'RUNNING' }).success).toBe(false);
    expect(exportSchemas.manifest.safeParse({ ...full, program_slug: 'Not Kebab' }).success).toBe(false);
    expect(exportSchemas.manifest.safeParse({ ...full, extra: 1 }).success).toBe(false);
    const { completion: _completion, ...withoutCompletion } = full;
    expect(exportSchemas.manifest.safeParse(withoutCompletion).success).toBe(false);
    expect(exportSchemas.impl.safeParse({ slug: 'a', title: 'A', tier: 0, status: 'pending' }).success).toBe(false);
    expect(exportSchemas.impl.safeParse({ slug: 'a', title: 'A', tier: 1, status: 'done' }).success).toBe(false);
    expect(exportSchemas.preMortemRow.safeParse({ scenario: 's', likelihood: 'extreme', impact: 'low', mitigation: 'm' }).success).toBe(false);
  });

  it('model mode is tolerant: types only, lists default to [], yaml.v3-like scalars', () => {
    const parsed = programModel.manifest.parse({
      title: 42,
      state: 'WHATEVER',
      impls: [{ slug: 'a', tier: '2', status: 'odd', estimated_agents: 3.0 }],
      tiers: null,
    });
    expect(parsed.title).toBe('42');
    expect(parsed.impls[0]).toMatchObject({ tier: 2, status: 'odd', estimated_agents: 3, depends_on: [] });
    expect(parsed.tiers).toEqual([]);
    expect(parsed.completion).toBeUndefined();
    expect(programModel.manifest.safeParse({ impls: [{ tier: 'one' }] }).success).toBe(false);
  });
});
