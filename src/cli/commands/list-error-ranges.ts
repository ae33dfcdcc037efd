import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseErrorRanges } from '../../protocol/error-ranges.js';
import { readTextFile } from '../../store/read-text.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

/** Where a Go project keeps its error-code registry (the polywave-go layout). */
export const errorRegistryPath = path.join('pkg', 'result', 'codes.go');

/**
 * `list-error-ranges [--repo-dir D]` — the error-code ranges a project allocates in the package
 * comment of `pkg/result/codes.go` (e.g. `V001-V099: Validation errors`), so a Scout or agent
 * picks an unused range instead of guessing. Prints `[{prefix, start, end, description}]`.
 * Exit 0, 2 when the registry cannot be read (X002_FILE_READ).
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const root = repoDirOption(options, io) ?? io.cwd;
  const registry = path.join(root, errorRegistryPath);
  let text: string;
  try {
    text = await readTextFile(registry);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new PolywaveError({ code: 'X002_FILE_READ', message: `cannot read the error-code registry ${registry} (${reason}); pass --repo-dir <project root>` });
  }
  printJson(io, parseErrorRanges(text));
  return 0;
}
