import { loadImpl } from '../../store/manifest-file.js';
import { detectSharedTypes } from '../../scout-tools/shared-types.js';
import type { CommandIo, CommandResult } from '../io.js';
import { formatOption, printFormatted } from './detect-wiring.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `detect-shared-types <impl> [--format yaml|json]` (E45) — types two or more agents define or
 * reference, not yet scaffolded. Prints `{shared_types[…]}`; exit 0 also when there are none.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const format = formatOption(options);
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  printFormatted(io, format, { shared_types: detectSharedTypes(manifest) });
  return 0;
}
