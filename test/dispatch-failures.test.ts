import { copyFileSync, chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { listWorkers } from '../src/dispatch/registry.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { runCli, repoRoot } from './support/cli.js';
import { createDispatchRepo, freePort, gitEnv, lettersScript, runWaveCli, startRedis, startWorker, waveResult, workersRoot, type TestRedis, type TestWorker } from './dispatch-support.js';

// Issue 17 "What it must show" 2 and 3 on a real redis-server and real worker processes: a worker
// SIGKILLed mid-agent, a job pushing a branch it does not own, a job for a label nobody has, the
// server-side ref guard, Redis unreachable at start and stopped mid-run.

let redis: TestRedis;
const workers: TestWorker[] = [];
const redisDir = mkdtempSync(path.join(os.tmpdir(), 'pw-redis-'));

beforeAll(async () => {
  redis = await startRedis(redisDir);
});
afterAll(async () => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  await redis?.stop();
  rmSync(redisDir, { recursive: true, force: true });
});

async function spawnWorkers(target: { repo: Parameters<typeof workersRoot>[0]; remote: string }, ids: string[], labels: string[] = []): Promise<TestWorker[]> {
  const started = await Promise.all(ids.map((id) => startWorker({ id, redisUrl: redis.url, remote: target.remote, dir: workersRoot(target.repo, id), labels })));
  workers.push(...started);
  return started;
}

async function stopWorkers(list: TestWorker[]): Promise<void> {
  for (const worker of list) worker.child.kill('SIGKILL');
  await Promise.all(list.map((worker) => worker.exited));
}

/** Which live worker runs a job of `agent` right now (polled through `polywave workers --json`). */
async function workerRunning(agent: string, deadlineMs: number, url = redis.url): Promise<string> {
  const client = new Redis(url);
  try {
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline) {
      const found = (await listWorkers(client)).find((worker) => worker.current.some((job) => agent === '' || job.includes(`.${agent}.`)));
      if (found) return found.id;
      await sleep(50);
    }
  } finally {
    client.disconnect();
  }
  throw new Error(`no worker ran ${agent}`);
}

describe('dispatch failures', () => {
  it('a worker SIGKILLed mid-agent: the job is retried on another worker; one report and one merge per agent', async () => {
    const target = await createDispatchRepo('killed', lettersScript({ C: ['sleep_ms: 4000'] }));
    const pool = await spawnWorkers(target, ['k1', 'k2', 'k3']);
    const before = await target.repo.git.headCommit();
    const running = runWaveCli(target, 1, { redisUrl: redis.url });
    const victim = await workerRunning('C', 45_000);
    pool.find((worker) => worker.id === victim)!.child.kill('SIGKILL');
    const run = await running;
    const result = waveResult(run);
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    const agentC = result.agents.find((agent) => agent.agent === 'C')!;
    expect(agentC.status).toBe('complete');
    // One attempt of run-wave; BullMQ's stalled-job recovery moved it (an E19 transient failure, counted).
    expect(agentC.attempts).toHaveLength(1);
    expect(agentC.attempts[0]!.dispatch!.stalls).toBeGreaterThanOrEqual(1);
    expect(agentC.attempts[0]!.dispatch!.worker).not.toBe(victim);
    const merges = (await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n').filter(Boolean);
    expect(merges).toHaveLength(4);
    expect(merges.filter((subject) => subject.includes('agent-C'))).toHaveLength(1);
    const manifest = parseImpl(readFileSync(target.implPath, 'utf8')).manifest!;
    expect(Object.keys(manifest.completion_reports ?? {}).sort()).toEqual(['A', 'B', 'C', 'D']);
    // The report's commit is the one merged, and is what the remote holds for C.
    const reported = String(manifest.completion_reports?.C?.commit);
    expect((await target.repo.run(['ls-remote', target.remote, 'refs/heads/polywave/killed/wave1-agent-C'])).split('\t')[0]).toBe(reported);
    expect(await target.repo.git.isAncestor(reported, 'HEAD')).toBe(true);
    await stopWorkers(pool);
  }, 60_000);

  it('refuses a job whose branch is not its agent branch (DISPATCH_REF_REFUSED), and the remote guard refuses foreign refs', async () => {
    const target = await createDispatchRepo('guarded', lettersScript());
    const hook = path.join(target.remoteDir, 'hooks', 'update');
    copyFileSync(path.join(repoRoot, 'scripts', 'remote-guard-hook'), hook);
    chmodSync(hook, 0o755);
    const pool = await spawnWorkers(target, ['g1']);
    const base = await target.repo.git.headCommit();
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/polywave/base/guarded/wave1`]);
    const connection = { host: '127.0.0.1', port: redis.port };
    const queue = new Queue('polywave-agents', { connection });
    const events = new QueueEvents('polywave-agents', { connection });
    await events.waitUntilReady();
    try {
      const job = await queue.add('agent', { v: 1, job_id: 'guarded.w1.A.x.a1', slug: 'guarded', wave: 1, agent: 'A', attempt: 1, role: 'wave', model: 'script:', script_text: lettersScript(), system_prompt: '', prompt: '', base_commit: base, branch: 'main', base_ref: 'refs/polywave/base/guarded/wave1', owned_files: ['src/a.js'], frozen_paths: [], limits: {}, labels: [], remote: target.remote, enqueued_at: Date.now() }, { jobId: 'guarded.w1.A.x.a1' });
      await expect(job.waitUntilFinished(events, 20_000)).rejects.toThrow(/^DISPATCH_REF_REFUSED: refusing to push "main": a job of agent A \(wave 1 of guarded\) may only push polywave\/guarded\/wave1-agent-A$/);
    } finally {
      await queue.close();
      await events.close();
    }
    // Nothing reached the remote's main.
    expect((await target.repo.run(['ls-remote', target.remote, 'refs/heads/main'])).split('\t')[0]).toBe(base);
    // Server side: the update hook refuses anything but agent branches and bases.
    target.repo.write('x.txt', 'x\n');
    const commit = await target.repo.commitAll('foreign');
    const refused = await target.repo.git.run(['push', target.remote, `${commit}:refs/heads/main`], { allowExitCodes: [1] });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('POLYWAVE_REF_REFUSED: refs/heads/main is not an agent branch');
    const accepted = await target.repo.git.run(['push', target.remote, `${commit}:refs/heads/polywave/guarded/wave1-agent-A`]);
    expect(accepted.exitCode).toBe(0);
    await stopWorkers(pool);
  }, 60_000);

  it('a job for a label no worker has fails with DISPATCH_NO_WORKER after the bounded wait; nothing merged', async () => {
    const target = await createDispatchRepo('labels', lettersScript());
    writeFileSync(target.repo.path('polywave.config.json'), JSON.stringify({ repos: [{ name: 'repo', path: '.' }], dispatch: { labels: { B: ['gpu'] }, label_wait_seconds: 1 } }));
    await target.repo.commitAll('config');
    await target.repo.run(['push', '--quiet', '--force', target.remote, 'HEAD:refs/heads/main']);
    const pool = await spawnWorkers(target, ['l1', 'l2'], ['macos']);
    const before = await target.repo.git.headCommit();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url });
    expect(run.code).toBe(1);
    const result = waveResult(run);
    expect(result.state).toBe('BLOCKED');
    const blockedB = result.blocked!.agents.find((agent) => agent.agent === 'B')!;
    expect(blockedB.explanation).toContain('DISPATCH_NO_WORKER: no live worker has the label(s) gpu (waited 1 s)');
    for (const id of ['A', 'C', 'D']) expect(result.agents.find((agent) => agent.agent === id)!.status, JSON.stringify(result.blocked)).toBe('complete');
    // E7: nothing merged (prepare-wave's state commit is the only new commit).
    expect(await target.repo.run(['rev-list', '--merges', `${before}..HEAD`])).toBe('');
    await stopWorkers(pool);
  }, 60_000);

  it('Redis unreachable at start: one coded line, exit 2, nothing changed', async () => {
    const target = await createDispatchRepo('nores', lettersScript());
    const deadUrl = `redis://127.0.0.1:${await freePort()}`;
    const before = readFileSync(target.implPath, 'utf8');
    const run = await runWaveCli(target, 1, { redisUrl: deadUrl });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^polywave: error\[DISPATCH_REDIS_UNREACHABLE\]: Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable \(.*\); nothing was started\n$/);
    expect(readFileSync(target.implPath, 'utf8')).toBe(before);
    expect(await target.repo.git.listBranches('polywave/')).toEqual([]);
    const worker = await runCli(['worker', '--redis', deadUrl, '--remote', target.remote, '--dir', workersRoot(target.repo, 'x')]);
    expect(worker.code).toBe(2);
    expect(worker.stderr).toMatch(/^polywave: error\[DISPATCH_REDIS_UNREACHABLE\]/);
    const badRemote = await runCli(['worker', '--redis', redis.url, '--remote', 'file:///nonexistent/remote.git', '--dir', workersRoot(target.repo, 'y')]);
    expect(badRemote.code).toBe(2);
    expect(badRemote.stderr).toMatch(/^polywave: error\[DISPATCH_REMOTE_UNREACHABLE\]: cannot clone the shared remote file:\/\/\/nonexistent\/remote\.git: /);
  }, 60_000);

  it('Redis stopped mid-run: the attempts fail as DISPATCH_REDIS_LOST, the wave is BLOCKED with the manifest intact; after Redis returns a re-run completes', async () => {
    const own = await startRedis(mkdtempSync(path.join(os.tmpdir(), 'pw-redis-')));
    const target = await createDispatchRepo('outage', lettersScript({ A: ['sleep_ms: 1500'], B: ['sleep_ms: 1500'], C: ['sleep_ms: 1500'], D: ['sleep_ms: 1500'] }));
    writeFileSync(target.repo.path('polywave.config.json'), JSON.stringify({ repos: [{ name: 'repo', path: '.' }], dispatch: { outage_seconds: 1 } }));
    await target.repo.commitAll('config');
    await target.repo.run(['push', '--quiet', '--force', target.remote, 'HEAD:refs/heads/main']);
    const pool = await Promise.all(['o1', 'o2'].map((id) => startWorker({ id, redisUrl: own.url, remote: target.remote, dir: workersRoot(target.repo, id) })));
    workers.push(...pool);
    const before = await target.repo.git.headCommit();
    const running = runWaveCli(target, 1, { redisUrl: own.url, timeoutMs: 50_000 });
    await workerRunning('', 20_000, own.url);
    await own.stop();
    const run = await running;
    expect(run.code).toBe(1);
    const result = waveResult(run);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked!.agents.some((agent) => agent.explanation.includes('DISPATCH_REDIS_LOST'))).toBe(true);
    expect(await target.repo.run(['rev-list', '--merges', `${before}..HEAD`])).toBe('');
    expect(parseImpl(readFileSync(target.implPath, 'utf8')).manifest!.state).toBe('BLOCKED');
    // Redis is back (empty: no persistence): `retry` relaunches the agents of the BLOCKED wave and completes it (E7/E19).
    await own.restart();
    const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', own.url, '--dispatch-remote', target.remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 50_000 });
    const line = again.stdout.split('\n').find((entry) => entry.includes('"retry-result"'));
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    expect((JSON.parse(line!) as { result: { final_state: string } }).result.final_state).toBe('passed');
    expect((await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n').filter(Boolean)).toHaveLength(4);
    await stopWorkers(pool);
    await own.stop();
  }, 90_000);
});
