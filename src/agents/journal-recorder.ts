import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ToolCallRecorder } from './contract.js';
import type { JournalPaths, ToolEntry } from '../engine/journal.js';

/** Preview length kept in `index.jsonl` (message-formats "Journal Entry Format"). */
const previewLength = 800;
/** `recent.json` keeps the last entries. */
const recentCount = 30;

/** A recorder that also says how many entries it wrote and flushes `recent.json`. */
export interface JournalRecorder extends ToolCallRecorder {
  readonly entries: number;
  /** Rewrites `recent.json` with the last 30 entries of this run. */
  flush(): void;
}

/**
 * E23A from our own tool loops (not by tailing another program's session log): every tool call
 * and result is appended to the agent's `index.jsonl` as it happens — synchronously, so entries
 * are in call order and survive a crash of the orchestrator right after the call. Full results
 * longer than the preview go to `tool-results/<id>.txt`.
 */
export function createJournalRecorder(paths: JournalPaths, options: { now?: () => Date } = {}): JournalRecorder {
  const now = options.now ?? (() => new Date());
  const recent: ToolEntry[] = [];
  let count = 0;
  mkdirSync(paths.results_dir, { recursive: true });
  const append = (entry: ToolEntry) => {
    appendFileSync(paths.index, `${JSON.stringify(entry)}\n`);
    recent.push(entry);
    if (recent.length > recentCount) recent.shift();
    count += 1;
  };
  const safeId = (id: string) => id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120) || 'call';
  return {
    get entries() {
      return count;
    },
    recordToolUse({ toolCallId, tool, input }) {
      append({ ts: now().toISOString(), kind: 'tool_use', tool_name: tool, tool_use_id: toolCallId, input });
    },
    recordToolResult({ toolCallId, tool, output, isError }) {
      const truncated = output.length > previewLength;
      let contentFile: string | undefined;
      if (truncated) {
        contentFile = path.join(paths.results_dir, `${safeId(toolCallId)}.txt`);
        writeFileSync(contentFile, output);
      }
      append({
        ts: now().toISOString(),
        kind: 'tool_result',
        tool_name: tool,
        tool_use_id: toolCallId,
        preview: `${isError ? '[error] ' : ''}${output.slice(0, previewLength)}`,
        truncated,
        ...(contentFile ? { content_file: path.relative(paths.dir, contentFile) } : {}),
      });
    },
    flush() {
      writeFileSync(paths.recent, `${JSON.stringify(recent, null, 2)}\n`);
    },
  };
}
