import { describe, expect, it } from 'vitest';
import { decideFailureAction, e19Defaults, timeoutRetryNote, type ReactionsConfig } from './e19.js';
import { implModel } from './schema/impl-schema.js';

describe('E19 defaults', () => {
  it('retries a transient failure twice (3 attempts) then escalates', () => {
    expect(decideFailureAction({ failureType: 'transient', attempt: 1 })).toMatchObject({
      action: 'retry',
      retry: true,
      maxAttempts: 3,
      attemptsLeft: 2,
      source: 'default',
      note: 'transient failure: relaunch (attempt 2 of 3)',
    });
    expect(decideFailureAction({ failureType: 'transient', attempt: 2 })).toMatchObject({ action: 'retry', retry: true, attemptsLeft: 1 });
    expect(decideFailureAction({ failureType: 'transient', attempt: 3 })).toMatchObject({
      action: 'escalate',
      retry: false,
      attemptsLeft: 0,
      note: 'transient failure: retry limit reached after 3 of 3 attempt(s); escalate to a human',
    });
  });

  it('relaunches a fixable failure once with the fix prompt', () => {
    expect(decideFailureAction({ failureType: 'fixable', attempt: 1 })).toMatchObject({ action: 'send-fix-prompt', retry: true, maxAttempts: 2, attemptsLeft: 1 });
    expect(decideFailureAction({ failureType: 'fixable', attempt: 2 })).toMatchObject({ action: 'escalate', retry: false });
  });

  it('E7a: auto mode allows fixable failures 2 retries', () => {
    expect(decideFailureAction({ failureType: 'fixable', attempt: 2, auto: true })).toMatchObject({ action: 'send-fix-prompt', retry: true, maxAttempts: 3, attemptsLeft: 1 });
    expect(decideFailureAction({ failureType: 'transient', attempt: 1, auto: true }).maxAttempts).toBe(3);
  });

  it('retries a timeout once with the scope-reduction note', () => {
    const decision = decideFailureAction({ failureType: 'timeout', attempt: 1 });
    expect(decision).toMatchObject({ action: 'retry', retry: true, maxAttempts: 2, attemptsLeft: 1 });
    expect(decision.note).toBe(timeoutRetryNote);
    expect(decision.note).toContain('Commit any partial work immediately');
    expect(decideFailureAction({ failureType: 'timeout', attempt: 2 })).toMatchObject({ action: 'escalate', retry: false });
  });

  it('pauses for needs_replan and escalates escalate', () => {
    expect(decideFailureAction({ failureType: 'needs_replan', attempt: 1 })).toMatchObject({
      action: 'pause',
      retry: false,
      attemptsLeft: 0,
      note: `needs_replan failure: ${e19Defaults.needs_replan.description}`,
    });
    expect(decideFailureAction({ failureType: 'escalate', attempt: 1 })).toMatchObject({ action: 'escalate', retry: false, attemptsLeft: 0 });
  });

  it('escalates absent and unknown failure types', () => {
    expect(decideFailureAction({ failureType: undefined, attempt: 1 })).toMatchObject({
      action: 'escalate',
      retry: false,
      failureType: 'escalate',
      note: 'No failure_type reported: escalate to a human (E19 backward compatibility)',
    });
    expect(decideFailureAction({ failureType: 'unknown', attempt: 1 })).toMatchObject({
      action: 'escalate',
      retry: false,
      note: 'Unknown failure type "unknown": escalate to a human',
    });
    // unknown types ignore reactions too
    const reactions: ReactionsConfig = { transient: { action: 'retry', max_attempts: 5 } };
    expect(decideFailureAction({ failureType: 'Transient', attempt: 1, reactions }).action).toBe('escalate');
  });

  it('treats a nonsensical attempt number as the first attempt', () => {
    expect(decideFailureAction({ failureType: 'transient', attempt: 0 }).attemptsLeft).toBe(2);
    expect(decideFailureAction({ failureType: 'transient', attempt: Number.NaN }).attemptsLeft).toBe(2);
  });
});

describe('E19.1 reactions', () => {
  it('max_attempts counts total launch attempts including the first', () => {
    const reactions: ReactionsConfig = { transient: { action: 'retry', max_attempts: 3 } };
    expect(decideFailureAction({ failureType: 'transient', attempt: 1, reactions })).toMatchObject({ retry: true, maxAttempts: 3, attemptsLeft: 2, source: 'reactions' });
    expect(decideFailureAction({ failureType: 'transient', attempt: 3, reactions })).toMatchObject({ action: 'escalate', retry: false });
    const once: ReactionsConfig = { timeout: { action: 'retry', max_attempts: 1 } };
    expect(decideFailureAction({ failureType: 'timeout', attempt: 1, reactions: once })).toMatchObject({ action: 'escalate', retry: false, maxAttempts: 1 });
  });

  it('reads the reactions block of a parsed manifest', () => {
    const impl = implModel.manifest.parse({ reactions: { transient: { action: 'retry', max_attempts: 4 }, escalate: { action: 'pause' } } });
    expect(decideFailureAction({ failureType: 'transient', attempt: 3, reactions: impl.reactions })).toMatchObject({ retry: true, maxAttempts: 4, attemptsLeft: 1 });
    expect(decideFailureAction({ failureType: 'escalate', attempt: 1, reactions: impl.reactions }).action).toBe('pause');
  });

  it('falls back to the default limit when max_attempts is 0 or absent', () => {
    const reactions: ReactionsConfig = { transient: { action: 'retry', max_attempts: 0 }, fixable: { action: 'send-fix-prompt' } };
    expect(decideFailureAction({ failureType: 'transient', attempt: 1, reactions }).maxAttempts).toBe(3);
    expect(decideFailureAction({ failureType: 'fixable', attempt: 1, reactions }).maxAttempts).toBe(2);
  });

  it('overrides the action', () => {
    const reactions: ReactionsConfig = {
      transient: { action: 'pause' },
      fixable: { action: 'retry', max_attempts: 3 },
      needs_replan: { action: 'auto-scout' },
      escalate: { action: 'pause' },
    };
    expect(decideFailureAction({ failureType: 'transient', attempt: 1, reactions })).toMatchObject({ action: 'pause', retry: false, source: 'reactions' });
    expect(decideFailureAction({ failureType: 'fixable', attempt: 2, reactions })).toMatchObject({ action: 'retry', retry: true, attemptsLeft: 1 });
    expect(decideFailureAction({ failureType: 'needs_replan', attempt: 1, reactions })).toMatchObject({ action: 'auto-scout', retry: false });
    expect(decideFailureAction({ failureType: 'escalate', attempt: 1, reactions })).toMatchObject({ action: 'pause', retry: false });
  });

  it('a timeout retried through reactions still carries the scope-reduction note', () => {
    const reactions: ReactionsConfig = { timeout: { action: 'send-fix-prompt', max_attempts: 3 } };
    const decision = decideFailureAction({ failureType: 'timeout', attempt: 2, reactions });
    expect(decision).toMatchObject({ action: 'send-fix-prompt', retry: true, attemptsLeft: 1 });
    expect(decision.note).toBe(timeoutRetryNote);
  });

  it('ignores an entry with an invalid action and missing entries', () => {
    const reactions: ReactionsConfig = { transient: { action: 'explode' } };
    expect(decideFailureAction({ failureType: 'transient', attempt: 1, reactions })).toMatchObject({ action: 'retry', source: 'default' });
    expect(decideFailureAction({ failureType: 'fixable', attempt: 1, reactions: {} })).toMatchObject({ action: 'send-fix-prompt', source: 'default' });
  });

  it('a retry override for needs_replan without max_attempts has no retries left', () => {
    const reactions: ReactionsConfig = { needs_replan: { action: 'retry' } };
    expect(decideFailureAction({ failureType: 'needs_replan', attempt: 1, reactions })).toMatchObject({ action: 'escalate', retry: false, maxAttempts: 1 });
  });
});
