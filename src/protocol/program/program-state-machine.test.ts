import { describe, expect, it } from 'vitest';
import { programStates } from '../schema/program-schema.js';
import { checkProgramTransition, isProgramState, programTransitionCode, programTransitions } from './program-state-machine.js';

describe('PROGRAM state machine (program-manifest.txt §9.2)', () => {
  it('has a row for every PROGRAM state and only names PROGRAM states', () => {
    expect(Object.keys(programTransitions).sort()).toEqual([...programStates].sort());
    for (const targets of Object.values(programTransitions)) for (const target of targets) expect(isProgramState(target)).toBe(true);
  });

  it('allows the spec primary path, tier by tier', () => {
    const path = ['PLANNING', 'VALIDATING', 'REVIEWED', 'SCAFFOLD', 'TIER_EXECUTING', 'TIER_VERIFIED', 'TIER_EXECUTING', 'TIER_VERIFIED', 'COMPLETE'] as const;
    for (let index = 1; index < path.length; index += 1) expect(checkProgramTransition(path[index - 1], path[index]!), `${path[index - 1]} -> ${path[index]}`).toEqual({ ok: true, changed: true });
  });

  it('allows the spec failure paths', () => {
    for (const [from, to] of [
      ['PLANNING', 'NOT_SUITABLE'],
      ['TIER_EXECUTING', 'BLOCKED'],
      ['BLOCKED', 'TIER_EXECUTING'],
      ['BLOCKED', 'REPLANNING'],
      ['REPLANNING', 'REVIEWED'],
    ] as const) {
      expect(checkProgramTransition(from, to).ok, `${from} -> ${to}`).toBe(true);
    }
  });

  it('refuses skipping states, leaving terminal states, and an unknown current state', () => {
    for (const [from, to] of [
      ['PLANNING', 'COMPLETE'],
      ['PLANNING', 'TIER_EXECUTING'],
      ['TIER_EXECUTING', 'COMPLETE'],
      ['COMPLETE', 'PLANNING'],
      ['NOT_SUITABLE', 'PLANNING'],
      ['REVIEWED', 'TIER_VERIFIED'],
    ] as const) {
      const check = checkProgramTransition(from, to);
      expect(check.ok, `${from} -> ${to}`).toBe(false);
      if (!check.ok) {
        expect(check.finding.code).toBe(programTransitionCode);
        expect(check.finding.message).toContain(from);
      }
    }
    const unknown = checkProgramTransition('DONE', 'COMPLETE');
    expect(unknown.ok).toBe(false);
    expect(checkProgramTransition(undefined, 'PLANNING').ok).toBe(false);
  });

  it('names the legal targets in the refusal', () => {
    const check = checkProgramTransition('TIER_EXECUTING', 'COMPLETE');
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.finding.message).toBe('illegal PROGRAM transition TIER_EXECUTING -> COMPLETE; legal from TIER_EXECUTING: TIER_VERIFIED, BLOCKED, REPLANNING');
  });

  it('treats the same state as a legal no-op', () => {
    for (const state of programStates) expect(checkProgramTransition(state, state)).toEqual({ ok: true, changed: false });
  });
});
