import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { expectedGateJobId, expectedJobId, queueNameFor, remoteKey, runCounterKey, type AgentJobData, type GateJobData } from '../src/dispatch/job.js';
import { runCli } from './support/cli.js';
import { createDispatchRepo, holdTestClaim, lettersScript, produceJob, releaseTestClaim, runWaveCli, startWorker, testDispatchKey, waveResult, useDispatchRig, type DispatchRepo } from './dispatch-support.js';

// Issue 17 (replayed JOBS) and version skew. A worker checked only a job's signature: a Redis writer without the key who
// re-added an old enqueue's signed data under its id made a worker run the agent again (never merged — results are bound
// to the enqueue — but it ran code, spent model money and pushed). Now a worker runs a job only while the orchestrator's
// signed, fresh claim (`polywave:awaiting:<job id>`) names that enqueue's signature (src/dispatch/job-claim.ts): else
// DISPATCH_REPLAYED, nothing fetched or run. And a job carries its format and polywave version, signed: a worker refuses a
// format it does not run with DISPATCH_VERSION_SKEW naming both. Real parts: a redis-server on loopback, a real
// `polywave worker` process, a `file://` remote, run-wave through the CLI.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-job-replay-');

/** The job's state once it finished (completed or failed), read every 100 ms up to `ms`. */
async function settled(queue: Queue, jobId: string, ms: number): Promise<{ state: string; reason?: string }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const seen = await Job.fromId(queue, jobId);
    const state = seen ? await seen.getState() : 'missing';
    // (read again: the job read before getState may be from before it finished)
    const job = state === 'failed' ? await Job.fromId(queue, jobId) : seen;
    if (state === 'completed' || state === 'failed' || Date.now() > deadline) return { state, ...(job?.failedReason ? { reason: job.failedReason } : {}) };
    await sleep(100);
  }
}

describe('replayed jobs and version skew (issue 17)', () => {
  it('an old signed job re-added after its run finished is refused DISPATCH_REPLAYED — no run, nothing pushed — also with its old claim copied back; a gate job likewise', async () => {
    const target: DispatchRepo = await createDispatchRepo('jobreplay', lettersScript(), { waves: [['A', 'B']] });
    const worker = await startWorker({ id: 'jr1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-jr1') });
    workers.push(worker);
    const queueName = queueNameFor([], remoteKey(target.remote));
    const queue = new Queue(queueName, { connection: { host: '127.0.0.1', port: redis.port } });
    const client = new Redis(redis.url);
    // A Redis reader keeps the last claim value of A's job it saw while the wave ran (to copy it back later).
    const claims = new Map<string, string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const key of await client.keys('polywave:awaiting:jobreplay.w1.A.*')) {
          const value = await client.get(key);
          if (value !== null) claims.set(key, value);
        }
        await sleep(100);
      }
    })();
    try {
      const result = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 }));
      watching = false;
      await watcher;
      expect(result.success, JSON.stringify(result)).toBe(true);
      const done = (await queue.getCompleted()).find((job) => String(job.id).startsWith('jobreplay.w1.A.'))!;
      expect(done).toBeDefined();
      const jobId = String(done.id);
      const data = done.data as AgentJobData;
      expect(testDispatchKey.verify('agent-job', jobId, data)).toBe(true);
      const runs = await client.get(runCounterKey(queueName, jobId));
      const branch = 'refs/heads/polywave/jobreplay/wave1-agent-A';
      const pushed = (await target.repo.run(['ls-remote', target.remote, branch])).trim();
      const started = () => worker.log().split(`job ${jobId}: agent A of`).length - 1;
      expect(started()).toBe(1);

      // 1. The Redis writer re-adds the genuine, signed job under its id (its run is over, nobody awaits it).
      await done.remove();
      await queue.add('agent', data, { jobId });
      const replayed = await settled(queue, jobId, 60_000);
      // Before the fix: `completed` — the agent ran a second time on jr1 (its run counter went up, its branch was pushed).
      expect(replayed, worker.log()).toMatchObject({ state: 'failed' });
      expect(replayed.reason).toMatch(/^DISPATCH_REPLAYED: job jobreplay\.w1\.A\.\S+ is signed, but no orchestrator awaits it .*refused, nothing fetched or run/);
      expect(started()).toBe(1);
      expect(await client.get(runCounterKey(queueName, jobId))).toBe(runs);
      expect((await target.repo.run(['ls-remote', target.remote, branch])).trim()).toBe(pushed);

      // 2. Again, with the last claim of the run copied back (no expiry): signed, naming this enqueue — but stale.
      const [claimKey, claimValue] = [...claims.entries()][0] ?? [];
      expect(claimKey, 'a claim seen while the wave ran').toBeDefined();
      expect(JSON.parse(claimValue!)).toMatchObject({ job_id: jobId, sigs: expect.arrayContaining([data.sig]) });
      await (await Job.fromId(queue, jobId))!.remove();
      await client.set(claimKey!, claimValue!);
      await queue.add('agent', data, { jobId });
      const copied = await settled(queue, jobId, 60_000);
      expect(copied, worker.log()).toMatchObject({ state: 'failed' });
      expect(copied.reason).toMatch(/^DISPATCH_REPLAYED: job jobreplay\.w1\.A\.\S+ is signed, but its claim was written \d+ s ago \(Redis's clock\), longer than it lives/);
      // 3. A claim written by the Redis writer (no key) naming the job: not a claim.
      await (await Job.fromId(queue, jobId))!.remove();
      await client.set(claimKey!, JSON.stringify({ ...JSON.parse(claimValue!), at: Date.now() }));
      await queue.add('agent', data, { jobId });
      const forged = await settled(queue, jobId, 60_000);
      expect(forged.reason).toMatch(/^DISPATCH_REPLAYED: job \S+ is signed, but its claim in Redis carries no valid signature of the dispatch key/);
      expect(started()).toBe(1);
      expect(await client.get(runCounterKey(queueName, jobId))).toBe(runs);
      expect((await target.repo.run(['ls-remote', target.remote, branch])).trim()).toBe(pushed);
      await client.del(claimKey!);

      // 4. A gate job (dispatch.gates: workers) nobody awaits: refused before anything is checked out; awaited: it runs.
      const head = pushed.split('\t')[0]!;
      const gate: GateJobData = { v: 2, polywave: '0.1.0', kind: 'gate', job_id: '', slug: 'jobreplay', wave: 1, agent: 'A', branch: 'polywave/jobreplay/wave1-agent-A', head, gates: [{ type: 'test', command: 'true' }], docs_only: false, labels: [], remote: target.remote, enqueued_at: Date.now() };
      gate.job_id = expectedGateJobId(gate);
      const signedGate = testDispatchKey.sign('gate-job', gate.job_id, gate);
      await queue.add('gate', signedGate, { jobId: gate.job_id });
      const unclaimedGate = await settled(queue, gate.job_id, 60_000);
      expect(unclaimedGate.reason).toMatch(/^DISPATCH_REPLAYED: gate job jobreplay\.w1\.A\.gate\.\S+ is signed, but no orchestrator awaits it/);
      await (await Job.fromId(queue, gate.job_id))!.remove();
      await holdTestClaim(redis.port, gate.job_id, signedGate.sig);
      await queue.add('gate', signedGate, { jobId: gate.job_id });
      const claimedGate = await settled(queue, gate.job_id, 60_000);
      releaseTestClaim(redis.port, gate.job_id);
      expect(claimedGate, worker.log()).toMatchObject({ state: 'completed' });
    } finally {
      watching = false;
      client.disconnect();
      await queue.close();
    }
  }, 300_000);

  it('version skew: a job of a newer or an older format is refused DISPATCH_VERSION_SKEW naming both versions; `polywave workers` shows each worker\'s version', async () => {
    const target: DispatchRepo = await createDispatchRepo('skew', lettersScript(), { waves: [['A', 'B']] });
    const base = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/polywave/base/skew/wave1`]);
    workers.push(await startWorker({ id: 'vs1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-vs1') }));
    const job = (change: Record<string, unknown>): AgentJobData => {
      const data = { v: 2, polywave: '0.1.0', job_id: '', slug: 'skew', wave: 1, agent: 'A', attempt: 1, role: 'wave', model: 'script:', script_text: lettersScript(), system_prompt: '', prompt: '', base_commit: base, branch: 'polywave/skew/wave1-agent-A', base_ref: 'refs/polywave/base/skew/wave1', owned_files: ['src/a.js', 'src/a.test.js'], frozen_paths: [], limits: {}, labels: [], remote: target.remote, enqueued_at: Date.now(), ...change } as AgentJobData;
      data.job_id = expectedJobId(data);
      return data;
    };
    const newer = job({ v: 3, polywave: '9.0.0', new_field: 'x' });
    const answer = await produceJob(redis.port, newer, newer.job_id, 60_000);
    // Before the fix: DISPATCH_INVALID_JOB (`v` … expected 1), naming no version.
    expect(answer.error).toMatch(/^DISPATCH_VERSION_SKEW: job skew\.w1\.A\.\S+ has job format 3 \(polywave 9\.0\.0\), newer than worker vs1 runs: job format 2 \(polywave \d+\.\d+\.\d+[^)]*\); upgrade the worker/);
    const { polywave: _version, ...withoutVersion } = job({ prompt: 'older' });
    const older = { ...withoutVersion, v: 1 } as unknown as AgentJobData;
    const refused = await produceJob(redis.port, older, older.job_id, 60_000);
    expect(refused.error).toMatch(/^DISPATCH_VERSION_SKEW: job skew\.w1\.A\.\S+ has job format 1 \(a polywave without a version in its jobs\), older than worker vs1 runs: job format 2 .*upgrade the orchestrator/);
    const listed = await runCli(['workers', '--redis', redis.url], { timeoutMs: 20_000 });
    expect(listed.stdout).toMatch(/^vs1\t.*\tversion=\d+\.\d+\.\d+\S* \(job format 2\)$/m);
    const json = JSON.parse((await runCli(['workers', '--redis', redis.url, '--json'], { timeoutMs: 20_000 })).stdout) as { workers: Array<{ id: string; version?: string; job_format?: number }> };
    expect(json.workers.find((record) => record.id === 'vs1')).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), job_format: 2 });
  }, 200_000);
});
