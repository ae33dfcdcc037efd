import { describe, expect, it } from 'vitest';
import type { EventRow } from './event-store.js';
import { computeMetrics } from './metrics.js';
import { parseTimeBound } from './time-range.js';

let id = 0;
function row(run: string, event: Record<string, unknown>): EventRow {
  id += 1;
  return { id, run_id: run, seq: id, ts: 1_700_000_000_000 + id, type: String(event.type), activity_type: (event.activity_type as string) ?? null, slug: (event.slug as string) ?? null, wave: (event.wave as number) ?? null, agent: (event.agent as string) ?? null, program: null, payload: JSON.stringify({ v: 1, ...event }) };
}

describe('computeMetrics', () => {
  it('prefers E40 cost events per model call over agent-end totals (never both), per agent, wave and model', () => {
    const rows = [
      row('r1', { type: 'wave-run-start', slug: 's', wave: 1 }),
      row('r1', { type: 'agent-launch', slug: 's', wave: 1, agent: 'A', attempt: 1, model: 'anthropic:claude-sonnet-4-5' }),
      row('r1', { type: 'cost', e40: true, slug: 's', wave: 1, agent: 'A', attempt: 1, model: 'anthropic:claude-sonnet-4-5', input_tokens: 100, output_tokens: 10, cache_read_tokens: 50, cache_write_tokens: 0, cost_usd: 0.5 }),
      row('r1', { type: 'cost', e40: true, slug: 's', wave: 1, agent: 'A', attempt: 1, model: 'anthropic:claude-sonnet-4-5', input_tokens: 200, output_tokens: 20, cache_read_tokens: 0, cache_write_tokens: 5, cost_usd: 0.25 }),
      row('r1', { type: 'agent-end', slug: 's', wave: 1, agent: 'A', attempt: 1, status: 'complete', input_tokens: 350, output_tokens: 30, cost_usd: 0.75, duration_ms: 4000 }),
      // B has no cost events: its agent-end counts; its first attempt failed, the second succeeded.
      row('r1', { type: 'agent-launch', slug: 's', wave: 1, agent: 'B', attempt: 1, model: 'openai:gpt-5' }),
      row('r1', { type: 'agent-end', slug: 's', wave: 1, agent: 'B', attempt: 1, status: 'failed', input_tokens: 10, output_tokens: 1, cost_usd: 0.01, duration_ms: 1000 }),
      row('r1', { type: 'agent-launch', slug: 's', wave: 1, agent: 'B', attempt: 2, model: 'openai:gpt-5' }),
      row('r1', { type: 'agent-end', slug: 's', wave: 1, agent: 'B', attempt: 2, status: 'complete', input_tokens: 20, output_tokens: 2, cost_usd: 0.02, duration_ms: 2000 }),
      row('r1', { type: 'gate-result', gate: 'test', passed: true, duration_ms: 5 }),
      row('r1', { type: 'wave-run-end', slug: 's', wave: 1, success: true, state: 'WAVE_VERIFIED', duration_ms: 9000 }),
      // A second run of wave 1 that failed, cut short: only progress for C.
      row('r2', { type: 'agent-launch', slug: 's', wave: 1, agent: 'C', attempt: 1, model: 'openai:gpt-5' }),
      row('r2', { type: 'agent-progress', slug: 's', wave: 1, agent: 'C', attempt: 1, turns: 2, input_tokens: 7, output_tokens: 3 }),
      row('r2', { type: 'activity', e40: true, activity_type: 'gate_failed', slug: 's', wave: 1 }),
      row('r2', { type: 'gate-result', gate: 'test', passed: false, duration_ms: 5 }),
      row('r2', { type: 'wave-run-end', slug: 's', wave: 1, success: false, state: 'BLOCKED', duration_ms: 3000 }),
    ];
    const metrics = computeMetrics(rows, { impl: 's' });
    expect(metrics.runs).toBe(2);
    expect(metrics.totals).toMatchObject({ input_tokens: 337, output_tokens: 36, cache_read_tokens: 50, cache_write_tokens: 5, cost_usd: 0.78, agent_attempts: 4, agents_succeeded: 2, wave_duration_ms: 12000 });
    const agent = (name: string) => metrics.agents.find((entry) => entry.agent === name)!;
    expect(agent('A')).toMatchObject({ attempts: 1, succeeded: 1, input_tokens: 300, cost_usd: 0.75, models: ['anthropic:claude-sonnet-4-5'] });
    expect(agent('B')).toMatchObject({ attempts: 2, succeeded: 1, failed: 1, success_rate: 0.5, input_tokens: 30, duration_ms: 3000 });
    expect(agent('C')).toMatchObject({ attempts: 1, input_tokens: 7, success_rate: null });
    expect(metrics.waves).toEqual([expect.objectContaining({ wave: 1, runs: 2, succeeded: 1, success_rate: 0.5, avg_duration_ms: 6000 })]);
    expect(metrics.models.find((model) => model.model === 'anthropic:claude-sonnet-4-5')).toMatchObject({ calls: 2, cost_usd: 0.75 });
    // Run r2 has an E40 gate activity: its engine gate-result is not counted twice.
    expect(metrics.gates).toEqual({ executed: 2, passed: 1, failed: 1, pass_rate: 0.5 });
  });

  it('is empty for no events', () => {
    expect(computeMetrics([], { impl: 'x' })).toMatchObject({ runs: 0, events: 0, first_at: null, totals: { cost_usd: null, success_rate: null } });
  });
});

describe('parseTimeBound', () => {
  const now = new Date('2026-12-01T12:00:00Z');
  it('takes durations back from now and ISO dates; rejects anything else', () => {
    expect(parseTimeBound('24h', now)).toBe(Date.parse('2026-11-30T12:00:00Z'));
    expect(parseTimeBound('7d', now)).toBe(Date.parse('2026-11-24T12:00:00Z'));
    expect(parseTimeBound('30m', now)).toBe(Date.parse('2026-12-01T11:30:00Z'));
    expect(parseTimeBound('2026-11-01', now)).toBe(Date.parse('2026-11-01'));
    for (const bad of ['yesterday', '7 days', '-1d', '', '1y', '2026-13-45x']) expect(parseTimeBound(bad, now), bad).toBeUndefined();
  });
});
