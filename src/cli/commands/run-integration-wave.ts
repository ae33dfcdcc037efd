import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { waveOption } from './prepare-wave.js';
import { run as runWaveCommand } from './run-wave.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `run-integration-wave <impl> --wave N [run-wave's flags]` — E27: a planned integration wave
 * (`type: integration`) runs for real: its agents work in the main checkout (no worktrees), one at
 * a time, restricted to the files they own, then the wave is finalized — run-wave's integration
 * path. Go only writes a brief and prints launch metadata; we launch. Prints run-wave's result
 * with each agent also carrying Go's `id`, `files` and `brief` (its task). Exit 0 verified,
 * 1 blocked or not an integration wave (E27_NOT_INTEGRATION_WAVE, nothing changed), 2 bad input
 * (no such wave: P011_WAVE_NOT_FOUND).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const waveData = (manifest.waves ?? []).find((candidate) => candidate.number === wave);
  if (!waveData) throw new PolywaveError({ code: 'P011_WAVE_NOT_FOUND', message: `wave ${wave} not found in ${path.basename(implPath)}` });
  if (waveData.type !== 'integration') {
    throw new PolywaveError({
      code: 'E27_NOT_INTEGRATION_WAVE',
      message: `wave ${wave} of ${path.basename(implPath)} is not a planned integration wave (type: ${waveData.type ?? 'standard'}); run it with: polywave run-wave ${path.basename(implPath)} --wave ${wave}`,
      exitCode: 1,
    });
  }
  const meta = new Map((waveData.agents ?? []).map((agent) => [agent.id ?? '', { id: agent.id ?? '', files: [...(agent.files ?? [])], brief: agent.task ?? '' }]));
  if (options.json === true) return runWaveCommand(args, options, io);
  // Human mode: run-wave prints one JSON document; add Go's per-agent keys to it.
  let printed = '';
  const code = await runWaveCommand(args, options, { ...io, stdout: (text) => (printed += text) });
  try {
    const result = JSON.parse(printed) as { agents?: Array<Record<string, unknown> & { agent?: string }> };
    result.agents = (result.agents ?? []).map((agent) => ({ ...meta.get(agent.agent ?? ''), ...agent }));
    printJson(io, result);
  } catch {
    io.stdout(printed);
  }
  return code;
}
