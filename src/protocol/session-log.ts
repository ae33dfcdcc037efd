/**
 * E23A for agents we did not launch ourselves (the Claude Code skill's Agent tool): their tool
 * calls live in Claude Code's session log (`<config>/projects/<encoded cwd>/<session>.jsonl`).
 * These pure helpers turn new lines of such a log into journal entries (message-formats
 * "Journal Entry Format", the shape our own recorder writes).
 */

/** A journal line (same keys as `engine/journal.ts` ToolEntry). */
export interface SessionToolEntry {
  ts?: string;
  kind: 'tool_use' | 'tool_result';
  tool_name?: string;
  tool_use_id?: string;
  input?: Record<string, unknown>;
  preview?: string;
  truncated?: boolean;
  /** Full result text when longer than the preview (the caller stores it in `tool-results/`). */
  full_text?: string;
}

/** Preview length of a tool result (as our recorder). */
export const sessionPreviewLength = 800;

/** Claude Code's project directory name for a working directory: every non-alphanumeric character becomes `-`. */
export function claudeProjectDirName(workingDirectory: string): string {
  return workingDirectory.replace(/[^A-Za-z0-9]/g, '-');
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .filter((text) => text !== '')
      .join('\n');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

/**
 * Parses the complete lines of a session-log chunk. Returns the entries (tool uses from
 * assistant messages, tool results from user messages, in log order) and how many bytes of
 * `chunk` were consumed — only up to the last newline, so a line still being written is read
 * next time. Unparsable lines are skipped. `toolNames` carries tool_use_id → tool name across
 * chunks (results name their tool).
 */
export function toolEntriesFromSessionChunk(chunk: string, toolNames: Map<string, string>): { entries: SessionToolEntry[]; consumedBytes: number } {
  const end = chunk.lastIndexOf('\n');
  if (end < 0) return { entries: [], consumedBytes: 0 };
  const complete = chunk.slice(0, end + 1);
  const entries: SessionToolEntry[] = [];
  for (const line of complete.split('\n')) {
    if (line.trim() === '') continue;
    let record: { type?: unknown; timestamp?: unknown; message?: { content?: unknown } };
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      continue;
    }
    const content = record.message?.content;
    if (!Array.isArray(content)) continue;
    const ts = typeof record.timestamp === 'string' ? record.timestamp : undefined;
    for (const part of content as Array<Record<string, unknown>>) {
      if (!part || typeof part !== 'object') continue;
      if (part.type === 'tool_use' && typeof part.id === 'string') {
        const name = typeof part.name === 'string' ? part.name : '';
        toolNames.set(part.id, name);
        entries.push({ ...(ts ? { ts } : {}), kind: 'tool_use', tool_name: name, tool_use_id: part.id, input: part.input && typeof part.input === 'object' ? (part.input as Record<string, unknown>) : {} });
      } else if (part.type === 'tool_result' && typeof part.tool_use_id === 'string') {
        const text = `${part.is_error === true ? '[error] ' : ''}${resultText(part.content)}`;
        const truncated = text.length > sessionPreviewLength;
        const name = toolNames.get(part.tool_use_id);
        entries.push({
          ...(ts ? { ts } : {}),
          kind: 'tool_result',
          ...(name ? { tool_name: name } : {}),
          tool_use_id: part.tool_use_id,
          preview: text.slice(0, sessionPreviewLength),
          truncated,
          ...(truncated ? { full_text: text } : {}),
        });
      }
    }
  }
  return { entries, consumedBytes: new TextEncoder().encode(complete).length };
}
