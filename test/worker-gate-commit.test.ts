import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { expectedGateJobId, queueNameFor, remoteKey, type GateJobData } from '../src/dispatch/job.js';
import { createDispatchRepo, holdTestClaim, lettersScript, startWorker, testDispatchKey, useDispatchRig } from './dispatch-support.js';

// A21-11's class for gate jobs: a worker ran a gate job on ANY commit its clone had (`cat-file -e`), and took the gates'
// sandbox settings from any base that commit built on — not what the orchestrator named for the wave and the branch. Now
// the gated commit must be the agent branch's tip on the shared remote and the base what the wave's base ref holds there,
// as an agent job's base is checked. (Jobs signed with the test run's dispatch key: the signature is not what is tested.)
// Real parts: a redis-server on loopback, a real `polywave worker`, a `file://` remote.

const { scratch, redis, workers } = useDispatchRig('pw-worker-gate-commit-');

/** Adds a signed gate job and waits for the worker's answer. */
async function produceGate(data: GateJobData, timeoutMs = 60_000): Promise<{ value?: unknown; error?: string }> {
  const queue = new Queue(queueNameFor([], remoteKey(data.remote)), { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    const signed = testDispatchKey.sign('gate-job', data.job_id, data);
    await holdTestClaim(redis.port, data.job_id, signed.sig);
    await queue.add('gate', signed, { jobId: data.job_id });
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const state = await (await Job.fromId(queue, data.job_id))?.getState();
      if (state === 'completed' || state === 'failed') {
        const job = (await Job.fromId(queue, data.job_id))!;
        return state === 'completed' ? { value: job.returnvalue } : { error: job.failedReason };
      }
      await sleep(50);
    }
    return { error: 'timed out' };
  } finally {
    await queue.close();
  }
}

describe('gate jobs gate only the commit the orchestrator names (A21-11 class)', () => {
  it('a head that is not the agent branch tip on the remote, or a base not at the wave base ref, is refused; the named ones run', async () => {
    const target = await createDispatchRepo('gatecheck', lettersScript(), { waves: [['A', 'B']] });
    const git = (args: string[]) => target.repo.run(args);
    const base = (await git(['rev-parse', 'HEAD'])).trim();
    await git(['commit', '--quiet', '--allow-empty', '-m', 'middle']);
    const middle = (await git(['rev-parse', 'HEAD'])).trim();
    await git(['commit', '--quiet', '--allow-empty', '-m', 'tip']);
    const tip = (await git(['rev-parse', 'HEAD'])).trim();
    await git(['checkout', '--quiet', '-b', 'other', base]);
    await git(['commit', '--quiet', '--allow-empty', '-m', 'elsewhere']);
    const elsewhere = (await git(['rev-parse', 'HEAD'])).trim();
    // The remote: the wave's base ref at `base`, the agent branch at `tip`, and another branch holding `elsewhere` (the
    // worker's clone has it: it clones every branch).
    await git(['push', '--quiet', '--force', target.remote, `${base}:refs/polywave/base/gatecheck/wave1`, `${tip}:refs/heads/polywave/gatecheck/wave1-agent-A`, `${elsewhere}:refs/heads/other`]);
    workers.push(await startWorker({ id: 'gc1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-gc1') }));
    const gate = (head: string, baseCommit: string | undefined, command: string): GateJobData => {
      const data: GateJobData = { v: 2, polywave: '0.1.0', kind: 'gate', job_id: '', slug: 'gatecheck', wave: 1, agent: 'A', branch: 'polywave/gatecheck/wave1-agent-A', head, gates: [{ type: 'test', command }], ...(baseCommit ? { base_commit: baseCommit } : {}), docs_only: false, labels: [], remote: target.remote, enqueued_at: Date.now() };
      data.job_id = expectedGateJobId(data);
      return data;
    };
    // Before the fix: each ran its gates (a result, `passed`).
    const notTip = await produceGate(gate(elsewhere, undefined, 'true'));
    expect(notTip.value).toBeUndefined();
    expect(notTip.error).toMatch(/^DISPATCH_BRANCH_MISMATCH: polywave\/gatecheck\/wave1-agent-A on the shared remote .* is at [0-9a-f]{12}, not at [0-9a-f]{12}, the commit gate job .* names; not gated/);
    const notBase = await produceGate(gate(tip, middle, 'true'));
    expect(notBase.value).toBeUndefined();
    expect(notBase.error).toMatch(/^DISPATCH_BASE_MISSING: the base [0-9a-f]{12} gate job .* names is not at refs\/polywave\/base\/gatecheck\/wave1/);
    const named = await produceGate(gate(tip, base, 'true'));
    expect(named.error).toBeUndefined();
    expect(named.value).toMatchObject({ kind: 'gate', run: { passed: true } });
  }, 150_000);
});
