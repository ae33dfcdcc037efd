/**
 * E34 / P2: an interrupted `program-replan` (outside attack P12-15). The Planner edits the PROGRAM manifest in place;
 * killed before its revision was validated, it left the edit behind — an unvalidated one, a frozen contract changed
 * among it — and the next `update-program-state` / `program-execute` (or another re-plan, whose P2 check read the file
 * as found) took it as the plan. A re-plan now leaves a marker beside its backup while it runs; whoever touches the
 * PROGRAM next and finds the marker of a process that is gone puts the backup back first: the plan as it was before the
 * re-plan, never half a revision.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runGit } from '../../git/run-git.js';
import { parseProgram } from '../../protocol/parse-program.js';
import { frozenProgramContracts } from '../../protocol/program/import-mode.js';
import type { ProgramManifest } from '../../protocol/schema/program-schema.js';
import { writeFileAtomic } from '../../store/locked-write.js';
import { processStartTime, processStillRuns } from '../../store/process-alive.js';

/** Where program-replan keeps its backups (in git's own directory, never an untracked file of the work tree). */
export async function replanBackupDir(repoDir: string, env?: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  try {
    const common = (await runGit(['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd: repoDir, ...(env ? { env } : {}) })).trim();
    return common === '' ? undefined : path.join(common, 'polywave', 'program-replan');
  } catch {
    return undefined;
  }
}

interface Marker {
  /** The PROGRAM's real path when the re-plan ran. */
  program: string;
  /** The PROGRAM's path in its work tree (P13-05: a repository moved or copied since still finds its marker). */
  program_in_repo?: string;
  /** The backup's path when the re-plan ran (its name, in the marker's own directory, after a move). */
  backup: string;
  pid: number;
  start?: string;
  /**
   * P14-14: the sha-256 of the manifest as this re-plan last left it (at its start, then after each of its Planner's
   * tool calls; '' = absent; `*` = unknown: a tool call of the Planner was running). A manifest that differs from a
   * known one was changed after the re-plan stopped — not by it.
   */
  left?: string;
}

/** The sha-256 of `file`'s bytes, '' when it cannot be read. */
function contentHash(file: string): string {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return '';
  }
}

/**
 * What a re-plan must keep and a hand edit may not slip past (P2, E34): every field of the contracts frozen so far and
 * the complete IMPLs' tiers, as one string; undefined for a text that is not a PROGRAM.
 */
function keptByReplan(text: string): string | undefined {
  const manifest = parseProgram(text).manifest as ProgramManifest | null;
  if (!manifest) return undefined;
  const frozen = frozenProgramContracts(manifest);
  const stable = (value: unknown): string => JSON.stringify(value, (_key, item: unknown) => (item !== null && typeof item === 'object' && !Array.isArray(item) ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b))) : item));
  const contracts = (manifest.program_contracts ?? []).filter((contract) => contract.name && (frozen.has(contract.name) || (contract.frozen_blob ?? '').trim() !== '' || contract.frozen_at_tier !== undefined)).map(stable).sort();
  const complete = manifest.impls.filter((impl) => impl.status === 'complete').map((impl) => `${impl.slug ?? ''}@${String(impl.tier)}`).sort();
  return JSON.stringify({ contracts, complete });
}

/**
 * `file`'s path in the work tree whose git directory holds `backupDir` (`<top>/.git/polywave/program-replan`): the top
 * is the git directory's parent for an ordinary repository; undefined when that is not the layout.
 */
function inRepo(backupDir: string, file: string): string | undefined {
  const common = path.dirname(path.dirname(backupDir));
  if (path.basename(common) !== '.git') return undefined;
  const relative = path.relative(real(path.dirname(common)), real(file));
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? undefined : relative.split(path.sep).join('/');
}

const markerSuffix = '.replanning.json';
const real = (file: string): string => {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
};

/** The git directory of an ordinary repository above `directory` (`<top>/.git`, a directory), if there is one. */
function gitDirUpwards(directory: string): string | undefined {
  for (let current = directory; ; current = path.dirname(current)) {
    const candidate = path.join(current, '.git');
    try {
      if (statSync(candidate).isDirectory()) return candidate;
      return undefined;
    } catch {
      // not here
    }
    if (path.dirname(current) === current) return undefined;
  }
}

/** Records that a re-plan of `programPath` (backed up at `backupPath`) runs in this process; returns the marker's path. */
export function markReplanRunning(backupDir: string, programPath: string, backupPath: string): string {
  const marker = path.join(backupDir, `${path.basename(backupPath, path.extname(backupPath))}${markerSuffix}`);
  const start = processStartTime(process.pid);
  const relative = inRepo(backupDir, programPath);
  const record: Marker = { program: real(programPath), ...(relative !== undefined ? { program_in_repo: relative } : {}), backup: backupPath, pid: process.pid, ...(start !== undefined ? { start } : {}), left: contentHash(programPath) };
  writeFileSync(marker, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  return marker;
}

/**
 * P14-14: records in the marker what the running re-plan has left in the manifest so far (see {@link Marker.left}):
 * unknown from the start of one of its Planner's tool calls (`running`), the file's hash after its end.
 */
export function noteReplanLeft(marker: string, programPath: string, running = false): void {
  try {
    const record = JSON.parse(readFileSync(marker, 'utf8')) as Marker;
    const left = running ? '*' : contentHash(programPath);
    if (record.left === left) return;
    record.left = left;
    const temporary = `${marker}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    renameSync(temporary, marker);
  } catch {
    // no marker (the re-plan is over): nothing to record
  }
}

/** The re-plan is over (its revision accepted or the original restored). */
export function clearReplanMarker(marker: string): void {
  rmSync(marker, { force: true });
}

/**
 * Puts back the manifest a killed re-plan of `programPath` left half-revised (see the module comment). Returns what was
 * done, for the caller to say, or undefined when there was nothing to do. A re-plan still running is left alone.
 */
export async function recoverInterruptedReplan(repoDir: string, programPath: string, env?: Readonly<Record<string, string | undefined>>, shown = path.relative(repoDir, programPath) || programPath): Promise<string | undefined> {
  // (the usual case, a repository with no re-plan's directory, without a git process: `.git` found upwards)
  const quick = gitDirUpwards(path.dirname(path.resolve(programPath)));
  if (quick !== undefined && !existsSync(path.join(quick, 'polywave', 'program-replan'))) return undefined;
  const directory = await replanBackupDir(repoDir, env);
  if (directory === undefined || !existsSync(directory)) return undefined;
  const notes: string[] = [];
  // Outside round P14-30: several interrupted re-plans of one PROGRAM (a project copied while one ran, a second one
  // killed in the copy) — the later one's backup already holds the earlier one's half revision: the OLDEST backup is
  // the plan as it was before any of them (markers are named by their backup's time: name order is time order).
  const interrupted = markersOf(directory, programPath).filter(({ marker }) => !processStillRuns(marker.pid, marker.start));
  // P14-14: the manifest as the last of them left it. Changed since (a human's own edit after the re-plan was killed:
  // the half revision discarded, a fix of theirs made), it is not the Planner's half revision: kept as it is — unless
  // it differs from the plan before the re-plans in what a re-plan must keep (frozen contracts, complete IMPLs, P2),
  // which is undone all the same (the file kept beside the backup).
  const lastLeft = [...interrupted].reverse().find(({ marker }) => marker.left !== undefined)?.marker.left;
  const current = existsSync(programPath) ? contentHash(programPath) : '';
  let restored = false;
  let settled = false;
  for (const { file, marker } of interrupted) {
    // (a repository moved or copied since: the backup by its name in this directory)
    const backup = existsSync(marker.backup) ? marker.backup : path.join(directory, path.basename(marker.backup));
    if (settled || !existsSync(backup)) {
      clearReplanMarker(file);
      if (restored) notes.push(`a later interrupted program-replan (pid ${marker.pid}) started from a half revision: its backup ${backup} was not used`);
      continue;
    }
    if (current !== '' && current === contentHash(backup)) {
      // Nothing of the re-plan is left in the file (discarded, or it never wrote): nothing to undo.
      clearReplanMarker(file);
      settled = true;
      continue;
    }
    if (lastLeft !== undefined && lastLeft !== '*' && current !== '' && current !== lastLeft) {
      const kept = keptByReplan(readFileSync(programPath, 'utf8'));
      if (kept !== undefined && kept === keptByReplan(readFileSync(backup, 'utf8'))) {
        clearReplanMarker(file);
        settled = true;
        notes.push(`an interrupted program-replan (pid ${marker.pid}) left a marker, but ${shown} was changed after it stopped (not by it): left as it is — it keeps the frozen contracts and complete IMPLs of the plan before the re-plan; that plan is the backup ${backup}, compare if in doubt`);
        continue;
      }
    }
    // The interrupted revision is kept beside the backup (never lost), then the backup put back.
    let kept = '';
    if (existsSync(programPath)) {
      const keptPath = path.join(directory, `${path.basename(backup, path.extname(backup))}.interrupted${path.extname(backup) || '.yaml'}`);
      writeFileSync(keptPath, readFileSync(programPath));
      kept = `; the interrupted revision is kept at ${keptPath}`;
    }
    await writeFileAtomic(programPath, readFileSync(backup, 'utf8'));
    clearReplanMarker(file);
    restored = true;
    settled = true;
    notes.push(`an interrupted program-replan (pid ${marker.pid}) was undone: ${shown} is as it was before it (backup ${backup})${kept}`);
  }
  return notes.length > 0 ? notes.join('; ') : undefined;
}

/** The re-plan markers in `directory` of the PROGRAM at `programPath` (by its real path or its path in the work tree), oldest first. */
function markersOf(directory: string, programPath: string): Array<{ file: string; marker: Marker }> {
  const target = real(programPath);
  const targetInRepo = inRepo(directory, programPath);
  const found: Array<{ file: string; marker: Marker }> = [];
  for (const name of readdirSync(directory).filter((entry) => entry.endsWith(markerSuffix)).sort()) {
    const file = path.join(directory, name);
    let marker: Marker;
    try {
      marker = JSON.parse(readFileSync(file, 'utf8')) as Marker;
    } catch {
      continue;
    }
    if (marker.program === target || (targetInRepo !== undefined && marker.program_in_repo === targetInRepo)) found.push({ file, marker });
  }
  return found;
}

/**
 * P14-30: a re-plan must not start while another re-plan's marker of the same PROGRAM names a process that still runs —
 * the manifest may hold that re-plan's half revision (a project copied while it ran: its marker came along), and this
 * re-plan's backup would keep it. Throws RUN_IN_PROGRESS (exit 2, nothing changed).
 */
export function refuseReplanBeside(backupDir: string, programPath: string): void {
  if (!existsSync(backupDir)) return;
  const live = markersOf(backupDir, programPath).find(({ marker }) => processStillRuns(marker.pid, marker.start));
  if (live === undefined) return;
  throw new PolywaveError({ code: 'RUN_IN_PROGRESS', exitCode: 2, message: `a program-replan of ${path.basename(programPath)} is running (pid ${live.marker.pid}; its marker ${path.basename(live.file)}) — this manifest may hold its half revision (a project copied while it ran?); nothing was started or changed: wait for it, or stop it first` });
}

/**
 * Outside attack P13-19: `plan` killed after its Planner wrote part of the PROGRAM (non-empty, invalid) left that part
 * behind, and every re-run was refused ("exists already"). `plan` now records, beside program-replan's backups, that it
 * plans `programPath`; a re-run that finds the record of a process that is gone, and the manifest still untracked, moves
 * the half plan aside (kept, never deleted) and plans again. A `plan` of the same PROGRAM still running is refused.
 */
export interface PlanMark {
  /** Clears the record (the plan is over, whatever its outcome). */
  clear(): void;
  /** Set when a killed plan's partial manifest was moved aside: where to, for the caller to say. */
  recovered?: string;
}

/** Takes the plan record of `programPath` (see {@link PlanMark}); throws RUN_IN_PROGRESS while another `plan` of it runs. */
export async function markPlanRunning(repoDir: string, programPath: string, isTracked: () => Promise<boolean>, env?: Readonly<Record<string, string | undefined>>): Promise<PlanMark> {
  const backupDir = await replanBackupDir(repoDir, env);
  if (backupDir === undefined) return { clear: () => undefined };
  mkdirSync(backupDir, { recursive: true });
  const marker = path.join(backupDir, `${path.basename(programPath, path.extname(programPath))}.planning.json`);
  const record = (): string => {
    const start = processStartTime(process.pid);
    return `${JSON.stringify({ program: real(programPath), pid: process.pid, ...(start !== undefined ? { start } : {}) })}\n`;
  };
  let recovered: string | undefined;
  for (let attempt = 0; ; attempt += 1) {
    try {
      writeFileSync(marker, record(), { mode: 0o600, flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    let previous: { pid?: number; start?: string } = {};
    try {
      previous = JSON.parse(readFileSync(marker, 'utf8')) as typeof previous;
    } catch {
      // unreadable (killed while writing it): a plan that is gone
    }
    if (typeof previous.pid === 'number' && processStillRuns(previous.pid, previous.start)) {
      throw new PolywaveError({ code: 'RUN_IN_PROGRESS', exitCode: 2, message: `a plan of ${path.basename(programPath)} is running (pid ${previous.pid}) — nothing was started or changed; wait for it, or stop it first` });
    }
    // The killed plan's partial output, if git does not hold it: moved aside, then planned again.
    if (existsSync(programPath) && !(await isTracked())) {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const kept = path.join(backupDir, `${path.basename(programPath, path.extname(programPath))}-${stamp}.interrupted-plan${path.extname(programPath) || '.yaml'}`);
      renameSync(programPath, kept);
      recovered = `a plan killed while its Planner wrote ${path.basename(programPath)} (pid ${previous.pid ?? '?'}) left part of it: moved aside to ${kept}; planning again`;
    }
    rmSync(marker, { force: true });
  }
  return { clear: () => rmSync(marker, { force: true }), ...(recovered !== undefined ? { recovered } : {}) };
}
