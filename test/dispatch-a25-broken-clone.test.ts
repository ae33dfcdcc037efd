/**
 * Outside round A25-09 (issue 17): a worker whose clone (`<dir>/repo.git`) broke after it started — its HEAD overwritten
 * (a disk fault, an operator's slip) — stayed registered, took its share of every wave and failed each job with git's
 * words (`DISPATCH_WORKER_FAILED: not a git repository: …`, escalate): the wave BLOCKED while a healthy worker idled. Now
 * a job whose setup fails on a broken clone makes the clone again from the shared remote and goes back to the queue; a
 * worker started on a broken clone makes it again. Real parts: a redis-server on loopback, real `polywave worker`
 * processes, a `file://` remote, run-wave through the CLI.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

const { scratch, redis, workers } = useDispatchRig('pw-a25-clone-');

describe('a worker whose clone is broken (A25-09)', () => {
  it('its clone broken while it runs: the job makes it again and runs — WAVE_VERIFIED, not DISPATCH_WORKER_FAILED', async () => {
    const target = await createDispatchRepo('brokenclone', lettersScript(), { waves: [['A', 'B']] });
    const dir = path.join(scratch, 'worker-bc1');
    const worker = await startWorker({ id: 'bc1', redisUrl: redis.url, remote: target.remote, dir, extra: ['--concurrency', '2'] });
    workers.push(worker);
    writeFileSync(path.join(dir, 'repo.git', 'HEAD'), 'garbage\n');
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 180_000 });
    const result = waveResult(run);
    // Before the fix: BLOCKED, `DISPATCH_WORKER_FAILED: not a git repository: …/repo.git …` for each agent.
    expect(run.stdout + run.stderr).not.toContain('not a git repository');
    expect(result.success, JSON.stringify(result.blocked ?? result.agents)).toBe(true);
    expect(worker.log()).toContain("this worker's clone was broken");
    worker.child.kill('SIGTERM');
    await worker.exited;
  }, 240_000);

  it('a worker started on a broken clone makes it again and runs the wave', async () => {
    const target = await createDispatchRepo('brokenstart', lettersScript(), { waves: [['A', 'B']] });
    const dir = path.join(scratch, 'worker-bc2');
    const first = await startWorker({ id: 'bc2', redisUrl: redis.url, remote: target.remote, dir });
    first.child.kill('SIGTERM');
    await first.exited;
    writeFileSync(path.join(dir, 'repo.git', 'HEAD'), 'garbage\n');
    const worker = await startWorker({ id: 'bc2', redisUrl: redis.url, remote: target.remote, dir, extra: ['--concurrency', '2'] });
    workers.push(worker);
    expect(worker.log()).toContain('the clone is broken');
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 180_000 });
    const result = waveResult(run);
    expect(result.success, JSON.stringify(result.blocked ?? result.agents)).toBe(true);
  }, 240_000);
});
