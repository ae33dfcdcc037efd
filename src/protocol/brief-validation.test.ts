import { describe, expect, it } from 'vitest';
import { parseImpl } from './parse-impl.js';
import { briefSymbolCandidates, editDistance, extractBriefSymbols, extractLineReferences, extractWaveAgentReferences, validateBriefs } from './brief-validation.js';

const manifest = (tasks: Record<string, string>, ownership: string) =>
  parseImpl(`title: t\nfeature_slug: t\nverdict: SUITABLE\ntest_command: x\nlint_command: y\nfile_ownership:\n${ownership}waves:\n  - number: 1\n    agents:\n${Object.entries(tasks)
    .map(([id, task]) => `      - id: ${id}\n        task: ${JSON.stringify(task)}\n`)
    .join('')}`).manifest!;

describe('extractBriefSymbols', () => {
  it('takes backticked identifiers and Go declarations, drops keywords, qualified names and delete/rename/create sentences', () => {
    expect(extractBriefSymbols('Call `parseConfig()` and `Loader`. Use `fmt.Println` and `err`. type Options struct { } func helper(x)')).toEqual(['Loader', 'Options', 'helper', 'parseConfig']);
    expect(extractBriefSymbols('Delete `oldThing`. Rename `Before` to `After`. Add a new function `freshOne`. Keep `Stays`.')).toEqual(['Stays']);
  });
});

describe('extractLineReferences', () => {
  it('ties each line to the file named before it in the paragraph; a paragraph without a file is ignored', () => {
    expect(extractLineReferences('In src/a.ts around line 40 and src/b.go lines 10-12.\n\nAt line 7 nothing is named.')).toEqual([
      { file: 'src/a.ts', line: 40 },
      { file: 'src/b.go', line: 12 },
    ]);
  });
});

describe('extractWaveAgentReferences', () => {
  it('finds "Wave N Agent X" once each', () => {
    expect(extractWaveAgentReferences('after Wave 1 Agent A and wave 2 agent b2, then Wave 1 Agent A again')).toEqual([
      { wave: 1, agent: 'A' },
      { wave: 2, agent: 'B2' },
    ]);
  });
});

describe('validateBriefs', () => {
  const files: Record<string, string> = { 'src/a.ts': 'export function parseConfig() {}\nexport const limit = 1;\n' };
  const read = (file: string) => files[file];

  it('passes existing symbols and lines', () => {
    const result = validateBriefs(manifest({ A: 'Change `parseConfig` in src/a.ts at line 2.' }, '  - {file: src/a.ts, agent: A, wave: 1, action: modify}\n'), { read });
    expect(result).toEqual({ valid: true, agent_results: { A: { agent_id: 'A', passed: true, issues: [] } }, summary: '1 agents validated, 0 issues found' });
  });

  it('reports a missing symbol with close suggestions and a line past the end', () => {
    const result = validateBriefs(manifest({ A: 'Change `parseConfg` in src/a.ts at line 9.' }, '  - {file: src/a.ts, agent: A, wave: 1, action: modify}\n'), { read, repoSymbols: new Set() });
    expect(result.valid).toBe(false);
    expect(result.agent_results.A!.issues).toEqual([
      { check: 'symbol_missing', severity: 'error', description: 'symbol "parseConfg" not found in the agent\'s owned files nor anywhere in the repository', file: 'src/a.ts', symbol: 'parseConfg', suggestions: ['parseConfig'] },
      { check: 'line_invalid', severity: 'error', description: 'line 9 referenced but src/a.ts has 2 line(s)', file: 'src/a.ts', line_number: 9 },
    ]);
  });

  it('a symbol found elsewhere in the repository, or an agent with new files, is not missing', () => {
    const text = 'Use `elsewhere` from src/a.ts.';
    expect(validateBriefs(manifest({ A: text }, '  - {file: src/a.ts, agent: A, wave: 1, action: modify}\n'), { read, repoSymbols: new Set(['elsewhere']) }).valid).toBe(true);
    expect(validateBriefs(manifest({ A: text }, '  - {file: src/a.ts, agent: A, wave: 1, action: modify}\n  - {file: src/n.ts, agent: A, wave: 1, action: new}\n'), { read }).valid).toBe(true);
  });

  it('wave references: wrong wave is an error, an unknown agent a warning', () => {
    const result = validateBriefs(manifest({ A: 'x', B: 'After Wave 2 Agent A and Wave 1 Agent Q.' }, '  - {file: src/a.ts, agent: A, wave: 1, action: modify}\n  - {file: src/b.ts, agent: B, wave: 1, action: new}\n'), { read });
    expect(result.agent_results.B!.issues.map((issue) => [issue.check, issue.severity])).toEqual([
      ['wave_reference_invalid', 'error'],
      ['wave_reference_invalid', 'warning'],
    ]);
  });

  it('briefSymbolCandidates lists every cited symbol once', () => {
    expect(briefSymbolCandidates(manifest({ A: 'use `One` and `two`', B: 'use `One`' }, ''))).toEqual(['One', 'two']);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});
