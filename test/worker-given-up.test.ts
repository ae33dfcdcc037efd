import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { expectedJobId, givenUpKey, queueNameFor, remoteKey, type AgentJobData } from '../src/dispatch/job.js';
import { createDispatchRepo, holdTestClaim, lettersScript, startRedis, startWorker, testDispatchKey, useDispatchRig } from './dispatch-support.js';

// Outside round A22-24: a job the orchestrator's watch gave up on (the agent's limit + 120 s) kept running on its worker —
// in a worker-side setup bounded only by the project's timeout (up to 24 h) — holding the worker while the relaunch
// waited for one, and a hand-back then put it back in the queue. The watch now leaves a mark in Redis; the worker stops
// the job within seconds and fails it DISPATCH_GIVEN_UP (never handed back). Real parts: redis-server on loopback, a real
// `polywave worker`, a `file://` remote; the mark is written as the orchestrator's watch writes it.

// (each test starts a redis-server of its own)
const { scratch, workers } = useDispatchRig('pw-worker-given-up-', { redis: false });

describe('a job the orchestrator gave up on (A22-24)', () => {
  it('stops on its worker within seconds, mid-setup, and fails DISPATCH_GIVEN_UP — not handed back to the queue', async () => {
    const redis = await startRedis(path.join(scratch, 'redis'));
    const client = new Redis(redis.url);
    const target = await createDispatchRepo('givenup', lettersScript(), { waves: [['A', 'B']] });
    const base = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/polywave/base/givenup/wave1`]);
    const worker = await startWorker({ id: 'gu1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-gu1') });
    workers.push(worker);
    const queueName = queueNameFor([], remoteKey(target.remote));
    const queue = new Queue(queueName, { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      const data: AgentJobData = { v: 2, polywave: '0.1.0', job_id: '', slug: 'givenup', wave: 1, agent: 'A', attempt: 1, role: 'wave', model: 'script:', script_text: lettersScript(), system_prompt: '', prompt: '', base_commit: base, branch: 'polywave/givenup/wave1-agent-A', base_ref: 'refs/polywave/base/givenup/wave1', owned_files: ['src/a.js', 'src/a.test.js'], frozen_paths: [], limits: {}, labels: [], remote: target.remote, worktree_setup: { setup: 'echo setup-start; sleep 300', copy: [], defaults: false, go_work: false, port: 4100, timeout_seconds: 86_400 }, enqueued_at: Date.now() };
      data.job_id = expectedJobId(data);
      const signed = testDispatchKey.sign('agent-job', data.job_id, data);
      await holdTestClaim(redis.port, data.job_id, signed.sig);
      await queue.add('agent', signed, { jobId: data.job_id });
      // The setup runs (its sleep), the job active on the worker.
      const started = Date.now() + 60_000;
      while (!worker.log().includes(`job ${data.job_id}: agent A`) && Date.now() < started) await sleep(100);
      await sleep(3000);
      expect(await (await Job.fromId(queue, data.job_id))!.getState()).toBe('active');
      // The orchestrator's watch gives up on it (as run-wave does at the agent's limit + 120 s).
      const marked = Date.now();
      await client.set(givenUpKey(queueName, data.job_id), '1', 'EX', 3600);
      let state = 'active';
      while (Date.now() - marked < 30_000) {
        state = await (await Job.fromId(queue, data.job_id))!.getState();
        if (state !== 'active') break;
        await sleep(200);
      }
      // Before the fix: still active 30 s later (the setup's sleep held the worker; its hand-back put it in the queue).
      expect(state, worker.log()).toBe('failed');
      expect(Date.now() - marked).toBeLessThan(15_000);
      expect((await Job.fromId(queue, data.job_id))!.failedReason).toMatch(/^DISPATCH_GIVEN_UP: worker gu1 on .* stopped job givenup\.w1\.A\..*: the orchestrator gave up on it/);
      expect(await queue.getWaitingCount()).toBe(0);
      expect(worker.log()).toMatch(/stopped, the orchestrator gave up on it .*not handed back/);
    } finally {
      client.disconnect();
      await queue.close();
      worker.child.kill('SIGKILL');
      await redis.stop();
    }
  }, 150_000);
});
