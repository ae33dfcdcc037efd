import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseImpl } from '../protocol/parse-impl.js';
import { closeReadiness, completionMarkerPattern, insertCompletionMarker } from './close-impl.js';

describe('insertCompletionMarker (E15)', () => {
  it('puts the marker on the line right after the title line', () => {
    const text = '# header comment\ntitle: My feature\nfeature_slug: my-feature\nstate: WAVE_VERIFIED\n';
    const result = insertCompletionMarker(text, '2026-05-12');
    expect(result).toBe('# header comment\ntitle: My feature\n# polywave:complete 2026-05-12\nfeature_slug: my-feature\nstate: WAVE_VERIFIED\n');
    expect(parse(result)).toEqual(parse(text));
  });

  it('goes after the whole title value when the title spans lines', () => {
    const text = 'title: >\n    A long title\n    over two lines\nfeature_slug: x\n';
    const result = insertCompletionMarker(text, '2026-05-12');
    expect(result).toBe('title: >\n    A long title\n    over two lines\n# polywave:complete 2026-05-12\nfeature_slug: x\n');
    expect(parse(result)).toEqual(parse(text));
  });

  it('keeps a trailing comment on the title line and CRLF line endings', () => {
    const text = 'title: T # the title\r\nfeature_slug: x\r\n';
    expect(insertCompletionMarker(text, '2026-05-12')).toBe('title: T # the title\r\n# polywave:complete 2026-05-12\r\nfeature_slug: x\r\n');
  });

  it('writes at the top when there is no title, and never twice', () => {
    const once = insertCompletionMarker('feature_slug: x\n', '2026-05-12');
    expect(once).toBe('# polywave:complete 2026-05-12\nfeature_slug: x\n');
    expect(insertCompletionMarker(once, '2027-01-01')).toBe(once);
    expect(completionMarkerPattern.test(once)).toBe(true);
  });

  it('a title at the end of a file without a final newline', () => {
    expect(insertCompletionMarker('feature_slug: x\ntitle: T', '2026-05-12')).toBe('feature_slug: x\ntitle: T\n# polywave:complete 2026-05-12\n');
  });

  it('is not fooled by the words polywave:complete inside a task', () => {
    const text = 'title: T\nnotes: "commit with [polywave:complete]"\n';
    expect(insertCompletionMarker(text, '2026-05-12')).toContain('title: T\n# polywave:complete 2026-05-12\n');
  });
});

function manifest(yaml: string) {
  const parsed = parseImpl(yaml);
  expect(parsed.manifest, JSON.stringify(parsed.findings)).not.toBeNull();
  return parsed.manifest!;
}

const twoWaves = (state: string, reports: string) => `title: T
feature_slug: t
verdict: SUITABLE
waves:
    - number: 1
      agents:
        - id: A
          task: a
        - id: B
          task: b
${reports}state: ${state}
`;

const allComplete = 'completion_reports:\n    A:\n        status: complete\n        commit: a1\n    B:\n        status: complete\n        commit: b1\n';

describe('closeReadiness (E15 trigger)', () => {
  it('is finished when every agent is complete and the state is WAVE_VERIFIED', () => {
    expect(closeReadiness(manifest(twoWaves('WAVE_VERIFIED', allComplete)))).toEqual({ finished: true, reasons: [] });
  });

  it('names the agents without a complete report', () => {
    const readiness = closeReadiness(manifest(twoWaves('WAVE_VERIFIED', 'completion_reports:\n    A:\n        status: partial\n')));
    expect(readiness.finished).toBe(false);
    expect(readiness.reasons.join()).toContain('A (wave 1, partial), B (wave 1, no report)');
  });

  it('refuses states from which COMPLETE is not reachable, and a multi-agent WAVE_EXECUTING (merge skipped)', () => {
    expect(closeReadiness(manifest(twoWaves('WAVE_PENDING', allComplete))).finished).toBe(false);
    expect(closeReadiness(manifest(twoWaves('WAVE_EXECUTING', allComplete))).reasons.join()).toContain('bypasses merge/verify');
    expect(closeReadiness(manifest(twoWaves('COMPLETE', allComplete))).finished).toBe(true);
  });
});
