import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// Outside round A20-44 (issue 17): gate jobs on workers (`dispatch.gates: "workers"`) ran with the DEFAULT sandbox
// settings — the worker's checkout is a worktree of a bare clone, and the gates' settings came only from a main
// checkout — so a gate that needs a host the project's committed `sandbox.network.allow` lists passed in finalize-wave
// and failed on a worker. A worker now pins a gate job's checkout to the wave's base commit (as finalize-wave pins its
// local gates' settings) and applies the project's settings there, confined as for agent jobs (A20-45).
// Real parts: a redis-server on loopback, a real sandboxed `polywave worker`, a `file://` remote, run-wave through the CLI.

const { scratch, redis, workers } = useDispatchRig('pw-worker-gate-settings-');

describe("gate jobs on a worker get the project's committed sandbox settings (A20-44)", () => {
  it('a gate that needs the network the project allows passes on a worker as it does locally (its sandbox has the proxy to the allowed host)', async () => {
    // The gate checks that its sandbox has a way out to the allowed host (the sandbox's proxy): with the defaults it has none.
    const target = await createDispatchRepo('gatenet', lettersScript(), {
      waves: [['A', 'B']],
      gates: ['test -n "$HTTP_PROXY$HTTPS_PROXY"'],
      config: { dispatch: { gates: 'workers' }, sandbox: { network: { allow: ['registry.example.invalid'] } } },
    });
    workers.push(await startWorker({ id: 'gnet1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-gnet1') }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    const result = waveResult(run);
    // Before the fix: BLOCKED — "test gate … exited 1 in a checkout of polywave/gatenet/wave1-agent-A on worker gnet1", nothing merged.
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    expect(run.stdout).toMatch(/pre-merge gate run\(s\) passed in 2 agent checkout\(s\) on workers \(gnet1\)/);
    expect((await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n').filter(Boolean)).toHaveLength(2);
  }, 200_000);
});
