import { loadImpl } from '../../store/manifest-file.js';
import { requireRepoRoot } from '../../scout-tools/repo-root.js';
import { checkTestCascade } from '../../scout-tools/test-cascade.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { implPathFrom, requireManifest } from './shared.js';
import { analysisCall } from '../../analysis/engine/scope.js';

/**
 * `check-test-cascade <impl> [--repo-dir]` (E46) — test files (Go, TS/JS, Python, Rust) that
 * reference a symbol whose signature the IMPL changes and that no agent owns. Prints Go's
 * `[{symbol, test_file, line, context, agents}]`. Exit 1 when there are any.
 */
export function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(args, options, io));
}

async function runCall(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const repoRoot = await requireRepoRoot(repoDirOption(options, io) ?? io.cwd);
  const errors = await checkTestCascade({ manifest, repoRoot });
  printJson(io, errors);
  if (errors.length > 0) io.stderr(`check-test-cascade: ${errors.length} orphaned test caller(s) found\n`);
  return errors.length > 0 ? 1 : 0;
}
