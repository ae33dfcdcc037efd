/**
 * Outside round A25-07 (issue 17): a Redis WITH persistence (an RDB snapshot — Debian's redis-server saves by default)
 * restarted mid-wave comes back with its last snapshot: a job that was still waiting then is waiting again, and its run
 * counter (`polywave:run:<queue>:<job id>`) is as it was — not yet INCR'd for the run the orchestrator had placed. The job
 * is not gone, so the orchestrator did not add it again (A24-04's renumbering); the honest run after the restart was
 * numbered #1 again, its progress ignored and its result refused `fatal: DISPATCH_REPLAYED` — the wave BLOCKED. Now a
 * Redis restart since the run was placed (the server's run id, INFO) numbers the runs anew. Real parts: a redis-server
 * SAVEd, SIGKILLed and started again from its dump, real `polywave worker` processes, run-wave through the CLI.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { queueNameFor, remoteKey, runCounterKey } from '../src/dispatch/job.js';
import { createDispatchRepo, lettersScript, runWaveCli, startRedis, startWorker, waveResult, type TestWorker } from './dispatch-support.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-a25-snapshot-'));
const workers: TestWorker[] = [];

afterAll(() => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await what()) return true;
    await sleep(100);
  }
  return false;
}

describe('a Redis with persistence restarted mid-wave from an older snapshot (A25-07)', () => {
  it('the run after the restart, numbered as the placed one was, takes the job: WAVE_VERIFIED, one merge per agent, no DISPATCH_REPLAYED', async () => {
    const redis = await startRedis(path.join(scratch, 'redis'));
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    try {
      const target = await createDispatchRepo('rsnap', lettersScript({ A: ['sleep_ms: 9000'], B: ['sleep_ms: 9000'] }), { waves: [['A', 'B']] });
      const queue = queueNameFor([], remoteKey(target.remote));
      // One slot: one job runs, the other waits — and Redis is snapshotted then.
      workers.push(await startWorker({ id: 'rs1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-rs1'), extra: ['--concurrency', '1'] }));
      const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
      const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 240_000 });
      const oneWaits = await until(async () => (await client.llen(`bull:${queue}:wait`)) === 1 && (await client.llen(`bull:${queue}:active`)) === 1, 120_000);
      expect(oneWaits, workers[0]!.log()).toBe(true);
      const waiting = (await client.lrange(`bull:${queue}:wait`, 0, 0))[0]!;
      expect(await client.get(runCounterKey(queue, waiting))).toBeNull();
      await client.save();
      // A second worker takes the waiting job: its run #1, placed by the orchestrator.
      const second = await startWorker({ id: 'rs2', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-rs2'), extra: ['--concurrency', '1'] });
      workers.push(second);
      expect(await until(() => second.log().includes(`job ${waiting}: agent`), 60_000), second.log()).toBe(true);
      await sleep(2500);
      expect(await client.get(runCounterKey(queue, waiting))).toBe('1');
      // Redis dies and comes back from the snapshot: the job waits again, its counter unset.
      await redis.stop();
      await redis.restart();
      expect(await until(async () => (await client.lpos(`bull:${queue}:wait`, waiting).catch(() => null)) !== null, 10_000)).toBe(true);
      expect(await client.get(runCounterKey(queue, waiting))).toBeNull();
      // A free worker runs it (#1 again) and takes the stalled one.
      workers.push(await startWorker({ id: 'rs3', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-rs3'), extra: ['--concurrency', '2'] }));
      const run = await running;
      const result = waveResult(run);
      // Before the fix: exit 1, BLOCKED — `fatal: DISPATCH_REPLAYED: … comes from run rs3:… (#1), not the run rs2:… (#1) that has the job`.
      expect(run.stderr + run.stdout).not.toContain('DISPATCH_REPLAYED');
      expect(result.success, JSON.stringify(result.blocked ?? result.agents)).toBe(true);
      const merged = (await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n').filter(Boolean);
      expect(merged.filter((subject) => subject.includes('wave1-agent-A'))).toHaveLength(1);
      expect(merged.filter((subject) => subject.includes('wave1-agent-B'))).toHaveLength(1);
    } finally {
      client.disconnect();
      await redis.stop();
    }
  }, 300_000);
});
