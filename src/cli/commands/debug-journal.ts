import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readJournal } from '../../engine/journal.js';
import { stateDirName } from '../../engine/state-paths.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { failedEntries, formatJournalSummary, journalTimelineHtml, summarizeJournalLines } from '../../protocol/journal-debug.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

/** `[<slug>/]wave1/agent-A`, `wave1-agent-A` or `.polywave-state/<slug>/wave1/agent-A` → its parts. */
function agentReference(reference: string): { slug?: string; wave: string; agent: string } {
  const match = /(?:^|[/\\])(?:([A-Za-z0-9][A-Za-z0-9._-]*)[/\\])?wave(\d+)[/\\-]agent-([A-Z][2-9]?)[/\\]?$/.exec(`/${reference.trim()}`);
  if (!match) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `agent path must look like <slug>/wave1/agent-A, wave1/agent-A or wave1-agent-A, got "${reference}"` });
  const slug = match[1] === undefined || match[1] === stateDirName ? undefined : match[1];
  return { ...(slug ? { slug } : {}), wave: match[2]!, agent: match[3]! };
}

/**
 * The journal's index: `.polywave-state/<slug>/wave<N>/agent-<ID>/index.jsonl`. Without a slug,
 * the one IMPL that has such a journal (several → a coded error naming them), else the
 * pre-IMPL-scoped place `.polywave-state/wave<N>/agent-<ID>/`.
 */
async function journalIndex(root: string, reference: string): Promise<string> {
  const ref = agentReference(reference);
  const tail = path.join(`wave${ref.wave}`, `agent-${ref.agent}`, 'index.jsonl');
  if (ref.slug) return path.join(root, stateDirName, ref.slug, tail);
  const entries = await readdir(path.join(root, stateDirName), { withFileTypes: true }).catch(() => []);
  const found = entries.filter((entry) => entry.isDirectory() && !/^wave\d+$/.test(entry.name) && existsSync(path.join(root, stateDirName, entry.name, tail))).map((entry) => entry.name).sort();
  if (found.length > 1) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `wave${ref.wave}/agent-${ref.agent} has a journal in several IMPLs (${found.join(', ')}): name one, e.g. ${found[0]}/wave${ref.wave}/agent-${ref.agent}` });
  }
  return found.length === 1 ? path.join(root, stateDirName, found[0]!, tail) : path.join(root, stateDirName, tail);
}

/**
 * `debug-journal <wave1/agent-A> [--failures-only] [--last N] [--summary] [--json] [--export F
 * [--force]]` — inspect an agent's E23A tool journal (`<repo>/.polywave-state/<slug>/wave{N}/agent-{ID}/`):
 * every entry as JSONL (default), only failed calls with the call that made them, a summary
 * (duration, files edited, commands and their outcome, commits, completion report), or an HTML
 * timeline. Exit 0, 1 when there is no journal or the export file exists (without --force), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const agentPath = args[0] ?? '';
  const root = repoDirOption(options, io) ?? io.cwd;
  const index = await journalIndex(root, agentPath);
  if (!existsSync(index)) {
    throw new PolywaveError({ code: 'JOURNAL_NOT_FOUND', message: `no journal for ${agentPath} at ${index} (journals are created by prepare-wave or journal-init; pass --repo-dir for another repository)`, exitCode: 1 });
  }
  const all = await readJournal(index);
  let entries = options.failuresOnly === true ? failedEntries(all) : all;
  const last = typeof options.last === 'number' ? options.last : 0;
  if (last > 0 && entries.length > last) entries = entries.slice(-last);

  if (typeof options.export === 'string' && options.export.trim() !== '') {
    const target = path.resolve(io.cwd, options.export);
    if (existsSync(target) && options.force !== true) throw new PolywaveError({ code: 'JOURNAL_EXPORT_EXISTS', message: `${target} exists (use --force to overwrite)`, exitCode: 1 });
    try {
      await writeFile(target, journalTimelineHtml(agentPath, entries));
    } catch (error) {
      throw new PolywaveError({ code: 'JOURNAL_EXPORT_FAILED', message: `cannot write ${target}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` });
    }
    if (options.json === true) printJson(io, { agent_path: agentPath, total_count: all.length, filter_count: entries.length, export_path: target });
    else io.stdout(`Timeline exported to: ${target}\n`);
    return 0;
  }
  if (options.summary === true) {
    const summary = summarizeJournalLines(all);
    if (options.json === true) printJson(io, { agent_path: agentPath, total_count: all.length, summary });
    else io.stdout(all.length === 0 ? `Journal for ${agentPath} exists but contains no entries yet.\n` : formatJournalSummary(agentPath, summary));
    return 0;
  }
  if (options.json === true) printJson(io, { agent_path: agentPath, total_count: all.length, filter_count: entries.length, entries });
  else for (const entry of entries) io.stdout(`${JSON.stringify(entry)}\n`);
  return 0;
}
