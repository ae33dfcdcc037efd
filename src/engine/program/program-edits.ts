import { PolywaveError } from '../../errors/polywave-error.js';
import { checkProgramTransition, isProgramState } from '../../protocol/program/program-state-machine.js';
import { programImplStatuses, programStates, type ProgramImplStatus, type ProgramManifest, type ProgramState } from '../../protocol/schema/program-schema.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import { completionEdits } from './completion-edits.js';
import { editProgram } from './program-file.js';

// The tier loop's entry points live in their own files; this module is the one to import.
export { freezeContracts, type FreezeContractsResult, type FrozenContract } from './freeze-contracts.js';
export { markProgramComplete, type MarkProgramCompleteResult } from './mark-program-complete.js';
export { completionEdits } from './completion-edits.js';

/** True when `value` is one of the program-level IMPL statuses (program-manifest.txt §5.2 + blocked/not-suitable). */
export function isProgramImplStatus(value: string): value is ProgramImplStatus {
  return (programImplStatuses as readonly string[]).includes(value);
}

/**
 * Sets the `status` of the PROGRAM's `impls` entry `implSlug` (update-program-impl, E32), and keeps
 * `completion.impls_complete` / `tiers_complete` consistent in the same write. Locked, atomic,
 * format-preserving. Throws X001 (exit 2) for a status outside {@link programImplStatuses} and
 * N005 (exit 1) when no entry has that slug; then nothing is written. `changed` is false when the
 * status already had that value (the counters may still have been corrected).
 */
export async function setProgramImplStatus(programPath: string, implSlug: string, status: ProgramImplStatus): Promise<{ previous: string | undefined; changed: boolean }> {
  return (await setProgramImplStatuses(programPath, [implSlug], status))[0]!;
}

/**
 * {@link setProgramImplStatus} for several IMPLs in one locked write (the tier loop: every IMPL of a
 * tier at once — one parse, edit and rename instead of one each). All or nothing: an unknown slug
 * throws N005 and nothing is written. One outcome per slug, in order.
 */
export async function setProgramImplStatuses(programPath: string, implSlugs: readonly string[], status: ProgramImplStatus, guard?: (manifest: ProgramManifest) => void): Promise<Array<{ previous: string | undefined; changed: boolean }>> {
  if (!isProgramImplStatus(status)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid IMPL status "${String(status)}" — must be one of: ${programImplStatuses.join(', ')}` });
  }
  if (implSlugs.length === 0) return [];
  return editProgram(programPath, (manifest) => {
    guard?.(manifest);
    const indexes = implSlugs.map((implSlug) => {
      const index = manifest.impls.findIndex((impl) => impl.slug === implSlug);
      if (index < 0) {
        const known = manifest.impls.map((impl) => impl.slug).filter((slug) => slug !== undefined);
        throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `IMPL "${implSlug}" not found in ${programPath} (impls: ${known.length > 0 ? known.join(', ') : 'none'})`, exitCode: 1 });
      }
      return index;
    });
    const outcome = indexes.map((index) => {
      const previous = manifest.impls[index]!.status;
      return { previous, changed: previous !== status };
    });
    const targets = new Set(indexes);
    const after = { ...manifest, impls: manifest.impls.map((impl, position) => (targets.has(position) ? { ...impl, status } : impl)) };
    const edits: YamlEdit[] = [...[...targets].filter((index) => manifest.impls[index]!.status !== status).map((index): YamlEdit => ({ path: ['impls', index, 'status'], value: status })), ...completionEdits(after, ['impls_complete', 'tiers_complete'])];
    return { edits, outcome };
  });
}

/**
 * The program-level IMPL status transitions `update-program-impl` allows without `--force`
 * (program-manifest.txt §5.2's life cycle pending → scouting → reviewed → executing → complete, plus
 * the tier loop's failure and recovery moves). `complete` is final (a re-plan keeps it, E34).
 * Go checks nothing. The tier loop itself writes statuses directly (setProgramImplStatus).
 */
export const programImplTransitions: Readonly<Record<ProgramImplStatus, readonly ProgramImplStatus[]>> = {
  pending: ['scouting', 'reviewed', 'blocked', 'not-suitable'],
  scouting: ['reviewed', 'pending', 'blocked', 'not-suitable'],
  reviewed: ['executing', 'scouting', 'pending', 'blocked'],
  executing: ['complete', 'blocked', 'reviewed'],
  blocked: ['pending', 'scouting', 'reviewed', 'executing'],
  'not-suitable': ['pending'],
  complete: [],
};

/**
 * {@link setProgramImplStatus} as a human's edit (update-program-impl): the transition must be in
 * {@link programImplTransitions} and the PROGRAM must not be COMPLETE (archived), else N008 (exit 1,
 * nothing written) — unless `force` (repairs; `forced` says what was illegal).
 */
export async function updateProgramImplStatus(programPath: string, implSlug: string, status: ProgramImplStatus, options: { force?: boolean } = {}): Promise<{ previous: string | undefined; changed: boolean; forced?: string }> {
  let forced: string | undefined;
  const [outcome] = await setProgramImplStatuses(programPath, [implSlug], status, (manifest) => {
    const entry = manifest.impls.find((impl) => impl.slug === implSlug);
    const previous = (entry?.status ?? '').trim();
    const programState = (manifest.state ?? '').trim();
    const problem =
      entry === undefined || previous === status
        ? undefined
        : programState === 'COMPLETE'
          ? `the PROGRAM is COMPLETE (terminal): its IMPL statuses are final`
          : !(programImplTransitions as Record<string, readonly string[]>)[previous]?.includes(status)
            ? `illegal IMPL status transition ${previous || '(none)'} -> ${status} for ${implSlug}; legal from ${previous || '(none)'}: ${(programImplTransitions as Record<string, readonly string[]>)[previous]?.join(', ') || 'none'}`
            : undefined;
    if (problem !== undefined) {
      if (!options.force) throw new PolywaveError({ code: 'N008_STATE_TRANSITION', message: `${problem} — nothing was written (--force to repair)`, exitCode: 1 });
      forced = problem;
    }
  });
  return { ...outcome!, ...(forced !== undefined ? { forced } : {}) };
}

/** The outcome of {@link updateProgramState} (the CLI also reports a forced transition). */
export interface ProgramStateUpdate {
  previous: string | undefined;
  changed: boolean;
  /** Set when `force` let an illegal transition through: why it was illegal. */
  forced?: string;
}

/**
 * {@link setProgramState} with the forced-transition note. Throws V008 (exit 2) for a value that is
 * not a PROGRAM state; N008 (exit 1) for an illegal transition unless `force`.
 */
export async function updateProgramState(programPath: string, state: ProgramState, options: { force?: boolean } = {}): Promise<ProgramStateUpdate> {
  if (!isProgramState(state)) {
    throw new PolywaveError({ code: 'V008_INVALID_STATE', message: `unknown PROGRAM state "${String(state)}" — must be one of: ${programStates.join(', ')}` });
  }
  return editProgram(programPath, (manifest) => {
    const previous = manifest.state;
    const check = checkProgramTransition(previous, state);
    let forced: string | undefined;
    if (!check.ok) {
      if (!options.force) throw new PolywaveError({ code: check.finding.code, message: check.finding.message, exitCode: 1 });
      forced = check.finding.message;
    }
    const changed = previous !== state;
    return { edits: changed ? [{ path: ['state'], value: state }] : [], outcome: { previous, changed, ...(forced !== undefined ? { forced } : {}) } };
  });
}

/**
 * Sets the PROGRAM's `state`, checked against the PROGRAM state machine
 * (`programTransitions`, program-manifest.txt §9.2). Locked, atomic, format-preserving (only the
 * `state` line changes). Throws a PolywaveError on an illegal transition (N008, exit 1; nothing
 * written) unless `force`; V008 (exit 2) for an unknown state. Same state: `changed: false`.
 */
export async function setProgramState(programPath: string, state: ProgramState, options?: { force?: boolean }): Promise<{ previous: string | undefined; changed: boolean }> {
  const { previous, changed } = await updateProgramState(programPath, state, options);
  return { previous, changed };
}
