/**
 * Outside rounds A20-16, A21-08, A21-25 (issue 17), the regression tests of their fixes: a worker whose `--dir` disk is
 * full failed every job it took as `config: DISPATCH_REMOTE_UNREACHABLE` (E19 escalate: the wave BLOCKED while healthy
 * workers idled), and went on taking jobs (A20-16); the same disk filling while the agent ran failed the job `fatal:
 * ENOSPC` and left the worker registered (A21-08); a job whose base does not fit knocked every worker it reached out of
 * the pool for good — the failed fetch's temporary pack stayed on the disk (A21-25).
 * Now a disk error in a job (its setup or its agent's run) is judged by a probe write to `--dir` after the job's own
 * files (the failed fetch's leftovers, its worktree) are removed: the disk still full → the job goes back to the queue
 * for another worker, and this one takes no jobs (out of the registry) until a probe write works again; the disk fine
 * again → the job goes back without pausing the worker, and after 3 such hand-backs fails as its own
 * (DISPATCH_JOB_TOO_LARGE).
 *
 * Real parts: a redis-server on loopback, a `file://` remote, real `polywave worker` processes, run-wave through the
 * CLI, and a real full disk: the sick worker's `--dir` is an 8 MB tmpfs in a mount namespace of its own (`unshare`),
 * filled on the test's signal. Needs `npm run build`; skipped where such a mount is not possible.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, gitEnv, lettersScript, runWaveCli, smallDiskSupported, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

const supported = smallDiskSupported();
const { scratch, redis, workers } = useDispatchRig('pw-worker-disk-full-', { redis: supported });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const waitFor = async (test: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!test() && Date.now() < deadline) await sleep(50);
};
/** The command lines of `pid`'s descendants (A22-37: a handed-back job's tool-executor sandbox stayed under the worker). */
const descendants = (pid: number): string[] => {
  const children = new Map<number, number[]>();
  const lines = new Map<number, string>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
      lines.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' '));
    } catch {
      // gone meanwhile
    }
  }
  const found: string[] = [];
  const walk = (at: number) => {
    for (const child of children.get(at) ?? []) {
      found.push(lines.get(child) ?? '');
      walk(child);
    }
  };
  walk(pid);
  return found;
};
/** The markers that fill and empty a small disk (see dispatch-support's SmallDisk). */
const diskOf = (name: string) => ({ mb: 8, fill: path.join(scratch, `${name}.FILL`), unfill: path.join(scratch, `${name}.UNFILL`) });

describe.skipIf(!supported)('a worker whose --dir disk is full (A20-16, A21-08, A21-25)', () => {
  it('hands the job back and stops taking jobs; a healthy worker runs it and the wave completes (A20-16: the disk full at the setup)', async () => {
    const disk = diskOf('setup');
    const target = await createDispatchRepo('diskfull', lettersScript(), { waves: [['A', 'B']], config: { dispatch: { label_wait_seconds: 30 } } });
    const sickWorker = await startWorker({ id: 'sick', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-sick'), smallDisk: disk });
    workers.push(sickWorker);
    writeFileSync(disk.fill, '');
    await sleep(1000);
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 120_000 });
    // The sick worker takes a job first (it is the only one); then a healthy one starts.
    await waitFor(() => /job diskfull\.w1\.[AB]\.[^ ]+: agent [AB] /.test(sickWorker.log()), 30_000);
    await sleep(1500);
    workers.push(await startWorker({ id: 'healthy', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-healthy') }));
    const run = await running;
    const result = waveResult(run);
    // Before the fix: the sick worker's job failed `config: DISPATCH_REMOTE_UNREACHABLE` → escalate, BLOCKED.
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    expect(result.agents.map((agent) => [agent.agent, agent.status, agent.attempts.at(-1)?.dispatch?.worker])).toEqual([
      ['A', 'complete', 'healthy'],
      ['B', 'complete', 'healthy'],
    ]);
    expect(sickWorker.log()).toMatch(/worker sick: its --dir .* cannot be written \((No space left on device|ENOSPC)\); taking no jobs until it can/);
    expect(sickWorker.log()).toMatch(/job diskfull\.w1\.[AB]\.[^ ]+: handed back, this worker's disk failed its setup/);
    // Space again: the worker takes jobs again.
    writeFileSync(disk.unfill, '');
    await waitFor(() => sickWorker.log().includes('can be written again; taking jobs'), 20_000);
    expect(sickWorker.log()).toContain('worker sick: its --dir can be written again; taking jobs');
    sickWorker.child.kill('SIGKILL');
  }, 180_000);

  it('a disk that fills WHILE the agent runs: the job goes to a healthy worker, the sick one pauses (A21-08)', async () => {
    const disk = diskOf('run');
    // A writes, sleeps 4 s (the disk fills meanwhile), then writes again: ENOSPC in the agent's own write.
    const target = await createDispatchRepo('diskrun', lettersScript({ A: ['sleep_ms: 4000', 'write: { path: src/a.js, content: "export const a = 2;\\n" }'] }), { waves: [['A', 'B']], config: { dispatch: { labels: { A: ['df'] }, label_wait_seconds: 60 } } });
    const sickWorker = await startWorker({ id: 'sick2', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-sick2'), labels: ['df'], smallDisk: disk });
    workers.push(sickWorker);
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    await waitFor(() => /job diskrun\.w1\.A\.[^ ]+: agent A /.test(sickWorker.log()), 60_000);
    // (its setup done, its agent in the 4 s sleep)
    await sleep(2000);
    writeFileSync(disk.fill, '');
    workers.push(await startWorker({ id: 'healthy2', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-healthy2'), labels: ['df'] }));
    const run = await running;
    const result = waveResult(run);
    // Before the fix: A's attempt failed `fatal: ENOSPC: no space left on device, write` (not retried) → BLOCKED.
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    expect(result.agents.map((agent) => [agent.agent, agent.status, agent.attempts.at(-1)?.dispatch?.worker]).find(([agent]) => agent === 'A')).toEqual(['A', 'complete', 'healthy2']);
    expect(sickWorker.log()).toMatch(/job diskrun\.w1\.A\.[^ ]+: handed back, this worker's disk failed while its agent ran \(ENOSPC/);
    expect(sickWorker.log()).toMatch(/worker sick2: its --dir .* cannot be written \(ENOSPC\); taking no jobs until it can/);
    // A22-37: the handed-back job's tool executor (bwrap and its node helper) is gone, the worker still running.
    await waitFor(() => !descendants(sickWorker.child.pid!).some((line) => line.includes('bwrap')), 5000);
    expect(descendants(sickWorker.child.pid!).filter((line) => line.includes('bwrap'))).toEqual([]);
    writeFileSync(disk.unfill, '');
    await waitFor(() => sickWorker.log().includes('can be written again; taking jobs'), 20_000);
    expect(sickWorker.log()).toContain('worker sick2: its --dir can be written again; taking jobs');
    sickWorker.child.kill('SIGKILL');
  }, 200_000);

  // A22-09: the worker's TEMP directory (every agent's scratch HOME/TMPDIR, the sandbox host) full, its --dir fine:
  // each job failed as its agent's (escalate: `the tool executor did not start in time`), the worker stayed in the pool.
  it('a full temp directory: the job goes to a healthy worker, the sick one pauses (A22-09)', async () => {
    const tmp = path.join(scratch, 'tmp-sick3');
    const disk = { ...diskOf('tmp'), at: tmp };
    const target = await createDispatchRepo('disktmp', lettersScript(), { waves: [['A', 'B']], config: { dispatch: { labels: { A: ['tx'] }, label_wait_seconds: 60 } } });
    const sickWorker = await startWorker({ id: 'sick3', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-sick3'), labels: ['tx'], smallDisk: disk, env: { TMPDIR: tmp } });
    workers.push(sickWorker);
    writeFileSync(disk.fill, '');
    await sleep(1000);
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 180_000 });
    // (B needs no label: the sick worker may take either first)
    await waitFor(() => /job disktmp\.w1\.[AB]\.[^ ]+: agent [AB] /.test(sickWorker.log()), 60_000);
    workers.push(await startWorker({ id: 'healthy3', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-healthy3'), labels: ['tx'] }));
    const run = await running;
    const result = waveResult(run);
    // Before the fix: A's attempt failed `escalate: … the tool executor did not start in time` → BLOCKED.
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500)) + sickWorker.log().slice(-1500)).toBe(true);
    expect(result.agents.map((agent) => [agent.agent, agent.status, agent.attempts.at(-1)?.dispatch?.worker]).find(([agent]) => agent === 'A')).toEqual(['A', 'complete', 'healthy3']);
    expect(sickWorker.log()).toMatch(/job disktmp\.w1\.[AB]\.[^ ]+: handed back, this worker's disk failed (while its agent ran|its setup) \([^)]* in the temp directory /);
    expect(sickWorker.log()).toMatch(/worker sick3: its temp directory cannot be written/);
    writeFileSync(disk.unfill, '');
    await waitFor(() => sickWorker.log().includes('can be written again; taking jobs'), 20_000);
    expect(sickWorker.log()).toContain('worker sick3: its temp directory can be written again; taking jobs');
    sickWorker.child.kill('SIGKILL');
  }, 240_000);

  // A22-10: an agent whose own writes fill --dir — the ENOSPC thrown out of runAgent itself (its journal's flush), not a
  // failed outcome: the job failed with the raw `ENOSPC … write` (escalate), no hand-back, nothing in the worker's log.
  it('an agent that writes more than the disk holds: handed back and counted, then DISPATCH_JOB_TOO_LARGE (A22-10)', async () => {
    const target = await createDispatchRepo('diskown', lettersScript({ A: ['bash: "head -c 9000000 /dev/urandom | base64 > src/a.js; true"'] }), { waves: [['A', 'B']], config: { dispatch: { labels: { A: ['lg'] }, label_wait_seconds: 20 } } });
    const small = await startWorker({ id: 'small4', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-small4'), labels: ['lg'], smallDisk: diskOf('own') });
    workers.push(small);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 200_000 });
    const result = waveResult(run);
    expect(result.success).toBe(false);
    const explanation = JSON.stringify(result.blocked ?? run.stderr.slice(-1500));
    expect(explanation + small.log().slice(-2000)).toContain('DISPATCH_JOB_TOO_LARGE');
    expect(explanation).toContain('here its worktree filled the disk');
    expect(small.log()).toMatch(/handed back, a disk error \([^)]*\) while its agent ran, but this worker's --dir takes writes once the job's files are gone \(1 of 3/);
    expect(small.log()).not.toContain('cannot be written');
    small.child.kill('SIGKILL');
  }, 300_000);

  it('a job whose base does not fit: its fetch leftovers go, the worker stays in the pool, the job fails coded after 3 runs (A21-25)', async () => {
    const target = await createDispatchRepo('diskbig', lettersScript(), { waves: [['A', 'B']], config: { dispatch: { labels: { A: ['sm'] }, label_wait_seconds: 20 } } });
    // A 12 MB base (random: it does not compress) for an 8 MB disk.
    execFileSync('sh', ['-c', 'head -c 12000000 /dev/urandom > big.bin && git add big.bin && git commit -qm big'], { cwd: target.repo.dir, env: { ...process.env, ...gitEnv } });
    const disk = diskOf('big');
    const small = await startWorker({ id: 'small', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-small'), labels: ['sm'], smallDisk: disk });
    workers.push(small);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    const result = waveResult(run);
    expect(result.success).toBe(false);
    const explanation = JSON.stringify(result.blocked ?? run.stderr.slice(-1500));
    // Before the fix: the worker paused for good (the failed fetch's tmp pack kept its disk full) and the run said
    // `DISPATCH_NO_WORKER: no live worker has the label(s) sm any more`.
    expect(explanation).toContain('DISPATCH_JOB_TOO_LARGE');
    expect(explanation).toMatch(/its base's fetch had written \d+\.\d MB when the disk filled/);
    expect(explanation).not.toContain('DISPATCH_NO_WORKER');
    expect(small.log()).toMatch(/handed back, a disk error \([^)]*\) in its setup, but this worker's --dir takes writes once the job's files are gone; removed the \d+\.\d MB a failed fetch left in the clone \(1 of 3/);
    expect(small.log()).not.toContain('cannot be written');
    // Still in the pool: it runs the next job (B's wave of another project needs no big base: the same worker, a small job).
    const other = await createDispatchRepo('disksmall', lettersScript(), { waves: [['A', 'B']], config: { dispatch: { labels: { A: ['sm'] }, label_wait_seconds: 20 } } });
    const next = await runWaveCli({ ...other, remote: target.remote }, 1, { redisUrl: redis.url, timeoutMs: 120_000 });
    expect(waveResult(next).success, next.stderr.slice(-1500)).toBe(true);
  }, 240_000);
});
