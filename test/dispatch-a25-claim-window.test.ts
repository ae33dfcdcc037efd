/**
 * Outside round A25-11 (issue 17, the known open item of h17q): the orchestrator's signed claim lives ~6 s past its last
 * refresh (+ a 4 s margin). A Redis writer who kept the last claim value of a job while the wave ran, and — the moment the
 * orchestrator took the result and released the claim — re-added the finished job's signed data under its id and copied
 * the claim back, had the agent run AGAIN on a worker (code run, model money spent, a push), as the copy was still
 * "fresh". Now a run also waits, beside its setup and before any of the job's code runs, for the claim to be written again
 * after the run began: an orchestrator that awaits the job refreshes it every 2 s, a copy never is — the replay fails
 * DISPATCH_REPLAYED, the agent never runs. Real parts: a redis-server on loopback, a real `polywave worker`, a `file://`
 * remote, run-wave through the CLI.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { awaitingKey } from '../src/dispatch/job-claim.js';
import { queueNameFor, remoteKey } from '../src/dispatch/job.js';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

const { scratch, redis, workers } = useDispatchRig('pw-a25-claimwin-');

describe('a claim copied back within its lifetime (A25-11)', () => {
  it('the finished job re-added with its last claim copied back the moment the orchestrator released it: refused DISPATCH_REPLAYED, the agent does not run again', async () => {
    const target = await createDispatchRepo('claimwin', lettersScript(), { waves: [['A', 'B']] });
    const worker = await startWorker({ id: 'cw1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-cw1'), extra: ['--concurrency', '2'] });
    workers.push(worker);
    const queue = new Queue(queueNameFor([], remoteKey(target.remote)), { connection: { host: '127.0.0.1', port: redis.port } });
    const client = new Redis(redis.url);
    let replayed: { id: string } | undefined;
    let watching = true;
    // The Redis writer: keeps A's last claim; once the orchestrator deleted it, re-adds A's finished job and copies it back.
    const watcher = (async () => {
      let claim: { key: string; value: string } | undefined;
      while (watching && replayed === undefined) {
        const [key] = await client.keys(awaitingKey('claimwin.w1.A.*'));
        if (key !== undefined) {
          const value = await client.get(key);
          if (value !== null) claim = { key, value };
        } else if (claim !== undefined) {
          const id = claim.key.slice(awaitingKey('').length);
          const done = await Job.fromId(queue, id);
          if (done && (await done.getState()) === 'completed') {
            const data = done.data as object;
            await done.remove();
            await client.set(claim.key, claim.value, 'PX', 60_000);
            await queue.add('agent', data, { jobId: id });
            replayed = { id };
          }
        }
        await sleep(30);
      }
    })();
    try {
      const result = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 180_000 }));
      expect(result.success, JSON.stringify(result.blocked ?? result.agents)).toBe(true);
      for (let tries = 0; tries < 100 && replayed === undefined; tries += 1) await sleep(100);
      watching = false;
      await watcher;
      expect(replayed).toBeDefined();
      const id = replayed!.id;
      let state = 'missing';
      let reason = '';
      for (let tries = 0; tries < 400 && state !== 'failed' && state !== 'completed'; tries += 1) {
        const job = await Job.fromId(queue, id);
        state = job ? await job.getState() : 'missing';
        reason = job?.failedReason ?? '';
        if (state !== 'failed' && state !== 'completed') await sleep(100);
      }
      // Before the fix: the replay passed the claim check (the copy was a few seconds old) and ran to completion.
      expect(state, `${reason}\n${worker.log()}`).toBe('failed');
      expect(reason).toContain('DISPATCH_REPLAYED');
      // (the run waited its grace for the claim to be written again; by then the copy had aged out as well)
      expect(reason).toMatch(/not written again since this run began|claim was written \d+ s ago/);
      expect(worker.log().split(`job ${id}: finished`).length - 1).toBe(1);
    } finally {
      watching = false;
      client.disconnect();
      await queue.close();
    }
  }, 240_000);
});
