import { PolywaveError } from '../errors/polywave-error.js';
import type { CommitPhase, SubmitOptions } from '../store/manifest-inbox.js';
import type { CommandIo } from './io.js';

const phases: readonly CommitPhase[] = ['entry-dropped', 'locked', 'claimed', 'temp-written', 'record-written', 'renamed', 'settling'];

/**
 * Options of group-committed manifest writes (set-completion, update-status), read here in the
 * CLI and passed down:
 * - `POLYWAVE_LOCK_TIMEOUT_MS`: how long to wait for the manifest's lock without progress
 *   (default 30 000);
 * - crash-test hooks: `POLYWAVE_TEST_CRASH_AT=<phase>` SIGKILLs this process at that point of its
 *   write; `POLYWAVE_TEST_PAUSE_AT=<phase>:<ms>` sleeps there (to hold the lock, or to wait with a
 *   request queued). Phases: entry-dropped, locked, claimed, temp-written, record-written,
 *   renamed, settling.
 */
export function manifestWriteOptions(env: CommandIo['env']): SubmitOptions {
  const timeout = env.POLYWAVE_LOCK_TIMEOUT_MS?.trim();
  if (timeout && !/^\d+$/.test(timeout)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `POLYWAVE_LOCK_TIMEOUT_MS must be a number of milliseconds, got "${timeout}"` });
  return { ...(timeout ? { lockTimeoutMs: Number(timeout) } : {}), ...crashHooks(env) };
}

function crashHooks(env: CommandIo['env']): Pick<SubmitOptions, 'onPhase'> {
  const crashAt = env.POLYWAVE_TEST_CRASH_AT?.trim();
  const pause = env.POLYWAVE_TEST_PAUSE_AT?.trim();
  if (!crashAt && !pause) return {};
  const pauseMatch = pause ? /^([a-z-]+):(\d+)$/.exec(pause) : null;
  for (const phase of [crashAt, pauseMatch?.[1]]) {
    if (phase && !phases.includes(phase as CommitPhase)) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `POLYWAVE_TEST_CRASH_AT / POLYWAVE_TEST_PAUSE_AT: unknown phase "${phase}" (one of ${phases.join(', ')})` });
    }
  }
  if (pause && !pauseMatch) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `POLYWAVE_TEST_PAUSE_AT must be <phase>:<ms>, got "${pause}"` });
  return {
    onPhase: async (phase) => {
      if (pauseMatch && phase === pauseMatch[1]) await new Promise((resolve) => setTimeout(resolve, Number(pauseMatch[2])));
      if (phase === crashAt) process.kill(process.pid, 'SIGKILL');
    },
  };
}
