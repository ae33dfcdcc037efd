import { validateImpl } from '../../protocol/validate-impl.js';
import { preWaveGate } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/** `pre-wave-gate <impl>` — `{ready, checks[{name, status, message}]}`; exit 1 when not ready. */
export async function run(args: string[], _options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const { parsed } = await loadImpl(filePath);
  const manifest = requireManifest(parsed, filePath);
  const findings = [...parsed.findings, ...validateImpl({ manifest, locate: parsed.locate })];
  const result = preWaveGate(manifest, findings);
  printJson(io, result);
  return result.ready ? 0 : 1;
}
