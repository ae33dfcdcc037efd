import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureConfinedDirSync, writeConfinedSync } from '../store/confined-write.js';
import { waveStateDir } from './state-paths.js';

/**
 * The per-agent tool journal (E23A, message-formats "Journal Entry Format"):
 * `.polywave-state/<slug>/wave{N}/agent-{ID}/` in the agent's repository (the main checkout, not the
 * worktree) with `index.jsonl` (append-only ToolEntry lines), `cursor.json`, `recent.json`,
 * `tool-results/` and, when there is history, a generated `context.md`.
 */
export interface JournalPaths {
  dir: string;
  cursor: string;
  index: string;
  recent: string;
  results_dir: string;
  context: string;
}

/** One journal line (the Go `ToolEntry`). */
export interface ToolEntry {
  ts?: string;
  kind?: 'tool_use' | 'tool_result' | string;
  tool_name?: string;
  tool_use_id?: string;
  input?: Record<string, unknown>;
  content_file?: string;
  preview?: string;
  truncated?: boolean;
}

/** The journal directory of an agent: `<root>/.polywave-state/<slug>/wave{N}/agent-{ID}` (IMPL-scoped: see state-paths.ts). */
export function journalPaths(repoRoot: string, slug: string, wave: number, agentId: string): JournalPaths {
  const dir = path.join(waveStateDir(repoRoot, slug, wave), `agent-${agentId}`);
  return {
    dir,
    cursor: path.join(dir, 'cursor.json'),
    index: path.join(dir, 'index.jsonl'),
    recent: path.join(dir, 'recent.json'),
    results_dir: path.join(dir, 'tool-results'),
    context: path.join(dir, 'context.md'),
  };
}

async function createIfMissing(filePath: string, content: string): Promise<void> {
  try {
    const handle = await open(filePath, 'wx');
    try {
      await handle.writeFile(content);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * Creates the journal layout when missing. Never truncates: the journal survives retries and
 * re-runs of prepare-wave (E23A "append-only; entries are never deleted during execution").
 */
export async function initJournal(repoRoot: string, slug: string, wave: number, agentId: string): Promise<JournalPaths> {
  const paths = journalPaths(repoRoot, slug, wave, agentId);
  // Only below a real directory of the repository (an agent in the main checkout can reach it: X3 #21).
  ensureConfinedDirSync(paths.results_dir);
  await Promise.all([
    createIfMissing(paths.cursor, `${JSON.stringify({ session_file: '', offset: 0 })}\n`),
    createIfMissing(paths.index, ''),
    createIfMissing(paths.recent, '[]\n'),
  ]);
  return paths;
}

/** Reads the journal's entries; unreadable lines are skipped (a torn last line after a crash). */
export async function readJournal(indexPath: string): Promise<ToolEntry[]> {
  let text: string;
  try {
    text = await readFile(indexPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const entries: ToolEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      if (value && typeof value === 'object' && !Array.isArray(value)) entries.push(value as ToolEntry);
    } catch {
      // skip
    }
  }
  return entries;
}

/** What the E23A summary may cross-reference. */
export interface JournalSummaryContext {
  scaffoldFiles?: readonly string[];
  gateCommands?: readonly string[];
  completionReportWritten?: boolean;
  /** How many of the last entries to analyse (E23A: 50). */
  window?: number;
}

const testCommandPattern = /\b(go test|npm (?:run )?test|npx vitest|vitest|jest|pytest|cargo test|mvn test|gradle test|yarn test|pnpm test|bun test)\b/;
const fileToolNames = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit', 'edit_file', 'write_file']);
const shellToolNames = new Set(['Bash', 'bash', 'shell', 'run_command']);

function stringInput(entry: ToolEntry, key: string): string | undefined {
  const value = entry.input?.[key];
  return typeof value === 'string' ? value : undefined;
}

function firstLine(text: string | undefined, max = 160): string {
  const line = (text ?? '').split('\n').find((item) => item.trim() !== '') ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * E23A: the `context.md` summary of the last `window` (50) entries — files modified/created,
 * commands run, tests executed, git commits, scaffold files read, verification gate runs and
 * whether the completion report exists. Deterministic (entry order, first occurrence wins).
 */
export function summarizeJournal(entries: readonly ToolEntry[], context: JournalSummaryContext = {}): string {
  const recent = entries.slice(-(context.window ?? 50));
  const results = new Map<string, ToolEntry>();
  for (const entry of recent) if (entry.kind === 'tool_result' && entry.tool_use_id) results.set(entry.tool_use_id, entry);
  const files = new Map<string, number>();
  const commands: string[] = [];
  const tests: string[] = [];
  const commits: string[] = [];
  const scaffoldsRead = new Set<string>();
  const gateRuns: string[] = [];
  const scaffolds = (context.scaffoldFiles ?? []).filter((file) => file !== '');
  const gates = (context.gateCommands ?? []).filter((command) => command.trim() !== '');

  for (const entry of recent) {
    if (entry.kind !== 'tool_use') continue;
    const tool = entry.tool_name ?? '';
    const result = entry.tool_use_id ? results.get(entry.tool_use_id) : undefined;
    if (fileToolNames.has(tool)) {
      const file = stringInput(entry, 'file_path') ?? stringInput(entry, 'path');
      if (file) files.set(file, (files.get(file) ?? 0) + 1);
    } else if (tool === 'Read' || tool === 'read_file') {
      const file = stringInput(entry, 'file_path') ?? stringInput(entry, 'path') ?? '';
      for (const scaffold of scaffolds) if (file.endsWith(scaffold)) scaffoldsRead.add(scaffold);
    } else if (shellToolNames.has(tool)) {
      const command = (stringInput(entry, 'command') ?? '').trim();
      if (command === '') continue;
      const outcome = firstLine(result?.preview);
      commands.push(`\`${firstLine(command, 200)}\`${outcome ? ` → ${outcome}` : ''}`);
      if (testCommandPattern.test(command)) tests.push(`\`${firstLine(command, 200)}\`${outcome ? ` → ${outcome}` : ''}`);
      if (/\bgit\b.*\bcommit\b/.test(command)) {
        const sha = /\[([^\]\s]+) ([0-9a-f]{7,40})\]/.exec(result?.preview ?? '');
        commits.push(sha ? `${sha[2]} on ${sha[1]}` : `\`${firstLine(command, 200)}\``);
      }
      for (const gate of gates) if (command.includes(gate)) gateRuns.push(`\`${gate}\`${outcome ? ` → ${outcome}` : ''}`);
    }
  }

  const list = (items: readonly string[]) => (items.length === 0 ? '- (none)\n' : items.map((item) => `- ${item}\n`).join(''));
  return [
    `Recovered from the last ${recent.length} of ${entries.length} journal entries.\n`,
    '### Files modified/created\n',
    list([...files].map(([file, count]) => `${file}${count > 1 ? ` (${count} edits)` : ''}`)),
    '### Commands run\n',
    list(commands.slice(-20)),
    '### Tests executed\n',
    list(tests),
    '### Git commits made\n',
    list(commits),
    '### Scaffold files imported\n',
    list([...scaffoldsRead]),
    '### Verification gate status\n',
    list(gateRuns),
    '### Completion report status\n',
    `- ${context.completionReportWritten ? 'written to the IMPL doc' : 'not written yet'}\n`,
  ].join('\n');
}

/** Result of {@link recoverJournalContext}. */
export interface RecoveredContext {
  available: boolean;
  /** context.md, when written. */
  file?: string;
  markdown?: string;
  entries: number;
}

/**
 * E23A: when the agent's journal has entries, writes `context.md` and returns the summary for
 * the brief's `## Session Context (Recovered from Tool Journal)` section.
 */
export async function recoverJournalContext(paths: JournalPaths, context: JournalSummaryContext = {}): Promise<RecoveredContext> {
  const entries = await readJournal(paths.index);
  if (entries.length === 0) return { available: false, entries: 0 };
  const markdown = summarizeJournal(entries, context);
  writeConfinedSync(paths.context, `# Session Context (Recovered from Tool Journal)\n\n${markdown}`);
  return { available: true, file: paths.context, markdown, entries: entries.length };
}
