import { describe, expect, it } from 'vitest';
import { parseImpl } from '../parse-impl.js';
import { contextSourceRecorded, injectionMethodRecorded } from './observability-rules.js';

function check(rule: typeof injectionMethodRecorded, text: string) {
  const parsed = parseImpl(`title: t\nfeature_slug: t\nverdict: SUITABLE\ntest_command: x\nlint_command: y\nfile_ownership: []\n${text}`);
  return rule.check({ manifest: parsed.manifest!, locate: parsed.locate }).map((finding) => [finding.code, finding.severity, finding.field]);
}

describe('E44 warnings', () => {
  it('injection_method: only active IMPLs in a protocol state', () => {
    expect(check(injectionMethodRecorded, 'waves: []\nstate: REVIEWED\n')).toEqual([['E44_INJECTION_METHOD_MISSING', 'warning', 'state']]);
    for (const state of ['COMPLETE', 'NOT_SUITABLE', 'INTERVIEWING', 'RUNNING']) expect(check(injectionMethodRecorded, `waves: []\nstate: ${state}\n`)).toEqual([]);
    expect(check(injectionMethodRecorded, 'waves: []\n')).toEqual([]);
    expect(check(injectionMethodRecorded, 'waves: []\nstate: REVIEWED\ninjection_method: hook\n')).toEqual([]);
  });

  it('context_source: launched agents (wave base_commit or a report) in WAVE_EXECUTING/MERGING/VERIFIED', () => {
    const waves = 'waves:\n  - number: 1\n    base_commit: abc\n    agents: [{id: A, task: a}, {id: B, task: b, context_source: prepared-brief}]\n  - number: 2\n    agents: [{id: C, task: c}, {id: D, task: d}]\ncompletion_reports:\n  C: {status: partial}\n';
    expect(check(contextSourceRecorded, `${waves}state: WAVE_MERGING\n`)).toEqual([
      ['E44_CONTEXT_SOURCE_MISSING', 'warning', 'waves[0].agents[0]'],
      ['E44_CONTEXT_SOURCE_MISSING', 'warning', 'waves[1].agents[0]'],
    ]);
    expect(check(contextSourceRecorded, `${waves}state: WAVE_PENDING\n`)).toEqual([]);
  });
});
