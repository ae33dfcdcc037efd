import { mergeStates, protocolStates } from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { goQuote, isBlank, report } from './rule-helpers.js';

/** E9: `merge_state` is empty or one of idle, in_progress, completed, failed. */
export const mergeStateValue: ImplRule = {
  name: 'merge-state-value',
  reference: 'E9',
  codes: ['V023_INVALID_MERGE_STATE'],
  check(context) {
    const value = context.manifest.merge_state;
    if (value === undefined || isBlank(value) || (mergeStates as readonly string[]).includes(value)) return [];
    return [
      report(context, {
        code: 'V023_INVALID_MERGE_STATE',
        message: `merge_state has invalid value ${goQuote(value)} — must be one of: ${mergeStates.join(', ')}`,
        path: ['merge_state'],
      }),
    ];
  },
};

/** SM01: `state` is empty or one of the 12 protocol states (INTERVIEWING included). */
export const stateValue: ImplRule = {
  name: 'state-value',
  reference: 'SM01',
  codes: ['V008_INVALID_STATE'],
  check(context) {
    const value = context.manifest.state;
    if (value === undefined || isBlank(value) || (protocolStates as readonly string[]).includes(value)) return [];
    return [
      report(context, {
        code: 'V008_INVALID_STATE',
        message: `state has invalid value ${goQuote(value)} — must be one of: ${protocolStates.join(', ')}`,
        path: ['state'],
      }),
    ];
  },
};

/**
 * E9: `merge_state: in_progress` only in WAVE_MERGING; `completed` only in WAVE_VERIFIED,
 * WAVE_PENDING or COMPLETE. Checked only when both fields are set.
 */
export const stateMatchesMergeState: ImplRule = {
  name: 'state-matches-merge-state',
  reference: 'E9',
  codes: ['V023_INVALID_MERGE_STATE'],
  check(context) {
    const { state, merge_state: mergeState } = context.manifest;
    if (state === undefined || mergeState === undefined || isBlank(state) || isBlank(mergeState)) return [];
    if (mergeState === 'in_progress' && state !== 'WAVE_MERGING') {
      return [
        report(context, {
          code: 'V023_INVALID_MERGE_STATE',
          message: `merge_state is ${goQuote(mergeState)} but state is ${goQuote(state)} — in_progress requires WAVE_MERGING`,
          path: ['merge_state'],
        }),
      ];
    }
    if (mergeState === 'completed' && !['WAVE_VERIFIED', 'WAVE_PENDING', 'COMPLETE'].includes(state)) {
      return [
        report(context, {
          code: 'V023_INVALID_MERGE_STATE',
          message: `merge_state is ${goQuote(mergeState)} but state is ${goQuote(state)} — completed requires WAVE_VERIFIED, WAVE_PENDING, or COMPLETE`,
          path: ['merge_state'],
        }),
      ];
    }
    return [];
  },
};
