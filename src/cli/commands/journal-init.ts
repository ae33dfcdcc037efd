import { existsSync } from 'node:fs';
import { initJournal, journalPaths } from '../../engine/journal.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implRepoRoot } from './impl-repo.js';
import { journalAgent } from './journal-shared.js';
import { implSlugFromPath } from '../../protocol/names.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `journal-init <impl> --wave N --agent ID` — E23A: create the agent's tool journal
 * (`<repo>/.polywave-state/<slug>/wave{N}/agent-{ID}/`: cursor.json, index.jsonl, recent.json,
 * tool-results/) before launching it. Idempotent: an existing journal is never truncated.
 * Prints `{status: initialized|already_initialized, journal_dir, cursor_path, index_path,
 * results_dir}`. Exit 0, 1 when the agent is not in that wave (A007_JOURNAL_INIT_FAIL), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const { wave, agentId } = journalAgent(manifest, options, 'A007_JOURNAL_INIT_FAIL');
  const root = await implRepoRoot(implPath, options, io);
  const slug = implSlugFromPath(implPath, manifest);
  const existed = existsSync(journalPaths(root, slug, wave, agentId).cursor);
  const paths = await initJournal(root, slug, wave, agentId);
  printJson(io, { status: existed ? 'already_initialized' : 'initialized', journal_dir: paths.dir, cursor_path: paths.cursor, index_path: paths.index, results_dir: paths.results_dir });
  return 0;
}
