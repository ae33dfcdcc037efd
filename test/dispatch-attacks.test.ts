import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedJobId, type AgentJobData, type AgentJobReturn } from '../src/dispatch/job.js';
import { createRedisDispatcher } from '../src/dispatch/redis-dispatcher.js';
import { assertRedisReachable } from '../src/dispatch/redis-url.js';
import { listWorkers, writeWorkerRecord } from '../src/dispatch/registry.js';
import { createDispatchRepo, gitEnv, produceJob, lettersScript, runWaveCli, startRedis, startWorker, waveResult, type DispatchRepo, type TestRedis, type TestWorker } from './dispatch-support.js';

// The attack on the scale-out feature (attack-dispatch.md F1–F5), replayed on real parts: a
// redis-server of this file, one bare `file://` remote, real `polywave worker` processes, jobs put
// on the queue with plain BullMQ (what anyone who can write to the Redis can do) and real run-waves.

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-dispatch-attacks-'));
const remoteDir = path.join(scratch, 'remote.git');
const workerSecret = 'sk-H5-worker-secret-4242';
let redis: TestRedis;
let main: TestWorker;
let rare: TestWorker;
let hostile: DispatchRepo;
let base: string;
// The repositories of the tests that run concurrently, made once for the file (a repository made inside a
// concurrent test could be removed when another one ends).
let redo: DispatchRepo;
let lost: DispatchRepo;

beforeAll(async () => {
  redis = await startRedis(path.join(scratch, 'redis'));
  const init = spawnSync('git', ['init', '--quiet', '--bare', '-b', 'main', remoteDir], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
  if (init.status !== 0) throw new Error(init.stderr);
  const remote = `file://${remoteDir}`;
  [hostile, redo, lost] = await Promise.all([
    createDispatchRepo('hostile', lettersScript(), { remoteDir, waves: [['A', 'B']] }),
    createDispatchRepo('redo', lettersScript(), { remoteDir, waves: [['A', 'B']] }),
    // A (1 s) is deleted from Redis while it runs: the dispatcher adds it again.
    createDispatchRepo('lost', lettersScript({ A: ['sleep_ms: 1000'] }), { remoteDir, waves: [['A', 'B']] }),
  ]);
  base = await hostile.repo.git.headCommit();
  await hostile.repo.run(['push', '--quiet', remote, `${base}:refs/polywave/base/hostile/wave1`]);
  [main, rare] = await Promise.all([
    startWorker({ id: 'h-main', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-main'), extra: ['--concurrency', '3', '--model-allow', 'openai-compatible:http://gateway.invalid/'], env: { OPENAI_API_KEY: workerSecret } }),
    startWorker({ id: 'h-rare', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-rare'), labels: ['rare'] }),
  ]);
}, 60_000);
afterAll(async () => {
  if (process.env.H5_DEBUG) console.log(main?.log(), rare?.log());
  for (const worker of [main, rare]) worker?.child.kill('SIGKILL');
  await redis?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** A schema-valid job of agent A of `hostile` (its id as the orchestrator would compute it, unless overridden). */
function job(overrides: Partial<AgentJobData> = {}): AgentJobData {
  const data: AgentJobData = {
    v: 1,
    job_id: '',
    slug: 'hostile',
    wave: 1,
    agent: 'A',
    attempt: 1,
    role: 'wave',
    model: 'script:',
    script_text: lettersScript(),
    system_prompt: '',
    prompt: '',
    base_commit: base,
    branch: 'polywave/hostile/wave1-agent-A',
    base_ref: 'refs/polywave/base/hostile/wave1',
    owned_files: ['src/a.js', 'src/a.test.js'],
    frozen_paths: [],
    limits: {},
    labels: [],
    remote: `file://${remoteDir}`,
    enqueued_at: Date.now(),
  };
  const merged = { ...data, ...overrides };
  if (overrides.job_id === undefined) merged.job_id = expectedJobId(merged);
  return merged;
}

/** Adds `data` under `bullId` (default its job_id) and waits for the worker's answer. */
async function produce(data: AgentJobData, bullId = data.job_id): Promise<{ value?: AgentJobReturn; error?: string }> {
  return (await produceJob(redis.port, data, bullId, 30_000)) as { value?: AgentJobReturn; error?: string };
}

/** The job whose id starts with `prefix` (`<slug>.w1.A.`) a live worker runs now, from the registry. */
async function runningJob(prefix: string, deadlineMs: number): Promise<{ worker: string; job: string }> {
  const client = new Redis(redis.url);
  try {
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline) {
      for (const worker of await listWorkers(client)) {
        const found = worker.current.find((id) => id.startsWith(prefix));
        if (found) return { worker: worker.id, job: found };
      }
      await sleep(50);
    }
  } finally {
    client.disconnect();
  }
  throw new Error(`no worker ran ${prefix}`);
}

describe('attacks on polywave worker and the Redis dispatcher (attack-dispatch.md)', () => {
  it('F10: a database Redis does not have is refused at the start check, never silently db 0', async () => {
    await expect(assertRedisReachable(`${redis.url}/99`)).rejects.toMatchObject({ code: 'DISPATCH_INVALID_URL', exitCode: 2, message: `${redis.url}/99: Redis refuses database 99 (ERR DB index is out of range); nothing was started` });
    await expect(assertRedisReachable(`${redis.url}/15`)).resolves.toBeUndefined();
  });

  // First and alone: it kills the only worker with the label (which also serves the unlabelled queue).
  it('F4: the only worker with a job’s label dies mid-job → DISPATCH_NO_WORKER within seconds, the job removed (no hang)', async () => {
    const target = await createDispatchRepo('rare', lettersScript({ A: ['sleep_ms: 30000'] }), { remoteDir, waves: [['A', 'B']], config: { dispatch: { labels: { A: ['rare'] }, label_wait_seconds: 1 } } });
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 80_000 });
    const { worker, job: jobId } = await runningJob('rare.w1.A.', 30_000);
    expect(worker).toBe('h-rare');
    rare.child.kill('SIGKILL');
    const killedAt = Date.now();
    const run = await running;
    const result = waveResult(run);
    expect(run.code).toBe(1);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked!.agents.map((agent) => agent.agent)).toEqual(['A']);
    expect(result.blocked!.agents[0]!.explanation).toContain(`DISPATCH_NO_WORKER: no live worker has the label(s) rare any more (waited 1 s); job ${jobId} was removed`);
    // Well before the agent's 30 s sleep would have ended (registry expiry ~6 s + label wait + poll).
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    const queue = new Queue('polywave-agents@rare', { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      expect(await Job.fromId(queue, jobId)).toBeUndefined();
    } finally {
      await queue.close();
    }
  }, 90_000);

  it.concurrent('F1: a job_id that is a path (or not the id its content implies) is refused before anything is touched', async ({ expect }) => {
    const victim = path.join(scratch, 'victim');
    mkdirSync(victim, { recursive: true });
    writeFileSync(path.join(victim, 'keep.txt'), 'precious\n');
    const valid = job();
    const answers = await Promise.all([
      produce(job({ job_id: '../../victim' })),
      produce(job({ job_id: '../../owned/evil', script_text: 'version: 1\nsteps:\n  - text: hi\n' })),
      // The right grammar, stored under another BullMQ id / with other content than the id names.
      produce(valid, `${valid.job_id.slice(0, -12)}000000000000`),
      produce(job({ job_id: valid.job_id, prompt: 'other content' })),
    ]);
    expect(answers.map((answer) => answer.error)).toEqual([
      'DISPATCH_INVALID_JOB: job_id "../../victim" is not a job id (<slug>.w<N>.<agent>.<base12>.a<attempt>.<digest12>)',
      'DISPATCH_INVALID_JOB: job_id "../../owned/evil" is not a job id (<slug>.w<N>.<agent>.<base12>.a<attempt>.<digest12>)',
      `DISPATCH_INVALID_JOB: job_id "${valid.job_id}" is not the id the job is stored under ("${valid.job_id.slice(0, -12)}000000000000")`,
      expect.stringMatching(new RegExp(`^DISPATCH_INVALID_JOB: job_id "${valid.job_id.replace(/\./g, '\\.')}" does not match the job's content \\(expected hostile\\.w1\\.A\\.[0-9a-f]{12}\\.a1\\.[0-9a-f]{12}\\)$`)),
    ]);
    expect(readFileSync(path.join(victim, 'keep.txt'), 'utf8')).toBe('precious\n');
    expect(existsSync(path.join(scratch, 'owned'))).toBe(false);
    expect(readdirSync(scratch).sort()).toEqual(expect.not.arrayContaining(['evil.yaml', 'owned']));
  }, 60_000);

  it.concurrent('F2: a job model that names its own endpoint never gets the worker’s key (refused unless --model-allow)', async ({ expect }) => {
    const requests: string[] = [];
    const server = http.createServer((request, response) => {
      requests.push(String(request.headers.authorization));
      response.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const answer = await produce(job({ model: `openai-compatible:http://127.0.0.1:${port}/v1#gpt`, script_text: undefined }));
      expect(answer.error).toBe(`DISPATCH_INVALID_JOB: model "openai-compatible:http://127.0.0.1:${port}/v1#gpt": names its own endpoint, which would receive this worker's credentials; start the worker with --model-allow <prefix> (e.g. --model-allow openai-compatible:http://gateway:4000/) to allow it`);
      const scriptPath = await produce(job({ model: 'script:/etc/passwd', script_text: undefined }));
      expect(scriptPath.error).toBe('DISPATCH_INVALID_JOB: model "script:/etc/passwd": a script job carries its script as text (script_text), never a path on the worker');
      expect(requests).toEqual([]);
      expect(main.log()).toContain('models also allowed: openai-compatible:http://gateway.invalid/');
    } finally {
      server.close();
    }
  }, 60_000);

  it.concurrent('F3: a job’s bash step does not see the worker’s model key (nothing to commit and push)', async ({ expect }) => {
    const script = ['version: 1', 'steps:', '  - bash: "printenv OPENAI_API_KEY > src/a.js; echo rc=$? >> src/a.js"', '  - commit: leak', '  - report: { status: complete, verification: PASS, notes: done }', ''].join('\n');
    const answer = await produce(job({ script_text: script }));
    expect(answer.error).toBeUndefined();
    expect(answer.value!.head).toMatch(/^[0-9a-f]{40}$/);
    const shown = spawnSync('git', ['--git-dir', remoteDir, 'show', `${answer.value!.head}:src/a.js`], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
    expect(shown.stdout).toBe('rc=1\n');
  }, 60_000);

  it.concurrent('F5: a redo of a wave with another script runs the new script (the old job’s result is not reused); F8: the remote’s credentials never reach Redis or the output', async ({ expect }) => {
    // F8: the orchestrator's remote carries a token (git takes userinfo in a file:// URL too).
    const target = { ...redo, remote: `file://x-access-token:ghp_H6SECRET@localhost${redo.remoteDir}` };
    const start = await target.repo.git.headCommit();
    const firstRun = await runWaveCli(target, 1, { redisUrl: redis.url });
    const first = waveResult(firstRun);
    expect(first.state).toBe('WAVE_VERIFIED');
    expect(`${firstRun.stdout}${firstRun.stderr}`).not.toContain('ghp_H6SECRET');
    const client = new Redis(redis.url);
    try {
      const stored = JSON.parse((await client.hget(`bull:polywave-agents:${first.agents[0]!.attempts[0]!.dispatch!.job_id}`, 'data'))!) as AgentJobData;
      expect(stored.remote).toBe(`file://localhost${redo.remoteDir}`);
    } finally {
      client.disconnect();
    }
    expect(target.repo.read('src/a.js')).toBe("export const a = 'a';\n");
    // Put the repository back and redo the wave with a script that writes something else.
    const worktrees = (await target.repo.run(['worktree', 'list', '--porcelain'])).split('\n').filter((line) => line.startsWith('worktree '));
    // (the first is the main checkout)
    for (const line of worktrees.slice(1)) await target.repo.run(['worktree', 'remove', '--force', line.slice('worktree '.length)]);
    await target.repo.run(['reset', '--quiet', '--hard', start]);
    for (const branch of await target.repo.git.listBranches('polywave/')) await target.repo.run(['branch', '-D', branch.name]);
    writeFileSync(target.scriptPath, lettersScript().replace("export const a = 'a'", "export const a = 'REDO-a'"));
    const second = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url }));
    expect(second.state).toBe('WAVE_VERIFIED');
    expect(target.repo.read('src/a.js')).toBe("export const a = 'REDO-a';\n");
    const ids = [first, second].map((result) => result.agents.find((agent) => agent.agent === 'A')!.attempts[0]!.dispatch!.job_id);
    expect(ids[0]!.slice(0, -13)).toBe(ids[1]!.slice(0, -13));
    expect(ids[0]).not.toBe(ids[1]);
  }, 90_000);

  it.concurrent('F4: a running job deleted from Redis (lost with a non-persistent Redis, a hostile DEL) is added again and the wave completes', async ({ expect }) => {
    const target = lost;
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 60_000 });
    const { job: jobId } = await runningJob('lost.w1.A.', 30_000);
    const client = new Redis(redis.url);
    try {
      expect(await client.del(`bull:polywave-agents:${jobId}`)).toBe(1);
      await client.lrem('bull:polywave-agents:active', 0, jobId);
    } finally {
      client.disconnect();
    }
    const run = await running;
    const result = waveResult(run);
    expect(result.state, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe('WAVE_VERIFIED');
    const agentA = result.agents.find((agent) => agent.agent === 'A')!;
    expect(agentA.attempts).toHaveLength(1);
    expect(agentA.attempts[0]!.dispatch!.job_id).toBe(jobId);
    expect(target.repo.read('src/a.js')).toBe("export const a = 'a';\n");
    // It ran twice on the worker (one after the other): the lost copy, then the one added again.
    expect(main.log().split('\n').filter((line) => line.includes(`job ${jobId}: agent A`))).toHaveLength(2);
  }, 90_000);

  it.concurrent('F4: a job that runs past the agent’s limit + the margin on a live worker that never answers fails as a timeout (no hang)', async ({ expect }) => {
    // A "worker" that takes jobs of its label and never finishes them (BullMQ keeps renewing the lock) and a live registry record.
    const connection = { host: '127.0.0.1', port: redis.port };
    const hung = new Worker('polywave-agents@hung', () => new Promise(() => undefined), { connection, lockDuration: 2000 });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-hung', host: 'test', pid: 1, labels: ['hung'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '' }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-B';
    const worktree = hostile.repo.sibling('wt-hung-B');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base: base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote: `file://${remoteDir}`, cwd: scratch, env, labels: { B: ['hung'] }, pollMs: 200, runMarginMs: 1000 });
    try {
      const started = Date.now();
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'B', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'p', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/b.js'], branch }, limits: { timeoutMs: 1000 }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'B', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.status).toBe('timeout');
      expect(result.outcome.failure).toEqual({ kind: 'transient', message: `job ${result.dispatch!.job_id} ran for more than 2 s on a worker (the agent's limit + 1 s) without a result` });
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await dispatcher.close();
      await hung.close(true);
      client.disconnect();
    }
  }, 60_000);
});
