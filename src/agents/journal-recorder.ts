import path from 'node:path';
import { appendConfinedSync, ConfinedWriteError, ensureConfinedDirSync, realRootOf, stateRootOf, writeConfinedSync } from '../store/confined-write.js';
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
  /** Set when a journal file was refused (a symlink, a directory leading out): nothing more is written. */
  readonly refused: string | undefined;
}

/**
 * E23A from our own tool loops (not by tailing another program's session log): every tool call
 * and result is appended to the agent's `index.jsonl` as it happens — synchronously, so entries
 * are in call order and survive a crash of the orchestrator right after the call. Full results
 * longer than the preview go to `tool-results/<id>.txt`.
 *
 * An agent working in the main checkout could reach its own journal directory (outside attack X3
 * #21: `index.jsonl` swapped for a symlink to ~/.bashrc): every write goes through
 * store/confined-write.ts (no symlink, inside the repository, one link); after a refusal the
 * recorder writes nothing more (`refused`) rather than fail the agent's tool call.
 */
export function createJournalRecorder(paths: JournalPaths, options: { now?: () => Date } = {}): JournalRecorder {
  const now = options.now ?? (() => new Date());
  const recent: ToolEntry[] = [];
  let count = 0;
  const root = stateRootOf(paths.index);
  let refused: string | undefined;
  /** Runs a write unless one was refused before; a refusal stops the journal, other errors propagate as before. */
  const guarded = (write: () => void): boolean => {
    if (refused !== undefined) return false;
    try {
      write();
      return true;
    } catch (error) {
      if (!(error instanceof ConfinedWriteError)) throw error;
      refused = error.message;
      return false;
    }
  };
  guarded(() => ensureConfinedDirSync(paths.results_dir, realRootOf(root)));
  const append = (entry: ToolEntry) => {
    guarded(() => appendConfinedSync(paths.index, `${JSON.stringify(entry)}\n`, root));
    recent.push(entry);
    if (recent.length > recentCount) recent.shift();
    count += 1;
  };
  const safeId = (id: string) => id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120) || 'call';
  return {
    get entries() {
      return count;
    },
    get refused() {
      return refused;
    },
    recordToolUse({ toolCallId, tool, input }) {
      append({ ts: now().toISOString(), kind: 'tool_use', tool_name: tool, tool_use_id: toolCallId, input });
    },
    recordToolResult({ toolCallId, tool, output, isError }) {
      const truncated = output.length > previewLength;
      let contentFile: string | undefined;
      if (truncated) {
        const file = path.join(paths.results_dir, `${safeId(toolCallId)}.txt`);
        if (guarded(() => writeConfinedSync(file, output, root))) contentFile = file;
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
      guarded(() => writeConfinedSync(paths.recent, `${JSON.stringify(recent, null, 2)}\n`, root));
    },
  };
}
