import { checkFreeze } from '../../protocol/freeze.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/** `freeze-check <impl>` (E2/I2): `{frozen, violation_count, violations[]}`; exit 1 on violations. */
export async function run(args: string[], _options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const { parsed } = await loadImpl(filePath);
  const result = checkFreeze(requireManifest(parsed, filePath));
  printJson(io, { frozen: result.frozen, violation_count: result.violations.length, violations: result.violations });
  return result.violations.length > 0 ? 1 : 0;
}
