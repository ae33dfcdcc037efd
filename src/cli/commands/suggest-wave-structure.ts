import { loadImpl } from '../../store/manifest-file.js';
import { requireRepoRoot } from '../../scout-tools/repo-root.js';
import { suggestWaveStructure } from '../../scout-tools/wave-structure.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { implPathFrom, requireManifest } from './shared.js';
import { analysisCall } from '../../analysis/engine/scope.js';

/**
 * `suggest-wave-structure <impl> [--repo-dir]` — callers of changed interfaces that sit in an
 * earlier wave, or in the same/a later wave without `dependencies` on the changing agent.
 * Prints Go's `[{symbol, changed_in_wave, caller_wave, caller_files, message}]`; exit 1 when
 * there are problems.
 */
export function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(args, options, io));
}

async function runCall(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const repoRoot = await requireRepoRoot(repoDirOption(options, io) ?? io.cwd);
  const problems = await suggestWaveStructure({ manifest, repoRoot });
  printJson(io, problems);
  if (problems.length > 0) io.stderr(`suggest-wave-structure: ${problems.length} problem(s) found\n`);
  return problems.length > 0 ? 1 : 0;
}
