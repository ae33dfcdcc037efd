import { checkCompletion } from '../../protocol/completion-report.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/** `check-completion <impl> --agent ID` (E42): exit 0 when a report exists, 1 when not. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const agentId = requireOption(options, 'agent', '--agent');
  const { parsed } = await loadImpl(filePath);
  const result = checkCompletion(requireManifest(parsed, filePath), agentId);
  printJson(io, result, { compact: true });
  return result.found ? 0 : 1;
}
