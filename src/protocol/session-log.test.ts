import { describe, expect, it } from 'vitest';
import { claudeProjectDirName, sessionPreviewLength, toolEntriesFromSessionChunk } from './session-log.js';

describe('Claude Code session logs → journal entries (E23A)', () => {
  it("names the project directory like Claude Code (every non-alphanumeric → '-')", () => {
    expect(claudeProjectDirName('/home/me/my.repo/.claude/worktrees/x')).toBe('-home-me-my-repo--claude-worktrees-x');
  });

  it('reads complete lines only, names results after their call, marks errors and long results', () => {
    const long = 'x'.repeat(sessionPreviewLength + 5);
    const lines = [
      JSON.stringify({ type: 'assistant', timestamp: 't1', message: { content: [{ type: 'text', text: 'hi' }, { type: 'tool_use', id: 'a', name: 'Bash', input: { command: 'ls' } }] } }),
      'not json',
      JSON.stringify({ type: 'user', timestamp: 't2', message: { content: [{ type: 'tool_result', tool_use_id: 'a', is_error: true, content: [{ type: 'text', text: long }] }] } }),
    ];
    const chunk = `${lines.join('\n')}\n{"type":"user","mess`;
    const names = new Map<string, string>();
    const { entries, consumedBytes } = toolEntriesFromSessionChunk(chunk, names);
    expect(consumedBytes).toBe(chunk.lastIndexOf('\n') + 1);
    expect(entries[0]).toEqual({ ts: 't1', kind: 'tool_use', tool_name: 'Bash', tool_use_id: 'a', input: { command: 'ls' } });
    expect(entries[1]).toMatchObject({ ts: 't2', kind: 'tool_result', tool_name: 'Bash', tool_use_id: 'a', truncated: true });
    expect(entries[1]!.preview).toHaveLength(sessionPreviewLength);
    expect(entries[1]!.preview!.startsWith('[error] ')).toBe(true);
    expect(entries[1]!.full_text).toBe(`[error] ${long}`);
    expect(toolEntriesFromSessionChunk('{"partial":', names)).toEqual({ entries: [], consumedBytes: 0 });
  });
});
