import { PolywaveError } from '../../errors/polywave-error.js';
import { injectionMethods } from '../../protocol/schema/impl-schema.js';
import { editImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `set-injection-method <impl> --method hook|manual-fallback|unknown` — E44: the Scout records
 * how it received its reference files (`injection_method`), through the locked,
 * format-preserving writer (comments and key order kept). Prints compact
 * `{manifest, injection_method, saved}`. Exit 0 saved, 2 bad input (unknown method, unreadable
 * manifest; the manifest is untouched).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const method = requireOption(options, 'method', '--method');
  if (!(injectionMethods as readonly string[]).includes(method)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --method "${method}": must be one of ${injectionMethods.join(', ')}` });
  }
  const implPath = implPathFrom(args, io);
  await editImpl(implPath, (parsed) => {
    const manifest = requireManifest(parsed, implPath);
    return { edits: manifest.injection_method === method ? [] : [{ path: ['injection_method'], value: method }], outcome: undefined };
  });
  printJson(io, { manifest: implPath, injection_method: method, saved: true }, { compact: true });
  return 0;
}
