import { statSync } from 'node:fs';
import path from 'node:path';
import { assertConfigAccepted } from '../../store/trusted-config.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { isDocsOnlyWave } from '../../gates/docs-only.js';
import { toDetailJson, toGoGateResult } from '../../gates/go-compat.js';
import { runGates } from '../../gates/run-gates.js';
import type { GateTiming } from '../../gates/types.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `run-gates <impl> [--wave N] [--no-cache] [--timing pre-merge|post-merge] [--dir DIR]
 * [--json-detail]` (E21, E21B, E38). Prints the Go-compatible array of gate results (or, with
 * `--json-detail`, the run summary). Exit 0 when no required gate failed, 1 when one did, 2 on
 * bad input or when the run was interrupted.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const timing = parseTiming(options.timing);
  const repoDir = resolveRepoDir(options, filePath, io);
  const { parsed } = await loadImpl(filePath);
  const manifest = requireManifest(parsed, filePath);
  // X10 N9: a blocked, unaccepted polywave.config.json change is refused (exit 1, nothing run).
  await assertConfigAccepted([repoDir], 'run-gates');

  let docsOnly = false;
  if (typeof options.wave === 'number') {
    if (!manifest.waves.some((wave) => wave.number === options.wave)) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `wave ${options.wave} not found in ${filePath}` });
    }
    docsOnly = isDocsOnlyWave(manifest, options.wave);
  }

  // Ctrl-C / SIGTERM: gates run in their own process groups, so stop them before leaving.
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let result;
  try {
    result = await runGates({
      repoDir,
      gates: manifest.quality_gates?.gates ?? [],
      ...(timing ? { timing } : {}),
      noCache: options.cache === false,
      signal: controller.signal,
      now: io.now,
      env: io.env,
      configSearchDirs: [repoDir, path.dirname(filePath)],
      docsOnly,
      // Outside attack X46-08: run on the main checkout after a wave, the gates run the merged agent code, which wrote the
      // checkout's ignored files in place (`.envrc`, `node_modules/.bin/tsc`) and read its `.env` into the printed output.
      // As finalize-wave's post-merge gates and the E21A baseline: a throwaway checkout of the tree (sandboxed gates).
      throwawayCheckout: true,
    });
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }

  for (const gate of result.results) {
    // E38: announce cache hits on stderr (stdout stays pure JSON).
    if (gate.from_cache) io.stderr(`gate [${gate.type}]: skipped (${gate.skip_reason ?? 'cached'})\n`);
    else if (!gate.passed && !gate.skipped) io.stderr(`gate [${gate.type}]: ${gate.required ? 'FAILED' : 'failed (optional, warning)'} — ${gate.command}${gate.error ? ` (${gate.error})` : ` (exit ${gate.exit_code})`}\n`);
  }
  if (options.jsonDetail === true) printJson(io, toDetailJson(result));
  else printJson(io, result.results.map(toGoGateResult));
  if (result.canceled) return 2;
  return result.passed ? 0 : 1;
}

function parseTiming(value: unknown): GateTiming | undefined {
  if (value === undefined) return undefined;
  if (value === 'pre-merge' || value === 'post-merge') return value;
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--timing must be pre-merge or post-merge, got "${String(value)}"` });
}

/**
 * `--dir`/`--repo-dir` when given; else the project root of a manifest at
 * `<root>/docs/IMPL/[complete/]IMPL-*.yaml`; else the current directory.
 */
function resolveRepoDir(options: Record<string, unknown>, manifestPath: string, io: CommandIo): string {
  const explicit = [options.dir, options.repoDir].find((value): value is string => typeof value === 'string' && value.trim() !== '');
  let directory: string;
  if (explicit) directory = path.resolve(io.cwd, explicit);
  else {
    const parent = path.dirname(manifestPath);
    const implDir = path.basename(parent) === 'complete' ? path.dirname(parent) : parent;
    directory = path.basename(implDir) === 'IMPL' && path.basename(path.dirname(implDir)) === 'docs' ? path.dirname(path.dirname(implDir)) : io.cwd;
  }
  let isDirectory: boolean;
  try {
    isDirectory = statSync(directory).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `repository directory not found: ${directory}` });
  return directory;
}
