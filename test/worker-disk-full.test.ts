/**
 * Outside round A20-16 (issue 17), the regression test of its fix: a worker whose `--dir` disk is full failed every job
 * it took as `config: DISPATCH_REMOTE_UNREACHABLE` (E19 escalate: the wave BLOCKED while healthy workers idled), and
 * went on taking jobs. Now a job whose setup fails on the worker's own disk goes back to the queue for another worker,
 * and that worker takes no jobs (out of the registry) until a probe write to its `--dir` works again.
 *
 * Real parts: a redis-server on loopback, a `file://` remote, real `polywave worker` processes, run-wave through the
 * CLI. The full disk is a `git` on the sick worker's PATH that fails `fetch` and `worktree add` with git's ENOSPC words while a marker
 * file exists (a full filesystem needs root to mount). Needs `npm run build`.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startRedis, startWorker, waveResult, type TestRedis, type TestWorker } from './dispatch-support.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-worker-disk-full-'));
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

describe('a worker whose --dir disk is full (A20-16)', () => {
  it('hands the job back and stops taking jobs; a healthy worker runs it and the wave completes', async () => {
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    const bin = path.join(scratch, 'bin');
    const full = path.join(scratch, 'DISK-FULL');
    mkdirSync(bin, { recursive: true });
    // (the fetch of a base the clone lacks, and the job's `worktree add`: each writes to the --dir)
    writeFileSync(path.join(bin, 'git'), `#!/bin/sh\nif [ -e ${full} ]; then case " $* " in *" fetch "*|*" worktree add "*) echo "fatal: unable to write loose object file: No space left on device" >&2; exit 128;; esac; fi\nexec ${realGit} "$@"\n`);
    chmodSync(path.join(bin, 'git'), 0o755);
    const target = await createDispatchRepo('diskfull', lettersScript(), { waves: [['A', 'B']], config: { dispatch: { label_wait_seconds: 30 } } });
    const sickWorker = await startWorker({ id: 'sick', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-sick'), env: { PATH: `${bin}:${process.env.PATH ?? ''}` } });
    workers.push(sickWorker);
    writeFileSync(full, '');
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 120_000 });
    // The sick worker takes a job first (it is the only one); then a healthy one starts.
    const deadline = Date.now() + 30_000;
    while (!/job diskfull\.w1\.[AB]\.[^ ]+: agent [AB] /.test(sickWorker.log()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    workers.push(await startWorker({ id: 'healthy', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-healthy') }));
    const run = await running;
    const result = waveResult(run);
    // Before the fix: the sick worker's job failed `config: DISPATCH_REMOTE_UNREACHABLE` → escalate, BLOCKED.
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    expect(result.agents.map((agent) => [agent.agent, agent.status, agent.attempts.at(-1)?.dispatch?.worker])).toEqual([
      ['A', 'complete', 'healthy'],
      ['B', 'complete', 'healthy'],
    ]);
    expect(sickWorker.log()).toMatch(/worker sick: its --dir .* cannot be written \(No space left on device\); taking no jobs until it can/);
    expect(sickWorker.log()).toMatch(/job diskfull\.w1\.[AB]\.[^ ]+: handed back, this worker's disk failed its setup/);
    // Space again: the worker takes jobs again.
    rmSync(full, { force: true });
    const back = Date.now() + 20_000;
    while (!sickWorker.log().includes('can be written again; taking jobs') && Date.now() < back) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sickWorker.log()).toContain('worker sick: its --dir can be written again; taking jobs');
  }, 180_000);
});
