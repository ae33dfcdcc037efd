/**
 * Outside round P19's findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child processes on
 * real temporary git repositories (the demo PROGRAM "shop" crafted without running it, script agents).
 * P19-05/P19-06: limits longer than a Node timer can wait.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { maxTimerDelayMs } from '../src/engine/timer-delay.js';
import { runShellCommand } from '../src/gates/run-command.js';
import { cli, executeArgs, programRelative, tier1Frozen, withStatuses } from './support/program-crafted.js';
import { makeTempDir } from './support/temp.js';

describe('P19-05, P19-06: a limit longer than a timer can wait (≥ 2^31 ms, ~24.8 days) is waited, not fired at once', () => {
  it('runShellCommand with a 35-day timeout runs the command to its end', async () => {
    const result = await runShellCommand('sleep 0.2; echo slept', { cwd: makeTempDir('polywave-p19-'), timeoutMs: 3_000_000_000, logPath: path.join(makeTempDir('polywave-p19-'), 'out.log') });
    expect(result).toMatchObject({ exitCode: 0, timedOut: false, output: 'slept\n' });
    expect(maxTimerDelayMs).toBe(2 ** 31 - 1);
  });

  // Before the fix: "TimeoutOverflowWarning", every agent "timeout — 0 turn(s) … wall-clock limit of 3000000 s reached",
  // and the tier gate `timed_out` at once: BLOCKED.
  it('program-execute --timeout 3000000 with a tier gate of timeout_seconds 3000000: tier 2 runs, the gate passes, COMPLETE', async () => {
    const demo = await tier1Frozen({ [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }).replace('      required: true\n', '      required: true\n      timeout_seconds: 3000000\n') });
    const result = await cli(demo, executeArgs(demo, ['--timeout', '3000000']));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/TimeoutOverflowWarning|wall-clock limit|timed out/);
    expect(result.stderr).toMatch(/PROGRAM COMPLETE/);
    expect(readFileSync(path.join(demo.repo, 'src/checkout.js'), 'utf8')).toMatch(/export function total/);
  }, 300_000);
});
