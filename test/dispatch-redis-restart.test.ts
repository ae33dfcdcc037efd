/**
 * Outside round A24-04 (issue 17): a Redis without persistence, restarted (empty) mid-wave. The orchestrator adds the
 * vanished jobs again (F4) and a worker runs them anew — but the run counter (`polywave:run:<queue>:<job id>`) restarted
 * at 1, the orchestrator remembered the lost run (#1 as well) and refused the honest re-run's result as
 * `fatal: DISPATCH_REPLAYED`: the wave BLOCKED (3/3 in a24). Now its own add of the job again ends the remembered run (its
 * messages ignored) and the runs to come are numbered anew: the new run takes the job. Real parts: a redis-server
 * SIGKILLed and started again on the same port, real `polywave worker` processes, run-wave through the CLI.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startRedis, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// (each test starts a redis-server of its own)
const { scratch, workers } = useDispatchRig('pw-redis-restart-', { redis: false });

describe('a non-persistent Redis restarted mid-wave (A24-04)', () => {
  it('the jobs run again and their results are taken (no DISPATCH_REPLAYED): WAVE_VERIFIED, one merge per agent', async () => {
    const redis = await startRedis(path.join(scratch, 'redis'));
    try {
      const target = await createDispatchRepo('rrestart', lettersScript({ A: ['sleep_ms: 6000'], B: ['sleep_ms: 6000'] }), { waves: [['A', 'B']] });
      for (const id of ['rr1', 'rr2', 'rr3']) workers.push(await startWorker({ id, redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, `worker-${id}`) }));
      const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
      const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 240_000 });
      // Both agents running on workers, then Redis dies (SIGKILL, nothing saved) and comes back empty 3 s later.
      const deadline = Date.now() + 120_000;
      const started = () => ['A', 'B'].every((agent) => workers.some((worker) => worker.log().includes(`agent ${agent} of`)));
      while (!started() && Date.now() < deadline) await sleep(100);
      expect(started(), workers.map((worker) => worker.log()).join('\n')).toBe(true);
      await sleep(1000);
      await redis.stop();
      await sleep(3000);
      await redis.restart();
      const run = await running;
      const result = waveResult(run);
      // Before the fix: exit 1, BLOCKED — `fatal: DISPATCH_REPLAYED: … comes from run rrX:… (#1), not the run rrY:… (#1)`.
      expect(run.stderr + run.stdout).not.toContain('DISPATCH_REPLAYED');
      expect(result.success, JSON.stringify(result.blocked ?? result.agents)).toBe(true);
      const merged = (await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n').filter(Boolean);
      expect(merged.filter((subject) => subject.includes('wave1-agent-A'))).toHaveLength(1);
      expect(merged.filter((subject) => subject.includes('wave1-agent-B'))).toHaveLength(1);
    } finally {
      await redis.stop();
    }
  }, 300_000);
});
