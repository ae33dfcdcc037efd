import type { Finding } from '../../errors/finding.js';
import { programStates, type ProgramState } from '../schema/program-schema.js';

/** The code of a refused PROGRAM state transition (the same code as IMPL transitions). */
export const programTransitionCode = 'N008_STATE_TRANSITION';

/**
 * The PROGRAM state machine as data: state → the states it may move to (program-manifest.txt
 * §9.2, E28/E29/E33/E34). The Go tool checks nothing (`update-program-state` writes any string).
 *
 * From the spec's primary path and failure paths:
 * - PLANNING → VALIDATING (manifest produced), NOT_SUITABLE (Planner suitability gate failed);
 * - VALIDATING → REVIEWED (schema valid, awaiting approval);
 * - REVIEWED → SCAFFOLD (materialize program contracts);
 * - SCAFFOLD → TIER_EXECUTING (Tier 1 starts);
 * - TIER_EXECUTING → TIER_VERIFIED (tier gate passed), BLOCKED (IMPL or tier gate failure);
 * - TIER_VERIFIED → TIER_EXECUTING (next tier), COMPLETE (last tier verified);
 * - BLOCKED → TIER_EXECUTING (issue resolved), REPLANNING (E34);
 * - REPLANNING → REVIEWED (revised manifest awaits approval).
 *
 * Additions, each where the texts imply an edge the list omits:
 * - VALIDATING → PLANNING: validation failed, the Planner revises (the spec has no exit for an
 *   invalid manifest otherwise);
 * - REVIEWED → TIER_EXECUTING: a program with nothing to materialize skips SCAFFOLD (the
 *   orchestrator decides; SCAFFOLD stays the path when there are program contracts);
 * - SCAFFOLD → BLOCKED: contract materialization failed;
 * - TIER_EXECUTING → REPLANNING: E34 auto-replan on a tier gate failure in `--auto` mode;
 * - REPLANNING → PLANNING: `program replan` "sets program state to PLANNING" (§11).
 *
 * COMPLETE and NOT_SUITABLE are terminal. Staying in the same state is always allowed (a no-op).
 */
export const programTransitions: Readonly<Record<ProgramState, readonly ProgramState[]>> = {
  PLANNING: ['VALIDATING', 'NOT_SUITABLE'],
  VALIDATING: ['REVIEWED', 'PLANNING'],
  REVIEWED: ['SCAFFOLD', 'TIER_EXECUTING'],
  SCAFFOLD: ['TIER_EXECUTING', 'BLOCKED'],
  TIER_EXECUTING: ['TIER_VERIFIED', 'BLOCKED', 'REPLANNING'],
  TIER_VERIFIED: ['TIER_EXECUTING', 'COMPLETE'],
  BLOCKED: ['TIER_EXECUTING', 'REPLANNING'],
  REPLANNING: ['REVIEWED', 'PLANNING'],
  COMPLETE: [],
  NOT_SUITABLE: [],
};

/** True when `value` is one of the PROGRAM states (program-manifest.txt §9.1). */
export function isProgramState(value: string): value is ProgramState {
  return (programStates as readonly string[]).includes(value);
}

/** The outcome of {@link checkProgramTransition}. */
export type ProgramTransitionCheck = { ok: true; changed: boolean } | { ok: false; finding: Finding };

/**
 * Is `from` → `to` a legal PROGRAM transition ({@link programTransitions})? Same state: legal,
 * `changed: false`. A missing or unknown current state is refused (the manifest must be repaired,
 * or the caller forces). Pure.
 */
export function checkProgramTransition(from: string | undefined, to: ProgramState): ProgramTransitionCheck {
  const current = (from ?? '').trim();
  if (current === to) return { ok: true, changed: false };
  if (!isProgramState(current)) {
    return refuse(`current PROGRAM state ${JSON.stringify(current)} is not a PROGRAM state; cannot move to ${to}`, `one of: ${programStates.join(', ')}`);
  }
  const legal = programTransitions[current];
  if (legal.includes(to)) return { ok: true, changed: true };
  return refuse(
    legal.length === 0
      ? `PROGRAM state ${current} is terminal: no transition to ${to}`
      : `illegal PROGRAM transition ${current} -> ${to}; legal from ${current}: ${legal.join(', ')}`,
    legal.length === 0 ? undefined : `move to one of: ${legal.join(', ')}`,
  );
}

function refuse(message: string, suggestion?: string): ProgramTransitionCheck {
  const finding: Finding = { code: programTransitionCode, severity: 'error', field: 'state', message };
  if (suggestion !== undefined) finding.suggestion = suggestion;
  return { ok: false, finding };
}
