import { describe, expect, it } from 'vitest';
import { E16_DUPLICATE_COMPLETION_REPORT, MAX_COMPLETION_BLOCK_CHARS, extractCompletionReports } from './completion-blocks.js';
import { E16_COMPLETION_REPORT_BLOCK, E16_UNCLOSED_BLOCK, V009_INVALID_AGENT_ID } from './lint-impl-doc.js';

const fence = '```';

function report(lines: string[]): string[] {
  return [`${fence}yaml type=impl-completion-report`, ...lines, fence];
}

const reportA = report([
  'status: complete',
  'worktree: .claude/worktrees/polywave/x/wave1-agent-A',
  'branch: polywave/x/wave1-agent-A',
  'commit: 1234567',
  'files_changed:',
  '  - pkg/a.go',
  'interface_deviations: []',
  'verification: PASS',
]);

describe('extractCompletionReports', () => {
  it('reads reports keyed by the nearest preceding Agent heading', () => {
    const text = [
      '# IMPL: x',
      '',
      '### Agent A - Completion Report',
      '',
      ...reportA,
      '',
      'Free-form notes.',
      '',
      '### Agent B2 — Completion Report',
      ...report(['status: partial', 'failure_type: fixable', 'commit: abc1234', 'files_changed: []']),
    ].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(findings).toEqual([]);
    expect(Object.keys(reports)).toEqual(['A', 'B2']);
    expect(reports.A).toEqual({
      status: 'complete',
      worktree: '.claude/worktrees/polywave/x/wave1-agent-A',
      branch: 'polywave/x/wave1-agent-A',
      // A numeric-looking short SHA stays a string.
      commit: '1234567',
      files_changed: ['pkg/a.go'],
      interface_deviations: [],
      verification: 'PASS',
    });
    expect(reports.B2).toEqual({ status: 'partial', failure_type: 'fixable', commit: 'abc1234', files_changed: [] });
  });

  it('falls back to an agent: / agent_id: key when there is no heading', () => {
    const text = ['# IMPL', ...report(['agent: C', 'status: complete']), ...report(['agent_id: D', 'status: blocked'])].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(findings).toEqual([]);
    expect(reports).toEqual({ C: { agent: 'C', status: 'complete' }, D: { agent_id: 'D', status: 'blocked' } });
  });

  it('ignores plain yaml blocks and headings inside code blocks', () => {
    const text = [
      '```markdown',
      '### Agent Z - Completion Report',
      fence,
      '```yaml',
      'status: complete',
      fence,
      ...report(['agent: A', 'status: complete']),
    ].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(findings).toEqual([]);
    expect(reports).toEqual({ A: { agent: 'A', status: 'complete' } });
  });

  it('turns malformed YAML into a finding with the document line and skips the block', () => {
    const text = ['# IMPL', '### Agent A - Completion Report', ...report(['status: complete', 'files_changed: [a.go', 'commit: x'])].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(reports).toEqual({});
    expect(findings.length).toBeGreaterThan(0);
    for (const finding of findings) {
      expect(finding.code).toBe('V046_PARSE_ERROR');
      expect(finding.severity).toBe('error');
      expect(finding.message.startsWith('impl-completion-report block (line 3): invalid YAML at line ')).toBe(true);
      expect(finding.line).toBeGreaterThanOrEqual(4);
      expect(finding.line).toBeLessThanOrEqual(7);
    }
  });

  it('reports duplicate keys with E16_DUPLICATE_KEY at the duplicate line', () => {
    const text = ['### Agent A - Completion Report', ...report(['status: complete', 'status: partial'])].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(reports).toEqual({});
    expect(findings).toMatchObject([{ code: 'E16_DUPLICATE_KEY', severity: 'error', line: 4, column: 1 }]);
  });

  it('keeps the later report for a duplicate agent and warns', () => {
    const text = [
      '### Agent A - Completion Report',
      ...report(['status: partial', 'failure_type: transient']),
      '### Agent A - Completion Report',
      ...report(['status: complete']),
    ].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(reports).toEqual({ A: { status: 'complete' } });
    expect(findings).toEqual([
      {
        code: E16_DUPLICATE_COMPLETION_REPORT,
        severity: 'warning',
        line: 7,
        message: 'impl-completion-report block (line 7): second completion report for agent A; it replaces the one at line 2',
      },
    ]);
  });

  it('reports blocks without an agent, with an invalid agent, or that are not mappings', () => {
    const text = [
      ...report(['status: complete']),
      '### Agent A1 - Completion Report',
      ...report(['status: complete']),
      '### Agent B - Completion Report',
      ...report(['- just', '- a list']),
    ].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(reports).toEqual({});
    expect(findings.map((finding) => [finding.code, finding.line, finding.message])).toEqual([
      [
        E16_COMPLETION_REPORT_BLOCK,
        1,
        "impl-completion-report block (line 1): cannot tell which agent wrote this report — put it under a '### Agent {ID} - Completion Report' heading",
      ],
      [V009_INVALID_AGENT_ID, 4, "impl-completion-report block (line 5): invalid agent ID 'A1' — must match ^[A-Z][2-9]?$"],
      [
        E16_COMPLETION_REPORT_BLOCK,
        9,
        'impl-completion-report block (line 9): a completion report must be a YAML mapping of fields, got a sequence',
      ],
    ]);
  });

  it('warns when the heading and the agent key disagree (heading wins)', () => {
    const text = ['### Agent A - Completion Report', ...report(['agent: B', 'status: complete'])].join('\n');
    const { reports, findings } = extractCompletionReports(text);
    expect(Object.keys(reports)).toEqual(['A']);
    expect(findings).toMatchObject([{ code: E16_COMPLETION_REPORT_BLOCK, severity: 'warning', line: 2 }]);
  });

  it('skips unclosed and oversized blocks with findings, and survives alias bombs', () => {
    const unclosed = ['### Agent A - Completion Report', `${fence}yaml type=impl-completion-report`, 'status: complete'].join('\n');
    expect(extractCompletionReports(unclosed)).toMatchObject({ reports: {}, findings: [{ code: E16_UNCLOSED_BLOCK, line: 2 }] });

    const big = ['### Agent A - Completion Report', ...report([`notes: ${'x'.repeat(MAX_COMPLETION_BLOCK_CHARS)}`])].join('\n');
    expect(extractCompletionReports(big)).toMatchObject({ reports: {}, findings: [{ code: 'RESOURCE_EXHAUSTION', line: 2 }] });

    const bombLines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let level = 1; level < 9; level += 1) {
      const previous = String.fromCharCode(96 + level);
      const next = String.fromCharCode(97 + level);
      bombLines.push(`${next}: &${next} [${Array(9).fill(`*${previous}`).join(',')}]`);
    }
    const bomb = ['### Agent A - Completion Report', ...report(bombLines)].join('\n');
    const result = extractCompletionReports(bomb);
    expect(result.reports).toEqual({});
    expect(result.findings).toMatchObject([{ code: 'RESOURCE_EXHAUSTION', severity: 'error', line: 2 }]);
  });

  it('rejects absurdly nested flow collections without parsing them', () => {
    const deep = ['### Agent A - Completion Report', ...report([`notes: ${'['.repeat(100_000)}`])].join('\n');
    expect(extractCompletionReports(deep)).toEqual({
      reports: {},
      findings: [
        {
          code: 'RESOURCE_EXHAUSTION',
          severity: 'error',
          line: 2,
          message: 'impl-completion-report block (line 2): brackets are nested more than 64 levels deep',
        },
      ],
    });
  });

  it('returns nothing for a document without completion reports', () => {
    expect(extractCompletionReports('# IMPL\n\nprose\n')).toEqual({ reports: {}, findings: [] });
  });
});
