import { describe, expect, it, vi } from 'vitest';

// Counts the parses applyEdits does: the batch path verifies several edits with ONE re-parse.
vi.mock('./safe-parse.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./safe-parse.js')>();
  return { ...original, parseYamlSafe: vi.fn(original.parseYamlSafe) };
});

const { applyEdits } = await import('./edit.js');
const { parseYamlSafe } = await import('./safe-parse.js');
const parses = vi.mocked(parseYamlSafe);

const manifest = [
  'title: Feature',
  'feature_slug: feature',
  'state: WAVE_EXECUTING',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: do it',
  'completion_reports:',
  '    A:',
  '        status: complete',
  '',
].join('\n');

describe('applyEdits batches edits that do not touch each other', () => {
  it('verifies four edits with one re-parse (plus the parse of the input)', () => {
    parses.mockClear();
    const result = applyEdits(manifest, [
      { path: ['state'], value: 'WAVE_MERGING' },
      { path: ['merge_state'], value: 'in_progress' },
      { path: ['integration_reports', 'wave1'], value: { gaps: [] } },
      { path: ['completion_reports', 'A', 'status'], value: 'partial' },
    ]);
    expect(parses).toHaveBeenCalledTimes(2);
    expect(result).toBe(
      manifest
        .replace('state: WAVE_EXECUTING', 'state: WAVE_MERGING')
        .replace('        status: complete\n', '        status: partial\nmerge_state: in_progress\nintegration_reports:\n    wave1:\n        gaps: []\n'),
    );
  });

  it('goes edit by edit when the edits overlap, with the same verified result', () => {
    parses.mockClear();
    const result = applyEdits(manifest, [
      { path: ['state'], value: 'WAVE_MERGING' },
      { path: ['state'], value: 'WAVE_VERIFIED' },
    ]);
    expect(parses.mock.calls.length).toBeGreaterThan(2);
    expect(result).toBe(manifest.replace('state: WAVE_EXECUTING', 'state: WAVE_VERIFIED'));
  });
});
