import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { expectedJobId, type AgentJobData } from '../src/dispatch/job.js';
import { createDispatchRepo, lettersScript, produceJob, startWorker, useDispatchRig } from './dispatch-support.js';

// Outside round A21-39: in a mixed pool, a model only SOME workers allow (`--model-allow`) was failed FATAL
// (DISPATCH_INVALID_JOB) by whichever other worker took the job first — the wave BLOCKED while an allowing worker idled.
// Such a job now goes back to the queue for another worker; it fails only once every live worker of its labels refused
// it. Real parts: a redis-server on loopback, real `polywave worker` processes, a `file://` remote.

const { scratch, redis, workers } = useDispatchRig('pw-worker-model-allow-');

describe('a model only some workers allow (A21-39)', () => {
  it('a worker that does not allow it hands it back and the allowing worker runs it; a model no live worker allows still fails', async () => {
    const target = await createDispatchRepo('mixed', lettersScript({ B: ['sleep_ms: 5000'] }), { waves: [['A', 'B']] });
    const base = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/polywave/base/mixed/wave1`]);
    const job = (agent: 'A' | 'B', model: string, script?: string): AgentJobData => {
      const lower = agent.toLowerCase();
      const data: AgentJobData = { v: 2, polywave: '0.1.0', job_id: '', slug: 'mixed', wave: 1, agent, attempt: 1, role: 'wave', model, ...(script ? { script_text: script } : {}), system_prompt: '', prompt: 'go', base_commit: base, branch: `polywave/mixed/wave1-agent-${agent}`, base_ref: 'refs/polywave/base/mixed/wave1', owned_files: [`src/${lower}.js`, `src/${lower}.test.js`], frozen_paths: [], limits: { timeoutMs: 20_000 }, labels: [], remote: target.remote, enqueued_at: Date.now() };
      data.job_id = expectedJobId(data);
      return data;
    };
    const allowing = await startWorker({ id: 'allows', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-allows'), extra: ['--model-allow', 'openai-compatible:http://127.0.0.1:9/'], env: { OPENAI_API_KEY: 'sk-test-not-a-key' } });
    workers.push(allowing);
    // The allowing worker busy (its one slot: B sleeps 5 s), so the other one takes the model job first.
    const busy = job('B', 'script:', lettersScript({ B: ['sleep_ms: 5000'] }));
    const busyDone = produceJob(redis.port, busy, busy.job_id, 60_000);
    while (!allowing.log().includes(`job ${busy.job_id}: agent B`)) await sleep(50);
    const refusing = await startWorker({ id: 'refuses', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-refuses') });
    workers.push(refusing);
    const gated = job('A', 'openai-compatible:http://127.0.0.1:9/v1#m');
    const answer = await produceJob(redis.port, gated, gated.job_id, 90_000);
    // Before the fix: `DISPATCH_INVALID_JOB: model "openai-compatible:…": names its own endpoint …` from `refuses`.
    expect(answer.error ?? '', refusing.log()).not.toMatch(/names its own endpoint/);
    expect(refusing.log()).toContain(`job ${gated.job_id}: handed back, its model is not allowed here (--model-allow)`);
    expect(allowing.log()).toContain(`job ${gated.job_id}: agent A`);
    expect((await busyDone).error).toBeUndefined();
    // A model neither worker allows: refused by both, then failed as before.
    const nobody = job('A', 'openai-compatible:http://127.0.0.2:9/v1#m');
    const refused = await produceJob(redis.port, nobody, nobody.job_id, 60_000);
    expect(refused.error).toMatch(/^DISPATCH_INVALID_JOB: model "openai-compatible:http:\/\/127\.0\.0\.2:9\/v1#m": names its own endpoint.*; no live worker of its label\(s\) allows it$/);
  }, 200_000);
});
