import { validateWaveIntegration } from '../../engine/finalize-wave.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { finalizeOptionsFrom } from './finalize-wave.js';

/**
 * `validate-integration <impl> --wave N [--no-wiring]` — E25 unconnected exports and E35 Layer
 * 3B wiring declarations, judged on the wave's merged result (before the merge: a scratch merge
 * of the agent branches), stored in `integration_reports.wave{N}` / `wiring_validation_reports.wave{N}`.
 * Prints `{heuristic_report?, wiring_report?, valid}`; exit 1 when there is a gap.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const result = await validateWaveIntegration(finalizeOptionsFrom('validate-integration', args, { ...options, jsonOnly: true }, io), { wiring: options.wiring !== false });
  printJson(io, { ...(result.heuristic_report ? { heuristic_report: result.heuristic_report } : {}), ...(result.wiring_report ? { wiring_report: result.wiring_report } : {}), valid: result.valid, ...(result.success ? {} : { steps: result.steps }) });
  return result.valid ? 0 : 1;
}
