/**
 * Outside round A25-08 (issue 17): a shared remote that denies non-fast-forward updates — `receive.denyNonFastForwards`,
 * which `git init --bare --shared` sets (a shared-disk remote), or a "no force push" protection. A job's re-run (a
 * stalled job taken over, an agent's next attempt) starts from the wave's base and must replace what an earlier run
 * pushed to the agent branch; the remote refuses, and the worker reported it as `DISPATCH_REF_REFUSED` (the ref guard),
 * fatal — nothing named the setting. Now: `DISPATCH_REMOTE_NO_FORCE` naming `receive.denyNonFastForwards` (config:
 * escalate), and a worker whose remote is on its disk with that setting warns at start. Real parts: a redis-server on
 * loopback, a real `polywave worker`, a `file://` bare remote, run-wave through the CLI.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

const { scratch, redis, workers } = useDispatchRig('pw-a25-noforce-');

describe('a shared remote that denies non-fast-forward updates (A25-08)', () => {
  it('a re-run that must replace an earlier run\'s branch fails DISPATCH_REMOTE_NO_FORCE naming the setting; the worker warns at start', async () => {
    const target = await createDispatchRepo('noforce', lettersScript(), { waves: [['A', 'B']] });
    await target.repo.run(['--git-dir', target.remoteDir, 'config', 'receive.denyNonFastForwards', 'true']);
    // What an earlier run of agent A left on the remote: a commit of its own on the agent branch.
    await target.repo.run(['checkout', '-q', '-b', 'earlier']);
    await target.repo.run(['commit', '-q', '--allow-empty', '-m', 'an earlier run of A']);
    await target.repo.run(['push', '-q', target.remote, 'earlier:refs/heads/polywave/noforce/wave1-agent-A']);
    await target.repo.run(['checkout', '-q', 'main']);
    const worker = await startWorker({ id: 'nf1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-nf1'), extra: ['--concurrency', '2'] });
    workers.push(worker);
    expect(worker.log()).toContain('denies non-fast-forward updates');
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 180_000 });
    const result = waveResult(run);
    expect(result.success).toBe(false);
    const a = result.blocked?.agents.find((agent) => agent.agent === 'A');
    // Before the fix: `DISPATCH_REF_REFUSED: the shared remote … refused polywave/noforce/wave1-agent-A: remote: error: denying non-fast-forward …`.
    expect(a?.explanation, JSON.stringify(result.blocked)).toContain('DISPATCH_REMOTE_NO_FORCE');
    expect(a?.explanation).toContain('receive.denyNonFastForwards');
    expect(a?.explanation).not.toContain('DISPATCH_REF_REFUSED');
    expect(worker.log()).toContain('refuses to replace polywave/noforce/wave1-agent-A');
  }, 240_000);
});
