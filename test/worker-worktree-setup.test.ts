import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startRedis, startWorker, waveResult, type TestRedis, type TestWorker } from './dispatch-support.js';

// Outside round A20-26 (issue 17): a dispatched agent's job worktree got no worktree setup — a plain `git worktree add`
// on the worker, none of prepare-wave's `setup` command or defaults — so an IMPL whose agents need the project's
// installed dependencies passed in-process and failed distributed. The job now carries the setup (never a path on
// the orchestrator's disk) and the worker runs it, sandboxed, before the agent.
// Real parts: a redis-server on loopback, a real `polywave worker`, a `file://` remote, run-wave through the CLI.

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-worker-setup-'));
let redis: TestRedis;
const workers: TestWorker[] = [];

beforeAll(async () => {
  redis = await startRedis(path.join(scratch, 'redis'));
}, 60_000);

afterAll(async () => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  await redis?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('worktree setup on a worker (A20-26)', () => {
  it("runs the project's committed `setup` in the job's worktree before the agent: an agent that needs the installed dependency passes distributed as in-process", async () => {
    // The project's setup installs a dependency (node_modules is ignored, as `npm install` leaves it); A's check needs it.
    const setup = "mkdir -p node_modules/leftpad && printf 'module.exports = (s) => s;\\n' > node_modules/leftpad/index.js && echo \"port=$POLYWAVE_PORT agent=$POLYWAVE_AGENT\" > node_modules/leftpad/who";
    const script = lettersScript({ A: ['bash: "node -e \\"require(\'leftpad\')\\" && cat node_modules/leftpad/who"\n        expect: ok'] });
    const target = await createDispatchRepo('setupjob', script, { waves: [['A', 'B']], config: { setup } });
    target.repo.write('.gitignore', 'node_modules/\n');
    await target.repo.run(['add', '.gitignore']);
    await target.repo.run(['commit', '-qm', 'ignore node_modules']);
    await target.repo.run(['push', '--quiet', target.remoteDir, 'HEAD:refs/heads/main']);
    const worker = await startWorker({ id: 'setup1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-setup1') });
    workers.push(worker);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    const result = waveResult(run);
    // Before the fix: A failed — "Cannot find module 'leftpad'" in its worktree on the worker — and the wave BLOCKED.
    expect(result.success, JSON.stringify(result.blocked ?? result.agents.find((agent) => agent.agent === 'A'))).toBe(true);
    expect(result.agents.find((agent) => agent.agent === 'A')?.attempts.at(-1)?.dispatch?.worker).toBe('setup1');
    // The worker ran the setup for the job (with the agent's POLYWAVE_* variables), and nothing it made was committed.
    expect(worker.log()).toMatch(/job setupjob\.w1\.A\.\S+: worktree set up: setup mkdir -p node_modules\/leftpad/);
    expect(await target.repo.run(['ls-tree', '-r', '--name-only', 'HEAD'])).not.toContain('node_modules');
  }, 200_000);
});
