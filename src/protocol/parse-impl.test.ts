import { describe, expect, it } from 'vitest';
import { parseImpl } from './parse-impl.js';

const minimal = `title: Demo
feature_slug: demo
verdict: SUITABLE
waves:
    - number: 1
      agents:
        - id: A
          task: do it
          files: [a.ts]
`;

describe('parseImpl', () => {
  it('parses a manifest into the normalized model (lists defaulted)', () => {
    const result = parseImpl(minimal);
    expect(result.fatal).toBe(false);
    expect(result.findings).toEqual([]);
    expect(result.manifest?.waves[0]?.agents[0]?.id).toBe('A');
    expect(result.manifest?.file_ownership).toEqual([]);
  });

  it('treats an empty or comments-only file as a fatal coded error', () => {
    for (const text of ['', '\n\n', '# only a comment\n']) {
      const result = parseImpl(text);
      expect(result.fatal).toBe(true);
      expect(result.manifest).toBeNull();
      expect(result.findings[0]).toMatchObject({ code: 'V001_MANIFEST_INVALID', severity: 'fatal', line: 1, column: 1 });
    }
  });

  it('refuses a root that is not a mapping', () => {
    const result = parseImpl('- a\n- b\n');
    expect(result.fatal).toBe(true);
    expect(result.findings[0]?.message).toContain('a sequence');
  });

  it('reports YAML syntax errors with line and column, fatally', () => {
    const result = parseImpl('title: x\nwaves: [1, 2\n');
    expect(result.fatal).toBe(true);
    expect(result.findings[0]).toMatchObject({ code: 'V046_PARSE_ERROR', severity: 'fatal' });
    expect(result.findings[0]?.line).toBeGreaterThan(0);
    expect(result.findings[0]?.column).toBeGreaterThan(0);
  });

  it('reports wrong types with the field path and line, without a manifest', () => {
    const result = parseImpl(minimal.replace('number: 1', 'number: one'));
    expect(result.fatal).toBe(false);
    expect(result.manifest).toBeNull();
    expect(result.findings).toEqual([
      expect.objectContaining({ code: 'V001_MANIFEST_INVALID', field: 'waves[0].number', line: 5, message: 'waves[0].number: expected a number, got string "one"' }),
    ]);
  });

  it('reports unknown keys with their path and line, keeping the manifest', () => {
    const result = parseImpl(minimal.replace('          task: do it', '          task: do it\n          colour: blue'));
    expect(result.manifest).not.toBeNull();
    expect(result.findings).toEqual([
      expect.objectContaining({ code: 'V013_UNKNOWN_KEY', message: "unknown key 'colour' at waves[0].agents[0]", field: 'waves[0].agents[0].colour', line: 9 }),
    ]);
  });

  it('reports duplicate keys at any depth with every line', () => {
    const result = parseImpl(minimal.replace('          task: do it', '          task: do it\n          task: again'));
    const duplicate = result.findings.find((finding) => finding.code === 'E16_DUPLICATE_KEY');
    expect(duplicate?.message).toBe("duplicate key 'task' at lines 8, 9");
    expect(duplicate?.field).toBe('waves[0].agents[0].task');
  });

  it('keeps the source text of number-like scalars in string fields (Go yaml.v3 decoding)', () => {
    const result = parseImpl(`${minimal}completion_reports:\n    A:\n        status: complete\n        commit: 0123\n`);
    expect(result.manifest?.completion_reports?.A?.commit).toBe('0123');
  });

  it('accepts every field the Go structs add (no V013 for them)', () => {
    const text = `${minimal}suitability_reasoning: why
integration_gap_severity_threshold: warning
wiring_validation_reports: {}
original_branch: main
quality_gates:
    level: quick
    gates:
        - type: test
          command: npm test
          required: true
          phase: VALIDATION
          parallel_group: checks
completion_reports:
    A:
        status: complete
        commit: abc1234
        dedup_stats:
            hits: 1
            misses: 2
            tokens_saved_estimate: 3
`;
    const result = parseImpl(text);
    expect(result.findings.filter((finding) => finding.code === 'V013_UNKNOWN_KEY')).toEqual([]);
  });
});
