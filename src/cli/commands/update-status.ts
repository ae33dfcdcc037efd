import { PolywaveError } from '../../errors/polywave-error.js';
import { submitImplRequest } from '../../store/manifest-inbox.js';
import { manifestWriteOptions } from '../manifest-write-options.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { resolveManifestPath } from '../../store/resolve-path.js';

/**
 * `update-status <impl> --wave N --agent ID --status S [--commit SHA]` (E7): group-committed with
 * every other report and status write waiting at that moment (store/manifest-inbox.ts).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // Not shared.ts's implPathFrom: it loads the manifest parser, which only the process that writes needs.
  const filePath = resolveManifestPath(args[0] ?? '', { cwd: io.cwd, kind: 'impl' }).path;
  const agentId = requiredText(options.agent, '--agent');
  const status = requiredText(options.status, '--status');
  const data = await submitImplRequest(
    filePath,
    'status-update',
    { wave: options.wave as number, agentId, status, ...(typeof options.commit === 'string' ? { commit: options.commit } : {}) },
    manifestWriteOptions(io.env),
  );
  printJson(io, data);
  return 0;
}

/** A required string flag (as shared.ts's requireOption, which this command does not load). */
function requiredText(value: unknown, flag: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} is required` });
  return value.trim();
}
