import path from 'node:path';
import { isProgramImplStatus, updateProgramImplStatus } from '../../engine/program/program-edits.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { programImplStatuses } from '../../protocol/schema/program-schema.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { programPathFrom, requireOption } from './shared.js';
import { sayRecovered } from '../replan-recovery.js';
import { acquireRunLock, runInProgressCode } from '../run-lock.js';
import { readFileSync } from 'node:fs';
import { parseProgram } from '../../protocol/parse-program.js';

/**
 * `update-program-impl <program> --impl SLUG --status S` — sets one IMPL entry's status (E32) and
 * keeps the completion counters in line. Prints `{updated, manifest_path, impl_slug,
 * previous_status, new_status}`. The move must be a legal IMPL status transition and the PROGRAM
 * not COMPLETE (N008, exit 1, nothing written) unless `--force` (repairs). `in_progress` (Go's
 * help example) is taken as `executing`. Exit 0; 1 refused (illegal transition); 2 no such IMPL, bad status or unreadable manifest.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = programPathFrom(args, io);
  const slug = requireOption(options, 'impl', '--impl');
  const given = requireOption(options, 'status', '--status');
  // Go's own help example: `--status in_progress` — the spec's name for it is `executing`.
  const status = given === 'in_progress' ? 'executing' : given;
  if (!isProgramImplStatus(status)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid IMPL status "${status}" — must be one of: ${programImplStatuses.join(', ')}` });
  }
  await sayRecovered(path.dirname(filePath), filePath, io);
  await refuseRunningImpl(filePath, slug);
  const outcome = await updateProgramImplStatus(filePath, slug, status, { force: options.force === true });
  if (outcome.forced !== undefined) io.stderr(`polywave: warning[N008_STATE_TRANSITION]: --force: ${outcome.forced}\n`);
  printJson(io, { updated: true, manifest_path: path.relative(io.cwd, filePath) || filePath, impl_slug: slug, previous_status: outcome.previous ?? '', new_status: status });
  return 0;
}

/**
 * P13-38: while a tier loop (or a re-plan) holds the PROGRAM, an IMPL it is running (`executing`) is the loop's: a
 * human's `blocked` on it was accepted, then overwritten by the loop's `complete` without a word. Refused
 * (RUN_IN_PROGRESS, exit 2, nothing written); an IMPL the loop has not started — held for a human before its tier
 * comes (P12-32) — is still the human's to set.
 */
async function refuseRunningImpl(programPath: string, slug: string): Promise<void> {
  let current: string | undefined;
  try {
    const manifest = parseProgram(readFileSync(programPath, 'utf8')).manifest;
    if (manifest === undefined || manifest === null) return; // the update's own error
    const entry = manifest.impls.find((impl) => impl.slug === slug);
    // P13-01: an IMPL the PROGRAM does not have is bad input — exit 2 before anything is locked or written.
    if (entry === undefined) unknownImpl(programPath, slug, manifest.impls.map((impl) => impl.slug));
    current = entry.status;
  } catch (error) {
    if (PolywaveError.isInstance(error)) throw error;
    return; // the update's own error
  }
  if (current !== 'executing') return;
  let release: (() => void) | undefined;
  try {
    release = acquireRunLock(path.dirname(programPath), programPath);
  } catch (error) {
    if (!PolywaveError.isInstance(error) || error.code !== runInProgressCode) throw error;
    throw new PolywaveError({ code: runInProgressCode, exitCode: 2, message: `IMPL ${slug} is being run by a live program-execute of ${path.basename(programPath)} (${error.message.replace(/^.*?\(/, '(').replace(/\).*$/, ')')}): its status is the loop's while it runs; nothing changed — stop the run (Ctrl-C) first, or wait for it to end` });
  }
  release();
}
function unknownImpl(programPath: string, slug: string, known: ReadonlyArray<string | undefined>): never {
  const slugs = known.filter((value): value is string => value !== undefined);
  throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', exitCode: 2, message: `IMPL "${slug}" not found in ${path.basename(programPath)} (impls: ${slugs.length > 0 ? slugs.join(', ') : 'none'}) — nothing changed` });
}
