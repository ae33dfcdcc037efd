/**
 * Outside round A25 (issue 17, the known open item of A24/h17q): the orchestrator's signed claim on a job it awaits
 * (`polywave:awaiting:<job id>`) was keyed and judged by the job id alone — a Redis writer who copied the signed job onto
 * another queue of the same Redis (another team's `--queue`, another label set) while the wave ran had it run there too:
 * the claim was live and named the job's signature (never merged — A24-15 binds results to their queue — but it ran code,
 * spent model money and pushed). Now the claim names the queue the job was enqueued on, and a worker of any other queue
 * refuses the copy DISPATCH_REPLAYED, nothing fetched or run. Real parts: a redis-server on loopback, real `polywave
 * worker` processes (one per queue), a `file://` remote, run-wave through the CLI.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { queueNameFor, remoteKey } from '../src/dispatch/job.js';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

const { scratch, redis, workers } = useDispatchRig('pw-a25-claimq-');

describe('the awaiting claim is bound to its queue (A25)', () => {
  it('a copy of each signed job on another queue, made while the orchestrator awaits it, runs nowhere: DISPATCH_REPLAYED; the wave itself passes', async () => {
    const target = await createDispatchRepo('claimq', lettersScript({ A: ['sleep_ms: 3000'], B: ['sleep_ms: 3000'] }), { waves: [['A', 'B']] });
    const connection = { host: '127.0.0.1', port: redis.port };
    const own = new Queue(queueNameFor([], remoteKey(target.remote)), { connection });
    const other = new Queue(queueNameFor([], remoteKey(target.remote), 'team-b'), { connection });
    const home = await startWorker({ id: 'cq1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-cq1'), extra: ['--concurrency', '2'] });
    const thief = await startWorker({ id: 'cq2', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-cq2'), extra: ['--queue', 'team-b', '--concurrency', '2'] });
    workers.push(home, thief);
    // A Redis writer copies every job of the wave, as signed, onto team-b's queue the moment it appears.
    const copied = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const job of await own.getJobs(['waiting', 'active', 'delayed']).catch(() => [] as Job[])) {
          if (!job?.id || copied.has(job.id)) continue;
          copied.add(job.id);
          await other.add(job.name, job.data, { jobId: job.id });
        }
        await sleep(50);
      }
    })();
    try {
      const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 180_000 });
      watching = false;
      await watcher;
      const result = waveResult(run);
      expect(result.success, JSON.stringify(result.blocked ?? result.agents)).toBe(true);
      expect(copied.size).toBe(2);
      for (const id of copied) {
        let state = 'missing';
        let reason = '';
        for (let tries = 0; tries < 300 && state !== 'failed' && state !== 'completed'; tries += 1) {
          const job = await Job.fromId(other, id);
          state = job ? await job.getState() : 'missing';
          reason = job?.failedReason ?? '';
          if (state !== 'failed' && state !== 'completed') await sleep(100);
        }
        // Before the fix: the copy ran on cq2 (`agent A of claimq wave 1`) and completed.
        expect(state, `${id}: ${reason}\n${thief.log()}`).toBe('failed');
        // (refused while the orchestrator's claim, naming its own queue, was live — or, the grace of 15 s run out, once it
        // released it: either way DISPATCH_REPLAYED, nothing fetched or run)
        expect(reason).toContain('DISPATCH_REPLAYED');
      }
      expect(thief.log()).not.toMatch(/agent [AB] of claimq/);
    } finally {
      watching = false;
      await own.close();
      await other.close();
    }
  }, 240_000);
});
