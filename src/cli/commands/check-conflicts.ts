import { checkConflicts } from '../../protocol/conflicts.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/** `check-conflicts <impl> [--wave N]` (E11, I1): `{conflict_count, conflicts[]}`; exit 1 when any. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const { parsed } = await loadImpl(filePath);
  const report = checkConflicts(requireManifest(parsed, filePath), typeof options.wave === 'number' ? options.wave : undefined);
  printJson(io, report);
  return report.conflict_count > 0 ? 1 : 0;
}
