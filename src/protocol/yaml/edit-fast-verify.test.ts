import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { corpusRoot, corpusYamlFiles } from '../../../test/support/corpus.js';
import type { YamlEdit } from './edit.js';

// applyEdits checks its result with the fast reader first; switched off here, the full check decides alone.
let fastReaderOn = true;
vi.mock('./fast-plain.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./fast-plain.js')>();
  return { ...original, loadPlainFast: (text: string) => (fastReaderOn ? original.loadPlainFast(text) : undefined) };
});
const { applyEdits, readsBackAs } = await import('./edit.js');
const { loadPlainFast } = await import('./fast-plain.js');

function outcome(text: string, edits: YamlEdit[], fast: boolean): string {
  fastReaderOn = fast;
  try {
    return `ok\n${applyEdits(text, edits)}`;
  } catch (error) {
    return `error ${(error as { code?: string }).code ?? ''}: ${(error as Error).message}`;
  } finally {
    fastReaderOn = true;
  }
}

describe('the fast check of an edited manifest gives what the full check gives', () => {
  it('every corpus manifest, the writers’ kinds of edits one at a time and together: the same text or the same refusal', () => {
    const files = corpusYamlFiles();
    expect(files.length).toBeGreaterThan(100);
    let fastTaken = 0;
    let compared = 0;
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const data = loadPlainFast(text)?.value as Record<string, unknown> | undefined;
      const keys = data && typeof data === 'object' && !Array.isArray(data) ? Object.keys(data) : [];
      const edits: YamlEdit[][] = [
        [{ path: ['state'], value: 'WAVE_MERGING' }],
        [{ path: ['completion_reports', 'Z'], value: { status: 'complete', commit: 'a1b2c3d', files_changed: ['src/a.ts', 'src/b c.ts'], notes: 'multi\nline: yes # no comment' } }],
        [{ path: ['waves', 0, 'agents', 0, 'task'], value: 'x: y # not a comment' }],
        [{ path: ['merge_state'], value: 'in_progress' }, { path: ['state'], value: 'WAVE_VERIFIED' }, { path: ['stub_reports', 'wave1'], value: { stubs: [] } }],
        ...(keys.length > 1 ? [[{ path: [keys[keys.length - 1]!], delete: true as const }], [{ path: [keys[1]!], value: [1, '2', null, true] }, { path: [keys[1]!], value: 'again' }]] : []),
      ];
      for (const batch of edits) {
        const withFast = outcome(text, batch, true);
        const fullOnly = outcome(text, batch, false);
        expect(withFast, `${path.relative(corpusRoot, file)}: ${JSON.stringify(batch).slice(0, 200)}`).toBe(fullOnly);
        compared += 1;
        if (withFast.startsWith('ok\n') && loadPlainFast(withFast.slice(3))) fastTaken += 1;
      }
    }
    // most results were checked by the fast reader (the comparison is not empty)
    expect(fastTaken).toBeGreaterThan(compared / 2);
  });

  it('the fast check passes only a text that reads back as exactly the data asked for', () => {
    const text = 'state: WAVE_MERGING\ncount: 2\nlist:\n    - a\n    - "2"\n';
    expect(readsBackAs(text, { state: 'WAVE_MERGING', count: 2, list: ['a', '2'] }, {})).toBe(true);
    expect(readsBackAs(text, { state: 'WAVE_MERGING', count: '2', list: ['a', '2'] }, {})).toBe(false);
    expect(readsBackAs(text, { state: 'WAVE_MERGING', count: 2, list: ['a', 2] }, {})).toBe(false);
    expect(readsBackAs(text, { state: 'WAVE_MERGING', count: 2 }, {})).toBe(false);
    expect(readsBackAs(text, { state: 'WAVE_MERGING', count: 2, list: ['a', '2'], extra: null }, {})).toBe(false);
    // what the fast reader does not take (a duplicate key, an alias) and non-default limits: the full check's business
    expect(readsBackAs('a: 1\na: 1\n', { a: 1 }, {})).toBe(false);
    expect(readsBackAs('a: &x 1\nb: *x\n', { a: 1, b: 1 }, {})).toBe(false);
    expect(readsBackAs(text, { state: 'WAVE_MERGING', count: 2, list: ['a', '2'] }, { maxDepth: 64 })).toBe(false);
  });
});
