import type { Finding } from '../errors/finding.js';
import { protocolStates, type ImplManifest, type ProtocolState } from './schema/impl-schema.js';

/** Code of every state-machine finding (the Go registry's `N008_STATE_TRANSITION`). */
export const stateTransitionCode = 'N008_STATE_TRANSITION';

/**
 * The IMPL state machine as data: each state and the states it may move to, in the order the
 * refusal message lists them. This is the table of the Go code (reference protocol.md §4.1),
 * which is wider than state-machine.md's "canonical" table: SCOUT_PENDING may go to
 * SCOUT_VALIDATING/BLOCKED, SCOUT_VALIDATING may loop on itself, BLOCKED may resume almost
 * anywhere, and INTERVIEWING (E39) leads to SCOUT_PENDING. COMPLETE and NOT_SUITABLE are terminal.
 * The only self-loop is SCOUT_VALIDATING (re-validation after a Scout correction, E16).
 */
export const stateTransitions: Readonly<Record<ProtocolState, readonly ProtocolState[]>> = Object.freeze({
  INTERVIEWING: ['SCOUT_PENDING'],
  SCOUT_PENDING: ['SCOUT_VALIDATING', 'REVIEWED', 'NOT_SUITABLE', 'BLOCKED'],
  SCOUT_VALIDATING: ['SCOUT_VALIDATING', 'REVIEWED', 'NOT_SUITABLE', 'BLOCKED'],
  REVIEWED: ['SCAFFOLD_PENDING', 'WAVE_PENDING', 'WAVE_EXECUTING', 'BLOCKED', 'COMPLETE'],
  SCAFFOLD_PENDING: ['WAVE_PENDING', 'WAVE_EXECUTING', 'BLOCKED'],
  WAVE_PENDING: ['WAVE_EXECUTING', 'BLOCKED'],
  WAVE_EXECUTING: ['WAVE_MERGING', 'WAVE_VERIFIED', 'BLOCKED', 'COMPLETE'],
  WAVE_MERGING: ['WAVE_VERIFIED', 'BLOCKED'],
  WAVE_VERIFIED: ['WAVE_PENDING', 'WAVE_EXECUTING', 'COMPLETE', 'BLOCKED'],
  BLOCKED: [
    'SCOUT_PENDING',
    'SCOUT_VALIDATING',
    'REVIEWED',
    'SCAFFOLD_PENDING',
    'WAVE_PENDING',
    'WAVE_EXECUTING',
    'WAVE_MERGING',
    'WAVE_VERIFIED',
    'COMPLETE',
    'NOT_SUITABLE',
  ],
  COMPLETE: [],
  NOT_SUITABLE: [],
});

/** Terminal states: no transition leaves them. */
export const terminalStates: readonly ProtocolState[] = ['COMPLETE', 'NOT_SUITABLE'];

/** True when `value` is one of the 12 protocol states (case-sensitive). */
export function isProtocolState(value: unknown): value is ProtocolState {
  return typeof value === 'string' && (protocolStates as readonly string[]).includes(value);
}

/** The states `from` may move to; `[]` for a terminal, empty or unknown state. */
export function legalTargets(from: string | undefined): readonly ProtocolState[] {
  return isProtocolState(from) ? stateTransitions[from] : [];
}

/** True when the table allows `from → to`; an empty or unknown `from` allows nothing. */
export function isLegalTransition(from: string | undefined, to: string): boolean {
  return isProtocolState(from) && isProtocolState(to) && stateTransitions[from].includes(to);
}

/** Result of {@link checkTransition}: allowed (possibly with advisory warnings) or refused. */
export type TransitionCheck = { ok: true; warnings: Finding[] } | { ok: false; finding: Finding };

/**
 * Checks a state change the way `set-impl-state` must (reference §4.2 steps 2–4).
 * - An empty current state is refused: the machine cannot know where the IMPL stands.
 * - An unknown current state is refused (`unknown state "X"; cannot determine valid transitions`).
 * - A transition outside the table is refused with
 *   `transition from {A} to {B} is not allowed; valid targets: [X, Y]`.
 * - An allowed transition may carry advisory warnings (see {@link transitionContextWarnings});
 *   they never block.
 * All findings have code `N008_STATE_TRANSITION`; refusals are severity `error`.
 */
export function checkTransition(from: string | undefined, to: string, manifest?: ImplManifest): TransitionCheck {
  const current = (from ?? '').trim();
  if (current === '') {
    return refuse(
      'manifest has no state; cannot determine valid transitions',
      `set the manifest's state: field to one of: ${protocolStates.join(', ')}`,
    );
  }
  if (!isProtocolState(current)) {
    return refuse(
      `unknown state ${JSON.stringify(current)}; cannot determine valid transitions`,
      `valid states: ${protocolStates.join(', ')}`,
    );
  }
  const targets = stateTransitions[current];
  if (!isProtocolState(to) || !targets.includes(to)) {
    return refuse(
      `transition from ${current} to ${to} is not allowed; valid targets: [${targets.join(', ')}]`,
      isProtocolState(to) ? undefined : `${JSON.stringify(to)} is not a protocol state; valid states: ${protocolStates.join(', ')}`,
    );
  }
  return { ok: true, warnings: manifest === undefined ? [] : transitionContextWarnings(manifest, current, to) };
}

/**
 * Issue 13, E15 guard for `set-impl-state`: COMPLETE is the marker of a verified final wave
 * (E15's trigger is WAVE_VERIFIED → COMPLETE). The Go table also lets REVIEWED and BLOCKED jump
 * to COMPLETE, which skips every merge and verification; those two are refused here (the state
 * machine table stays the Go one for readers such as reconcile-state). From BLOCKED, the way is
 * BLOCKED → WAVE_VERIFIED (after the wave is really verified) → COMPLETE; `close-impl --force`
 * remains the explicit override. Returns the refusal, or undefined.
 */
export function e15CompletionGuard(from: string | undefined, to: string): Finding | undefined {
  const current = (from ?? '').trim();
  if (to !== 'COMPLETE' || (current !== 'REVIEWED' && current !== 'BLOCKED')) return undefined;
  return {
    code: stateTransitionCode,
    severity: 'error',
    message: `E15: transition from ${current} to COMPLETE skips the WAVE_VERIFIED guard — COMPLETE is set only after the final wave is merged and verified (WAVE_VERIFIED -> COMPLETE)`,
    suggestion:
      current === 'BLOCKED'
        ? 'finish the blocked wave (finalize-wave, or set-impl-state --state WAVE_VERIFIED once it is verified), then set COMPLETE (or close-impl --force to override)'
        : 'run the waves (prepare-wave / run-wave, finalize-wave) until the final wave is WAVE_VERIFIED, then close-impl (or close-impl --force to override)',
  };
}

/**
 * Advisory context checks for an allowed transition (reference §4.2 step 4). Today one rule:
 * WAVE_EXECUTING → COMPLETE when the latest wave that has agents has more than one agent skips
 * the merge and verification of that wave; a solo wave (merged in place) does not warn.
 */
export function transitionContextWarnings(manifest: ImplManifest, from: string, to: string): Finding[] {
  if (from !== 'WAVE_EXECUTING' || to !== 'COMPLETE') return [];
  let latest: { number: number; agents: number } | undefined;
  for (const wave of manifest.waves ?? []) {
    const agents = wave.agents?.length ?? 0;
    const number = wave.number ?? 0;
    if (agents > 0 && (latest === undefined || number > latest.number)) latest = { number, agents };
  }
  if (latest === undefined || latest.agents <= 1) return [];
  return [
    {
      code: stateTransitionCode,
      severity: 'warning',
      field: 'state',
      message: `WAVE_EXECUTING -> COMPLETE bypasses merge/verify for wave ${latest.number} with ${latest.agents} agents; consider WAVE_MERGING -> WAVE_VERIFIED -> COMPLETE path`,
    },
  ];
}

function refuse(message: string, suggestion?: string): TransitionCheck {
  const finding: Finding = { code: stateTransitionCode, severity: 'error', field: 'state', message };
  if (suggestion !== undefined) finding.suggestion = suggestion;
  return { ok: false, finding };
}

/** The program-level IMPL statuses (program-manifest.txt §5.2). */
export const programImplStatuses = ['pending', 'scouting', 'reviewed', 'executing', 'complete'] as const;
/** One program-level IMPL status. */
export type ProgramImplStatus = (typeof programImplStatuses)[number];

/**
 * Maps an IMPL `state` to the status its entry gets in a PROGRAM manifest (reference §4.3).
 *
 * Decision (differs from Go's `IMPLStateToStatus`, which emits the invalid program statuses
 * `in-progress`, `blocked`, `not-suitable` and maps REVIEWED to `pending`): the result is always
 * one of the 5 statuses that program validation accepts.
 * - COMPLETE → `complete`.
 * - REVIEWED → `reviewed` (seed 004 "Status Mapping"); SCAFFOLD_PENDING → `reviewed` too: the IMPL
 *   is approved and only waits for scaffolds, so re-scouting it (what `pending` means) is wrong.
 * - WAVE_PENDING / WAVE_EXECUTING / WAVE_MERGING / WAVE_VERIFIED → `executing`; BLOCKED →
 *   `executing` as well: a blocked IMPL is mid-flight and needs resolution, not a new Scout.
 * - SCOUT_PENDING / SCOUT_VALIDATING → `scouting` (seed 004's `SCOUTING` state).
 * - INTERVIEWING, NOT_SUITABLE, empty or unknown → `pending` (seed 004: "Other states → pending").
 */
export function implStateToProgramStatus(state: string | undefined): ProgramImplStatus {
  switch ((state ?? '').trim()) {
    case 'COMPLETE':
      return 'complete';
    case 'REVIEWED':
    case 'SCAFFOLD_PENDING':
      return 'reviewed';
    case 'WAVE_PENDING':
    case 'WAVE_EXECUTING':
    case 'WAVE_MERGING':
    case 'WAVE_VERIFIED':
    case 'BLOCKED':
      return 'executing';
    case 'SCOUT_PENDING':
    case 'SCOUT_VALIDATING':
      return 'scouting';
    default:
      return 'pending';
  }
}
