import { describe, expect, it } from 'vitest';
import {
  E16A_MISSING_BLOCK,
  E16B_DEP_GRAPH,
  E16C_OUT_OF_BAND_DEP_GRAPH,
  E16_COMPLETION_REPORT_BLOCK,
  E16_FILE_OWNERSHIP_BLOCK,
  E16_MALFORMED_TYPED_FENCE,
  E16_UNCLOSED_BLOCK,
  E16_WAVE_STRUCTURE_BLOCK,
  V009_INVALID_AGENT_ID,
  lintImplDoc,
} from './lint-impl-doc.js';

const fence = '```';
const agentIdRule =
  'must match ^[A-Z][2-9]?$ (bare letter for generation 1, e.g., A, B, C; multi-gen like A2, B3 for generation 2+)';

function typed(type: string, body: string[]): string[] {
  return [`${fence}yaml type=${type}`, ...body, fence];
}

const ownership = typed('impl-file-ownership', [
  '| File | Agent | Wave | Depends On |',
  '|------|-------|------|------------|',
  '| pkg/foo/validator.go | A | 1 | — |',
  '| pkg/FileReader.go | B | 1 | — |',
  '| pkg/baz/service.go | C | 2 | A, B |',
]);
const depGraph = typed('impl-dep-graph', [
  'Wave 1 (2 parallel agents — foundation):',
  '    [A] pkg/foo/validator.go',
  '        ✓ root',
  '    [B] pkg/FileReader.go',
  '        ✓ root (no dependencies on other agents)',
  '',
  'Wave 2 (1 agent — consumer):',
  '    [C] pkg/baz/service.go',
  '        Depends on [A] for the validator.',
  '        depends on: [A] [B]',
]);
const waveStructure = typed('impl-wave-structure', [
  'Wave 1: [A] [B]                    <- 2 parallel agents',
  '              | (A+B complete)',
  'Wave 2: [C]',
  'Wave 3: {E}                        <- type: integration',
]);

/** A document made of the given sections, each preceded by a heading and a blank line. */
function doc(...sections: string[][]): string {
  const lines = ['# IMPL: example', ''];
  sections.forEach((section, index) => lines.push(`## Section ${index + 1}`, '', ...section, ''));
  return lines.join('\n');
}

/** The 1-based line where `section` (by index) opens in `doc(...)`. */
function openingLine(sections: string[][], index: number): number {
  let line = 3;
  for (let i = 0; i < index; i += 1) line += 2 + sections[i]!.length + 1;
  return line + 2;
}

function codesAndMessages(text: string): [string, string][] {
  return lintImplDoc(text).map((finding) => [finding.code, finding.message]);
}

describe('lintImplDoc — valid documents', () => {
  it('returns nothing for a complete, valid document', () => {
    expect(lintImplDoc(doc(ownership, depGraph, waveStructure))).toEqual([]);
  });

  it('returns nothing for a document without typed blocks (E16A does not fire)', () => {
    expect(lintImplDoc('# IMPL\n\nJust prose.\n\n```go\nfunc main() {}\n```\n')).toEqual([]);
  });
});

describe('E16A required blocks', () => {
  it('reports each missing block once, in alphabetical order, with the exact message', () => {
    const report = typed('impl-completion-report', [
      'status: complete',
      'worktree: .claude/worktrees/polywave/x/wave1-agent-A',
      'branch: polywave/x/wave1-agent-A',
      'commit: abc1234',
      'files_changed: []',
      'interface_deviations: []',
      'verification: PASS',
    ]);
    const findings = lintImplDoc(doc(report));
    expect(findings).toEqual([
      { code: E16A_MISSING_BLOCK, severity: 'error', message: 'missing required block: impl-dep-graph' },
      { code: E16A_MISSING_BLOCK, severity: 'error', message: 'missing required block: impl-file-ownership' },
      { code: E16A_MISSING_BLOCK, severity: 'error', message: 'missing required block: impl-wave-structure' },
    ]);
  });

  it('emits only the missing ones', () => {
    expect(codesAndMessages(doc(ownership, waveStructure))).toEqual([
      [E16A_MISSING_BLOCK, 'missing required block: impl-dep-graph'],
    ]);
  });
});

describe('impl-file-ownership', () => {
  it('requires a header row and stops', () => {
    const block = typed('impl-file-ownership', ['| pkg/a.go | A | 1 | — |']);
    const sections = [block, depGraph, waveStructure];
    const line = openingLine(sections, 0);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16_FILE_OWNERSHIP_BLOCK,
        severity: 'error',
        line,
        message: `impl-file-ownership block (line ${line}): missing header row — expected '| File | Agent | Wave | Depends On |'`,
      },
    ]);
  });

  it('requires at least one data row', () => {
    const block = typed('impl-file-ownership', ['| File | Agent | Wave | Depends On |', '|------|-------|------|------------|']);
    const sections = [block, depGraph, waveStructure];
    const line = openingLine(sections, 0);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [E16_FILE_OWNERSHIP_BLOCK, `impl-file-ownership block (line ${line}): no data rows found — table must have at least one file entry`],
    ]);
  });

  it('requires at least 4 columns per row and reports the row line', () => {
    const block = typed('impl-file-ownership', ['| File | Agent | Wave | Depends On |', '|---|---|---|---|', '| pkg/a.go | A | 1 |']);
    const sections = [block, depGraph, waveStructure];
    const line = openingLine(sections, 0);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16_FILE_OWNERSHIP_BLOCK,
        severity: 'error',
        line: line + 3,
        message: `impl-file-ownership block (line ${line}): row has fewer than 4 columns: | pkg/a.go | A | 1 |`,
      },
    ]);
  });

  it('reports invalid agent IDs with V009 and one assign-agent-ids suggestion', () => {
    const block = typed('impl-file-ownership', [
      '| File | Agent | Wave | Depends On |',
      '|---|---|---|---|',
      '| pkg/a.go | A1 | 1 | — |',
      '| pkg/b.go | b | 1 | — |',
      '| pkg/c.go | C | 1 | — |',
      '| pkg/scaffold.go | Scaffold | 0 | — |',
    ]);
    const sections = [block, depGraph, waveStructure];
    const line = openingLine(sections, 0);
    const findings = lintImplDoc(doc(...sections));
    expect(findings).toEqual([
      { code: V009_INVALID_AGENT_ID, severity: 'error', line: line + 3, message: `impl-file-ownership block (line ${line}): invalid agent ID 'A1' — ${agentIdRule}` },
      { code: V009_INVALID_AGENT_ID, severity: 'error', line: line + 4, message: `impl-file-ownership block (line ${line}): invalid agent ID 'b' — ${agentIdRule}` },
      {
        code: V009_INVALID_AGENT_ID,
        severity: 'error',
        message: 'Run: polywave assign-agent-ids --count 6',
        suggestion: 'polywave assign-agent-ids --count 6',
      },
    ]);
  });

  it('uses the Agent column of the header, wherever it is', () => {
    const block = typed('impl-file-ownership', ['| File | Wave | Agent | Depends On |', '|---|---|---|---|', '| pkg/a.go | 1 | A | — |']);
    expect(lintImplDoc(doc(block, depGraph, waveStructure))).toEqual([]);
  });
});

describe('impl-dep-graph (E16B)', () => {
  it('checks every Wave section: Wave 2 missing depends on: is caught although Wave 1 is fine', () => {
    const block = typed('impl-dep-graph', [
      'Wave 1 (2 parallel agents — foundation):',
      '    [A] pkg/foo/validator.go',
      '        ✓ root',
      '    [B] pkg/bar/handler.go',
      '        ✓ root',
      '',
      'Wave 2 (1 agent — consumer):',
      '    [C] pkg/baz/service.go',
      '        uses A and B',
    ]);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16B_DEP_GRAPH,
        severity: 'error',
        line: line + 8,
        message: `impl-dep-graph block (line ${line}): agent [C] has neither '✓ root' nor 'depends on:' — one is required`,
      },
    ]);
  });

  it('accepts a leading blank line and comment before Wave 1', () => {
    const block = typed('impl-dep-graph', ['', '# dependency graph', 'Wave 1:', '    [A] a.go', '        ✓ root', '    [B] b.go', '        ✓ root', 'Wave 2:', '    [C] c.go', '        depends on: [A] [B]']);
    expect(lintImplDoc(doc(ownership, block, waveStructure))).toEqual([]);
  });

  it('requires a Wave N header', () => {
    const block = typed('impl-dep-graph', ['    [A] a.go', '        ✓ root']);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [E16B_DEP_GRAPH, `impl-dep-graph block (line ${line}): missing 'Wave N (...):' header — each wave must start with 'Wave N'`],
    ]);
  });

  it('requires agent lines', () => {
    const block = typed('impl-dep-graph', ['Wave 1:', '    nothing here']);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [E16B_DEP_GRAPH, `impl-dep-graph block (line ${line}): no agent lines found — expected lines like '    [A] path/to/file'`],
    ]);
  });

  it('reports a Wave section without entries', () => {
    const block = typed('impl-dep-graph', ['Wave 1:', '    [A] a.go', '        ✓ root', 'Wave 2:', '    (nothing yet)']);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16B_DEP_GRAPH,
        severity: 'error',
        line: line + 4,
        message: `impl-dep-graph block (line ${line}): 'Wave 2:' has no agent entries — expected lines like '    [A] path/to/file'`,
      },
    ]);
  });

  it('reports invalid agent IDs in entries and in depends on: targets', () => {
    const block = typed('impl-dep-graph', ['Wave 1:', '    [A1] a.go', '        ✓ root', '    [a] b.go', '        ✓ root', 'Wave 2:', '    [C] c.go', '        depends on: [A] [B0]']);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [V009_INVALID_AGENT_ID, `impl-dep-graph block (line ${line}): invalid agent ID '[A1]' — ${agentIdRule}`],
      [V009_INVALID_AGENT_ID, `impl-dep-graph block (line ${line}): invalid agent ID '[a]' — ${agentIdRule}`],
      [V009_INVALID_AGENT_ID, `impl-dep-graph block (line ${line}): agent [C] depends on invalid agent ID '[B0]' — ${agentIdRule}`],
      [V009_INVALID_AGENT_ID, 'Run: polywave assign-agent-ids --count 6'],
    ]);
  });

  it('rejects depends on: without references, self-dependencies, and both markers together', () => {
    const block = typed('impl-dep-graph', [
      'Wave 1:',
      '    [A] a.go',
      '        ✓ root',
      '        depends on: [B]',
      '    [B] b.go',
      '        depends on: nothing',
      '    [C] c.go',
      '        depends on: [C]',
    ]);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [E16B_DEP_GRAPH, `impl-dep-graph block (line ${line}): agent [A] has both '✓ root' and 'depends on:' — use exactly one`],
      [E16B_DEP_GRAPH, `impl-dep-graph block (line ${line}): agent [B] has 'depends on:' without agent references — expected e.g. 'depends on: [A] [B]'`],
      [E16B_DEP_GRAPH, `impl-dep-graph block (line ${line}): agent [C] depends on itself`],
    ]);
  });

  it('reports agent entries before the first Wave header', () => {
    const block = typed('impl-dep-graph', ['    [A] a.go', '        ✓ root', 'Wave 1:', '    [B] b.go', '        ✓ root']);
    const sections = [ownership, block, waveStructure];
    const line = openingLine(sections, 1);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [E16B_DEP_GRAPH, `impl-dep-graph block (line ${line}): agent [A] appears before any 'Wave N' header`],
    ]);
  });
});

describe('impl-wave-structure', () => {
  it("requires 'Wave N:' lines", () => {
    const block = typed('impl-wave-structure', ['[A] [B]']);
    const sections = [ownership, depGraph, block];
    const line = openingLine(sections, 2);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16_WAVE_STRUCTURE_BLOCK,
        severity: 'error',
        line,
        message: `impl-wave-structure block (line ${line}): missing 'Wave N:' lines — each wave must appear as 'Wave N: [A] [B]'`,
      },
    ]);
  });

  it('requires agent letters', () => {
    const block = typed('impl-wave-structure', ['Wave 1: A B']);
    const sections = [ownership, depGraph, block];
    const line = openingLine(sections, 2);
    expect(codesAndMessages(doc(...sections))).toEqual([
      [E16_WAVE_STRUCTURE_BLOCK, `impl-wave-structure block (line ${line}): no agent letters found — expected [A], [B], etc.`],
    ]);
  });

  it('finds Wave lines after a leading blank line, flags empty waves and invalid IDs', () => {
    const block = typed('impl-wave-structure', ['', 'Wave 1: [A] [B1]', 'Wave 2:']);
    const sections = [ownership, depGraph, block];
    const line = openingLine(sections, 2);
    expect(lintImplDoc(doc(...sections))).toEqual([
      { code: V009_INVALID_AGENT_ID, severity: 'error', line: line + 2, message: `impl-wave-structure block (line ${line}): invalid agent ID '[B1]' — ${agentIdRule}` },
      { code: E16_WAVE_STRUCTURE_BLOCK, severity: 'error', line: line + 3, message: `impl-wave-structure block (line ${line}): 'Wave 2' has no agent letters — expected 'Wave 2: [A] [B]'` },
      { code: V009_INVALID_AGENT_ID, severity: 'error', message: 'Run: polywave assign-agent-ids --count 4', suggestion: 'polywave assign-agent-ids --count 4' },
    ]);
  });
});

describe('impl-completion-report', () => {
  const complete = [
    'status: complete',
    'worktree: .claude/worktrees/polywave/x/wave1-agent-A',
    'branch: polywave/x/wave1-agent-A',
    'commit: abc1234',
    'files_changed:',
    '  - pkg/a.go',
    'interface_deviations: []',
    'verification: PASS',
  ];

  it('accepts a complete report (quoted status with a comment too)', () => {
    const block = typed('impl-completion-report', ['status: "partial"  # tests missing', ...complete.slice(1)]);
    expect(lintImplDoc(doc(ownership, depGraph, waveStructure, typed('impl-completion-report', complete), block))).toEqual([]);
  });

  it('reports each missing required field', () => {
    const block = typed('impl-completion-report', ['status: complete', 'commit: abc']);
    const sections = [ownership, depGraph, waveStructure, block];
    const line = openingLine(sections, 3);
    expect(codesAndMessages(doc(...sections))).toEqual(
      ['branch:', 'files_changed:', 'interface_deviations:', 'verification:', 'worktree:'].map((field) => [
        E16_COMPLETION_REPORT_BLOCK,
        `impl-completion-report block (line ${line}): missing required field '${field}'`,
      ]),
    );
  });

  it('rejects a bad status and the template placeholder', () => {
    for (const [status, shown] of [
      ['done', 'done'],
      ['complete | partial | blocked', 'complete | partial | blocked'],
    ] as const) {
      const block = typed('impl-completion-report', [`status: ${status}`, ...complete.slice(1)]);
      const sections = [ownership, depGraph, waveStructure, block];
      const line = openingLine(sections, 3);
      expect(lintImplDoc(doc(...sections))).toEqual([
        {
          code: E16_COMPLETION_REPORT_BLOCK,
          severity: 'error',
          line: line + 1,
          message: `impl-completion-report block (line ${line}): status must be 'complete', 'partial', or 'blocked' — got: '${shown}'`,
        },
      ]);
    }
  });
});

describe('E16C out-of-band dep graph', () => {
  it('warns about a plain fence holding dep-graph content, still reporting E16A', () => {
    const plain = [fence, 'Wave 1:', '    [A] a.go', '        ✓ root', fence];
    const sections = [ownership, plain, waveStructure];
    const line = openingLine(sections, 1);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16C_OUT_OF_BAND_DEP_GRAPH,
        severity: 'warning',
        line,
        message: `WARNING: possible dep-graph content found outside typed block at line ${line} — use \`yaml type=impl-dep-graph\``,
      },
      { code: E16A_MISSING_BLOCK, severity: 'error', message: 'missing required block: impl-dep-graph' },
    ]);
  });

  it('fires for a plain fence even in a document without typed blocks; not for the same content typed', () => {
    const plain = ['```text', 'Wave 1: [A]', fence];
    expect(codesAndMessages(doc(plain))).toEqual([
      [E16C_OUT_OF_BAND_DEP_GRAPH, 'WARNING: possible dep-graph content found outside typed block at line 5 — use `yaml type=impl-dep-graph`'],
    ]);
    expect(lintImplDoc(doc(ownership, depGraph, waveStructure)).filter((finding) => finding.code === E16C_OUT_OF_BAND_DEP_GRAPH)).toEqual([]);
  });

  it('does not fire without both an agent line and a Wave line', () => {
    expect(lintImplDoc(doc([fence, 'Wave 1 is next', fence], [fence, '[A] only', fence]))).toEqual([]);
  });
});

describe('unclosed and malformed fences', () => {
  it('reports an unclosed typed block as an error and still checks its content', () => {
    const sections = [ownership, depGraph, [`${fence}yaml type=impl-wave-structure`, 'Wave 1: [A]']];
    const line = openingLine(sections, 2);
    expect(lintImplDoc(doc(...sections))).toEqual([
      {
        code: E16_UNCLOSED_BLOCK,
        severity: 'error',
        line,
        message: `impl-wave-structure block (line ${line}): block is never closed — add a line containing only \`\`\` after its content`,
      },
    ]);
  });

  it('warns about an unclosed plain fence', () => {
    const text = ['# IMPL', '```go', 'func x() {}'].join('\n');
    expect(codesAndMessages(text)).toEqual([
      [E16_UNCLOSED_BLOCK, 'fenced block (line 2) is never closed — everything after it is read as code, including any typed blocks'],
    ]);
  });

  it('warns about a typed block swallowed by a plain fence left open before it', () => {
    const text = ['# IMPL', '```go', 'func x() {}', ...ownership].join('\n');
    const findings = lintImplDoc(text);
    expect(findings).toEqual([
      {
        code: E16_MALFORMED_TYPED_FENCE,
        severity: 'warning',
        line: 4,
        message:
          'fence at line 4 is not read as a typed block (it is inside the fenced block opened at line 2 — close that block first) — use ```yaml type=impl-<name> in column 0',
      },
    ]);
  });

  it('does not warn about typed blocks quoted inside a longer fence', () => {
    expect(lintImplDoc(['# IMPL', '````markdown', ...ownership, '````'].join('\n'))).toEqual([]);
  });

  it('warns about typed-looking fences that are not typed blocks', () => {
    const text = doc(ownership, ['```json type=impl-dep-graph', 'Wave 1:', fence], waveStructure);
    const findings = lintImplDoc(text);
    expect(findings.map((finding) => [finding.code, finding.severity])).toEqual([
      [E16_MALFORMED_TYPED_FENCE, 'warning'],
      [E16A_MISSING_BLOCK, 'error'],
    ]);
    expect(findings[0]!.message).toContain('typed blocks must use the yaml language tag');
  });
});

describe('ordering', () => {
  it('sorts findings by line, then code; line-less findings last', () => {
    const badOwnership = typed('impl-file-ownership', ['| File | Agent | Wave | Depends On |', '|---|---|---|---|', '| a.go | x | 1 |']);
    const badGraph = typed('impl-dep-graph', ['Wave 1:', '    [A] a.go']);
    const findings = lintImplDoc(doc(badOwnership, badGraph));
    const lines = findings.map((finding) => finding.line ?? Number.MAX_SAFE_INTEGER);
    expect(lines).toEqual([...lines].sort((left, right) => left - right));
    expect(findings.map((finding) => finding.code)).toEqual([
      E16_FILE_OWNERSHIP_BLOCK,
      E16B_DEP_GRAPH,
      E16A_MISSING_BLOCK,
    ]);
  });
});
