import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueNameFor, remoteKey } from '../src/dispatch/job.js';
import { listWorkers } from '../src/dispatch/registry.js';
import { journalPaths } from '../src/engine/journal.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { worktreePath } from '../src/protocol/names.js';
import { runProgramDemo } from '../src/demo/run-program-demo.js';
import { repoRoot, runCli } from './support/cli.js';
import { createDispatchRepo, createGuardedRemote, produceJob, freePort, gitEnv, lettersScript, mergeOrder, runWaveCli, startWorker, treeWithoutManifest, waveAgents, waveResult, useDispatchRig, type DispatchRepo, type TestWorker } from './dispatch-support.js';

// Issue 17 "What it must show" 1–3 on real parts: Debian's redis-server on a free loopback port,
// one `file://` bare remote guarded by scripts/remote-guard-hook (every IMPL of this file meets
// there under its own slug), and 3 real `polywave worker` processes with separate clones.
// One Redis and one worker pool for the whole file keep it inside its time budget.

// (`pool`: the workers the file's tests share — teamB, on a queue of its own, is not one of them)
const { scratch, redis, workers: pool } = useDispatchRig('pw-dispatch-');
let remote: string;
const remoteDir = path.join(scratch, 'remote.git');
// The repositories of the tests that run concurrently, made once for the file (vitest's onTestFinished
// cannot tell concurrent tests apart, so a repository made inside one could be removed when another ends).
let shared: { guarded: DispatchRepo; labels: DispatchRepo; nores: DispatchRepo; retried: DispatchRepo; gatefail: DispatchRepo };
// A worker of the same remote on a named queue (--queue team-b), with the label the `labels` test's
// agent B needs: it takes the jobs of the gate-job test's run (--dispatch-queue team-b) and nothing else.
let teamB: TestWorker;

async function addWorker(id: string): Promise<TestWorker> {
  const worker = await startWorker({ id, redisUrl: redis.url, remote, dir: path.join(scratch, `worker-${id}`) });
  pool.push(worker);
  return worker;
}

beforeAll(async () => {
  remote = await createGuardedRemote(remoteDir, readFileSync(path.join(repoRoot, 'scripts', 'remote-guard-hook'), 'utf8'));
  const [[guarded, labels, nores, retried, gatefail]] = await Promise.all([
    Promise.all([
      createDispatchRepo('guarded', lettersScript(), { remoteDir }),
      createDispatchRepo('labels', lettersScript(), { remoteDir, waves: [['A', 'B']], config: { dispatch: { labels: { B: ['gpu'] }, label_wait_seconds: 1 } } }),
      createDispatchRepo('nores', lettersScript(), { remoteDir }),
      // Attack F20: A fails (a fatal step) on its first run; `retry` runs it with the fixed script (B: a one-agent wave would run solo, in-process).
      createDispatchRepo('retried', lettersScript({ A: ['fail: { kind: fatal, message: "bad prompt" }'] }), { remoteDir, waves: [['A', 'B']] }),
      // Gate jobs: the gate fails on B's tip only (it finds B's constant).
      createDispatchRepo('gatefail', lettersScript(), { remoteDir, waves: [['A', 'B']], gates: ['! grep -rqs const.b.= src'], config: { dispatch: { gates: 'workers' } } }),
    ]),
    Promise.all(['w1', 'w2', 'w3'].map((id) => addWorker(id))),
    startWorker({ id: 'q1', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-q1'), labels: ['gpu'], extra: ['--queue', 'team-b', '--concurrency', '2'] }).then((worker) => (teamB = worker)),
  ]);
  shared = { guarded, labels, nores, retried, gatefail };
}, 60_000);
afterAll(() => {
  teamB?.child.kill('SIGKILL');
});

/** Which live worker runs a job of `agent` now (any job when `agent` is empty), from the Redis registry. */
async function workerRunning(agent: string, deadlineMs: number): Promise<string> {
  const client = new Redis(redis.url);
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
  throw new Error(`no worker ran ${agent || 'a job'}`);
}

/** The E21 pre-merge gate results of a run-wave result (finalize's run-gates step). */
function gateResultsOf(result: unknown): Array<{ agent: string; passed: boolean; worker?: string; stdout: string; command: string }> {
  const steps = (result as { finalize?: { steps?: Array<{ step: string; data?: { gate_results?: Record<string, unknown[]> } }> } }).finalize?.steps ?? [];
  const data = steps.find((step) => step.step === 'run-gates')?.data;
  return Object.values(data?.gate_results ?? {}).flat() as ReturnType<typeof gateResultsOf>;
}

/** The letters script with agent A's steps replaced by `steps` (YAML lines at the steps' indentation). */
const withAgentA = (steps: readonly string[]) => lettersScript().replace(/ {2}A:\n[\s\S]*?(?=\n {2}B:)/, ['  A:', '    steps:', ...steps].join('\n'));

/** `run-wave --dispatch` of `target`'s wave 1 in the background (`remoteFlags`: what follows `--dispatch-remote`), to be SIGKILLed by the test. */
function runWaveInBackground(target: DispatchRepo, remoteFlags: string[]): { kill: () => Promise<void> } {
  const args = [path.join(repoRoot, 'bin', 'polywave.js'), 'run-wave', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', ...remoteFlags];
  const child = spawn(process.execPath, args, { cwd: target.repo.dir, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The live worker whose current jobs include one whose id starts with `prefix`. */
async function holderOf(prefix: string): Promise<string | undefined> {
  const client = new Redis(redis.url);
  try {
    return (await listWorkers(client)).find((worker) => worker.current.some((job) => job.startsWith(prefix)))?.id;
  } finally {
    client.disconnect();
  }
}

const merges = async (repo: { run(args: readonly string[]): Promise<string> }, since: string) => (await repo.run(['log', '--merges', '--format=%s', `${since}..HEAD`])).split('\n').filter(Boolean);

describe('run-wave --dispatch redis:// with polywave workers', () => {
  it('runs 2 waves × 4 script agents on 3 workers; the final tree and merge order equal the in-process run', async () => {
    const listed = await runCli(['workers', '--redis', redis.url, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { workers: Array<{ id: string; labels: string[]; current: string[]; queue?: string }> }).workers.map((worker) => [worker.id, worker.labels, worker.current, worker.queue])).toEqual([
      ['q1', ['gpu'], [], 'team-b'],
      ['w1', [], [], undefined],
      ['w2', [], [], undefined],
      ['w3', [], [], undefined],
    ]);
    // A pre-merge gate on each agent's tip: run by workers for the distributed run (dispatch.gates), here for the local one.
    const gated = { gates: ['pwd'], config: { dispatch: { gates: 'workers' } } };
    const distributed = await createDispatchRepo('letters', lettersScript(), { remoteDir, ...gated });
    const local = await createDispatchRepo('letters', lettersScript(), gated);
    const startDistributed = await distributed.repo.git.headCommit();
    const startLocal = await local.repo.git.headCommit();
    const ranOn = new Set<string>();
    const jobIds: string[] = [];
    for (const wave of [1, 2]) {
      // (A generous bound per run: two run-waves at once on a loaded CI machine.)
      const [remoteRun, localRun] = await Promise.all([runWaveCli(distributed, wave, { redisUrl: redis.url, timeoutMs: 100_000 }), runWaveCli(local, wave, { timeoutMs: 100_000 })]);
      const remoteResult = waveResult(remoteRun);
      expect(remoteResult.success, JSON.stringify(remoteResult.blocked ?? remoteRun.stderr.slice(-1500))).toBe(true);
      expect(waveResult(localRun).success, JSON.stringify(waveResult(localRun).blocked ?? localRun.stderr.slice(-1500))).toBe(true);
      expect(remoteResult.state).toBe('WAVE_VERIFIED');
      // Issue 17 gate jobs: each agent's gate ran in a scratch checkout of a worker's clone, not here.
      const gateResults = gateResultsOf(remoteResult);
      expect(gateResults.map((result) => result.agent).sort()).toEqual([...waveAgents[wave - 1]!].sort());
      for (const result of gateResults) {
        expect(result).toMatchObject({ passed: true, worker: expect.stringMatching(/^w[123]$/) });
        expect(result.stdout.trim()).toBe(path.join(scratch, `worker-${result.worker}`, 'gates', result.stdout.trim().split('/').at(-1)!));
      }
      expect(gateResultsOf(waveResult(localRun)).every((result) => result.worker === undefined && result.stdout.includes(local.repo.root))).toBe(true);
      const streamed = (run: { stdout: string }) => run.stdout.split('\n').filter((line) => line.startsWith('{"v":1,"type":"agent-')).map((line) => JSON.parse(line) as { type: string; agent: string; worker?: string; at?: number });
      const [remoteEvents, localEvents] = [streamed(remoteRun), streamed(localRun)];
      for (const agent of remoteResult.agents) {
        expect(agent.status).toBe('complete');
        expect(agent.attempts).toHaveLength(1);
        const dispatch = agent.attempts[0]!.dispatch!;
        expect(['w1', 'w2', 'w3']).toContain(dispatch.worker);
        // Issue 17 item 5: where it runs, before anything it did (agent-running), and its worker's events each
        // once — as many tool calls and turns as the same agent in the in-process run — with the worker's id and time.
        const mine = remoteEvents.filter((event) => event.agent === agent.agent);
        const kinds = mine.map((event) => event.type);
        expect(mine.filter((event) => event.type === 'agent-running').map((event) => event.worker)).toEqual([dispatch.worker]);
        expect(kinds.indexOf('agent-running')).toBeLessThan(kinds.indexOf('agent-tool-call'));
        for (const type of ['agent-tool-call', 'agent-progress']) {
          const relayed = mine.filter((event) => event.type === type);
          expect(relayed.length).toBe(localEvents.filter((event) => event.agent === agent.agent && event.type === type).length);
          expect(relayed.every((event) => event.worker === dispatch.worker && typeof event.at === 'number')).toBe(true);
        }
        // Where it ran, for the dashboard's runs_on: the worker's host.
        expect((dispatch as { host?: string }).host).toBe(os.hostname());
        // The parts of enqueue → start (BullMQ's move to active, then the worker's processor; each at least 0) make it up; the worktree set-up after the start is measured apart.
        const parts = dispatch as { enqueue_to_start_ms?: number; enqueue_to_fetch_ms?: number; fetch_to_start_ms?: number; worker_setup_ms?: number };
        expect(parts.enqueue_to_fetch_ms! + parts.fetch_to_start_ms!, JSON.stringify(parts)).toBeGreaterThanOrEqual(parts.enqueue_to_start_ms!);
        expect(parts.worker_setup_ms).toBeGreaterThanOrEqual(0);
        // The agent's commits came in the job's progress as a pack (no fetch) and were fast-forwarded before the result.
        expect(dispatch, JSON.stringify(dispatch)).toMatchObject({ commits_early: true, report_early: true, pack_seen_rel_ms: expect.any(Number) });
        ranOn.add(dispatch.worker!);
        jobIds.push(dispatch.job_id);
      }
    }
    // E9: deterministic ids; the jobs (kept by BullMQ) hold nothing of the orchestrator's disk or environment.
    expect(jobIds.sort()).toEqual(waveAgents.flatMap((ids, index) => ids.map((id) => expect.stringMatching(new RegExp(`^letters\\.w${index + 1}\\.${id}\\.[0-9a-f]{12}\\.a1\\.[0-9a-f]{12}$`)))));
    const queue = new Queue(queueNameFor([], remoteKey(distributed.remote)), { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      for (const id of jobIds) {
        const job = await Job.fromId(queue, id);
        const text = JSON.stringify(job!.data);
        expect(text).not.toContain(distributed.repo.root);
        expect(text).not.toContain('GIT_CONFIG');
        expect(text).toContain('{{POLYWAVE_WORKTREE}}');
      }
    } finally {
      await queue.close();
    }
    expect(ranOn.size).toBeGreaterThan(1);
    expect(await treeWithoutManifest(distributed.repo)).toEqual(await treeWithoutManifest(local.repo));
    const order = await mergeOrder(distributed.repo, startDistributed);
    expect(order).toHaveLength(8);
    expect(order).toEqual(await mergeOrder(local.repo, startLocal));
    const manifest = parseImpl(readFileSync(distributed.implPath, 'utf8')).manifest!;
    for (const id of waveAgents.flat()) {
      expect(manifest.completion_reports?.[id]?.status).toBe('complete');
      // The report names the orchestrator's worktree, never a worker's path.
      expect(String(manifest.completion_reports?.[id]?.worktree ?? '')).toContain(distributed.repo.dir);
    }
    // Only the agent branches and the wave bases reached the shared remote (its guard allows nothing else).
    const refs = (await distributed.repo.run(['ls-remote', remote])).split('\n').filter((line) => line.includes('letters')).map((line) => line.split('\t')[1]);
    expect(refs.sort()).toEqual([...waveAgents[0].map((id) => `refs/heads/polywave/letters/wave1-agent-${id}`), ...waveAgents[1].map((id) => `refs/heads/polywave/letters/wave2-agent-${id}`), 'refs/polywave/base/letters/wave1', 'refs/polywave/base/letters/wave2'].sort());
  }, 240_000);

  it('a worker SIGKILLed mid-agent: the job goes to another worker; one report and one merge per agent; SIGTERM finishes the job first', async () => {
    // Two agents on the three workers: C's worker is killed, D's is stopped gracefully, C moves to the third.
    const target = await createDispatchRepo('killed', lettersScript({ C: ['sleep_ms: 4000'], D: ['sleep_ms: 4000'] }), { remoteDir, waves: [['C', 'D']] });
    const before = await target.repo.git.headCommit();
    const running = runWaveCli(target, 1, { redisUrl: redis.url });
    const victim = await workerRunning('C', 45_000);
    const killed = pool.find((worker) => worker.id === victim)!;
    killed.child.kill('SIGKILL');
    await killed.exited;
    // Graceful: the worker running D gets SIGTERM, finishes D, unregisters and exits 0.
    const runningD = await workerRunning('D', 45_000);
    const graceful = pool.find((worker) => worker.id === runningD)!;
    graceful.child.kill('SIGTERM');
    const run = await running;
    const result = waveResult(run);
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    const agentC = result.agents.find((agent) => agent.agent === 'C')!;
    expect(agentC.status).toBe('complete');
    // One run-wave attempt; BullMQ's stalled-job recovery moved it (counted: an E19 transient failure).
    expect(agentC.attempts).toHaveLength(1);
    expect(agentC.attempts[0]!.dispatch!.stalls).toBeGreaterThanOrEqual(1);
    expect(agentC.attempts[0]!.dispatch!.worker).not.toBe(victim);
    const subjects = await merges(target.repo, before);
    expect(subjects).toHaveLength(2);
    expect(subjects.filter((subject) => subject.includes('agent-C'))).toHaveLength(1);
    const manifest = parseImpl(readFileSync(target.implPath, 'utf8')).manifest!;
    expect(Object.keys(manifest.completion_reports ?? {}).sort()).toEqual(['C', 'D']);
    // The report's commit is the one merged, and is what the remote holds for C.
    const reported = String(manifest.completion_reports?.C?.commit);
    expect((await target.repo.run(['ls-remote', remote, 'refs/heads/polywave/killed/wave1-agent-C'])).split('\t')[0]).toBe(reported);
    expect(await target.repo.git.isAncestor(reported, 'HEAD')).toBe(true);
    expect(await graceful.exited).toBe(0);
    expect(graceful.log()).toContain('SIGTERM: finishing the running job(s)');
    expect(result.agents.find((agent) => agent.agent === 'D')!.attempts[0]!.dispatch).toMatchObject({ worker: graceful.id, stalls: 0 });
    await Promise.all([addWorker(`${victim}b`), addWorker(`${graceful.id}b`)]);
  }, 90_000);

  // Outside attack A18-15: a Redis whose writes are paused (`CLIENT PAUSE … WRITE`: a failover, an operator) still answers
  // PING, so the A17-16 watch saw it alive while every job's move waited: the run waited as long as the pause.
  it('Redis with its writes paused mid-run: DISPATCH_REDIS_LOST after outage_seconds, BLOCKED, nothing merged', async () => {
    const target = await createDispatchRepo('wpause', lettersScript({ A: ['sleep_ms: 1500'], B: ['sleep_ms: 1500'] }), { remoteDir, waves: [['A', 'B']], config: { dispatch: { outage_seconds: 2 } } });
    const before = await target.repo.git.headCommit();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 90_000 });
    await workerRunning('', 30_000);
    const admin = new Redis(redis.url);
    let run: Awaited<typeof running>;
    const pausedAt = Date.now();
    try {
      await admin.call('CLIENT', 'PAUSE', '40000', 'WRITE');
      run = await running;
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
    }
    expect(Date.now() - pausedAt).toBeLessThan(35_000);
    const result = waveResult(run);
    console.log(JSON.stringify(result.agents.find((agent) => agent.agent === "A")), run.stdout.split("\n").filter((line) => line.includes("lost_run") || line.includes("E9")).join("\n").slice(0, 1500));
    expect(result.state, run.stderr.slice(-1500)).toBe("BLOCKED");
    expect(result.blocked!.agents.some((agent) => agent.explanation.includes('DISPATCH_REDIS_LOST') && agent.explanation.includes('has not answered'))).toBe(true);
    expect(await merges(target.repo, before)).toEqual([]);
  }, 150_000);

  // Outside attack A17-26: the worker that ran A reported (the orchestrator wrote that report from the job's progress) and
  // then hung; the job moved to another worker, whose run failed without a report. run-wave failed the attempt, but the
  // lost run's report stayed `complete` in the manifest: after the BLOCKED wave `retry` found nothing to retry and
  // finalize-wave refused A (I5). Two workers of their own (a named queue), so the pool's stay untouched.
  it('a lost run’s early report is withdrawn when the run that finished reported nothing: BLOCKED with A retryable, and retry completes the wave', async () => {
    const marker = path.join(scratch, 'lost-marker');
    rmSync(marker, { force: true });
    const checkA = ['      - write: { path: src/a.test.js, content: ' + JSON.stringify(`test ! -e ${marker}\n`) + ' }', '        expect: ok', '      - bash: "bash src/a.test.js"', '        expect: ok'];
    const steps = ['      - write: { path: src/a.js, content: "export const a = \'a\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): letter a"', '      - report: { status: complete, verification: PASS, notes: "stale run" }', '      - sleep_ms: 8000'];
    const script = withAgentA([...checkA, ...steps]);
    const target = await createDispatchRepo('lost', script, { remoteDir, waves: [['A', 'B']] });
    const own = await Promise.all(['lost1', 'lost2'].map((id) => startWorker({ id, redisUrl: redis.url, remote, dir: path.join(scratch, `worker-${id}`), extra: ['--queue', 'lost'] })));
    try {
      const before = await target.repo.git.headCommit();
      const running = runWaveCli(target, 1, { redisUrl: redis.url, extra: ['--dispatch-queue', 'lost'], timeoutMs: 90_000 });
      // A reported (written here from its job's progress): its worker stops answering; the next run of the job will fail.
      const deadline = Date.now() + 45_000;
      while (!readFileSync(target.implPath, 'utf8').includes('stale run') && Date.now() < deadline) await sleep(50);
      const holder = await holderOf('lost.w1.A.');
      const hung = own.find((worker) => worker.id === holder);
      expect(hung, 'the worker running A').toBeDefined();
      hung!.child.kill('SIGSTOP');
      writeFileSync(marker, '');
      const run = await running;
      hung!.child.kill('SIGCONT');
      const result = waveResult(run);
      console.log(JSON.stringify(result.agents.find((agent) => agent.agent === "A")), run.stdout.split("\n").filter((line) => line.includes("lost_run") || line.includes("E9")).join("\n").slice(0, 1500));
    expect(result.state, run.stderr.slice(-1500)).toBe("BLOCKED");
      expect(await merges(target.repo, before)).toEqual([]);
      // The lost run's report is withdrawn, not left complete.
      const report = parseImpl(readFileSync(target.implPath, 'utf8')).manifest!.completion_reports?.A;
      expect(report?.status).toBe('blocked');
      expect(String(report?.notes)).toContain('withdrawn by the orchestrator');
      // The cause fixed: retry relaunches A (before: R001_NOTHING_TO_RETRY) and the wave completes, one merge per agent.
      rmSync(marker, { force: true });
      const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote, '--dispatch-queue', 'lost'], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 60_000 });
      expect(again.code, `${again.stderr.slice(-2000)}\n${again.stdout.slice(-3000)}`).toBe(0);
      const subjects = await merges(target.repo, before);
      expect(subjects).toHaveLength(2);
      expect(subjects.filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
    } finally {
      for (const worker of own) worker.child.kill('SIGKILL');
    }
  }, 150_000);

  // Outside attack A18-04: the same lost report, when the job's next run FAILS on its worker (here: the remote refuses its
  // push — a remote of its own whose update hook turns this slug's pushes away once the marker exists; a broken clone,
  // this test's first way, is now made again and the job handed back: A25-09) instead of finishing without a report, was
  // not withdrawn — and, its commits here already, it was merged.
  it('a lost run’s early report is withdrawn when the job then fails on another worker: BLOCKED, nothing merged', async () => {
    const marker = path.join(scratch, 'lostfail-marker');
    rmSync(marker, { force: true });
    const refusingDir = path.join(scratch, 'lostfail-remote.git');
    const refusing = await createGuardedRemote(refusingDir, readFileSync(path.join(repoRoot, 'scripts', 'remote-guard-hook'), 'utf8').replace('#!/bin/sh\n', `#!/bin/sh\ncase "$1" in refs/heads/polywave/lostfail/*) if [ -e '${marker}' ]; then echo 'refused by the test' >&2; exit 1; fi;; esac\n`));
    const steps = ['      - write: { path: src/a.js, content: "export const a = \'a\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): letter a"', '      - report: { status: complete, verification: PASS, notes: "stale run" }', '      - sleep_ms: 8000'];
    const script = withAgentA(steps);
    const target = await createDispatchRepo('lostfail', script, { remoteDir: refusingDir, waves: [['A', 'B']] });
    const own = await Promise.all(['lf1', 'lf2'].map((id) => startWorker({ id, redisUrl: redis.url, remote: refusing, dir: path.join(scratch, `worker-${id}`), extra: ['--queue', 'lostfail'] })));
    try {
      const before = await target.repo.git.headCommit();
      const running = runWaveCli(target, 1, { redisUrl: redis.url, extra: ['--dispatch-queue', 'lostfail'], timeoutMs: 90_000 });
      const deadline = Date.now() + 45_000;
      while (!readFileSync(target.implPath, 'utf8').includes('stale run') && Date.now() < deadline) await sleep(50);
      const holder = await holderOf('lostfail.w1.A.');
      const hung = own.find((worker) => worker.id === holder)!;
      expect(hung, 'the worker running A').toBeDefined();
      hung.child.kill('SIGSTOP');
      // the job's next run, on the other worker, fails there (its push refused)
      writeFileSync(marker, '');
      const run = await running;
      hung.child.kill('SIGCONT');
      const result = waveResult(run);
      console.log(JSON.stringify(result.agents.find((agent) => agent.agent === "A")), run.stdout.split("\n").filter((line) => line.includes("lost_run") || line.includes("E9")).join("\n").slice(0, 1500));
    expect(result.state, run.stderr.slice(-1500)).toBe("BLOCKED");
      expect(await merges(target.repo, before)).toEqual([]);
      const report = parseImpl(readFileSync(target.implPath, 'utf8')).manifest!.completion_reports?.A;
      expect(report?.status).toBe('blocked');
      expect(String(report?.notes)).toMatch(/^withdrawn by the orchestrator: job lostfail\.w1\.A\.\S+ failed on its worker/);
    } finally {
      for (const worker of own) worker.child.kill('SIGKILL');
    }
  }, 150_000);

  // Outside attack A17-35: the orchestrator was killed after a dispatched agent's early report was written here and before
  // its commits arrived (too large for the progress's pack, the push slow). The re-run awaited the same job, whose result
  // filed that report again — identical to the one on record, so taken for "no report": the agent ran a second time,
  // with a fix prompt. A remote (and two workers) of its own, whose update hook holds this slug's pushes for 4 s.
  it('an orchestrator killed after an early report, before the commits: the re-run takes the same job’s result — the agent runs once', async () => {
    const slowDir = path.join(scratch, 'slow-remote.git');
    const hook = readFileSync(path.join(repoRoot, 'scripts', 'remote-guard-hook'), 'utf8').replace('#!/bin/sh\n', '#!/bin/sh\ncase "$1" in refs/heads/polywave/relost/*) sleep 4;; esac\n');
    const slow = await createGuardedRemote(slowDir, hook);
    // 200 KB of a.js: past the 64 KB pack that carries small commits in the job's progress.
    const big = `export const noise = '${randomBytes(120_000).toString('hex')}';`;
    const script = withAgentA([`      - write: { path: src/a.js, content: "${big}\\nexport const a = 'a';\\n" }`, '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): letter a"', '      - report: { status: complete, verification: PASS, notes: "once" }', '      - sleep_ms: 1500']);
    const target = await createDispatchRepo('relost', script, { remoteDir: slowDir, waves: [['A', 'B']] });
    const own = await Promise.all(['slow1', 'slow2'].map((id) => startWorker({ id, redisUrl: redis.url, remote: slow, dir: path.join(scratch, `worker-${id}`), extra: ['--queue', 'relost'] })));
    try {
      const before = await target.repo.git.headCommit();
      const first = runWaveInBackground(target, [slow, '--dispatch-queue', 'relost']);
      // The report is written (from the job's progress); the commits are still on their way (the push waits in the hook).
      const deadline = Date.now() + 45_000;
      while (!readFileSync(target.implPath, 'utf8').includes('notes: once') && Date.now() < deadline) await sleep(25);
      expect(readFileSync(target.implPath, 'utf8')).toContain('notes: once');
      await first.kill();
      const run = await runWaveCli(target, 1, { redisUrl: redis.url, extra: ['--dispatch-remote', slow, '--dispatch-queue', 'relost'], timeoutMs: 90_000 });
      const result = waveResult(run);
      expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
      const agentA = result.agents.find((agent) => agent.agent === 'A')!;
      expect(agentA.status).toBe('complete');
      expect(agentA.attempts.map((attempt) => attempt.attempt ?? 1)).toEqual([1]);
      // One run of A's job on the workers, one merge.
      const runsOfA = own.flatMap((worker) => worker.log().split('\n')).filter((line) => /job relost\.w1\.A\.[^ ]+: agent A /.test(line));
      expect(runsOfA).toHaveLength(1);
      const subjects = await merges(target.repo, before);
      expect(subjects.filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
      expect(target.repo.read('src/a.js')).toContain("export const a = 'a';");
    } finally {
      for (const worker of own) worker.child.kill('SIGKILL');
    }
  }, 150_000);

  // Outside attack A17-34: killed once the early report AND the early commits had arrived, the orchestrator's re-run took
  // the agent as complete (E9) without awaiting its job, still running on its worker: what the agent committed after
  // reporting (a model's closing turn) was pushed to its branch and never merged — the tree differed from a run left alone.
  it('an orchestrator killed after an early report and its commits: the re-run awaits the still-running job and merges what the agent committed after reporting', async () => {
    const script = withAgentA(['      - write: { path: src/a.js, content: "export const a = \'first\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): first"', '      - report: { status: complete, verification: PASS, notes: "early" }', '      - sleep_ms: 2500', '      - write: { path: src/a.js, content: "export const a = \'after-report\';\\n" }', '        expect: ok', '      - commit: "feat(A): after the report"']);
    const target = await createDispatchRepo('latecommit', script, { remoteDir, waves: [['A', 'B']] });
    const before = await target.repo.git.headCommit();
    const first = runWaveInBackground(target, [remote]);
    // The report is written here and the first commit is in A's local worktree (the progress's pack): kill.
    const worktreeA = () => path.join(worktreePath(target.repo.dir, 'latecommit', 1, 'A'), 'src', 'a.js');
    const deadline = Date.now() + 45_000;
    while (!(readFileSync(target.implPath, 'utf8').includes('notes: early') && existsSync(worktreeA()) && readFileSync(worktreeA(), 'utf8').includes('first')) && Date.now() < deadline) await sleep(25);
    expect(readFileSync(worktreeA(), 'utf8')).toContain('first');
    await first.kill();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 90_000 });
    const result = waveResult(run);
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    const agentA = result.agents.find((agent) => agent.agent === 'A')!;
    expect(agentA.status).toBe('complete');
    // Awaited (attempt 1, the same job), not "already complete".
    expect(agentA.attempts.map((attempt) => attempt.attempt ?? 1)).toEqual([1]);
    expect(target.repo.read('src/a.js')).toContain('after-report');
    expect((await merges(target.repo, before)).filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
  }, 150_000);

  // Outside attack A18-09: killed after an early report of attempt 2 (a fix prompt after attempt 1 reported nothing), the
  // re-run's request for attempt 2 had no fix context — another job: it ran beside the one in flight (the agent twice),
  // or, restricted to attempt 1, the early report was taken as final (what the agent committed after it never merged).
  it('an orchestrator killed after attempt 2’s early report: the re-run awaits that job (adopted), the agent runs once more in all, its later commit merged', async () => {
    const stepsA = ['      - write: { path: src/a.js, content: "export const a = \'first\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): first"', '      - report: { status: complete, verification: PASS, notes: "early2" }', '      - sleep_ms: 2500', '      - write: { path: src/a.js, content: "export const a = \'after-report\';\\n" }', '        expect: ok', '      - commit: "feat(A): after the report"'];
    const firstAttempt = ['      1:', '        - write: { path: src/a.js, content: "export const a = \'no report\';\\n" }', '        - commit: "feat(A): no report"'];
    const script = lettersScript().replace(/ {2}A:\n[\s\S]*?(?=\n {2}B:)/, ['  A:', '    attempts:', ...firstAttempt, '    steps:', ...stepsA].join('\n'));
    const target = await createDispatchRepo('adopt2', script, { remoteDir, waves: [['A', 'B']] });
    const before = await target.repo.git.headCommit();
    const first = runWaveInBackground(target, [remote]);
    const worktreeA = () => path.join(worktreePath(target.repo.dir, 'adopt2', 1, 'A'), 'src', 'a.js');
    const deadline = Date.now() + 60_000;
    // (attempt 2's early commits do not fast-forward the worktree, which holds attempt 1's: its report is the sign)
    while (!readFileSync(target.implPath, 'utf8').includes('notes: early2') && Date.now() < deadline) await sleep(25);
    expect(readFileSync(target.implPath, 'utf8')).toContain('notes: early2');
    expect(existsSync(worktreeA())).toBe(true);
    await first.kill();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 90_000 });
    const result = waveResult(run);
    expect(result.success, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe(true);
    const agentA = result.agents.find((agent) => agent.agent === 'A')!;
    expect(agentA.status).toBe('complete');
    // The attempt-2 job in flight, awaited: adopted, not a new job beside it.
    expect(agentA.attempts.map((attempt) => [attempt.attempt, attempt.dispatch?.adopted_attempt, attempt.dispatch?.job_id.split('.')[4]])).toEqual([[2, 2, 'a2']]);
    const runsOfA2 = pool.flatMap((worker) => worker.log().split('\n')).filter((line) => /job adopt2\.w1\.A\.[0-9a-f]{12}\.a2\.[^ ]+: agent A /.test(line));
    expect(runsOfA2).toHaveLength(1);
    expect(target.repo.read('src/a.js')).toContain('after-report');
    expect((await merges(target.repo, before)).filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
  }, 150_000);

  // Outside attack A19-11: the orchestrator killed after an agent's early report; the job then FAILS while no
  // orchestrator runs (the run dies after its report). The re-run took the early report as final (E9) and merged the
  // lost run's commit without running the agent. It is not final now: the agent runs again, and that run is judged (here
  // it files the same complete report and fails after it, as the lost one did: the report decides, as in-process).
  it('a report whose job then failed while no orchestrator ran is not taken as final: the re-run launches the agent again', async () => {
    const script = withAgentA(['      - write: { path: src/a.js, content: "export const a = \'lost\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): lost"', '      - report: { status: complete, verification: PASS, notes: "lost" }', '      - sleep_ms: 2500', '      - fail: { kind: fatal, message: "the run dies after its report" }']);
    const target = await createDispatchRepo('lostfail', script, { remoteDir, waves: [['A', 'B']] });
    const before = await target.repo.git.headCommit();
    const first = runWaveInBackground(target, [remote]);
    const deadline = Date.now() + 45_000;
    while (!readFileSync(target.implPath, 'utf8').includes('notes: lost') && Date.now() < deadline) await sleep(25);
    expect(readFileSync(target.implPath, 'utf8')).toContain('notes: lost');
    await first.kill();
    // The job fails on its worker while no orchestrator listens.
    const gone = Date.now() + 30_000;
    while ((await holderOf('lostfail.w1.A.')) !== undefined && Date.now() < gone) await sleep(100);
    await sleep(500);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 120_000 });
    const result = waveResult(run);
    expect(run.stdout).toMatch(/"step":"lost_run","status":"warning","detail":"agent A: its report is not taken as final — job lostfail\.w1\.A\.\S+ (failed|ended without a complete result)/);
    const agentA = result.agents.find((agent) => agent.agent === 'A')!;
    expect(agentA.attempts.length, JSON.stringify(agentA)).toBe(1);
    // Two runs of A's job on the workers: the lost one and the one this re-run launched (not "already complete (E9)").
    const runsOfA = pool.flatMap((worker) => worker.log().split('\n')).filter((line) => /job lostfail\.w1\.A\.[^ ]+: agent A /.test(line));
    expect(runsOfA).toHaveLength(2);
    expect(result.state, run.stderr.slice(-1500)).toBe('WAVE_VERIFIED');
    expect((await merges(target.repo, before)).filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
  }, 180_000);

  // Outside attack A18-17: `polywave retry` right after the orchestrator was killed while a dispatched agent ran (no report
  // yet) started attempt 2 beside attempt 1 — the agent ran twice at once; attempt 2's push was refused (the branch moved),
  // its attempt failed, yet its early commit was merged while the shared remote held attempt 1's.
  it('`retry` after the orchestrator was killed mid-job, before the agent reported: the running job is awaited — the agent runs once, what it pushed is what is merged', async () => {
    const script = withAgentA(['      - sleep_ms: 3000', '      - write: { path: src/a.js, content: "export const a = \'once\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): once"', '      - report: { status: complete, verification: PASS, notes: "once" }']);
    const target = await createDispatchRepo('retrykill', script, { remoteDir, waves: [['A', 'B']] });
    const before = await target.repo.git.headCommit();
    const first = runWaveInBackground(target, [remote]);
    const deadline = Date.now() + 45_000;
    while ((await holderOf('retrykill.w1.A.')) === undefined && Date.now() < deadline) await sleep(50);
    expect(await holderOf('retrykill.w1.A.')).toBeDefined();
    await first.kill();
    const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 90_000 });
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const line = again.stdout.split('\n').find((entry) => entry.includes('"retry-result"'));
    const retried = (JSON.parse(line!) as { result: { final_state: string; run: { agents: Array<{ agent: string; attempts: Array<{ attempt: number; dispatch?: { job_id: string; adopted_attempt?: number } }> }> } } }).result;
    expect(retried.final_state).toBe('passed');
    // attempt 1's job, still running when retry began, awaited
    expect(retried.run.agents.find((agent) => agent.agent === 'A')!.attempts.map((attempt) => [attempt.attempt, attempt.dispatch?.adopted_attempt])).toEqual([[1, 1]]);
    const runsOfA = pool.flatMap((worker) => worker.log().split('\n')).filter((line) => /job retrykill\.w1\.A\.[^ ]+: agent A /.test(line));
    expect(runsOfA).toHaveLength(1);
    expect((await merges(target.repo, before)).filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
    expect(target.repo.read('src/a.js')).toContain("'once'");
    // what main merged for A is what the shared remote's agent branch holds
    const pushed = (await target.repo.run(['ls-remote', remote, 'refs/heads/polywave/retrykill/wave1-agent-A'])).split('\t')[0];
    expect((await target.repo.run(['log', '--format=%P', '-1', '--merges', '--grep', 'agent-A', 'HEAD'])).trim().split(' ')).toContain(pushed);
  }, 150_000);

  // Outside attack A19-09: `retry --model M2` right after the orchestrator was killed while the agent's job ran model M1.
  // (Since A19-01 a job of another request is never adopted: M2 runs as a new job.) The record and the events name M2,
  // which ran and was merged; the killed run's M1 job is named in `dispatch.not_adopted` with its model, and retry's
  // stderr says it was not adopted — no record names one model for the other's work.
  it('A19-09: `retry --model M2` after a kill while the agent\'s job runs M1: M2 runs and is named; the M1 job, not adopted, is named with its model on stderr and in the record', async () => {
    const script = withAgentA(['      - sleep_ms: 2000', '      - write: { path: src/a.js, content: "export const a = \'one\';\\n" }', '        expect: ok', '      - write: { path: src/a.test.js, content: "export {};\\n" }', '        expect: ok', '      - commit: "feat(A): one"', '      - report: { status: complete, verification: PASS, notes: "one" }']);
    const target = await createDispatchRepo('remodel', script, { remoteDir, waves: [['A', 'B']] });
    const before = await target.repo.git.headCommit();
    const second = target.repo.sibling('agents-two.yaml');
    writeFileSync(second, script.replace("'one'", "'MODEL_TWO'"));
    const first = runWaveInBackground(target, [remote]);
    const client = new Redis(redis.url);
    let killedJob: string | undefined;
    try {
      const deadline = Date.now() + 45_000;
      while (killedJob === undefined && Date.now() < deadline) {
        killedJob = (await listWorkers(client)).flatMap((worker) => worker.current).find((job) => job.startsWith('remodel.w1.A.'));
        if (killedJob === undefined) await sleep(50);
      }
    } finally {
      client.disconnect();
    }
    expect(killedJob).toBeDefined();
    await first.kill();
    const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${second}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 90_000 });
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const line = again.stdout.split('\n').find((entry) => entry.includes('"retry-result"'));
    const retried = (JSON.parse(line!) as { result: { final_state: string; run: { agents: Array<{ agent: string; model: string; attempts: Array<{ attempt: number; dispatch?: { job_id: string; adopted_attempt?: number; not_adopted?: Array<{ job_id: string; model: string; differs: string[] }> } }> }> } } }).result;
    expect(retried.final_state).toBe('passed');
    const agentA = retried.run.agents.find((agent) => agent.agent === 'A')!;
    expect(agentA.model).toBe(`script:${second}`);
    expect(agentA.attempts).toHaveLength(1);
    const record = agentA.attempts[0]!.dispatch!;
    expect(record.adopted_attempt).toBeUndefined();
    expect(record.job_id).not.toBe(killedJob);
    expect(record.not_adopted).toEqual([{ job_id: killedJob, model: 'script:', differs: ['script'] }]);
    expect(again.stderr).toContain(`retry: warning: agent A: job ${killedJob} of an earlier run (model script:; its script differs from this attempt's) was left in flight by a killed orchestrator and not adopted — this attempt ran script:${second} as a new job beside it`);
    const warned = again.stdout.split('\n').filter((entry) => entry.startsWith('{"v":1,"type":"step-end"') && entry.includes('"step":"not_adopted"') && entry.includes('"detail":"agent A: '));
    expect(warned, warned.join("\n")).toHaveLength(1);
    // what ran for the record is what main holds: M2's work, merged once
    expect(target.repo.read('src/a.js')).toContain("'MODEL_TWO'");
    expect((await merges(target.repo, before)).filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
    const launches = again.stdout.split('\n').filter((entry) => entry.includes('"type":"agent-launch"') && entry.includes('"agent":"A"')).map((entry) => (JSON.parse(entry) as { model: string }).model);
    expect(launches).toEqual([`script:${second}`]);
  }, 150_000);

  // The next three are independent of one another (own slugs; a refused job takes no worker slot): run together.
  it.concurrent('refuses a job whose branch is not its agent branch (DISPATCH_REF_REFUSED); the remote guard refuses foreign refs', async ({ expect }) => {
    const target = shared.guarded;
    const base = await target.repo.git.headCommit();
    await target.repo.run(['push', '--quiet', remote, `${base}:refs/polywave/base/guarded/wave1`]);
    const data = { v: 2, polywave: '0.1.0', job_id: 'guarded.w1.A.x.a1', slug: 'guarded', wave: 1, agent: 'A', attempt: 1, role: 'wave', model: 'script:', script_text: lettersScript(), system_prompt: '', prompt: '', base_commit: base, branch: 'main', base_ref: 'refs/polywave/base/guarded/wave1', owned_files: ['src/a.js'], frozen_paths: [], limits: {}, labels: [], remote, enqueued_at: Date.now() };
    const answer = await produceJob(redis.port, data, data.job_id, 20_000);
    expect(answer.error).toMatch(/^DISPATCH_REF_REFUSED: refusing to push "main": a job of agent A \(wave 1 of guarded\) may only push polywave\/guarded\/wave1-agent-A$/);
    expect(await target.repo.run(['ls-remote', remote, 'refs/heads/main'])).toBe('');
    // Server side: the update hook refuses anything but agent branches and bases.
    const refused = await target.repo.git.run(['push', remote, `${base}:refs/heads/main`], { allowExitCodes: [1] });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('POLYWAVE_REF_REFUSED: refs/heads/main is not an agent branch');
    const wrongName = await target.repo.git.run(['push', remote, `${base}:refs/heads/polywave/guarded/wave1-agent-a`], { allowExitCodes: [1] });
    expect(wrongName.exitCode).toBe(1);
    expect((await target.repo.git.run(['push', remote, `${base}:refs/heads/polywave/guarded/wave1-agent-A`])).exitCode).toBe(0);
  }, 60_000);

  it.concurrent('a job for a label no worker has fails with DISPATCH_NO_WORKER after the bounded wait (the gpu worker of another --queue does not count); nothing merged (E7)', async ({ expect }) => {
    const target = shared.labels;
    const before = await target.repo.git.headCommit();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url });
    expect(run.code).toBe(1);
    const result = waveResult(run);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked!.agents.map((agent) => agent.agent)).toEqual(['B']);
    expect(result.blocked!.agents[0]!.explanation).toMatch(/DISPATCH_NO_WORKER: no live worker .*has the label\(s\) gpu \(waited 1 s\)/);
    expect(result.agents.find((agent) => agent.agent === 'A')!.status).toBe('complete');
    expect(await merges(target.repo, before)).toEqual([]);
  }, 60_000);

  it.concurrent('gate jobs (dispatch.gates: workers) on a named queue: only its worker runs them; a failing gate blocks the merge with the message and E40 events of a local run', async ({ expect }) => {
    const target = shared.gatefail;
    const before = await target.repo.git.headCommit();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, extra: ['--dispatch-queue', 'team-b'] });
    const result = waveResult(run);
    expect(run.code, JSON.stringify(result).slice(0, 4000)).toBe(1);
    // --dispatch-queue team-b: the agents and their gates ran on the team-b worker only, and it took no other job of this file.
    expect(result.agents.map((agent) => agent.attempts.map((attempt) => attempt.dispatch?.worker))).toEqual([['q1'], ['q1']]);
    expect(teamB.log().split('\n').filter((line) => / job [^ ]+: /.test(line) && !line.includes('job gatefail.'))).toEqual([]);
    const gates = gateResultsOf(result);
    expect(gates.map((gate) => [gate.agent, gate.passed, gate.worker]).sort(), JSON.stringify(result).slice(0, 6000)).toEqual([['A', true, 'q1'], ['B', false, 'q1']]);
    // E40 per gate, emitted here from the jobs' results as a local run emits them, naming the worker.
    const activities = run.stdout.split('\n').filter((line) => line.includes('"activity_type":"gate_')).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(activities.map((event) => [event.activity_type, event.agent, event.worker, event.gate_scope, event.slug, event.wave, event.details]).sort()).toEqual([
      ['gate_executed', 'A', 'q1', 'pre-merge', 'gatefail', 1, 'gate=test passed=true'],
      ['gate_failed', 'B', 'q1', 'pre-merge', 'gatefail', 1, 'gate=test passed=false exit=1'],
    ]);
    const onWorker = (result as { finalize?: { steps?: Array<{ step: string; detail: string }> } }).finalize!.steps!.find((step) => step.step === 'run-gates')!.detail;
    expect(onWorker).toContain(`agent B: test gate \`! grep -rqs const.b.= src\` exited 1 in a checkout of polywave/gatefail/wave1-agent-B on worker q1`);
    expect(await merges(target.repo, before)).toEqual([]);
    // The same gates run here (finalize-wave without a dispatcher): the same failure, naming the same agent and command.
    const local = await runCli(['finalize-wave', target.implPath, '--wave', '1'], { cwd: target.repo.dir, env: gitEnv });
    expect(local.code, local.stderr + local.stdout.slice(-3000)).toBe(1);
    const localDetail = String(/agent B: test gate `! grep -rqs const\.b\.= src` exited 1 in /.exec(local.stdout)?.[0]);
    expect(onWorker).toContain(localDetail);
    expect(await merges(target.repo, before)).toEqual([]);
  }, 60_000);

  it.concurrent('Redis unreachable at start: one coded line, exit 2, nothing changed; a worker without Redis or remote does not start', async ({ expect }) => {
    const target = shared.nores;
    const deadUrl = `redis://127.0.0.1:${await freePort()}`;
    const before = readFileSync(target.implPath, 'utf8');
    const run = await runWaveCli(target, 1, { redisUrl: deadUrl });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^polywave: error\[DISPATCH_REDIS_UNREACHABLE\]: Redis at redis:\/\/127\.0\.0\.1:\d+\/? is unreachable \([^\n]*\); nothing was started\n$/);
    expect(readFileSync(target.implPath, 'utf8')).toBe(before);
    expect(await target.repo.git.listBranches('polywave/')).toEqual([]);
    const [worker, badRemote] = await Promise.all([
      runCli(['worker', '--redis', deadUrl, '--remote', remote, '--dir', path.join(scratch, 'worker-x')]),
      runCli(['worker', '--redis', redis.url, '--remote', 'file:///nonexistent/remote.git', '--dir', path.join(scratch, 'worker-y')]),
    ]);
    expect(worker.code).toBe(2);
    expect(worker.stderr).toMatch(/^polywave: error\[DISPATCH_REDIS_UNREACHABLE\]/);
    expect(badRemote.code).toBe(2);
    expect(badRemote.stderr).toMatch(/^polywave: error\[DISPATCH_REMOTE_UNREACHABLE\]: the shared remote file:\/\/\/nonexistent\/remote\.git is unreachable \(git ls-remote: .*\); nothing was started\n$/);
  }, 60_000);

  it.concurrent('retry of an agent that failed on a worker runs it again as the next attempt (attack F20), never the failed job', async ({ expect }) => {
    const target = shared.retried;
    const before = await target.repo.git.headCommit();
    const first = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url }));
    expect(first.state).toBe('BLOCKED');
    expect(first.blocked!.agents.map((agent) => [agent.agent, agent.explanation])).toEqual([['A', expect.stringContaining('failed: bad prompt; no completion report')]]);
    const firstJob = first.agents.find((agent) => agent.agent === 'A')!.attempts.map((attempt) => attempt.dispatch!.job_id);
    expect(firstJob).toEqual([expect.stringMatching(/^retried\.w1\.A\.[0-9a-f]{12}\.a1\.[0-9a-f]{12}$/)]);
    // The same launch again — run-wave re-entered as after an orchestrator killed mid-wave (state
    // WAVE_EXECUTING): same attempt, same content, so the same job id. That job, completed in BullMQ
    // with a failed outcome, runs again on a worker instead of handing the old failure back.
    writeFileSync(target.implPath, readFileSync(target.implPath, 'utf8').replace(/^state: BLOCKED$/m, 'state: WAVE_EXECUTING'));
    // Killed mid-wave: before the attempt's end was handled, so the job's relayed journal was not kept yet (issue 17 item 4; kept, it would put a recovered context in the prompt: another job).
    rmSync(journalPaths(target.repo.dir, 'retried', 1, 'A').index, { force: true });
    const secondRun = await runWaveCli(target, 1, { redisUrl: redis.url });
    const second = waveResult(secondRun);
    expect(second.state, secondRun.stderr.slice(-800)).toBe('BLOCKED');
    expect(second.agents.find((agent) => agent.agent === 'A')!.attempts.map((attempt) => attempt.dispatch!.job_id)).toEqual(firstJob);
    expect(pool.flatMap((worker) => worker.log().split('\n')).filter((line) => line.includes(`job ${firstJob[0]}: agent A`))).toHaveLength(2);
    const fixed = target.repo.sibling('agents-fixed.yaml');
    writeFileSync(fixed, lettersScript());
    const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${fixed}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 60_000 });
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const line = again.stdout.split('\n').find((entry) => entry.includes('"retry-result"'));
    const retry = (JSON.parse(line!) as { result: { final_state: string; agents: Array<{ agent: string; attempt: number }>; run: { agents: Array<{ agent: string; attempts: Array<{ attempt: number; dispatch?: { job_id: string; worker?: string } }> }> } } }).result;
    expect(retry.final_state).toBe('passed');
    expect(retry.agents).toMatchObject([{ agent: 'A', attempt: 1 }]);
    // The relaunch is attempt 2 — a new job that a worker really ran (the first run's failed job is not handed back).
    const attempt = retry.run.agents.find((agent) => agent.agent === 'A')!.attempts[0]!;
    expect(attempt.attempt).toBe(2);
    expect(attempt.dispatch!.job_id).toMatch(/^retried\.w1\.A\.[0-9a-f]{12}\.a2\.[0-9a-f]{12}$/);
    expect(pool.find((worker) => worker.id === attempt.dispatch!.worker)!.log()).toContain(`job ${attempt.dispatch!.job_id}: `);
    expect(parseImpl(readFileSync(target.implPath, 'utf8')).manifest!.completion_reports?.A?.status).toBe('complete');
    expect((await merges(target.repo, before)).filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
  }, 120_000);

  // Issue 17 on the PROGRAM layer (issue 12): a tier's IMPLs run at once, their wave agents on the workers.
  it.concurrent('program-execute --dispatch: the wave agents of every IMPL of each tier run on the workers; the Scouts, merges and tier gates here; COMPLETE with every agent merged once', async ({ expect }) => {
    const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir: path.join(scratch, 'program'), setupOnly: true });
    const gitOut = (args: string[]) => execFileSync('git', args, { cwd: demo.repo, encoding: 'utf8', env: { ...process.env, ...gitEnv } });
    // Checked before anything runs: Redis unreachable, a remote without a Redis URL — one coded line, exit 2, nothing changed.
    const head = gitOut(['rev-parse', 'HEAD']);
    const program = readFileSync(path.join(demo.repo, 'docs/PROGRAM/PROGRAM-shop.yaml'), 'utf8');
    const refused = await Promise.all([
      runCli(['program-execute', 'docs/PROGRAM/PROGRAM-shop.yaml', '--auto', '--model', `script:${demo.script}`, '--dispatch', `redis://127.0.0.1:${await freePort()}`, '--dispatch-remote', remote], { cwd: demo.repo, env: gitEnv }),
      runCli(['run', 'docs/PROGRAM/PROGRAM-shop.yaml', '--auto', '--model', `script:${demo.script}`, '--dispatch-remote', remote], { cwd: demo.repo, env: gitEnv }),
    ]);
    expect(refused.map((result) => [result.code, result.stderr.match(/^polywave: error\[(\w+)\]/)?.[1], result.stderr.split('\n').length])).toEqual([[2, 'DISPATCH_REDIS_UNREACHABLE', 2], [2, 'DISPATCH_NO_URL', 2]]);
    expect([gitOut(['rev-parse', 'HEAD']), gitOut(['status', '--porcelain']), readFileSync(path.join(demo.repo, 'docs/PROGRAM/PROGRAM-shop.yaml'), 'utf8')]).toEqual([head, '', program]);
    const run = await runCli(['program-execute', 'docs/PROGRAM/PROGRAM-shop.yaml', '--auto', '--model', `script:${demo.script}`, '--no-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote], { cwd: demo.repo, env: gitEnv, timeoutMs: 240_000 });
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const events = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; slug?: string; agent?: string; dispatcher?: string; worker?: string; result?: { state: string } });
    expect(events.at(-1)).toMatchObject({ type: 'program-result', result: { state: 'COMPLETE' } });
    const waveAgents = new Set(['P', 'C', 'D', 'K']);
    const launched = events.filter((event) => event.type === 'agent-launch' && waveAgents.has(event.agent ?? ''));
    expect(launched.map((event) => `${event.slug}:${event.agent}:${event.dispatcher}`).sort()).toEqual(['catalog:C:redis', 'catalog:D:redis', 'checkout:K:redis', 'pricing:P:redis']);
    // Each ran on one of the pool's workers (its log names the job), and that worker is what the run reported.
    const running = events.filter((event) => event.type === 'agent-running' && waveAgents.has(event.agent ?? ''));
    expect(running.map((event) => event.agent).sort()).toEqual(['C', 'D', 'K', 'P']);
    for (const event of running) expect(pool.map((worker) => worker.id)).toContain(event.worker);
    const subjects = gitOut(['log', '--format=%s', 'main']).split('\n');
    for (const merge of ['Merge polywave/pricing/wave1-agent-P', 'Merge polywave/catalog/wave1-agent-C', 'Merge polywave/catalog/wave2-agent-D', 'Merge polywave/checkout/wave1-agent-K', 'Merge program tier 1 impl pricing', 'Merge program tier 1 impl catalog', 'Merge program tier 2 impl checkout']) {
      expect(subjects.filter((subject) => subject.startsWith(merge)), merge).toHaveLength(1);
    }
    // The tree is what the agents' scripts write (the same as the in-process run: test/program-execute.test.ts).
    const script = parseYaml(readFileSync(demo.script, 'utf8')) as { agents: Record<string, { steps: Array<{ write?: { path: string; content: string } }> }> };
    for (const agent of waveAgents) {
      for (const step of script.agents[agent]!.steps) if (step.write) expect(readFileSync(path.join(demo.repo, step.write.path), 'utf8'), `${agent}: ${step.write.path}`).toBe(step.write.content);
    }
    expect(readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^state: COMPLETE$/m);
    expect(gitOut(['status', '--porcelain'])).toBe('');
  }, 240_000);

  it('Redis stopped mid-run: attempts fail as DISPATCH_REDIS_LOST, the wave is BLOCKED with the manifest intact; with Redis back, retry completes it', async () => {
    const target = await createDispatchRepo('outage', lettersScript({ A: ['sleep_ms: 1500'], B: ['sleep_ms: 1500'] }), { remoteDir, waves: [['A', 'B']], config: { dispatch: { outage_seconds: 1 } } });
    const before = await target.repo.git.headCommit();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 60_000 });
    await workerRunning('', 30_000);
    await redis.stop();
    const run = await running;
    expect(run.code, run.stderr.slice(-1000)).toBe(1);
    const result = waveResult(run);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked!.agents.some((agent) => agent.explanation.includes('DISPATCH_REDIS_LOST'))).toBe(true);
    expect(await merges(target.repo, before)).toEqual([]);
    expect(parseImpl(readFileSync(target.implPath, 'utf8')).manifest!.state).toBe('BLOCKED');
    // Redis is back (empty: no persistence) and the workers reconnect: `retry` relaunches the wave's agents (E7/E19).
    await redis.restart();
    const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 60_000 });
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const line = again.stdout.split('\n').find((entry) => entry.includes('"retry-result"'));
    expect((JSON.parse(line!) as { result: { final_state: string } }).result.final_state).toBe('passed');
    expect(await merges(target.repo, before)).toHaveLength(2);
  }, 120_000);

  // Outside attack A17-16: a Redis that stops answering with its connections still open (SIGSTOP: a hung server, a
  // network partition) never made `outage_seconds` apply — run-wave waited for as long as Redis hung.
  it('Redis hung mid-run (connections open, no answers): DISPATCH_REDIS_LOST after outage_seconds, BLOCKED, manifest intact; once it answers again, retry completes the wave', async () => {
    const target = await createDispatchRepo('hung', lettersScript({ A: ['sleep_ms: 1500'], B: ['sleep_ms: 1500'] }), { remoteDir, waves: [['A', 'B']], config: { dispatch: { outage_seconds: 2 } } });
    const before = await target.repo.git.headCommit();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 90_000 });
    await workerRunning('', 30_000);
    redis.pause();
    const pausedAt = Date.now();
    let run: Awaited<typeof running>;
    try {
      run = await running;
    } finally {
      redis.resume();
    }
    // the limit (2 s) and E19's relaunches, which fail at once while Redis is silent — not the 90 s of the test's bound
    expect(Date.now() - pausedAt).toBeLessThan(45_000);
    expect(run.code, run.stderr.slice(-1000)).toBe(1);
    const result = waveResult(run);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked!.agents.some((agent) => agent.explanation.includes('DISPATCH_REDIS_LOST') && agent.explanation.includes('has not answered'))).toBe(true);
    expect(await merges(target.repo, before)).toEqual([]);
    expect(parseImpl(readFileSync(target.implPath, 'utf8')).manifest!.state).toBe('BLOCKED');
    // Redis answers again (with its data: the first jobs may finish meanwhile); `retry` relaunches and merges each agent once.
    const again = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 60_000 });
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const line = again.stdout.split('\n').find((entry) => entry.includes('"retry-result"'));
    expect((JSON.parse(line!) as { result: { final_state: string } }).result.final_state).toBe('passed');
    expect(await merges(target.repo, before)).toHaveLength(2);
  }, 150_000);
});
