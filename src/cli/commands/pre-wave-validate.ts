import { preWaveValidate } from '../../engine/prepare-wave.js';
import { currentWave } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `pre-wave-validate <impl> [--wave N]` — manifest validation plus every read-only pre-flight
 * check of prepare-wave (state, repositories, I1, I3, E37, I2, E35, E2, dirty tree, stale
 * worktrees), all reported. Default wave: the first incomplete one. Exit 1 when not ready.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const wave = typeof options.wave === 'number' && options.wave > 0 ? options.wave : (currentWave(manifest)?.number ?? 1);
  const repoDir = repoDirOption(options, io);
  const result = await preWaveValidate({ implPath, wave, ...(repoDir ? { repoDir } : {}), env: io.env, now: io.now });
  printJson(io, result);
  return result.ready ? 0 : 1;
}
