import { stat } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { extractCommands, type CommandSet } from '../../analysis/extract-commands.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/** The Go `commands.CommandSet` as `json.MarshalIndent` prints it (Go field names as keys). */
export function commandSetJson(set: CommandSet): Record<string, unknown> {
  return {
    Toolchain: set.toolchain,
    Commands: {
      Build: set.build,
      Test: { Full: set.test.full, FocusedPattern: set.test.focusedPattern },
      Lint: { Check: set.lint.check, Fix: set.lint.fix },
      Format: { Check: set.format.check, Fix: set.format.fix },
    },
    DetectionSources: set.detectionSources,
  };
}

/** The same set as yaml.v3 marshals it: the Go field names lower-cased (`focusedpattern`, `detectionsources`). */
export function commandSetYamlValue(set: CommandSet): Record<string, unknown> {
  return {
    toolchain: set.toolchain,
    commands: {
      build: set.build,
      test: { full: set.test.full, focusedpattern: set.test.focusedPattern },
      lint: { check: set.lint.check, fix: set.lint.fix },
      format: { check: set.format.check, fix: set.format.fix },
    },
    detectionsources: set.detectionSources,
  };
}

/**
 * `extract-commands <root> [--format yaml|json]` (H2) — the build/test/lint/format commands of a
 * repository from polywave.config.json, CI configs, Makefile, package.json or language defaults
 * (highest priority wins). YAML by default, as the Go tool. Exit 1 when no toolchain is found,
 * 2 for a bad root or format.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const format = typeof options.format === 'string' ? options.format.toLowerCase() : 'yaml';
  if (format !== 'yaml' && format !== 'json') {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `unsupported format: ${String(options.format)} (use yaml or json)` });
  }
  const root = path.resolve(io.cwd, args[0] ?? '.');
  const isDirectory = await stat(root).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (!isDirectory) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${root} is not a directory` });

  const set = await extractCommands(root, { platform: process.platform });
  if (!set) {
    throw new PolywaveError({
      code: 'E005_NO_TOOLCHAIN',
      message: `no toolchain detected: no polywave.config.json commands, CI config, Makefile target, package.json script, go.mod, Cargo.toml, package.json or pyproject.toml/setup.py/requirements.txt found in ${root}`,
      exitCode: 1,
    });
  }
  if (format === 'json') printJson(io, commandSetJson(set));
  else io.stdout(stringify(commandSetYamlValue(set), { indent: 4, lineWidth: 0 }));
  return 0;
}
