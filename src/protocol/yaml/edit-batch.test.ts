import { describe, expect, it, vi } from 'vitest';

// Counts the parses applyEdits does: the batch path verifies several edits with ONE re-parse.
// The final check of a result goes to the fast reader first (what every command reads a manifest with).
vi.mock('./safe-parse.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./safe-parse.js')>();
  return { ...original, parseYamlSafe: vi.fn(original.parseYamlSafe) };
});
vi.mock('./fast-plain.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./fast-plain.js')>();
  return { ...original, loadPlainFast: vi.fn(original.loadPlainFast) };
});

const { applyEdits } = await import('./edit.js');
const { parseYamlSafe } = await import('./safe-parse.js');
const { loadPlainFast } = await import('./fast-plain.js');
const parses = vi.mocked(parseYamlSafe);
const fastReads = vi.mocked(loadPlainFast);

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
  it('verifies four edits with one read of the result (plus the parse of the input)', () => {
    parses.mockClear();
    fastReads.mockClear();
    const result = applyEdits(manifest, [
      { path: ['state'], value: 'WAVE_MERGING' },
      { path: ['merge_state'], value: 'in_progress' },
      { path: ['integration_reports', 'wave1'], value: { gaps: [] } },
      { path: ['completion_reports', 'A', 'status'], value: 'partial' },
    ]);
    expect(parses).toHaveBeenCalledTimes(1);
    expect(fastReads).toHaveBeenCalledTimes(1);
    expect(result).toBe(
      manifest
        .replace('state: WAVE_EXECUTING', 'state: WAVE_MERGING')
        .replace('        status: complete\n', '        status: partial\nmerge_state: in_progress\nintegration_reports:\n    wave1:\n        gaps: []\n'),
    );
  });

  it('goes edit by edit when the edits overlap, with the same verified result', () => {
    parses.mockClear();
    fastReads.mockClear();
    const result = applyEdits(manifest, [
      { path: ['state'], value: 'WAVE_MERGING' },
      { path: ['state'], value: 'WAVE_VERIFIED' },
    ]);
    // the input, then the first edit's result (the next edit is planned on its Document); the last read back fast
    expect(parses).toHaveBeenCalledTimes(2);
    expect(fastReads).toHaveBeenCalledTimes(1);
    expect(result).toBe(manifest.replace('state: WAVE_EXECUTING', 'state: WAVE_VERIFIED'));
  });

  it('a result the fast reader does not take (an anchor and alias) gets the full check, with the same answer', () => {
    const withAlias = `${manifest}defaults: &d\n    retries: 2\nretry_policy: *d\n`;
    parses.mockClear();
    fastReads.mockClear();
    const result = applyEdits(withAlias, [{ path: ['state'], value: 'WAVE_MERGING' }]);
    expect(fastReads).toHaveBeenCalledTimes(1);
    expect(fastReads.mock.results[0]?.value).toBeUndefined();
    expect(parses).toHaveBeenCalledTimes(2);
    expect(result).toBe(withAlias.replace('state: WAVE_EXECUTING', 'state: WAVE_MERGING'));
  });

  it('an input with a duplicate key (tolerated, never made worse): the fast reader takes no result of it, the full check decides', () => {
    const duplicated = manifest.replace('feature_slug: feature\n', 'feature_slug: feature\nfeature_slug: other\n');
    fastReads.mockClear();
    const result = applyEdits(duplicated, [{ path: ['state'], value: 'WAVE_MERGING' }]);
    expect(fastReads.mock.results.every((call) => call.value === undefined)).toBe(true);
    expect(result).toBe(duplicated.replace('state: WAVE_EXECUTING', 'state: WAVE_MERGING'));
  });
});
