import { stringify } from 'yaml';
import { PolywaveError } from '../../errors/polywave-error.js';
import { loadImpl } from '../../store/manifest-file.js';
import { detectWiring } from '../../scout-tools/wiring-detect.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/** `--format yaml|json` (default yaml, as Go's detect-* commands); X001 otherwise. */
export function formatOption(options: Record<string, unknown>): 'yaml' | 'json' {
  const format = typeof options.format === 'string' ? options.format.toLowerCase() : 'yaml';
  if (format !== 'yaml' && format !== 'json') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --format value: ${String(options.format)} (must be 'yaml' or 'json')` });
  return format;
}

/** Prints `value` as indented JSON or as Go yaml.v3 lays it out (4-space indent). */
export function printFormatted(io: CommandIo, format: 'yaml' | 'json', value: unknown): void {
  if (format === 'json') printJson(io, value);
  else io.stdout(stringify(value, { indent: 4, lineWidth: 0 }));
}

/**
 * `detect-wiring <impl> [--format yaml|json]` (E35) — wiring declarations for cross-agent
 * calls named in the agents' tasks. Prints `{wiring[…]}`; exit 0 also when there are none.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const format = formatOption(options);
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  printFormatted(io, format, { wiring: detectWiring(manifest) });
  return 0;
}
