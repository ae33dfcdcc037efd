import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { extractCommands } from '../../analysis/extract-commands.js';
import { checkScaffold, overallStatus } from '../../analysis/scaffold-check.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { loadImpl } from '../../store/manifest-file.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implRepoRoot } from './impl-repo.js';
import { requireManifest, requireOption } from './shared.js';

/**
 * `validate-scaffold <file> --impl-doc <impl> [--format yaml|json] [--timeout S]` — E22: check a
 * scaffold file before the Scaffold Agent commits it: syntax (bracket balance plus gofmt,
 * python3, rustfmt or the TypeScript parser where installed), imports (relative paths and
 * declared packages / go.mod / Cargo.toml), type references (left to the build) and the build
 * (the IMPL's build gate, else the repository's detected build command). Prints
 * `{syntax, imports, type_references, build}` each `{status: PASS|FAIL|SKIP, errors?, fixes?,
 * auto_fixable?}` as YAML (Go) or JSON. Exit 0 no step failed, 1 a step failed, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implDoc = requireOption(options, 'implDoc', '--impl-doc');
  const format = typeof options.format === 'string' ? options.format.trim().toLowerCase() : 'yaml';
  if (format !== 'yaml' && format !== 'json') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--format must be yaml or json, got "${format}"` });
  const file = path.resolve(io.cwd, args[0] ?? '');
  if (!existsSync(file) || !statSync(file).isFile()) throw new PolywaveError({ code: 'X002_FILE_READ', message: `scaffold file not found: ${file}` });
  const implPath = resolveManifestPath(implDoc, { cwd: io.cwd, kind: 'impl' }).path;
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const root = await implRepoRoot(implPath, options, io);

  const gate = (manifest.quality_gates?.gates ?? []).find((candidate) => candidate.type === 'build' && (candidate.command ?? '').trim() !== '');
  const buildCommand = gate?.command ?? (await extractCommands(root))?.build ?? '';
  const timeout = typeof options.timeout === 'number' && options.timeout > 0 ? options.timeout * 1000 : undefined;
  const result = await checkScaffold({ file, root, buildCommand, env: io.env, ...(timeout ? { buildTimeoutMs: timeout } : {}) });
  if (format === 'json') printJson(io, result);
  else io.stdout(stringify(result, { indent: 2 }));
  return overallStatus(result) === 'FAIL' ? 1 : 0;
}
