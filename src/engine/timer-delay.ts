/**
 * The longest delay a Node timer takes: 2^31 − 1 ms (about 24.8 days). A longer one (a gate's `timeout_seconds:
 * 3000000`, `--timeout 3000000` for agents — "no real limit") is not waited: Node warns (TimeoutOverflowWarning) and
 * fires the timer after 1 ms, so the gate or agent "timed out" at once (outside round P19-05/P19-06).
 */
export const maxTimerDelayMs = 2_147_483_647;

/** `ms` as a timer can wait it: at most {@link maxTimerDelayMs} (a longer limit is, in practice, none). */
export function timerDelay(ms: number): number {
  return Math.min(ms, maxTimerDelayMs);
}
