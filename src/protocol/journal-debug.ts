/**
 * `debug-journal`: read an agent's E23A tool journal after the fact — failed calls, a summary,
 * an HTML timeline. Pure: entries in, values out.
 */

/** A journal line (same keys as `engine/journal.ts` ToolEntry). */
export interface JournalLine {
  ts?: string;
  kind?: string;
  tool_name?: string;
  tool_use_id?: string;
  input?: Record<string, unknown>;
  content_file?: string;
  preview?: string;
  truncated?: boolean;
}

/** A tool result that reports a failure: our `[error]` marker, or an error/exit-status text. */
export function isFailedResult(entry: JournalLine): boolean {
  if (entry.kind !== 'tool_result') return false;
  const preview = entry.preview ?? '';
  return preview.startsWith('[error]') || /error:|\bfailed\b|\bfatal\b|\bFAIL\b|exit (?:status|code):? [1-9]/i.test(preview);
}

/** Failed results, each preceded by the call that produced it. */
export function failedEntries(entries: readonly JournalLine[]): JournalLine[] {
  const calls = new Map<string, JournalLine>();
  for (const entry of entries) if (entry.kind === 'tool_use' && entry.tool_use_id) calls.set(entry.tool_use_id, entry);
  const out: JournalLine[] = [];
  for (const entry of entries) {
    if (!isFailedResult(entry)) continue;
    const call = entry.tool_use_id ? calls.get(entry.tool_use_id) : undefined;
    if (call && !out.includes(call)) out.push(call);
    out.push(entry);
  }
  return out;
}

/** The `--summary` facts. */
export interface JournalSummary {
  duration: string;
  tool_calls: number;
  failed_calls: number;
  files_modified: Array<{ path: string; edits: number }>;
  commands_run: Array<{ command: string; status: 'ok' | 'failed' | 'no result'; runs: number }>;
  git_commits: Array<{ sha: string; message: string; branch: string }>;
  report_written: boolean;
}

const fileTools = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'edit_file', 'write_file']);
const shellTools = new Set(['Bash', 'bash', 'shell', 'run_command']);

function formatDuration(milliseconds: number): string {
  if (!Number.isFinite(milliseconds) || milliseconds < 0) return 'unknown';
  const seconds = Math.round(milliseconds / 1000);
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  if (hours > 0) return `${hours}h${minutes % 60}m${seconds % 60}s`;
  if (minutes > 0) return `${minutes}m${seconds % 60}s`;
  return `${seconds}s`;
}

/** Summarizes a journal: duration, files edited, shell commands with their outcome, commits, whether the completion report was written. */
export function summarizeJournalLines(entries: readonly JournalLine[]): JournalSummary {
  const results = new Map<string, JournalLine>();
  for (const entry of entries) if (entry.kind === 'tool_result' && entry.tool_use_id) results.set(entry.tool_use_id, entry);
  const times = entries.map((entry) => Date.parse(entry.ts ?? '')).filter((time) => Number.isFinite(time));
  const files = new Map<string, number>();
  const commands = new Map<string, { command: string; status: 'ok' | 'failed' | 'no result'; runs: number }>();
  const commits: JournalSummary['git_commits'] = [];
  let reportWritten = false;
  for (const entry of entries) {
    if (entry.kind !== 'tool_use') continue;
    const tool = entry.tool_name ?? '';
    const input = entry.input ?? {};
    const result = entry.tool_use_id ? results.get(entry.tool_use_id) : undefined;
    if (fileTools.has(tool)) {
      const file = typeof input.file_path === 'string' ? input.file_path : typeof input.path === 'string' ? input.path : '';
      if (file) files.set(file, (files.get(file) ?? 0) + 1);
    }
    if (/set_completion|set-completion/.test(tool)) reportWritten = true;
    if (!shellTools.has(tool)) continue;
    const command = typeof input.command === 'string' ? input.command.trim() : '';
    if (command === '') continue;
    if (/\bset-completion\b/.test(command)) reportWritten = true;
    const status = result === undefined ? 'no result' : isFailedResult(result) ? 'failed' : 'ok';
    const key = command.split('\n')[0]!.slice(0, 120);
    const previous = commands.get(key);
    commands.set(key, { command: key, status, runs: (previous?.runs ?? 0) + 1 });
    if (/\bgit\b[^\n]*\bcommit\b/.test(command)) {
      const match = /\[([^\]\s]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.*)/.exec(result?.preview ?? '');
      if (match) commits.push({ sha: match[2]!, message: match[3]!.trim(), branch: match[1]! });
    }
  }
  return {
    duration: times.length > 1 ? formatDuration(Math.max(...times) - Math.min(...times)) : '0s',
    tool_calls: entries.filter((entry) => entry.kind === 'tool_use').length,
    failed_calls: entries.filter(isFailedResult).length,
    files_modified: [...files].map(([file, edits]) => ({ path: file, edits })),
    commands_run: [...commands.values()],
    git_commits: commits,
    report_written: reportWritten,
  };
}

/** The summary as text lines (`--summary`). */
export function formatJournalSummary(agentPath: string, summary: JournalSummary): string {
  const lines = [`Journal: ${agentPath}`, `Duration: ${summary.duration}`, `Total tool calls: ${summary.tool_calls} (${summary.failed_calls} failed)`, ''];
  if (summary.files_modified.length > 0) {
    lines.push(`Files modified: ${summary.files_modified.length}`, ...summary.files_modified.map((file) => `  ${file.path.padEnd(40)} (${file.edits} edit${file.edits === 1 ? '' : 's'})`), '');
  }
  if (summary.commands_run.length > 0) {
    lines.push(`Commands run: ${summary.commands_run.length}`, ...summary.commands_run.map((command) => `  ${command.command.padEnd(40)} (${command.status}${command.runs > 1 ? `, ${command.runs} runs` : ''})`), '');
  }
  if (summary.git_commits.length > 0) {
    lines.push(`Commits: ${summary.git_commits.length}`, ...summary.git_commits.map((commit) => `  ${commit.sha.slice(0, 7)} "${commit.message}" (${commit.branch})`), '');
  }
  lines.push('Completion report:', summary.report_written ? '  Written' : '  Not yet written');
  return `${lines.join('\n')}\n`;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A self-contained HTML timeline of the entries (`--export`). */
export function journalTimelineHtml(agentPath: string, entries: readonly JournalLine[]): string {
  const rows = entries.map((entry) => {
    const failed = isFailedResult(entry);
    const detail = entry.kind === 'tool_use' ? JSON.stringify(entry.input ?? {}, null, 2) : (entry.preview ?? '');
    return `<tr class="${entry.kind === 'tool_use' ? 'use' : failed ? 'failed' : 'result'}"><td>${escapeHtml(entry.ts ?? '')}</td><td>${escapeHtml(entry.kind ?? '')}</td><td>${escapeHtml(entry.tool_name ?? '')}</td><td><pre>${escapeHtml(detail)}</pre></td></tr>`;
  });
  return [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>Journal ${escapeHtml(agentPath)}</title>`,
    '<style>body{font-family:system-ui,sans-serif;margin:1.5rem}table{border-collapse:collapse;width:100%}td{border-bottom:1px solid #ddd;padding:.3rem .5rem;vertical-align:top}pre{margin:0;white-space:pre-wrap;font-size:.85rem}tr.use td{background:#f4f7ff}tr.failed td{background:#ffecec}</style>',
    `</head><body><h1>Journal ${escapeHtml(agentPath)}</h1><p>${entries.length} entries</p>`,
    '<table><thead><tr><th>time</th><th>kind</th><th>tool</th><th>detail</th></tr></thead><tbody>',
    ...rows,
    '</tbody></table></body></html>',
    '',
  ].join('\n');
}
