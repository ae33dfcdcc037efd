import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/** `schema [impl|program]` — prints the JSON Schema generated from our zod model. */
export async function run(args: string[], _options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const kind = args[0] ?? 'impl';
  if (kind === 'impl') {
    const { implJsonSchema } = await import('../../protocol/schema/json-schema.js');
    printJson(io, implJsonSchema());
    return 0;
  }
  if (kind === 'program') {
    const { programJsonSchema } = await import('../../protocol/schema/program-json-schema.js');
    printJson(io, programJsonSchema());
    return 0;
  }
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `unknown schema kind "${kind}" (expected impl or program)` });
}
