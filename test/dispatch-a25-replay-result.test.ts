/**
 * Outside round A25 (coverage kept for A24-15 after A25-10): test/dispatch-auth.test.ts's replay cases obtained a genuine
 * result of another run of a job by copying the signed job onto another queue (`rp`), where it ran under the
 * orchestrator's claim — the hole A25-10 closed (the claim names its queue: that copy now runs nowhere). The
 * orchestrator-side check they exercised still matters against a copy run under a claim of its own — here a second
 * holder of the dispatch key awaits the copy (its own signed claim, naming no queue, refreshed: A25-11) — and its genuine,
 * signed result, written as the running job's (its counter raised to 100), is refused: `DISPATCH_REPLAYED … it was run
 * from another queue`, nothing merged. Real parts: a redis-server on loopback, real `polywave worker` processes, a
 * `file://` remote, run-wave through the CLI.
 */
import path from 'node:path';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { queueNameFor, remoteKey, runCounterKey } from '../src/dispatch/job.js';
import { createDispatchRepo, lettersScript, produceJob, runWaveCli, startWorker, testDispatchKey, waveResult, useDispatchRig, reportOf, reportsEarly } from './dispatch-support.js';

const { scratch, redis, workers } = useDispatchRig('pw-a25-replayres-');



describe('a genuine result of a copy run on another queue (A24-15, kept after A25-10)', () => {
  it('the copy, awaited by a second key holder, runs on its queue; its result written as the job\'s is refused DISPATCH_REPLAYED — nothing merged', async () => {
    const slug = 'a25replay';
    const target = await createDispatchRepo(slug, reportsEarly(lettersScript(), 8_000), { waves: [['A', 'B']] });
    const runner = await startWorker({ id: 'a25r1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-1'), extra: ['--lock-duration', '60000', '--concurrency', '2'] });
    workers.push(runner);
    workers.push(await startWorker({ id: 'a25r2', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-2'), extra: ['--queue', 'rp'] }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    const queue = new Queue(queueNameFor([], remoteKey(target.remote)), { connection: { host: '127.0.0.1', port: redis.port } });
    const otherQueue = queueNameFor([], remoteKey(target.remote), 'rp');
    const client = new Redis(redis.url);
    try {
      let replayed = false;
      const deadline = Date.now() + 120_000;
      while (!replayed && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        for (const job of await queue.getActive()) {
          if (!String(job.id).startsWith(`${slug}.w1.A.`)) continue;
          const progress = job.progress as { report?: Record<string, unknown>; pushed?: string };
          const token = await client.get(`${queue.toKey(String(job.id))}:lock`);
          if (!progress?.report || typeof progress.pushed !== 'string' || !token) continue;
          if (!(await queue.getCompleted()).some((done) => String(done.id).startsWith(`${slug}.w1.B.`))) continue;
          runner.child.kill('SIGSTOP');
          await client.set(runCounterKey(otherQueue, String(job.id)), '100');
          // (signed again — the same `sig`, the job's data unchanged — and awaited by this test as a second key holder)
          const copy = await produceJob(redis.port, job.data, String(job.id), 90_000, otherQueue);
          expect(copy.error).toBeUndefined();
          expect(testDispatchKey.verify('agent-result', String(job.id), copy.value)).toBe(true);
          await (job as Job).moveToCompleted(copy.value, token, false);
          replayed = true;
          break;
        }
      }
      expect(replayed).toBe(true);
    } finally {
      runner.child.kill('SIGKILL');
      client.disconnect();
      await queue.close();
    }
    const result = waveResult(await running);
    expect(result.success, JSON.stringify(result.agents)).toBe(false);
    expect(await target.repo.run(['log', '--format=%s', `${before}..HEAD`])).not.toMatch(/feat\(A\)/);
    const explanation = result.blocked?.agents.find((agent) => agent.agent === 'A')?.explanation ?? '';
    expect(explanation, JSON.stringify(result.blocked)).toMatch(new RegExp(`DISPATCH_REPLAYED: job ${slug}\\.w1\\.A\\..*it was run from another queue \\([^)]*\\.rp\\)`));
    expect(reportOf(target.implPath, 'A')?.status).toBe('blocked');
  }, 200_000);
});
