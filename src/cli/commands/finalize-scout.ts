import { PolywaveError } from '../../errors/polywave-error.js';
import { injectionMethods } from '../../protocol/schema/impl-schema.js';
import { editImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { run as preWaveValidate } from './pre-wave-validate.js';
import { implPathFrom, requireManifest } from './shared.js';
import { run as validateBriefs } from './validate-briefs.js';

/** Runs another command's module with stdout captured; returns its exit code and parsed JSON. */
async function capture(run: (args: string[], options: Record<string, unknown>, io: CommandIo) => Promise<CommandResult>, args: string[], options: Record<string, unknown>, io: CommandIo): Promise<{ code: number; json: Record<string, unknown> }> {
  let printed = '';
  const code = await run(args, options, { ...io, stdout: (text) => (printed += text) });
  return { code, json: JSON.parse(printed) as Record<string, unknown> };
}

/**
 * `finalize-scout <impl> [--injection-method hook|manual-fallback|unknown]` — the Scout's
 * finalization checks in one call, stopping at the first failing step: (1) `pre-wave-validate
 * --wave 1 --fix` (validate --fix, E16, and the read-only pre-flight checks incl. E35 gaps; the
 * E37 critic is `pending` at this point, not a failure), (2) `validate-briefs` (symbols and line
 * numbers cited in the tasks), (3) record `injection_method` (E44) when given. Prints
 * `{validation, e35_gaps, checks, pending?, test_cascade, wave_structure, brief_validation?,
 * injection_method, passed, failed_step?}`. Exit 0 passed, 1 a step failed (nothing after it ran), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const method = typeof options.injectionMethod === 'string' ? options.injectionMethod.trim() : '';
  if (method !== '' && !(injectionMethods as readonly string[]).includes(method)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --injection-method "${method}": must be one of ${injectionMethods.join(', ')}` });
  }
  const implPath = implPathFrom(args, io);
  const repoOptions = typeof options.repoDir === 'string' ? { repoDir: options.repoDir } : {};
  const preWave = await capture(preWaveValidate, [implPath], { ...repoOptions, fix: true, wave: 1 }, io);
  const result: Record<string, unknown> = {
    validation: preWave.json.validation,
    e35_gaps: preWave.json.e35_gaps,
    checks: preWave.json.checks,
    ...(preWave.json.pending ? { pending: preWave.json.pending } : {}),
    // Go's E46 test cascade and wave-structure checks (steps 3 and 4 of pre-wave-validate).
    ...(preWave.json.test_cascade ? { test_cascade: preWave.json.test_cascade } : {}),
    ...(preWave.json.wave_structure ? { wave_structure: preWave.json.wave_structure } : {}),
  };
  const finish = (failedStep?: string): CommandResult => {
    printJson(io, { ...result, injection_method: result.injection_method ?? '', passed: failedStep === undefined, ...(failedStep ? { failed_step: failedStep } : {}) });
    return failedStep === undefined ? 0 : 1;
  };
  if (preWave.code !== 0) return finish((preWave.json.validation as { valid?: boolean } | undefined)?.valid === false ? 'validation' : 'pre_wave_checks');
  const briefs = await capture(validateBriefs, [implPath], repoOptions, io);
  result.brief_validation = briefs.json;
  if (briefs.code !== 0) return finish('brief_validation');
  if (method !== '') {
    await editImpl(implPath, (parsed) => {
      const manifest = requireManifest(parsed, implPath);
      return { edits: manifest.injection_method === method ? [] : [{ path: ['injection_method'], value: method }], outcome: undefined };
    });
    result.injection_method = method;
  }
  return finish();
}
