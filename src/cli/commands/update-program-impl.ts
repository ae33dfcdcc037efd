import path from 'node:path';
import { isProgramImplStatus, setProgramImplStatus } from '../../engine/program/program-edits.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { programImplStatuses } from '../../protocol/schema/program-schema.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { programPathFrom, requireOption } from './shared.js';

/**
 * `update-program-impl <program> --impl SLUG --status S` — sets one IMPL entry's status (E32) and
 * keeps the completion counters in line. Prints `{updated, manifest_path, impl_slug,
 * previous_status, new_status}`. Exit 0; 1 no such IMPL; 2 bad status or unreadable manifest.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = programPathFrom(args, io);
  const slug = requireOption(options, 'impl', '--impl');
  const status = requireOption(options, 'status', '--status');
  if (!isProgramImplStatus(status)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid IMPL status "${status}" — must be one of: ${programImplStatuses.join(', ')}` });
  }
  const outcome = await setProgramImplStatus(filePath, slug, status);
  printJson(io, { updated: true, manifest_path: path.relative(io.cwd, filePath) || filePath, impl_slug: slug, previous_status: outcome.previous ?? '', new_status: status });
  return 0;
}
