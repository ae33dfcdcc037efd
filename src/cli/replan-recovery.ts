import path from 'node:path';
import { recoverInterruptedReplan } from '../engine/program/replan-marker.js';
import type { CommandIo } from './io.js';

/**
 * P12-15: before a command acts on a PROGRAM, the manifest a killed `program-replan` left half-revised is put back (the
 * backup it made), and the user told so on stderr.
 */
export async function sayRecovered(repoDir: string, programPath: string, io: CommandIo): Promise<void> {
  const note = await recoverInterruptedReplan(repoDir, programPath, io.env, path.relative(io.cwd, programPath) || programPath);
  if (note !== undefined) io.stderr(`polywave: warning[E34_REPLAN_INTERRUPTED]: ${note}\n`);
}
