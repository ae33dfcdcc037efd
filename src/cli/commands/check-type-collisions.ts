import { checkWaveCollisions } from '../../engine/finalize-wave.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { finalizeOptionsFrom } from './finalize-wave.js';

/**
 * `check-type-collisions <impl> --wave N` — E41 across the wave's agent branches (types,
 * functions, constants; Go, TS/JS, Python, Rust). Prints `{collisions[{type_name, package,
 * agents, resolution, …}], valid}`; exit 1 when there are collisions.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const result = await checkWaveCollisions({ ...finalizeOptionsFrom('check-type-collisions', args, { ...options, jsonOnly: true }, io), dryRun: true });
  printJson(io, { collisions: result.collisions, valid: result.valid, ...(result.success ? {} : { steps: result.steps }) });
  return result.success && result.valid ? 0 : 1;
}
