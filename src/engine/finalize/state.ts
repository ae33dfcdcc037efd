import { PolywaveError } from '../../errors/polywave-error.js';
import { checkTransition, isProtocolState, stateTransitions } from '../../protocol/state-machine.js';
import type { MergeState, ProtocolState } from '../../protocol/schema/impl-schema.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import { editImpl } from '../../store/manifest-file.js';
import type { FinalizeContext } from './context.js';
import { noteManifestState } from './tamper-step.js';

/** States finalize may pass through on its way (a wave that executed, then merges). */
const passThrough = new Set<ProtocolState>(['WAVE_EXECUTING', 'WAVE_MERGING']);

/**
 * The legal hops from `from` to `to` through the state machine, passing only through
 * WAVE_EXECUTING / WAVE_MERGING (e.g. WAVE_PENDING → WAVE_EXECUTING → WAVE_MERGING: prepare-wave
 * leaves WAVE_PENDING, and the wave did execute once its agents reported). `[]` when already
 * there; undefined when no such path exists.
 */
export function statePath(from: string | undefined, to: ProtocolState): ProtocolState[] | undefined {
  const start = (from ?? '').trim();
  if (start === to) return [];
  if (!isProtocolState(start)) return undefined;
  const previous = new Map<ProtocolState, ProtocolState>();
  const queue: ProtocolState[] = [start];
  const seen = new Set<ProtocolState>([start]);
  while (queue.length > 0) {
    const state = queue.shift()!;
    for (const next of stateTransitions[state]) {
      if (seen.has(next)) continue;
      seen.add(next);
      previous.set(next, state);
      if (next === to) {
        const hops: ProtocolState[] = [to];
        let cursor = state;
        while (cursor !== start) {
          hops.unshift(cursor);
          cursor = previous.get(cursor)!;
        }
        return hops;
      }
      if (passThrough.has(next)) queue.push(next);
    }
  }
  return undefined;
}

/** What {@link writeState} did. */
export interface StateWrite {
  from: string;
  to: ProtocolState;
  /** Every state written on the way, e.g. [WAVE_EXECUTING, WAVE_MERGING]. */
  hops: ProtocolState[];
  merge_state?: MergeState;
}

/**
 * Moves the IMPL to `to` (through legal hops only, each checked with the state machine) and sets
 * `merge_state`, plus any `extra` edits and (unless `takePending: false`) the pending report
 * fields — one locked, format-preserving edit of the manifest
 * (the only write path). Refuses an illegal move with N008_STATE_TRANSITION and writes nothing.
 */
export async function writeState(context: FinalizeContext, to: ProtocolState, mergeState: MergeState | undefined, extra: YamlEdit[] = [], options: { takePending?: boolean } = {}): Promise<StateWrite> {
  // Background steps (E25/E35) may add edits while this write is in flight: only the edits taken
  // into this write are removed afterwards.
  let taken: FinalizeContext['pendingEdits'] = [];
  const outcome = await editImpl(context.implPath, (parsed) => {
    const current = (parsed.manifest?.state ?? '').trim();
    const hops = statePath(current, to);
    if (hops === undefined) {
      const refusal = checkTransition(current, to);
      throw new PolywaveError({
        code: 'N008_STATE_TRANSITION',
        message: refusal.ok ? `cannot move the IMPL from ${current || '(no state)'} to ${to}` : refusal.finding.message,
        exitCode: 1,
      });
    }
    let from = current;
    for (const hop of hops) {
      const check = checkTransition(from, hop);
      if (!check.ok) throw new PolywaveError({ code: 'N008_STATE_TRANSITION', message: check.finding.message, exitCode: 1 });
      from = hop;
    }
    taken = options.takePending === false ? [] : [...context.pendingEdits];
    const edits: YamlEdit[] = [...taken.map((pending) => pending.edit), ...extra];
    if (hops.length > 0) edits.push({ path: ['state'], value: to });
    if (mergeState !== undefined && parsed.manifest?.merge_state !== mergeState) edits.push({ path: ['merge_state'], value: mergeState });
    return { edits, outcome: { from: current, to, hops, ...(mergeState ? { merge_state: mergeState } : {}) } satisfies StateWrite };
  });
  context.pendingEdits = context.pendingEdits.filter((pending) => !taken.includes(pending));
  // The tamper record holds the state the orchestrator last wrote (issue 11).
  await noteManifestState(context, to, mergeState);
  if (context.manifest) {
    context.manifest.state = to;
    if (mergeState !== undefined) context.manifest.merge_state = mergeState;
  }
  context.result.state = to;
  if (mergeState !== undefined) context.result.merge_state = mergeState;
  return outcome;
}

/** `A → B → C` for a detail line. */
export function describeHops(write: StateWrite): string {
  return write.hops.length === 0 ? `state stays ${write.to}` : `state ${[write.from || '(none)', ...write.hops].join(' → ')}`;
}

/** Writes the pending report edits on their own (when no state change takes them along). */
export async function flushPendingEdits(context: FinalizeContext): Promise<string[]> {
  if (context.pendingEdits.length === 0) return [];
  const pending = [...context.pendingEdits];
  await editImpl(context.implPath, () => ({ edits: pending.map((item) => item.edit), outcome: undefined }));
  context.pendingEdits = context.pendingEdits.filter((item) => !pending.includes(item));
  return pending.map((item) => item.what);
}
