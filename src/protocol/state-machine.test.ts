import { describe, expect, it } from 'vitest';
import { implModel, protocolStates, type ImplManifest } from './schema/impl-schema.js';
import {
  e15CompletionGuard,
  checkTransition,
  implStateToProgramStatus,
  isLegalTransition,
  isProtocolState,
  legalTargets,
  programImplStatuses,
  stateTransitions,
  transitionContextWarnings,
} from './state-machine.js';

function manifest(raw: Record<string, unknown>): ImplManifest {
  return implModel.manifest.parse(raw);
}

function waves(...sizes: number[]) {
  return sizes.map((size, index) => ({
    number: index + 1,
    agents: Array.from({ length: size }, (_, agent) => ({ id: String.fromCharCode(65 + index * 5 + agent), task: 't' })),
  }));
}

describe('state transition table', () => {
  it('covers every protocol state, and every target is a protocol state', () => {
    expect(Object.keys(stateTransitions).sort()).toEqual([...protocolStates].sort());
    for (const targets of Object.values(stateTransitions)) for (const target of targets) expect(isProtocolState(target)).toBe(true);
  });

  // reference §10.22
  it('has no targets for COMPLETE and NOT_SUITABLE', () => {
    expect(legalTargets('COMPLETE')).toEqual([]);
    expect(legalTargets('NOT_SUITABLE')).toEqual([]);
  });

  it.each([
    ['BLOCKED', 'REVIEWED'],
    ['REVIEWED', 'COMPLETE'],
    ['SCOUT_PENDING', 'SCOUT_VALIDATING'],
    ['INTERVIEWING', 'SCOUT_PENDING'],
    ['SCOUT_VALIDATING', 'SCOUT_VALIDATING'],
    ['WAVE_EXECUTING', 'WAVE_MERGING'],
    ['WAVE_MERGING', 'WAVE_VERIFIED'],
    ['WAVE_VERIFIED', 'WAVE_PENDING'],
    ['BLOCKED', 'NOT_SUITABLE'],
  ])('allows %s -> %s', (from, to) => {
    expect(isLegalTransition(from, to)).toBe(true);
    expect(checkTransition(from, to)).toEqual({ ok: true, warnings: [] });
  });

  it.each([
    ['SCOUT_PENDING', 'WAVE_EXECUTING'],
    ['WAVE_EXECUTING', 'WAVE_PENDING'],
    ['BLOCKED', 'BLOCKED'],
    ['BLOCKED', 'INTERVIEWING'],
    ['WAVE_MERGING', 'WAVE_PENDING'],
    ['SCOUT_PENDING', 'COMPLETE'],
    ['COMPLETE', 'WAVE_PENDING'],
    ['REVIEWED', 'REVIEWED'],
    ['INTERVIEWING', 'REVIEWED'],
  ])('refuses %s -> %s', (from, to) => {
    expect(isLegalTransition(from, to)).toBe(false);
    expect(checkTransition(from, to).ok).toBe(false);
  });

  it('refuses with the protocol message and N008', () => {
    const result = checkTransition('SCOUT_PENDING', 'WAVE_EXECUTING');
    expect(result).toEqual({
      ok: false,
      finding: {
        code: 'N008_STATE_TRANSITION',
        severity: 'error',
        field: 'state',
        message: 'transition from SCOUT_PENDING to WAVE_EXECUTING is not allowed; valid targets: [SCOUT_VALIDATING, REVIEWED, NOT_SUITABLE, BLOCKED]',
      },
    });
    const terminal = checkTransition('COMPLETE', 'WAVE_PENDING');
    expect(terminal.ok === false && terminal.finding.message).toBe('transition from COMPLETE to WAVE_PENDING is not allowed; valid targets: []');
  });

  it('refuses an empty or unknown current state with a clear message', () => {
    for (const empty of [undefined, '', '  ']) {
      const result = checkTransition(empty, 'REVIEWED');
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.finding.code).toBe('N008_STATE_TRANSITION');
        expect(result.finding.message).toBe('manifest has no state; cannot determine valid transitions');
        expect(result.finding.suggestion).toContain('INTERVIEWING');
      }
    }
    const unknown = checkTransition('SAW:COMPLETE', 'REVIEWED');
    expect(unknown.ok === false && unknown.finding.message).toBe('unknown state "SAW:COMPLETE"; cannot determine valid transitions');
    expect(legalTargets('')).toEqual([]);
    expect(legalTargets('bogus')).toEqual([]);
    expect(isLegalTransition(undefined, 'REVIEWED')).toBe(false);
  });

  it('refuses an unknown target state and says it is not a state', () => {
    const result = checkTransition('REVIEWED', 'reviewed');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.finding.message).toBe(
        'transition from REVIEWED to reviewed is not allowed; valid targets: [SCAFFOLD_PENDING, WAVE_PENDING, WAVE_EXECUTING, BLOCKED, COMPLETE]',
      );
      expect(result.finding.suggestion).toContain('"reviewed" is not a protocol state');
    }
  });

  it('is case-sensitive', () => {
    expect(isProtocolState('complete')).toBe(false);
    expect(isLegalTransition('reviewed', 'COMPLETE')).toBe(false);
  });
});

// reference §10.23
describe('WAVE_EXECUTING -> COMPLETE context warning', () => {
  it('warns when the latest wave with agents has several agents', () => {
    const impl = manifest({ waves: waves(1, 3) });
    const result = checkTransition('WAVE_EXECUTING', 'COMPLETE', impl);
    expect(result).toEqual({
      ok: true,
      warnings: [
        {
          code: 'N008_STATE_TRANSITION',
          severity: 'warning',
          field: 'state',
          message: 'WAVE_EXECUTING -> COMPLETE bypasses merge/verify for wave 2 with 3 agents; consider WAVE_MERGING -> WAVE_VERIFIED -> COMPLETE path',
        },
      ],
    });
  });

  it('does not warn for a solo latest wave', () => {
    expect(checkTransition('WAVE_EXECUTING', 'COMPLETE', manifest({ waves: waves(3, 1) }))).toEqual({ ok: true, warnings: [] });
  });

  it('skips trailing empty waves when finding the latest wave', () => {
    const impl = manifest({ waves: [...waves(2), { number: 2, agents: [] }] });
    expect(transitionContextWarnings(impl, 'WAVE_EXECUTING', 'COMPLETE')).toHaveLength(1);
  });

  it('does not warn for other transitions or without a manifest', () => {
    const impl = manifest({ waves: waves(3) });
    expect(transitionContextWarnings(impl, 'WAVE_VERIFIED', 'COMPLETE')).toEqual([]);
    expect(transitionContextWarnings(impl, 'WAVE_EXECUTING', 'WAVE_MERGING')).toEqual([]);
    expect(checkTransition('WAVE_EXECUTING', 'COMPLETE')).toEqual({ ok: true, warnings: [] });
    expect(transitionContextWarnings(manifest({}), 'WAVE_EXECUTING', 'COMPLETE')).toEqual([]);
  });
});

describe('implStateToProgramStatus', () => {
  it.each([
    ['COMPLETE', 'complete'],
    ['REVIEWED', 'reviewed'],
    ['SCAFFOLD_PENDING', 'reviewed'],
    ['WAVE_PENDING', 'executing'],
    ['WAVE_EXECUTING', 'executing'],
    ['WAVE_MERGING', 'executing'],
    ['WAVE_VERIFIED', 'executing'],
    ['BLOCKED', 'executing'],
    ['SCOUT_PENDING', 'scouting'],
    ['SCOUT_VALIDATING', 'scouting'],
    ['INTERVIEWING', 'pending'],
    ['NOT_SUITABLE', 'pending'],
    ['', 'pending'],
    [undefined, 'pending'],
    ['garbage', 'pending'],
  ])('maps %s to %s', (state, status) => {
    expect(implStateToProgramStatus(state)).toBe(status);
  });

  it('only ever yields a valid program status', () => {
    for (const state of protocolStates) expect(programImplStatuses).toContain(implStateToProgramStatus(state));
  });
});

describe('e15CompletionGuard (issue 13)', () => {
  it.each([['REVIEWED'], ['BLOCKED'], [' BLOCKED ']])('refuses %s -> COMPLETE (skips WAVE_VERIFIED)', (from) => {
    const finding = e15CompletionGuard(from, 'COMPLETE');
    expect(finding?.code).toBe('N008_STATE_TRANSITION');
    expect(finding?.message).toMatch(/^E15: transition from (REVIEWED|BLOCKED) to COMPLETE skips the WAVE_VERIFIED guard/);
    expect(finding?.suggestion).toContain('close-impl --force');
  });

  it.each([
    ['WAVE_VERIFIED', 'COMPLETE'],
    ['WAVE_EXECUTING', 'COMPLETE'],
    ['BLOCKED', 'WAVE_VERIFIED'],
    ['REVIEWED', 'WAVE_PENDING'],
  ])('lets %s -> %s through', (from, to) => {
    expect(e15CompletionGuard(from, to)).toBeUndefined();
  });
});
