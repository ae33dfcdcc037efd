import { describe, expect, it } from 'vitest';
import { statePath } from './state.js';

describe('statePath', () => {
  it('finds the legal hops through WAVE_EXECUTING / WAVE_MERGING only', () => {
    expect(statePath('WAVE_PENDING', 'WAVE_MERGING')).toEqual(['WAVE_EXECUTING', 'WAVE_MERGING']);
    expect(statePath('WAVE_EXECUTING', 'WAVE_MERGING')).toEqual(['WAVE_MERGING']);
    expect(statePath('WAVE_VERIFIED', 'WAVE_MERGING')).toEqual(['WAVE_EXECUTING', 'WAVE_MERGING']);
    expect(statePath('BLOCKED', 'WAVE_MERGING')).toEqual(['WAVE_MERGING']);
    expect(statePath('WAVE_MERGING', 'WAVE_VERIFIED')).toEqual(['WAVE_VERIFIED']);
    expect(statePath('WAVE_MERGING', 'WAVE_MERGING')).toEqual([]);
    expect(statePath('WAVE_MERGING', 'BLOCKED')).toEqual(['BLOCKED']);
  });

  it('refuses what the state machine refuses', () => {
    expect(statePath('COMPLETE', 'WAVE_MERGING')).toBeUndefined();
    expect(statePath('', 'WAVE_MERGING')).toBeUndefined();
    expect(statePath('SCOUT_PENDING', 'WAVE_MERGING')).toBeUndefined();
  });
});
