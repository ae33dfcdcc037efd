import path from 'node:path';
import { finalizeImplGates } from '../../engine/impl-gates.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { implPathFrom } from './shared.js';

/**
 * `finalize-impl <impl> [--repo-root D]` — after the Scout: validate (with validate --fix's
 * mechanical E16 fixes) → the repository's build/lint/test commands (H2, extract-commands) →
 * the verification gates the IMPL lacks added to `quality_gates` → validate again; one locked
 * write, none when a validation fails. Prints `{success, validation_before, fixed, commands,
 * gates_added[{type, command, required}], validation, saved, failed_step?}`. Exit 0, 1 invalid
 * (nothing written), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const explicit = typeof options.repoRoot === 'string' && options.repoRoot.trim() !== '' ? path.resolve(io.cwd, options.repoRoot) : repoDirOption(options, io);
  const result = await finalizeImplGates({ implPath, repoRoot: explicit ?? projectRootOf(implPath, io.cwd) });
  printJson(io, result);
  return result.success ? 0 : 1;
}
