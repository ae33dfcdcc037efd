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
  const release = await refuseRunningImpl(filePath, slug);
  let outcome: Awaited<ReturnType<typeof updateProgramImplStatus>>;
  try {
    outcome = await updateProgramImplStatus(filePath, slug, status, { force: options.force === true });
  } finally {
    release?.();
  }
  if (outcome.forced !== undefined) io.stderr(`polywave: warning[N008_STATE_TRANSITION]: --force: ${outcome.forced}\n`);
  printJson(io, { updated: true, manifest_path: path.relative(io.cwd, filePath) || filePath, impl_slug: slug, previous_status: outcome.previous ?? '', new_status: status });
  return 0;
}

/**
 * P13-38, P14-08: while a tier loop (or a re-plan) holds the PROGRAM, an IMPL of the tier it is running is the loop's:
 * a human's `blocked` on it — `executing` (P13-38), or still `scouting`/`reviewed`/`pending` in that tier (P14-08) —
 * was accepted, then overwritten by the loop's next status without a word. Refused (RUN_IN_PROGRESS, exit 2, nothing
 * written). The running tier is the lowest with an IMPL not complete, once one of its IMPLs left `pending`. An IMPL of a
 * tier not started yet — held for a human before its tier comes (P12-32) — is still the human's to set. With no run holding the PROGRAM, the run lock is kept through
 * the update (no loop can start between the check and the write). Resolves the lock's release, if it was taken.
 */
async function refuseRunningImpl(programPath: string, slug: string): Promise<(() => void) | undefined> {
  let loops: boolean;
  try {
    const manifest = parseProgram(readFileSync(programPath, 'utf8')).manifest;
    if (manifest === undefined || manifest === null) return undefined; // the update's own error
    const entry = manifest.impls.find((impl) => impl.slug === slug);
    // P13-01: an IMPL the PROGRAM does not have is bad input — exit 2 before anything is locked or written.
    if (entry === undefined) unknownImpl(programPath, slug, manifest.impls.map((impl) => impl.slug));
    const open = manifest.impls.filter((impl) => impl.status !== 'complete' && typeof impl.tier === 'number').map((impl) => impl.tier as number);
    const running = open.length > 0 ? Math.min(...open) : undefined;
    // (a tier whose IMPLs are all still `pending` has not been started: holding one of them is P12-32's case)
    const started = running !== undefined && manifest.impls.some((impl) => impl.tier === running && impl.status !== 'pending');
    loops = entry.status === 'executing' || entry.status === 'scouting' || (started && entry.tier === running && entry.status !== 'complete');
  } catch (error) {
    if (PolywaveError.isInstance(error)) throw error;
    return undefined; // the update's own error
  }
  try {
    return acquireRunLock(path.dirname(programPath), programPath);
  } catch (error) {
    if (!PolywaveError.isInstance(error) || error.code !== runInProgressCode) throw error;
    if (!loops) return undefined;
    throw new PolywaveError({ code: runInProgressCode, exitCode: 2, message: `IMPL ${slug} is being run by a live program-execute of ${path.basename(programPath)} (${error.message.replace(/^.*?\(/, '(').replace(/\).*$/, ')')}): its status is the loop's while it runs its tier; nothing changed — stop the run (Ctrl-C) first, or wait for it to end` });
  }
}
function unknownImpl(programPath: string, slug: string, known: ReadonlyArray<string | undefined>): never {
  const slugs = known.filter((value): value is string => value !== undefined);
  throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', exitCode: 2, message: `IMPL "${slug}" not found in ${path.basename(programPath)} (impls: ${slugs.length > 0 ? slugs.join(', ') : 'none'}) — nothing changed` });
}
