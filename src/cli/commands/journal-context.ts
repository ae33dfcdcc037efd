import { existsSync, statSync } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { journalPaths, readJournal, summarizeJournal, type JournalPaths } from '../../engine/journal.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { implSlugFromPath, worktreePath } from '../../protocol/names.js';
import { claudeProjectDirName, toolEntriesFromSessionChunk } from '../../protocol/session-log.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implRepoRoot } from './impl-repo.js';
import { journalAgent } from './journal-shared.js';
import { implPathFrom, requireManifest } from './shared.js';

interface SyncResult {
  new_tool_uses: number;
  new_tool_results: number;
  new_bytes: number;
  session_file?: string;
}

/**
 * E23A sync for agents run by Claude Code itself (the skill's Agent tool): appends the tool calls
 * of the newest session log of the agent's worktree (`<CLAUDE_CONFIG_DIR or ~/.claude>/projects/
 * <worktree path with non-alphanumerics as ->/*.jsonl`) since the cursor to `index.jsonl`, full
 * results to `tool-results/`, and advances the cursor. Agents polywave runs write their journal
 * directly, so there is usually nothing to sync.
 */
async function syncClaudeSession(paths: JournalPaths, worktree: string, env: CommandIo['env']): Promise<SyncResult> {
  const none: SyncResult = { new_tool_uses: 0, new_tool_results: 0, new_bytes: 0 };
  const configDir = env.CLAUDE_CONFIG_DIR?.trim() || (env.HOME ? path.join(env.HOME, '.claude') : undefined);
  if (!configDir) return none;
  const projectDir = path.join(configDir, 'projects', claudeProjectDirName(worktree));
  if (!existsSync(projectDir)) return none;
  const logs = (await readdir(projectDir)).filter((name) => name.endsWith('.jsonl')).map((name) => path.join(projectDir, name));
  if (logs.length === 0) return none;
  const newest = logs.map((file) => ({ file, mtime: statSync(file).mtimeMs })).sort((a, b) => b.mtime - a.mtime || a.file.localeCompare(b.file))[0]!.file;

  let cursor: { session_file?: string; offset?: number } = {};
  try {
    cursor = JSON.parse(await readFile(paths.cursor, 'utf8')) as typeof cursor;
  } catch {
    cursor = {};
  }
  const offset = cursor.session_file === newest && typeof cursor.offset === 'number' ? cursor.offset : 0;
  const size = statSync(newest).size;
  if (size <= offset) return { ...none, session_file: newest };
  const handle = await open(newest, 'r');
  let chunk: Buffer;
  try {
    chunk = Buffer.alloc(size - offset);
    await handle.read(chunk, 0, chunk.length, offset);
  } finally {
    await handle.close();
  }
  const toolNames = new Map<string, string>();
  for (const entry of await readJournal(paths.index)) if (entry.kind === 'tool_use' && entry.tool_use_id && entry.tool_name) toolNames.set(entry.tool_use_id, entry.tool_name);
  const { entries, consumedBytes } = toolEntriesFromSessionChunk(chunk.toString('utf8'), toolNames);
  await mkdir(paths.results_dir, { recursive: true });
  const lines: string[] = [];
  for (const { full_text: fullText, ...entry } of entries) {
    let contentFile: string | undefined;
    if (fullText !== undefined && entry.tool_use_id) {
      contentFile = path.join(paths.results_dir, `${entry.tool_use_id.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120)}.txt`);
      await writeFile(contentFile, fullText);
    }
    lines.push(JSON.stringify({ ...entry, ...(contentFile ? { content_file: path.relative(paths.dir, contentFile) } : {}) }));
  }
  if (lines.length > 0) await appendFile(paths.index, `${lines.join('\n')}\n`);
  await writeFile(paths.cursor, `${JSON.stringify({ session_file: newest, offset: offset + consumedBytes })}\n`);
  return {
    new_tool_uses: entries.filter((entry) => entry.kind === 'tool_use').length,
    new_tool_results: entries.filter((entry) => entry.kind === 'tool_result').length,
    new_bytes: consumedBytes,
    session_file: newest,
  };
}

/**
 * `journal-context <impl> --wave N --agent ID [--output F] [--max-entries N]` — E23A: bring the
 * agent's journal up to date (a Claude Code session log of its worktree, when there is one) and
 * write the `context.md` summary an agent is relaunched with after compaction or a retry:
 * files modified, commands, tests, commits, scaffold files read, gate runs, whether the
 * completion report is written. Prints `{journal_dir, new_tool_uses, new_tool_results,
 * new_bytes, context_file, context_length, context_available, total_entries}`. Exit 0, 1 when
 * the journal was never initialized (run journal-init) or the agent is not in that wave, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const { wave, agentId } = journalAgent(manifest, options, 'A007_JOURNAL_INIT_FAIL');
  const root = await implRepoRoot(implPath, options, io);
  const paths = journalPaths(root, implSlugFromPath(implPath, manifest), wave, agentId);
  if (!existsSync(paths.cursor)) {
    throw new PolywaveError({ code: 'A007_JOURNAL_INIT_FAIL', message: `journal not initialized: ${paths.dir} (run: polywave journal-init ${path.basename(implPath)} --wave ${wave} --agent ${agentId})`, exitCode: 1 });
  }
  const sync = await syncClaudeSession(paths, worktreePath(root, implSlugFromPath(implPath, manifest), wave, agentId), io.env);
  const entries = await readJournal(paths.index);
  const maxEntries = typeof options.maxEntries === 'number' && options.maxEntries > 0 ? options.maxEntries : entries.length;
  const scaffoldFiles = (manifest.scaffolds ?? []).map((scaffold) => scaffold.file_path ?? scaffold.file ?? '');
  const gateCommands = (manifest.quality_gates?.gates ?? []).map((gate) => gate.command ?? '');
  const markdown = entries.length === 0 ? '' : `# Session Context (Recovered from Tool Journal)\n\n${summarizeJournal(entries, { window: maxEntries, scaffoldFiles, gateCommands, completionReportWritten: manifest.completion_reports?.[agentId] !== undefined })}`;
  const output = typeof options.output === 'string' && options.output.trim() !== '' ? path.resolve(io.cwd, options.output) : paths.context;
  if (markdown !== '') {
    await mkdir(path.dirname(output), { recursive: true });
    await writeFile(output, markdown);
  }
  printJson(io, {
    journal_dir: paths.dir,
    new_tool_uses: sync.new_tool_uses,
    new_tool_results: sync.new_tool_results,
    new_bytes: sync.new_bytes,
    ...(sync.session_file ? { session_file: sync.session_file } : {}),
    context_file: output,
    context_length: markdown.length,
    context_available: markdown !== '',
    total_entries: entries.length,
  });
  return 0;
}
