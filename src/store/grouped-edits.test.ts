import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl, type ImplParseResult } from '../protocol/parse-impl.js';
import { applyEdits, type YamlEdit } from '../protocol/yaml/index.js';
import { applyGroupedEdits, mergeCreatedMappings, type GroupedEdit } from './grouped-edits.js';

const manifest = [
  '# a manifest',
  'title: Grouped',
  'feature_slug: grouped',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: a',
  '        - id: B',
  '          task: b',
  '        - id: C',
  '          task: c',
  'state: WAVE_EXECUTING # keep me',
  '',
].join('\n');

function setReport(id: string, value: Record<string, unknown>): GroupedEdit<ImplParseResult> {
  return { keys: [`completion_reports.${id}`], plan: () => ({ edits: [{ path: ['completion_reports', id], value }], outcome: id }) };
}

/** Sets only the status of an existing report (reads the current manifest, like update-status). */
function setStatus(id: string, status: string): GroupedEdit<ImplParseResult> {
  return {
    keys: [`completion_reports.${id}`],
    plan: (parsed) => {
      const existing = parsed.manifest?.completion_reports?.[id];
      if (!existing) throw new PolywaveError({ code: 'N015_STATUS_UPDATE_FAILED', message: `no report for ${id}` });
      return { edits: [{ path: ['completion_reports', id, 'status'], value: status }], outcome: `${id}:${status}` };
    },
  };
}

function sequentially(text: string, items: ReadonlyArray<GroupedEdit<ImplParseResult>>): string {
  let current = text;
  for (const item of items) {
    try {
      current = applyEdits(current, item.plan(parseImpl(current), current).edits);
    } catch {
      // refused: skipped
    }
  }
  return current;
}

describe('applyGroupedEdits', () => {
  it('gives exactly the text of applying each change on its own, in order — first reports included', () => {
    const items = [setReport('A', { status: 'complete', commit: 'aaa' }), setReport('B', { status: 'partial', failure_type: 'transient' }), setStatus('A', 'blocked'), setReport('C', { status: 'complete', commit: 'ccc', notes: 'x # y' }), setStatus('B', 'complete')];
    const grouped = applyGroupedEdits(manifest, parseImpl(manifest), parseImpl, items);
    expect(grouped.text).toBe(sequentially(manifest, items));
    expect(grouped.results).toEqual([
      { ok: true, value: 'A' },
      { ok: true, value: 'B' },
      { ok: true, value: 'A:blocked' },
      { ok: true, value: 'C' },
      { ok: true, value: 'B:complete' },
    ]);
    expect(grouped.text).toContain('state: WAVE_EXECUTING # keep me');
    expect(parseImpl(grouped.text).manifest?.completion_reports?.A?.status).toBe('blocked');
  });

  it('a refused change fails alone with its own error; the others land', () => {
    const items = [setStatus('A', 'blocked'), setReport('B', { status: 'complete', commit: 'bbb' }), { keys: ['x'], plan: () => ({ edits: [{ path: ['waves', 0, 'agents', 7, 'task'], value: 'no such agent' }] as YamlEdit[], outcome: 'bad' }) }];
    const grouped = applyGroupedEdits(manifest, parseImpl(manifest), parseImpl, items);
    expect(grouped.results[0]).toMatchObject({ ok: false });
    expect((grouped.results[0] as { error: PolywaveError }).error.code).toBe('N015_STATUS_UPDATE_FAILED');
    expect(grouped.results[1]).toEqual({ ok: true, value: 'B' });
    expect(grouped.results[2]).toMatchObject({ ok: false });
    expect((parseImpl(grouped.text).data as { completion_reports: unknown }).completion_reports).toEqual({ B: { status: 'complete', commit: 'bbb' } });
  });

  it('merges inserts under a mapping the text does not have into one edit (and leaves the rest alone)', () => {
    const data = parseImpl(manifest).data;
    const edits: YamlEdit[] = [
      { path: ['completion_reports', 'A'], value: { status: 'complete' } },
      { path: ['state'], value: 'WAVE_MERGING' },
      { path: ['completion_reports', 'B'], value: { status: 'partial' } },
      { path: ['completion_reports', 'A', 'commit'], value: 'aaa' },
    ];
    expect(mergeCreatedMappings(edits, data)).toEqual([
      { path: ['completion_reports'], value: { A: { status: 'complete', commit: 'aaa' }, B: { status: 'partial' } } },
      { path: ['state'], value: 'WAVE_MERGING' },
    ]);
    expect((edits[0] as { value: Record<string, unknown> }).value).toEqual({ status: 'complete' });
  });

  it('two hundred first reports in one write: one splice, not two hundred verified re-parses', () => {
    const items = Array.from({ length: 200 }, (_, index) => setReport(`R${index}`, { status: 'complete', commit: `c${index}` }));
    const grouped = applyGroupedEdits(manifest, parseImpl(manifest), parseImpl, items);
    const reports = (parseImpl(grouped.text).data as { completion_reports: Record<string, { commit: string }> }).completion_reports;
    expect(Object.keys(reports)).toEqual(items.map((_, index) => `R${index}`));
    expect(reports.R199?.commit).toBe('c199');
    expect(grouped.text.startsWith(manifest.slice(0, -1))).toBe(true);
  });
});
