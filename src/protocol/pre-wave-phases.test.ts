import { describe, expect, it } from 'vitest';
import { parseImpl } from './parse-impl.js';
import { checksStillToCome } from './pre-wave-phases.js';

const impl = (extra: string) => parseImpl(`title: t\nfeature_slug: t\nverdict: SUITABLE\ntest_command: x\nlint_command: y\nfile_ownership: []\nwaves: []\n${extra}`).manifest!;
const scaffolds = 'scaffolds:\n  - {file_path: a.ts, contents: x, status: pending}\n';

describe('checksStillToCome (pre-wave-validate at Scout completion)', () => {
  it('before REVIEWED the critic is still to come; before WAVE_PENDING pending scaffolds are', () => {
    expect([...checksStillToCome(impl(`state: SCOUT_PENDING\n${scaffolds}`)).keys()]).toEqual(['critic_verdict', 'scaffold_validation']);
    expect([...checksStillToCome(impl(`state: REVIEWED\n${scaffolds}`)).keys()]).toEqual(['scaffold_validation']);
    expect([...checksStillToCome(impl(`state: WAVE_PENDING\n${scaffolds}`)).keys()]).toEqual([]);
  });

  it('an ISSUES critic report or a FAILED scaffold is never "to come"', () => {
    expect([...checksStillToCome(impl('state: SCOUT_PENDING\ncritic_report: {verdict: ISSUES, summary: s}\nscaffolds:\n  - {file_path: a.ts, contents: x, status: "FAILED: build"}\n')).keys()]).toEqual([]);
  });
});
