import { describe, expect, it } from 'vitest';
import { neutralizeProgramCompleteMarker, parseProgram } from './parse-program.js';

const minimal = [
  'title: "Minimal project"',
  'program_slug: minimal',
  'state: PLANNING',
  'created: 2026-03-17',
  'impls:',
  '  - slug: single-feature',
  '    title: "Single feature"',
  '    tier: 1',
  '    status: pending',
  '    serial_waves: [1, 2]',
  'tiers:',
  '  - number: 1',
  '    impls: [single-feature]',
  'completion:',
  '  tiers_complete: 0',
  '  tiers_total: 1',
  '  impls_complete: 0',
  '  impls_total: 1',
  '  total_agents: 0',
  '  total_waves: 0',
  '',
].join('\n');

describe('parseProgram', () => {
  it('parses the spec minimal manifest', () => {
    const result = parseProgram(minimal);
    expect(result.fatal).toBe(false);
    expect(result.findings).toEqual([]);
    expect(result.completeMarker).toBe(false);
    expect(result.manifest).toMatchObject({
      title: 'Minimal project',
      program_slug: 'minimal',
      state: 'PLANNING',
      created: '2026-03-17',
      impls: [{ slug: 'single-feature', tier: 1, status: 'pending', depends_on: [], key_outputs: [], serial_waves: [1, 2] }],
      tiers: [{ number: 1, impls: ['single-feature'] }],
      program_contracts: [],
      tier_gates: [],
      pre_mortem: [],
      completion: { tiers_total: 1, impls_total: 1 },
    });
    expect(result.locate(['tiers', 0, 'number'])).toEqual({ line: 12, column: 5 });
  });

  it('treats the program-complete marker as a comment, keeping line numbers (both spellings)', () => {
    for (const marker of ['polywave:program:complete', 'SAW:PROGRAM:COMPLETE']) {
      const text = `${marker}\n${minimal}\n${marker}\n`;
      const result = parseProgram(text);
      expect(result.fatal).toBe(false);
      expect(result.findings).toEqual([]);
      expect(result.completeMarker).toBe(true);
      expect(result.locate(['tiers', 0, 'number'])).toEqual({ line: 13, column: 5 });
    }
    const trailing = parseProgram(`${minimal}\npolywave:program:complete`);
    expect(trailing.fatal).toBe(false);
    expect(trailing.completeMarker).toBe(true);
  });

  it('only whole, unindented marker lines are neutralized', () => {
    expect(neutralizeProgramCompleteMarker('a: 1\npolywave:program:complete  \r\nb: 2')).toEqual({ text: 'a: 1\n#polywave:program:complete  \r\nb: 2', found: true });
    expect(neutralizeProgramCompleteMarker('note: polywave:program:complete\n  polywave:program:complete')).toEqual({
      text: 'note: polywave:program:complete\n  polywave:program:complete',
      found: false,
    });
  });

  it('keeps Go fields and completion_date; unknown keys are warnings with their line', () => {
    const text = minimal.replace('state: PLANNING', 'state: COMPLETE\ncompletion_date: "2026-03-31"\nowner: me').replace('    status: pending', '    status: pending\n    abs_path: /x\n    colour: red');
    const result = parseProgram(text);
    expect(result.manifest?.completion_date).toBe('2026-03-31');
    expect(result.manifest?.impls[0]?.abs_path).toBe('/x');
    expect(result.findings).toEqual([
      { code: 'V013_UNKNOWN_KEY', message: "unknown key 'owner' at top level", severity: 'warning', field: 'owner', line: 5, column: 1 },
      { code: 'V013_UNKNOWN_KEY', message: "unknown key 'colour' at impls[0]", severity: 'warning', field: 'impls[0].colour', line: 13, column: 5 },
    ]);
  });

  it('reports wrong types with path and line (V001) and returns no manifest', () => {
    const result = parseProgram(minimal.replace('    tier: 1', '    tier: first'));
    expect(result.fatal).toBe(false);
    expect(result.manifest).toBeNull();
    expect(result.findings).toHaveLength(1);
    expect(result.findings[0]).toMatchObject({ code: 'V001_MANIFEST_INVALID', field: 'impls[0].tier', line: 8 });
  });

  it('pre_mortem must be a list here (unlike the IMPL object)', () => {
    const result = parseProgram(`${minimal}pre_mortem:\n  overall_risk: low\n`);
    expect(result.manifest).toBeNull();
    expect(result.findings.map((finding) => finding.code)).toContain('V001_MANIFEST_INVALID');
  });

  it('syntax errors, non-mappings and empty text never throw', () => {
    const broken = parseProgram('title: [unclosed\n');
    expect(broken.fatal).toBe(true);
    expect(broken.manifest).toBeNull();
    expect(broken.findings[0]?.severity).toBe('fatal');

    const list = parseProgram('- a\n- b\n');
    expect(list.fatal).toBe(true);
    expect(list.findings[0]).toMatchObject({ code: 'V001_MANIFEST_INVALID', severity: 'fatal' });

    const empty = parseProgram('');
    expect(empty.fatal).toBe(true);
    expect(empty.manifest).toBeNull();
    expect(empty.findings[0]).toMatchObject({ code: 'V001_MANIFEST_INVALID', line: 1 });
  });

  it('duplicate keys are reported', () => {
    const result = parseProgram(minimal.replace('state: PLANNING', 'state: PLANNING\nstate: COMPLETE'));
    expect(result.findings.map((finding) => finding.code)).toContain('E16_DUPLICATE_KEY');
  });
});
