/**
 * Outside attack X2 #14 (2026-12-02), the regression test of its fix: a `polywave worker` where the
 * OS sandbox cannot run refused model-backed agent jobs but ran gate jobs (`dispatch.gates:
 * workers`) — the agent branch's code — unsandboxed. Now such a worker refuses gate jobs too
 * (SANDBOX_UNAVAILABLE, naming the worker, nothing checked out or run) unless it was started with
 * `--unsafe-no-sandbox`, the opt-out agent jobs already have. A model-backed agent job is refused the
 * same way now, before its checkout (it failed inside runAgent, after the checkout, with a message that
 * named neither the code nor the worker). A20-19: so is a `script:` agent job (it ran unsandboxed there).
 * A21-05: such a worker now does not start at all (SANDBOX_UNAVAILABLE, exit 2: it could run no job, yet it took its
 * share of every wave); its per-job refusals stay as a second line, no longer reachable through a started worker — what
 * is tested here is that no job reaches a sandbox-less worker, and the opt-out.
 *
 * Real parts: a redis-server on loopback, a bare `file://` remote, two real `polywave worker`
 * processes with the sandbox turned off (POLYWAVE_SANDBOX=off), each on its own named queue, and
 * the orchestrator's Redis dispatcher sending each one gate job whose command writes a marker
 * outside the checkout. Needs `npm run build` (the workers run bin/polywave.js).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dispatcher } from '../src/dispatch/dispatcher.js';
import { expectedJobId, queueNameFor, remoteKey, type AgentJobData } from '../src/dispatch/job.js';
import { createRedisDispatcher } from '../src/dispatch/redis-dispatcher.js';
import { PolywaveError } from '../src/errors/polywave-error.js';
import type { TestRepo } from './support/git-repo.js';
import { createPushedRepo, gitEnv, produceJob, startWorker, useDispatchRig } from './dispatch-support.js';

const { scratch, redis, workers } = useDispatchRig('pw-worker-gate-sandbox-');
const branchOf = (agent: string) => `polywave/gsb/wave1-agent-${agent}`;
let repo: TestRepo;
let remote: string;
let head: string;
const dispatchers: Dispatcher[] = [];
/** How the sandbox-less worker's start ended ('started', or its error). */
let offStart = '';

beforeAll(async () => {
  ({ repo, remote } = await createPushedRepo(path.join(scratch, 'remote.git'), { 'src/a.js': "export const a = 'a';\n" }));
  await repo.git.run(['checkout', '--quiet', '-b', branchOf('A')]);
  repo.write('src/a.js', "export const a = 'A';\n");
  head = await repo.commitAll('A: a');
  // The wave's base ref an agent job names (its worker fetches it before the checkout).
  await repo.git.run(['push', '--quiet', remote, `${head}:refs/polywave/base/gsb/wave1`]);
  // Same machine, no sandbox for either: one does not start (A21-05), one was told to run its jobs anyway.
  const env = { POLYWAVE_SANDBOX: 'off' };
  offStart = await startWorker({ id: 'gsb-off', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-off'), extra: ['--queue', 'gsb-off'], env }).then(
    (worker) => {
      workers.push(worker);
      return 'started';
    },
    (error: unknown) => String(error),
  );
  workers.push(await startWorker({ id: 'gsb-unsafe', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-unsafe'), extra: ['--queue', 'gsb-unsafe', '--unsafe-no-sandbox'], env }));
}, 60_000);

// (before the rig's teardown: the workers and the server still up)
afterAll(async () => {
  await Promise.all(dispatchers.map((dispatcher) => dispatcher.close()));
  repo?.cleanup();
});

/** One gate job of `agent` (its branch at `head`; one agent per job, so the two pushes to the remote do not race). */
async function gateOn(queue: string, agent: string, marker: string) {
  const dispatcher = await createRedisDispatcher({ url: redis.url, remote, queue, gates: 'workers', env: { ...process.env, ...gitEnv }, labelWaitMs: 10_000, pollMs: 200 });
  dispatchers.push(dispatcher);
  return dispatcher.runGateJob!({
    slug: 'gsb',
    wave: 1,
    agentId: agent,
    branch: branchOf(agent),
    head,
    repoRoot: repo.dir,
    gates: [{ type: 'test', command: `touch ${marker}`, required: true }],
    docsOnly: false,
  });
}

describe('gate jobs (and agent jobs) and a worker without the OS sandbox', () => {
  it('never reach a sandbox-less worker — it does not start (A21-05) — and run on one started with --unsafe-no-sandbox', async () => {
    // Before A21-05: it started (`ready:`), registered, and refused each job it took (the X2 #14 / A20-19 refusals).
    expect(offStart).toMatch(/did not start: [^]*error\[SANDBOX_UNAVAILABLE\]: worker gsb-off on [^]*disabled by POLYWAVE_SANDBOX=off[^]*does not start \(nothing registered\)[^]*--unsafe-no-sandbox/);
    expect(existsSync(path.join(scratch, 'worker-off'))).toBe(false);
    const refusedMarker = path.join(scratch, 'GATE-RAN-off');
    const unsafeMarker = path.join(scratch, 'GATE-RAN-unsafe');
    const [refused, unsafe] = await Promise.allSettled([gateOn('gsb-off', 'A', refusedMarker), gateOn('gsb-unsafe', 'B', unsafeMarker)]);
    expect(existsSync(refusedMarker), 'a sandbox-less worker ran the gate').toBe(false);
    expect(refused.status).toBe('rejected');
    const error = (refused as PromiseRejectedResult).reason as unknown;
    expect(PolywaveError.isInstance(error) && error.code).toBe('DISPATCH_NO_WORKER');
    // The opt-out (the same flag as for agent jobs): the same job runs, unsandboxed, on that worker.
    expect(unsafe.status, String((unsafe as PromiseRejectedResult).reason)).toBe('fulfilled');
    const ran = (unsafe as PromiseFulfilledResult<Awaited<ReturnType<typeof gateOn>>>).value;
    expect([ran.worker, ran.run.passed]).toEqual(['gsb-unsafe', true]);
    expect(existsSync(unsafeMarker)).toBe(true);

    // A20-19: a `script:` agent job (any job producer may send one) on the sandbox-less worker's queue: nobody runs it.
    const scriptJob: AgentJobData = {
      v: 2, polywave: '0.1.0',
      job_id: '',
      slug: 'gsb',
      wave: 1,
      agent: 'D',
      attempt: 1,
      role: 'wave',
      model: 'script:',
      script_text: 'version: 1\nsteps:\n  - write: { path: src/d.js, content: "x" }\n  - commit: "D"\n  - report: { status: complete, verification: PASS, notes: "ran" }\n',
      system_prompt: '',
      prompt: '',
      base_commit: head,
      branch: branchOf('D'),
      base_ref: 'refs/polywave/base/gsb/wave1',
      owned_files: ['src/d.js'],
      frozen_paths: [],
      limits: {},
      labels: [],
      remote,
      enqueued_at: Date.now(),
    };
    scriptJob.job_id = expectedJobId(scriptJob);
    const scriptAnswer = await produceJob(redis.port, scriptJob, scriptJob.job_id, 5_000, queueNameFor([], remoteKey(remote), 'gsb-off'));
    expect(scriptAnswer.value, 'the script job ran on a sandbox-less worker').toBeUndefined();
  }, 60_000);
});
