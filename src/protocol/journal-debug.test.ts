import { describe, expect, it } from 'vitest';
import { failedEntries, formatJournalSummary, journalTimelineHtml, summarizeJournalLines, type JournalLine } from './journal-debug.js';

const entries: JournalLine[] = [
  { ts: '2026-01-01T00:00:00Z', kind: 'tool_use', tool_name: 'Edit', tool_use_id: '1', input: { file_path: 'src/a.ts' } },
  { ts: '2026-01-01T00:00:01Z', kind: 'tool_result', tool_use_id: '1', preview: 'ok' },
  { ts: '2026-01-01T00:00:02Z', kind: 'tool_use', tool_name: 'bash', tool_use_id: '2', input: { command: 'git commit -m "feat: a"' } },
  { ts: '2026-01-01T00:00:03Z', kind: 'tool_result', tool_use_id: '2', preview: '[wave1-agent-A 1a2b3c4] feat: a\n 1 file changed' },
  { ts: '2026-01-01T00:01:30Z', kind: 'tool_use', tool_name: 'bash', tool_use_id: '3', input: { command: 'npm test' } },
  { ts: '2026-01-01T00:01:35Z', kind: 'tool_result', tool_use_id: '3', preview: '[error] exit code: 1' },
  { ts: '2026-01-01T00:01:40Z', kind: 'tool_use', tool_name: 'set_completion', tool_use_id: '4', input: {} },
];

describe('debug-journal helpers', () => {
  it('failed results come with their call', () => {
    expect(failedEntries(entries).map((entry) => `${entry.kind}:${entry.tool_use_id}`)).toEqual(['tool_use:3', 'tool_result:3']);
  });

  it('summarizes duration, files, commands, commits and the report', () => {
    const summary = summarizeJournalLines(entries);
    expect(summary).toEqual({
      duration: '1m40s',
      tool_calls: 4,
      failed_calls: 1,
      files_modified: [{ path: 'src/a.ts', edits: 1 }],
      commands_run: [
        { command: 'git commit -m "feat: a"', status: 'ok', runs: 1 },
        { command: 'npm test', status: 'failed', runs: 1 },
      ],
      git_commits: [{ sha: '1a2b3c4', message: 'feat: a', branch: 'wave1-agent-A' }],
      report_written: true,
    });
    expect(formatJournalSummary('wave1/agent-A', summary)).toContain('  1a2b3c4 "feat: a" (wave1-agent-A)');
  });

  it('the HTML timeline escapes what the agent wrote', () => {
    const html = journalTimelineHtml('wave1/agent-A', [{ kind: 'tool_result', preview: '<script>x</script>' }]);
    expect(html).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(html).not.toContain('<script>x');
  });
});
