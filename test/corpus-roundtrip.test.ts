import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyEdits, detectYamlStyle, parseYamlSafe, toPlain, type YamlEdit } from '../src/protocol/yaml/index.js';
import { corpusRoot } from './support/cli.js';
import { rotatingShare } from './support/rotation.js';

function listYamlFiles(directory: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(directory).sort()) {
    const full = path.join(directory, entry);
    if (statSync(full).isDirectory()) files.push(...listYamlFiles(full));
    else if (entry.endsWith('.yaml') || entry.endsWith('.yml')) files.push(full);
  }
  return files;
}

const corpusFiles = listYamlFiles(corpusRoot);
const corpus = corpusFiles.map((file) => ({ file, name: path.relative(corpusRoot, file), text: readFileSync(file, 'utf8') }));
/** Corpus files that parse (two PROGRAM files in the corpus are not valid YAML). */
const validCorpus = corpus.filter(({ text }) => parseYamlSafe(text).ok);
/**
 * The edit checks below parse and re-verify each file several times (~1 s of CPU per file for all of
 * them): a third of the valid corpus per CI run, rotating by day so every file is edited every three
 * days (POLYWAVE_TEST_FULL=1: all). Parsing and the no-op edit run on every file, every run.
 */
const editSlice = rotatingShare(validCorpus, 1 / 3);
const editCorpus = editSlice.items;

/** The line `key: value` as it must read after an edit that keeps the old quoting style. */
function expectedLine(originalLine: string, value: string): string {
  const match = /^(\s*[^:]+:\s*)(["']?)/.exec(originalLine);
  const quote = match?.[2] ?? '';
  return `${match?.[1] ?? ''}${quote}${value}${quote}`;
}

/** True when `original` lines appear in `edited` in order (edited only adds lines). */
function isOrderedSubsequence(original: string[], edited: string[]): boolean {
  let position = 0;
  for (const line of edited) {
    if (position < original.length && line === original[position]) position += 1;
  }
  return position === original.length;
}

function plainOf(text: string): Record<string, unknown> {
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) throw new Error(parsed.findings[0]?.message);
  return toPlain(parsed.document) as Record<string, unknown>;
}

const report = {
  status: 'complete',
  worktree: '.claude/worktrees/wave1-agent-Z',
  branch: 'saw/x/wave1-agent-Z',
  commit: '0123abc',
  files_changed: ['pkg/a.go', 'pkg/b_test.go'],
  files_created: [],
  interface_deviations: [],
  out_of_scope_deps: [],
  tests_added: ['TestA: covers "quoted" input', '- leading dash'],
  verification: 'PASS',
  notes: 'Line one: has a colon.\n# not a comment\n  indented line\n',
  completed_at: '2026-03-25T08:48:32Z',
  version: '1.10',
};

describe(`corpus round-trip (edits on ${editSlice.label} valid corpus files)`, () => {
  it('finds the corpus', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(140);
  });

  it('parses every corpus file (or reports a coded failure) and a no-op edit keeps every byte', () => {
    for (const { name, text } of corpus) {
      const parsed = parseYamlSafe(text);
      if (parsed.ok) {
        expect(toPlain(parsed.document), name).toBeTypeOf('object');
      } else {
        expect(parsed.findings[0]?.code, name).toMatch(/^(V046_PARSE_ERROR|RESOURCE_EXHAUSTION)$/);
      }
      expect(applyEdits(text, []), name).toBe(text);
    }
  });

  it('re-setting scalars (plain, quoted, block) to their current value keeps every byte', () => {
    let checked = 0;
    for (const { name, text } of editCorpus) {
      const data = plainOf(text);
      const scalarKeys = Object.keys(data).filter((key) => data[key] !== null && typeof data[key] !== 'object');
      const blockKey = scalarKeys.find((key) => new RegExp(`^${key}: [|>]`, 'm').test(text));
      const picked = [...new Set([scalarKeys[0], blockKey, scalarKeys[scalarKeys.length - 1]])].filter((key): key is string => key !== undefined);
      const edits: YamlEdit[] = picked.map((key) => ({ path: [key], value: data[key] }));
      expect(applyEdits(text, edits), name).toBe(text);
      checked += edits.length;
    }
    expect(checked).toBeGreaterThan(2 * editCorpus.length);
  });

  it('changes exactly one line when setting state, on every corpus file with a state', () => {
    let edited = 0;
    for (const { name, text } of editCorpus) {
      if (!/^state:/m.test(text)) continue;
      const before = plainOf(text);
      const next = before.state === 'WAVE_PENDING' ? 'WAVE_EXECUTING' : 'WAVE_PENDING';
      const result = applyEdits(text, [{ path: ['state'], value: next }]);
      const originalLines = text.split('\n');
      const resultLines = result.split('\n');
      expect(resultLines.length, name).toBe(originalLines.length);
      const changed = resultLines.filter((line, index) => line !== originalLines[index]);
      const originalStateLine = originalLines.find((line) => line.startsWith('state:')) as string;
      expect(changed, name).toEqual([expectedLine(originalStateLine, next)]);
      expect(plainOf(result).state, name).toBe(next);
      edited += 1;
    }
    expect(edited).toBeGreaterThan(editCorpus.length * 0.7);
  });

  it('inserts a completion report into every corpus file, only adding lines', () => {
    for (const { name, text } of editCorpus) {
      const before = plainOf(text);
      const edits: YamlEdit[] = [{ path: ['completion_reports', 'Z9'], value: report }];
      const result = applyEdits(text, edits);
      const originalLines = text.split('\n');
      const resultLines = result.split('\n');
      expect(isOrderedSubsequence(originalLines, resultLines), name).toBe(true);
      const after = plainOf(result);
      expect((after.completion_reports as Record<string, unknown>).Z9, name).toEqual(report);
      const { completion_reports: beforeReports, ...beforeRest } = before;
      const { completion_reports: afterReports, ...afterRest } = after;
      expect(afterRest, name).toEqual(beforeRest);
      const expectedReports = { ...((beforeReports as Record<string, unknown> | null) ?? {}), Z9: report };
      expect(afterReports, name).toEqual(expectedReports);
      // New content is indented like the file (4 spaces for Go-written files, 2 for hand-written ones).
      const unit = ' '.repeat(detectYamlStyle(text).indent);
      if (beforeReports && typeof beforeReports === 'object' && Object.keys(beforeReports).length > 0) {
        expect(result, name).toContain(`\n${unit}Z9:\n${unit}${unit}status: complete\n`);
        expect(result, name).toContain(`\n${unit}${unit}files_changed:\n${unit}${unit}${unit}- pkg/a.go\n`);
      } else {
        expect(result, name).toContain(`\ncompletion_reports:\n${unit}Z9:\n${unit}${unit}status: complete\n`);
      }
    }
  });

  it('replaces an existing completion report wholesale, keeping other reports byte-identical', () => {
    let replaced = 0;
    for (const { name, text } of editCorpus) {
      const before = plainOf(text);
      const reports = before.completion_reports as Record<string, unknown> | undefined;
      if (!reports || typeof reports !== 'object') continue;
      const agents = Object.keys(reports);
      const first = agents[0];
      if (first === undefined) continue;
      const result = applyEdits(text, [{ path: ['completion_reports', first], value: { status: 'blocked', notes: 'retry' } }]);
      const after = plainOf(result);
      expect((after.completion_reports as Record<string, unknown>)[first], name).toEqual({ status: 'blocked', notes: 'retry' });
      for (const other of agents.slice(1)) {
        expect((after.completion_reports as Record<string, unknown>)[other], name).toEqual(reports[other]);
      }
      // Everything outside the completion_reports block is unchanged.
      const cut = (value: string): string => value.replace(/^completion_reports:\n(?:(?: .*)?\n)*/m, '');
      expect(cut(result), name).toBe(cut(text));
      replaced += 1;
    }
    expect(replaced).toBeGreaterThan(editCorpus.length * 0.3);
  });

  it('sets a nested report status with a one-line change', () => {
    for (const { name, text } of editCorpus) {
      const before = plainOf(text);
      const reports = before.completion_reports as Record<string, Record<string, unknown>> | undefined;
      const agent = reports && typeof reports === 'object' ? Object.keys(reports).find((id) => typeof reports[id]?.status === 'string') : undefined;
      if (agent === undefined) continue;
      const result = applyEdits(text, [{ path: ['completion_reports', agent, 'status'], value: 'partial' }]);
      const originalLines = text.split('\n');
      const resultLines = result.split('\n');
      expect(resultLines.length, name).toBe(originalLines.length);
      const changedIndexes = resultLines.map((line, index) => (line !== originalLines[index] ? index : -1)).filter((index) => index >= 0);
      expect(changedIndexes.length, name).toBe(1);
      const index = changedIndexes[0] as number;
      expect(resultLines[index], name).toBe(expectedLine(originalLines[index] as string, 'partial'));
    }
  });

  it('several edits in one call give the same text as one call per edit, on every corpus file', () => {
    // The batch path plans every edit against the original and verifies once; the result must be
    // byte-identical to applying the edits one after another (which verifies after each).
    let batches = 0;
    for (const { name, text } of editCorpus) {
      const before = plainOf(text);
      const edits: YamlEdit[] = [
        { path: ['state'], value: 'WAVE_MERGING' },
        { path: ['merge_state'], value: 'in_progress' },
        { path: ['integration_reports', 'wave9'], value: { gaps: [], summary: 'none: quiet' } },
        { path: ['stub_reports', 'wave9'], value: { hits: [{ file: 'a.go', line: 3 }] } },
      ];
      if (typeof before.title === 'string') edits.push({ path: ['title'], value: `${before.title} (edited)` });
      const together = applyEdits(text, edits);
      const oneByOne = edits.reduce((current, edit) => applyEdits(current, [edit]), text);
      expect(together, name).toBe(oneByOne);
      batches += 1;
    }
    expect(batches).toBe(editCorpus.length);
  });

  it('an edit that only makes sense after an earlier one of the same call still applies (step by step)', () => {
    const text = 'title: x\nstate: WAVE_PENDING\nnotes: plain\n';
    const result = applyEdits(text, [
      { path: ['notes'], value: { first: 1 } },
      { path: ['notes', 'second'], value: 2 },
      { path: ['state'], value: 'BLOCKED' },
    ]);
    expect(plainOf(result)).toEqual({ title: 'x', state: 'BLOCKED', notes: { first: 1, second: 2 } });
    const same = applyEdits(text, [{ path: ['state'], value: 'A' }, { path: ['state'], value: 'B' }]);
    expect(same).toBe('title: x\nstate: B\nnotes: plain\n');
  });
});
