import { stat } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { readTextFile } from '../../store/read-text.js';
import { analyzeSuitability, parseRequirements } from '../../scout-tools/suitability.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { requireOption } from './shared.js';
import { analysisCall } from '../../analysis/engine/scope.js';

/**
 * `analyze-suitability --requirements F [--repo-root DIR] [--output json]` (H1a) — each
 * requirement (`## ID: title` + `Location: path`) classified DONE / PARTIAL / TODO against the
 * repository, with the evidence. Exit 2 when the doc has no requirement with a Location, or the
 * doc or root is missing.
 */
export function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(_args, options, io));
}

async function runCall(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const output = typeof options.output === 'string' ? options.output : 'json';
  if (output !== 'json') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `unsupported output format: ${output} (only json supported)` });
  const requirementsPath = path.resolve(io.cwd, requireOption(options, 'requirements', '--requirements'));
  const repoRoot = typeof options.repoRoot === 'string' ? path.resolve(io.cwd, options.repoRoot) : (repoDirOption(options, io) ?? io.cwd);
  const isDirectory = await stat(repoRoot).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (!isDirectory) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `repo root does not exist: ${repoRoot}` });
  const text = await readTextFile(requirementsPath).catch((error: unknown) => {
    throw PolywaveError.isInstance(error) ? new PolywaveError({ code: 'S002_REQUIREMENTS_READ_FAILED', message: `read requirements doc: ${error.message}` }) : error;
  });
  const requirements = parseRequirements(text).filter((requirement) => requirement.files.length > 0);
  if (requirements.length === 0) {
    throw new PolywaveError({ code: 'S003_NO_REQUIREMENTS', message: `no valid requirements found in ${requirementsPath} (expected "## ID: title" headers with a "Location: path" line)` });
  }
  printJson(io, await analyzeSuitability(repoRoot, requirements));
  return 0;
}
