import path from 'node:path';
import { stringify } from 'yaml';
import { PolywaveError } from '../../errors/polywave-error.js';
import { diagnoseBuildFailure, diagnosisLanguages } from '../../protocol/build-diagnosis.js';
import { readTextFile } from '../../store/read-text.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { requireOption } from './shared.js';

/**
 * `diagnose-build-failure <log|-> --language go|rust|js|ts|python [--format yaml|json]` — H7:
 * match a build/test log against the error catalog of its language (TypeScript/JavaScript, Go,
 * Python, Rust) and suggest a fix. Prints `{diagnosis, confidence, fix, rationale, auto_fixable,
 * evidence?}` as YAML (Go) or JSON; `unknown` (confidence 0) when nothing matches. Exit 0, 2 bad
 * input (unknown language, unreadable log).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const requested = requireOption(options, 'language', '--language').toLowerCase();
  const language = diagnosisLanguages[requested];
  if (!language) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `unsupported --language "${requested}": use go, rust, js, ts or python` });
  const format = typeof options.format === 'string' ? options.format.trim().toLowerCase() : 'yaml';
  if (format !== 'yaml' && format !== 'json') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--format must be yaml or json, got "${format}"` });
  const source = args[0] ?? '';
  if (source.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'an error log file (or - for stdin) is required' });
  const log = source === '-' ? await io.readStdin() : await readLog(path.resolve(io.cwd, source));
  const diagnosis = diagnoseBuildFailure(log, language);
  if (format === 'json') printJson(io, diagnosis);
  else io.stdout(stringify(diagnosis, { indent: 2 }));
  return 0;
}

async function readLog(file: string): Promise<string> {
  try {
    return await readTextFile(file);
  } catch (error) {
    throw new PolywaveError({ code: 'X002_FILE_READ', message: `cannot read the error log: ${error instanceof Error ? error.message : String(error)}` });
  }
}
