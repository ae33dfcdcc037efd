import { existsSync } from 'node:fs';
import path from 'node:path';
import { recoverInterruptedReplan } from '../engine/program/replan-marker.js';
import type { CommandIo } from './io.js';
import { withRunLock } from './run-lock.js';

/**
 * P12-15: before a command acts on a PROGRAM, the manifest a killed `program-replan` left half-revised is put back (the
 * backup it made), and the user told so on stderr.
 */
export async function sayRecovered(repoDir: string, programPath: string, io: CommandIo): Promise<void> {
  const note = await recoverInterruptedReplan(repoDir, programPath, io.env, path.relative(io.cwd, programPath) || programPath);
  if (note !== undefined) io.stderr(`polywave: warning[E34_REPLAN_INTERRUPTED]: ${note}\n`);
}

/**
 * What every command on one PROGRAM does first (outside attack P13-05, P13-07): with `lock`, takes the PROGRAM's run
 * lock for `body`'s life — the one program-execute and program-replan hold, so a state change, a freeze or a tier's
 * merges are RUN_IN_PROGRESS (exit 2, nothing changed) while the loop or a re-plan runs instead of racing it (a
 * Planner's revision was overwritten and still reported as made); then puts back what a killed re-plan left.
 */
export async function withProgram<T>(programPath: string, io: CommandIo, options: { lock: boolean }, body: () => Promise<T>): Promise<T> {
  const run = async (): Promise<T> => {
    if (existsSync(programPath)) await sayRecovered(path.dirname(programPath), programPath, io);
    return body();
  };
  return options.lock ? withRunLock(path.dirname(programPath), programPath, run) : run();
}
