import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { dispatchKeyOf } from '../src/dispatch/auth.js';
import { expectedJobId, queueNameFor, remoteKey, type AgentJobData } from '../src/dispatch/job.js';
import { runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, lettersScript, produceJob, runWaveCli, startWorker, testDispatchKey, waveResult, useDispatchRig, type DispatchRepo, reportOf, reportsEarly } from './dispatch-support.js';

// Outside round A21-43 (and A21-11's class): whoever could write to the Redis could forge a job (run it on every worker)
// and a job's RESULT (the orchestrator merged whatever commit it named). Jobs, progress records and results are now signed
// with a dispatch key the orchestrator and its workers share (POLYWAVE_DISPATCH_KEY; vitest.config.ts sets one for the
// tests), never stored in Redis. Real parts: a redis-server on loopback, real `polywave worker` processes, `file://`
// remotes, run-wave through the CLI.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-auth-');



describe('dispatch key (A21-43, A21-11)', () => {
  it('A21-43: a result forged in Redis for the running job is refused (DISPATCH_FORGED) — nothing of it merged, the early report withdrawn', async () => {
    const target: DispatchRepo = await createDispatchRepo('forgedres', reportsEarly(lettersScript(), 15_000), { waves: [['A', 'B']] });
    workers.push(await startWorker({ id: 'fr1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-fr1') }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    // A's job, once its worker pushed the early commit (the progress names it): a Redis writer completes it with a result
    // of its own (the job's lock token is in Redis too), naming that commit — the agent's work after it never arrives.
    const queue = new Queue(queueNameFor([], remoteKey(target.remote)), { connection: { host: '127.0.0.1', port: redis.port } });
    const client = new Redis(redis.url);
    try {
      let forged = false;
      const deadline = Date.now() + 120_000;
      while (!forged && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        for (const job of await queue.getActive()) {
          if (!String(job.id).startsWith('forgedres.w1.A.')) continue;
          const progress = job.progress as { report?: Record<string, unknown>; pushed?: string };
          const token = await client.get(`${queue.toKey(String(job.id))}:lock`);
          if (!progress?.report || typeof progress.pushed !== 'string' || !token) continue;
          const result = { v: 1, job_id: job.id, worker: 'evil', host: 'evil', outcome: { status: 'finished', text: '', turns: 1, usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }, durationMs: 1, denials: [] }, report: progress.report, head: progress.pushed, events: [], started_at: Date.now(), finished_at: Date.now() };
          await (job as Job).moveToCompleted(result, token, false);
          forged = true;
        }
      }
      expect(forged).toBe(true);
    } finally {
      client.disconnect();
      await queue.close();
    }
    const result = waveResult(await running);
    // Before the fix: rc 0, WAVE_VERIFIED, main's src/a.js = 'early' (the forged result's commit merged).
    expect(result.success, JSON.stringify(result.agents)).toBe(false);
    expect(await target.repo.run(['log', '--format=%s', `${before}..HEAD`])).not.toMatch(/feat\(A\)/);
    const explanation = result.blocked?.agents.find((agent) => agent.agent === 'A')?.explanation ?? '';
    expect(explanation, JSON.stringify(result.blocked)).toMatch(/DISPATCH_FORGED/);
    expect(reportOf(target.implPath, 'A')?.status).toBe('blocked');
  }, 200_000);

  // The replay cases (issue 17, A24-15) copied the signed job onto another queue, where it ran under the orchestrator's
  // claim: A25-10 closed that (the claim names its queue), so the copy no longer runs there. The orchestrator-side check
  // (another queue's genuine result refused DISPATCH_REPLAYED, whatever its run counter) is in test/dispatch-a25-replay-result.test.ts.

  it('A21-43/A21-11: a job forged in Redis (unsigned, or signed with another key) is refused by the worker before it runs; the same job signed with the key runs', async () => {
    const target = await createDispatchRepo('forgedjob', lettersScript(), { waves: [['A', 'B']] });
    const base = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/polywave/base/forgedjob/wave1`]);
    workers.push(await startWorker({ id: 'fj1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-fj1') }));
    const job = (attempt: number): AgentJobData => {
      const data: AgentJobData = { v: 2, polywave: '0.1.0', job_id: '', slug: 'forgedjob', wave: 1, agent: 'A', attempt, role: 'wave', model: 'script:', script_text: lettersScript(), system_prompt: '', prompt: '', base_commit: base, branch: 'polywave/forgedjob/wave1-agent-A', base_ref: 'refs/polywave/base/forgedjob/wave1', owned_files: ['src/a.js', 'src/a.test.js'], frozen_paths: [], limits: {}, labels: [], remote: target.remote, enqueued_at: Date.now() };
      data.job_id = expectedJobId(data);
      return data;
    };
    const unsigned = job(1);
    const answer = await produceJob(redis.port, unsigned, unsigned.job_id, 60_000, undefined, { unsigned: true });
    // Before the fix: the worker ran it ({ value: … finished }).
    expect(answer.value).toBeUndefined();
    expect(answer.error).toMatch(/^DISPATCH_FORGED: job forgedjob\.w1\.A\..* carries no valid signature of the dispatch key/);
    const otherKey = job(2);
    const signedElsewhere = dispatchKeyOf('another-teams-key-0123456789abcdef0123').sign('agent-job', otherKey.job_id, otherKey);
    const answer2 = await produceJob(redis.port, signedElsewhere, otherKey.job_id, 60_000, undefined, { unsigned: true });
    expect(answer2.error).toMatch(/^DISPATCH_FORGED/);
    // A valid signature over other content (the job's script changed after signing) is no signature.
    const tampered = { ...testDispatchKey.sign('agent-job', job(3).job_id, job(3)), prompt: 'changed' };
    const answer3 = await produceJob(redis.port, tampered, job(3).job_id, 60_000, undefined, { unsigned: true });
    expect(answer3.error).toMatch(/^DISPATCH_FORGED/);
    const signed = job(4);
    const answer4 = await produceJob(redis.port, signed, signed.job_id, 60_000);
    expect(answer4.error).toBeUndefined();
    expect(answer4.value).toMatchObject({ outcome: { status: 'finished' }, report: { status: 'complete' } });
    expect(testDispatchKey.verify('agent-result', signed.job_id, answer4.value)).toBe(true);
  }, 150_000);

  it('without a dispatch key neither a worker nor a dispatched run-wave starts: DISPATCH_KEY_MISSING, exit 2, naming the fix', async () => {
    const target = await createDispatchRepo('nokey', lettersScript(), { waves: [['A', 'B']] });
    const dir = path.join(scratch, 'worker-nokey');
    const worker = await runCli(['worker', '--redis', redis.url, '--remote', target.remote, '--dir', dir, '--id', 'nokey'], { env: { ...gitEnv, POLYWAVE_DISPATCH_KEY: '' }, timeoutMs: 30_000 });
    expect(worker.code).toBe(2);
    expect(worker.stderr).toMatch(/error\[DISPATCH_KEY_MISSING\]: worker nokey: dispatch over Redis needs a dispatch key .*POLYWAVE_DISPATCH_KEY/);
    expect(spawnSync('test', ['-e', dir]).status).not.toBe(0);
    const short = await runCli(['worker', '--redis', redis.url, '--remote', target.remote, '--dir', dir, '--id', 'nokey'], { env: { ...gitEnv, POLYWAVE_DISPATCH_KEY: 'short' }, timeoutMs: 30_000 });
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/error\[DISPATCH_KEY_MISSING\]: .*holds 5 characters, fewer than 32/);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, env: { POLYWAVE_DISPATCH_KEY: '' }, timeoutMs: 60_000 });
    expect(run.code).toBe(2);
    expect(run.stderr + run.stdout).toMatch(/error\[DISPATCH_KEY_MISSING\]: the orchestrator: dispatch over Redis needs a dispatch key/);
  }, 120_000);
});
