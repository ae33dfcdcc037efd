import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// Issue 17 (enqueue → agent start): a burst of 4 jobs on ONE worker with 4 slots — their F12 leases
// read by one shared `ls-remote` — still runs every agent to its own pushed branch, and each attempt's
// dispatch record carries the worker's start step by step and the split of the result's arrival.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-start-');

describe('dispatch start (issue 17)', () => {
  it('a burst on one worker: every agent completes on its own branch; the start steps and the arrival split are recorded', async () => {
    const agents = ['A', 'B', 'C', 'D'];
    const target = await createDispatchRepo('burst', lettersScript(), { waves: [agents] });
    const worker = await startWorker({ id: 'solo', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-solo'), extra: ['--concurrency', String(agents.length)] });
    workers.push(worker);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 100_000 });
    const result = waveResult(run);
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    expect(result.agents.map((agent) => agent.agent).sort()).toEqual(agents);
    const remoteBranches = await target.repo.run(['ls-remote', target.remote, 'refs/heads/polywave/*']);
    for (const agent of result.agents) {
      expect(agent.status).toBe('complete');
      const dispatch = agent.attempts.at(-1)!.dispatch as Record<string, unknown> & { worker_steps_ms?: Record<string, number>; fetch_to_start_ms?: number; finish_to_stream_ms?: number; finish_to_received_ms?: number; loop_delay_ms?: number; job_id: string };
      expect(dispatch.worker).toBe('solo');
      // Every step from BullMQ's handing over to the agent's first event, none negative, in order.
      const steps = dispatch.worker_steps_ms!;
      expect(Object.keys(steps), JSON.stringify(steps)).toEqual(['active', 'processor', 'checked', 'admitted', 'clone_turn', 'base', 'cleaned', 'worktree', 'seeded', 'lease', 'first_event']);
      for (const value of Object.values(steps)) expect(value).toBeGreaterThanOrEqual(0);
      // The steps up to the start make up the processor part of enqueue → start exactly.
      expect(steps.active! + steps.processor! + steps.checked! + steps.admitted!).toBe(dispatch.fetch_to_start_ms);
      // The completion entered Redis's events stream after the worker finished and before it was read here.
      expect(dispatch.finish_to_stream_ms).toBeGreaterThanOrEqual(0);
      expect(dispatch.finish_to_stream_ms).toBeLessThanOrEqual(dispatch.finish_to_received_ms! + 1);
      expect(dispatch.loop_delay_ms).toBeGreaterThanOrEqual(0);
      // Its own branch, pushed with the lease its burst's one ls-remote read, holds the agent's commit that was merged here.
      const line = remoteBranches.split('\n').find((entry) => entry.endsWith(`\trefs/heads/polywave/burst/wave1-agent-${agent.agent}`));
      expect(line, remoteBranches).toBeDefined();
      const head = line!.split('\t')[0]!;
      expect(await target.repo.run(['log', '--format=%s', '-1', head])).toContain(`feat(${agent.agent}): letter ${agent.agent.toLowerCase()}`);
      expect((await target.repo.run(['merge-base', '--is-ancestor', head, 'HEAD']).then(() => 0, () => 1))).toBe(0);
    }
    expect(worker.log().match(/: finished \(report complete\)/g) ?? []).toHaveLength(agents.length);
  }, 150_000);
});
