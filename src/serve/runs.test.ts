import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { acquireRunLock } from '../cli/run-lock.js';
import { describeLaunch, launchFromLog, type StartedRun } from './runs.js';

describe('describeLaunch (attack-serve-15 N2)', () => {
  it('gives the exit code, the reason, the log tail and, for a tamper stop, what to accept in a terminal', async () => {
    const repo = realpathSync(makeTempDir('polywave-serve-launch-'));
    mkdirSync(path.join(repo, '.polywave-state', 'serve'), { recursive: true });
    const log = path.join(repo, '.polywave-state', 'serve', 'tiny-1.log');
    writeFileSync(
      log,
      [
        'prepare-wave: [state_check] success — state WAVE_EXECUTING allows wave execution',
        'prepare-wave: [tamper_check] failed — TAMPER_DETECTED: wave 2 was prepared before and 1 thing(s) changed since — merge target refs/heads/main: 46ce961a → 0c0548e8',
        'run-wave: wave 2 stopped: state WAVE_EXECUTING, 1.4s, $—',
        'run: stopped (WAVE_EXECUTING) — docs/IMPL/IMPL-tiny.yaml in 1.5 s, 0 agent(s) merged, 0 tokens, cost unknown',
        '  wave 2 stopped: prepare-wave failed',
        '  Fix what is named above, then re-run the same command to resume (finished work is kept).',
        '',
      ].join('\n'),
    );
    const run: StartedRun = { pid: 42, repo, slug: 'tiny', started_at: '2026-12-03T00:00:00.000Z', log, exit_code: 1, running: false };
    const view = await describeLaunch(run, 'docs/IMPL/IMPL-tiny.yaml');
    expect(view).toMatchObject({ pid: 42, running: false, exit_code: 1, log: '.polywave-state/serve/tiny-1.log', reason: 'wave 2 stopped: prepare-wave failed' });
    expect(view.log_tail).toHaveLength(6);
    expect(view.hint).toContain('`polywave prepare-wave docs/IMPL/IMPL-tiny.yaml --wave 2 --accept-changes`');
    // A coded refusal: its error line is the reason; no hint. While it runs: no reason.
    writeFileSync(log, 'polywave: error[N005_IMPL_NOT_FOUND]: manifest not found\n');
    expect(await describeLaunch({ ...run, exit_code: 2 }, 'x')).toMatchObject({ reason: 'polywave: error[N005_IMPL_NOT_FOUND]: manifest not found', hint: null });
    expect((await describeLaunch({ ...run, running: true, exit_code: null }, 'x')).reason).toBeNull();
  });

  it('after a server restart, the newest log of the plan: its outcome from the log, or running while a live process holds the plan\'s run lock', async () => {
    const repo = realpathSync(makeTempDir('polywave-serve-launch-log-'));
    const serve = path.join(repo, '.polywave-state', 'serve');
    mkdirSync(serve, { recursive: true });
    const impl = path.join(repo, 'docs', 'IMPL', 'IMPL-tiny.yaml');
    expect(await launchFromLog(repo, 'tiny', impl, 'docs/IMPL/IMPL-tiny.yaml')).toBeNull();
    writeFileSync(path.join(serve, 'tiny-2026-12-03T10-00-00-000Z.log'), 'run: COMPLETE — docs/IMPL/IMPL-tiny.yaml\n');
    writeFileSync(path.join(serve, 'tiny-2026-12-03T11-00-00-000Z.log'), 'run: stopped (WAVE_PENDING) — docs/IMPL/IMPL-tiny.yaml\n  wave 1 stopped: prepare-wave failed\n');
    writeFileSync(path.join(serve, 'tinyother-2026-12-03T12-00-00-000Z.log'), 'run: COMPLETE\n');
    expect(await launchFromLog(repo, 'tiny', impl, 'docs/IMPL/IMPL-tiny.yaml')).toMatchObject({ from_log: true, running: false, exit_code: 1, pid: 0, started_at: '2026-12-03T11:00:00.000Z', reason: 'wave 1 stopped: prepare-wave failed', log: '.polywave-state/serve/tiny-2026-12-03T11-00-00-000Z.log' });
    const release = acquireRunLock(repo, impl);
    try {
      expect(await launchFromLog(repo, 'tiny', impl, 'docs/IMPL/IMPL-tiny.yaml')).toMatchObject({ from_log: true, running: true, pid: process.pid, reason: null });
    } finally {
      release();
    }
  });
});
