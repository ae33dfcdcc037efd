import { failureTypes, reactionActions, type FailureType } from './schema/impl-schema.js';

/** What the orchestrator does next about a failed agent (E19 / E19.1). */
export type FailureAction = 'retry' | 'send-fix-prompt' | 'pause' | 'auto-scout' | 'escalate';

/** One `reactions:` entry (E19.1): `action` and `max_attempts` (total launch attempts; 0 = E19 default). */
export interface ReactionEntryInput {
  action?: string;
  max_attempts?: number;
}

/**
 * The `reactions:` block of an IMPL manifest (E19.1), typed loosely so both a parsed manifest's
 * block (`manifest.reactions`) and a hand-written object are accepted.
 */
export type ReactionsConfig = Partial<Record<FailureType, ReactionEntryInput | undefined>>;

/**
 * E19: the sentence a timeout retry must carry in its prompt (execution-rules E19, `timeout` row).
 */
export const timeoutRetryNote =
  'Your previous run exhausted its turn limit. Commit any partial work immediately, then complete only what is essential. Defer non-critical work.';

/** One row of the E19 default decision table. */
export interface E19Default {
  action: FailureAction;
  /** Total launch attempts including the first (so retries = maxAttempts − 1). */
  maxAttempts: number;
  description: string;
}

/**
 * E19 defaults, as the protocol text states them, expressed as TOTAL launch attempts
 * (E19.1 / the schema: `max_attempts` = "Maximum launch attempts (including the first)"):
 * - transient: retry automatically up to 2 times → 3 attempts;
 * - fixable: apply the fix from the notes and relaunch, one retry only → 2 attempts
 *   (Go's constant allows 2 retries; see `auto` in {@link decideFailureAction} for E7a);
 * - timeout: retry once with the scope-reduction note → 2 attempts;
 * - needs_replan: no retry; re-engage Scout, a human reviews the revised IMPL → pause;
 * - escalate: surface to a human immediately.
 * Difference from Go: Go's `MaxRetries` counts *retries* (2/2/1/0/0) and then returns a
 * reactions entry's `max_attempts` in the same place, mixing the two units; here everything is
 * attempts, so `max_attempts: 3` means the first launch plus 2 retries.
 */
export const e19Defaults: Readonly<Record<FailureType, E19Default>> = Object.freeze({
  transient: { action: 'retry', maxAttempts: 3, description: 'Retry automatically' },
  fixable: { action: 'send-fix-prompt', maxAttempts: 2, description: "Apply the agent's suggested fix (see its notes), then relaunch" },
  timeout: { action: 'retry', maxAttempts: 2, description: 'Retry with scope-reduction instructions' },
  needs_replan: { action: 'pause', maxAttempts: 1, description: "Re-engage Scout with the agent's completion report; a human reviews the revised IMPL before the wave re-executes" },
  escalate: { action: 'escalate', maxAttempts: 1, description: "Surface to a human immediately with the agent's full completion report" },
});

/** E7a: in `--auto` mode a correctable failure may be retried up to 2 times (3 attempts). */
export const autoModeMaxAttempts = 3;

/** Input of {@link decideFailureAction}. */
export interface FailureDecisionInput {
  /** The report's `failure_type`; absent/empty means escalate (E19 backward compatibility). */
  failureType: string | undefined;
  /** 1-based number of the launch attempt that just failed (1 = the first launch). */
  attempt: number;
  /** The manifest's `reactions:` block (E19.1), if any. */
  reactions?: ReactionsConfig;
  /** `--auto` mode: E7a's limit of 2 retries applies to `fixable` (E19 "Relationship to E7a"). */
  auto?: boolean;
}

/** What to do after a failed attempt. */
export interface FailureDecision {
  /** The next step. `escalate` also when retries are exhausted. */
  action: FailureAction;
  /** True when the agent should be relaunched now (action `retry` or `send-fix-prompt`). */
  retry: boolean;
  /** Total launch attempts allowed, including the first. */
  maxAttempts: number;
  /** Launches still allowed after this one (0 for non-retrying actions). */
  attemptsLeft: number;
  /** The failure type the decision was made for (`escalate` for absent/unknown input). */
  failureType: FailureType;
  /** Whether the action came from the E19 table or a `reactions` entry. */
  source: 'default' | 'reactions';
  /**
   * Human/log note. For a timeout retry this is exactly {@link timeoutRetryNote}, to be put in
   * the retry prompt.
   */
  note: string;
}

function isFailureType(value: string): value is FailureType {
  return (failureTypes as readonly string[]).includes(value);
}

function isReactionAction(value: string | undefined): value is FailureAction {
  return value !== undefined && (reactionActions as readonly string[]).includes(value);
}

/**
 * E19 / E19.1 decision table, pure. Unknown or absent failure types escalate. A `reactions`
 * entry for the failure type overrides the action (when it is one of `retry`,
 * `send-fix-prompt`, `pause`, `auto-scout`; an invalid action is ignored — validation reports
 * it) and, when `max_attempts` > 0, the attempt limit; `max_attempts` 0 or absent keeps the
 * E19 default (E19.1 "Individual missing entries also fall back to defaults").
 * A retrying action with no attempts left becomes `escalate` ("If all retries fail, escalate").
 * `auto-scout` is returned as such; an orchestrator without automatic Scout treats it as `pause`.
 */
export function decideFailureAction(input: FailureDecisionInput): FailureDecision {
  const raw = (input.failureType ?? '').trim();
  const known = isFailureType(raw);
  const failureType: FailureType = known ? raw : 'escalate';
  const defaults = e19Defaults[failureType];
  const attempt = Number.isFinite(input.attempt) && input.attempt >= 1 ? Math.floor(input.attempt) : 1;

  const entry = known ? input.reactions?.[failureType] : undefined;
  const overridden = entry !== undefined && isReactionAction(entry.action);
  let action: FailureAction = overridden ? (entry.action as FailureAction) : defaults.action;
  let maxAttempts = defaults.maxAttempts;
  if (input.auto === true && failureType === 'fixable') maxAttempts = autoModeMaxAttempts;
  if (entry !== undefined && typeof entry.max_attempts === 'number' && entry.max_attempts > 0) maxAttempts = entry.max_attempts;
  const source = overridden || (entry?.max_attempts ?? 0) > 0 ? 'reactions' : 'default';

  const retrying = action === 'retry' || action === 'send-fix-prompt';
  let attemptsLeft = retrying ? Math.max(0, maxAttempts - attempt) : 0;
  let note: string;
  if (!known) {
    note = raw === ''
      ? 'No failure_type reported: escalate to a human (E19 backward compatibility)'
      : `Unknown failure type ${JSON.stringify(raw)}: escalate to a human`;
  } else if (retrying && attemptsLeft === 0) {
    action = 'escalate';
    note = `${failureType} failure: retry limit reached after ${attempt} of ${maxAttempts} attempt(s); escalate to a human`;
  } else if (retrying && failureType === 'timeout') {
    note = timeoutRetryNote;
  } else if (retrying) {
    const how = action === 'send-fix-prompt' ? "apply the fix from the agent's notes and relaunch" : 'relaunch';
    note = `${failureType} failure: ${how} (attempt ${attempt + 1} of ${maxAttempts})`;
  } else if (action === 'pause') {
    note = overridden ? `${failureType} failure: pause and surface to a human (reactions)` : `${failureType} failure: ${defaults.description}`;
  } else if (action === 'auto-scout') {
    note = `${failureType} failure: re-engage Scout automatically (treat as pause if automatic Scout is unavailable)`;
  } else {
    note = `${failureType} failure: ${e19Defaults.escalate.description}`;
  }
  if (action === 'escalate') attemptsLeft = 0;
  return { action, retry: action === 'retry' || action === 'send-fix-prompt', maxAttempts, attemptsLeft, failureType, source, note };
}
