import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// Outside round A21-41: a Redis that evicts any key under memory pressure (`maxmemory-policy allkeys-lru`, a shared Redis
// run as a cache) dropped running jobs' hashes; a later write recreated them without their data, and the jobs failed
// FATAL `DISPATCH_INVALID_JOB … expected 1` instead of the documented "vanished → added again". Such a Redis is now
// refused up front, by the orchestrator and by workers (DISPATCH_REDIS_EVICTS, exit 2); `volatile-*` policies (BullMQ's
// keys have no TTL, A21-45) and `noeviction` are accepted. Real parts: a redis-server on loopback, a real worker, run-wave
// through the CLI, a `file://` remote.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-evicting-');

const configSet = (name: string, value: string) => expect(spawnSync('redis-cli', ['-p', String(redis.port), 'CONFIG', 'SET', name, value], { encoding: 'utf8' }).stdout.trim()).toBe('OK');

describe('an evicting Redis (A21-41)', () => {
  it('maxmemory-policy allkeys-lru: neither a worker nor a dispatched run-wave starts (DISPATCH_REDIS_EVICTS, exit 2); volatile-lru runs', async () => {
    const target = await createDispatchRepo('evicts', lettersScript(), { waves: [['A', 'B']] });
    configSet('maxmemory', '200mb');
    configSet('maxmemory-policy', 'allkeys-lru');
    const dir = path.join(scratch, 'worker-ev0');
    const worker = await runCli(['worker', '--redis', redis.url, '--remote', target.remote, '--dir', dir, '--id', 'ev0'], { env: gitEnv, timeoutMs: 30_000 });
    // Before the fix: the worker started (and ran until killed).
    expect(worker.code).toBe(2);
    expect(worker.stderr).toMatch(/error\[DISPATCH_REDIS_EVICTS\]: Redis at redis:\/\/127\.0\.0\.1:\d+ evicts keys under memory pressure \(maxmemory-policy allkeys-lru\)/);
    expect(existsSync(dir)).toBe(false);
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const refused = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 60_000 });
    expect(refused.code).toBe(2);
    expect(refused.stderr + refused.stdout).toMatch(/DISPATCH_REDIS_EVICTS/);
    expect((await target.repo.run(['rev-parse', 'HEAD'])).trim()).toBe(before);
    // A volatile policy never evicts BullMQ's keys (no TTL): accepted.
    configSet('maxmemory-policy', 'volatile-lru');
    workers.push(await startWorker({ id: 'ev1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-ev1') }));
    const run = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 100_000 }));
    expect(run.success, JSON.stringify(run.agents)).toBe(true);
  }, 200_000);
});
