import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedJobId, givenUpKey, queueNameFor, remoteKey, runCounterKey, type AgentJobData, type AgentJobReturn } from '../src/dispatch/job.js';
import { createRedisDispatcher } from '../src/dispatch/redis-dispatcher.js';
import { assertRedisReachable } from '../src/dispatch/redis-url.js';
import { listWorkers, writeWorkerRecord } from '../src/dispatch/registry.js';
import { startWorker as startWorkerInProcess } from '../src/worker/worker.js';
import { journalPaths, readJournal } from '../src/engine/journal.js';
import { createGit } from '../src/git/git-cli.js';
import { runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, holdTestClaim, produceJob, queueOf, testDispatchKey, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig, type DispatchRepo, type TestWorker } from './dispatch-support.js';

// The attack on the scale-out feature (attack-dispatch.md F1–F5), replayed on real parts: a
// redis-server of this file, one bare `file://` remote, real `polywave worker` processes, jobs put
// on the queue with plain BullMQ (what anyone who can write to the Redis can do) and real run-waves.

// (`workers`: main, rare and the workers of single tests)
const { scratch, redis, workers } = useDispatchRig('pw-dispatch-attacks-');
const remoteDir = path.join(scratch, 'remote.git');
const workerSecret = 'sk-H5-worker-secret-4242';
let main: TestWorker;
let rare: TestWorker;
let hostile: DispatchRepo;
let base: string;
// The repositories of the tests that run concurrently, made once for the file (a repository made inside a
// concurrent test could be removed when another one ends).
let redo: DispatchRepo;
let lost: DispatchRepo;
// Attacks F6, F7, F12–F14: shared remotes of their own (copies of `remoteDir` with the base), each
// served by the workers of one test only (a worker takes only its remote's jobs), so the tests that
// kill, stop and signal workers run concurrently with the others.
const mirrors: Record<'r6' | 'r12' | 'r16' | 'r17' | 'r20', string> = { r6: '', r12: '', r16: '', r17: '', r20: '' };

beforeAll(async () => {
  const init = spawnSync('git', ['init', '--quiet', '--bare', '-b', 'main', remoteDir], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
  if (init.status !== 0) throw new Error(init.stderr);
  const remote = `file://${remoteDir}`;
  [hostile, redo, lost] = await Promise.all([
    createDispatchRepo('hostile', lettersScript(), { remoteDir, waves: [['A', 'B']] }),
    createDispatchRepo('redo', lettersScript(), { remoteDir, waves: [['A', 'B']] }),
    // A (1 s) is deleted from Redis while it runs: the dispatcher adds it again.
    createDispatchRepo('lost', lettersScript({ A: ['sleep_ms: 1000'] }), { remoteDir, waves: [['A', 'B']] }),
  ]);
  base = await hostile.repo.git.headCommit();
  await hostile.repo.run(['push', '--quiet', remote, `${base}:refs/polywave/base/hostile/wave1`]);
  for (const name of Object.keys(mirrors) as Array<keyof typeof mirrors>) {
    const dir = path.join(scratch, `${name}.git`);
    const copy = spawnSync('git', ['clone', '--quiet', '--mirror', remoteDir, dir], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
    if (copy.status !== 0) throw new Error(copy.stderr);
    mirrors[name] = `file://${dir}`;
  }
  [main, rare] = await Promise.all([
    startWorker({ id: 'h-main', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-main'), extra: ['--concurrency', '3', '--model-allow', 'openai-compatible:http://gateway.invalid/'], env: { OPENAI_API_KEY: workerSecret } }),
    startWorker({ id: 'h-rare', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-rare'), labels: ['rare'] }),
  ]);
  workers.push(main, rare);
}, 60_000);
afterAll(() => {
  if (process.env.H5_DEBUG) console.log(main?.log(), rare?.log());
});

/** A schema-valid job of agent A of `hostile` (its id as the orchestrator would compute it, unless overridden). */
function job(overrides: Partial<AgentJobData> = {}): AgentJobData {
  const data: AgentJobData = {
    v: 2, polywave: '0.1.0',
    job_id: '',
    slug: 'hostile',
    wave: 1,
    agent: 'A',
    attempt: 1,
    role: 'wave',
    model: 'script:',
    script_text: lettersScript(),
    system_prompt: '',
    prompt: '',
    base_commit: base,
    branch: 'polywave/hostile/wave1-agent-A',
    base_ref: 'refs/polywave/base/hostile/wave1',
    owned_files: ['src/a.js', 'src/a.test.js'],
    frozen_paths: [],
    limits: {},
    labels: [],
    remote: `file://${remoteDir}`,
    enqueued_at: Date.now(),
  };
  const merged = { ...data, ...overrides };
  if (overrides.job_id === undefined) merged.job_id = expectedJobId(merged);
  return merged;
}

/** Adds `data` under `bullId` (default its job_id) and waits for the worker's answer. */
async function produce(data: AgentJobData, bullId = data.job_id): Promise<{ value?: AgentJobReturn; error?: string }> {
  return (await produceJob(redis.port, data, bullId, 60_000)) as { value?: AgentJobReturn; error?: string };
}

/** The job whose id starts with `prefix` (`<slug>.w1.A.`) a live worker runs now, from the registry. */
async function runningJob(prefix: string, deadlineMs: number): Promise<{ worker: string; job: string }> {
  const client = new Redis(redis.url);
  try {
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline) {
      for (const worker of await listWorkers(client)) {
        const found = worker.current.find((id) => id.startsWith(prefix));
        if (found) return { worker: worker.id, job: found };
      }
      await sleep(50);
    }
  } finally {
    client.disconnect();
  }
  throw new Error(`no worker ran ${prefix}`);
}

/** A worker of one test (killed by afterAll should the test fail). */
async function worker(id: string, remote: string, labels: string[] = [], dir = path.join(scratch, `worker-${id}`)): Promise<TestWorker> {
  const started = await startWorker({ id, redisUrl: redis.url, remote, dir, labels });
  workers.push(started);
  return started;
}

/** Adds `data` to its queue without waiting for it. */
async function addJob(data: AgentJobData): Promise<void> {
  const queue = new Queue(queueOf(data), { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    const signed = testDispatchKey.sign('agent-job', data.job_id, data);
    // (awaited, as an orchestrator awaits its job: issue 17 — until produced, or a while)
    await holdTestClaim(redis.port, data.job_id, signed.sig);
    await queue.add('agent', signed, { jobId: data.job_id });
  } finally {
    await queue.close();
  }
}

/** Resolves when `check` holds (every 50 ms), or rejects naming `what` after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The commit of `branch` on the bare repository of a `file://` remote. */
function remoteBranch(remote: string, branch: string): string {
  return spawnSync('git', ['--git-dir', remote.slice('file://'.length), 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' }).stdout.trim();
}

/** The worker of `pool` that logged the start of job `jobId`. */
async function runnerOf(pool: TestWorker[], jobId: string): Promise<TestWorker> {
  let found: TestWorker | undefined;
  await until(() => (found = pool.find((candidate) => candidate.log().includes(`job ${jobId}: agent`))) !== undefined, 20_000, `a worker to start ${jobId}`);
  return found!;
}

const branchA = 'polywave/hostile/wave1-agent-A';

describe('attacks on polywave worker and the Redis dispatcher (attack-dispatch.md)', () => {
  it('F10: a database Redis does not have is refused at the start check, never silently db 0', async () => {
    await expect(assertRedisReachable(`${redis.url}/99`)).rejects.toMatchObject({ code: 'DISPATCH_INVALID_URL', exitCode: 2, message: `${redis.url}/99: Redis refuses database 99 (ERR DB index is out of range); nothing was started` });
    await expect(assertRedisReachable(`${redis.url}/15`)).resolves.toBeUndefined();
  });

  // Outside attack A18-14 / A18-01: a second worker on the --dir of a live one emptied its running job's worktree and
  // script at its start; one whose --dir lay inside another's could not be hidden from (and read the outer one's work).
  it('A18-14/A18-01: a --dir a live worker holds, or one inside or around it, is refused (DISPATCH_WORKER_DIR_IN_USE) and nothing of it touched; a dead holder does not count', async () => {
    const dir = path.join(scratch, 'worker-held');
    const remote = `file://${remoteDir}`;
    const holder = await startWorker({ id: 'h-held', redisUrl: redis.url, remote, dir });
    try {
      const planted = path.join(dir, 'work', 'running-job', 'src', 'wip.js');
      mkdirSync(path.dirname(planted), { recursive: true });
      writeFileSync(planted, 'work in progress\n');
      const args = (at: string, id: string) => ['worker', '--redis', redis.url, '--remote', remote, '--dir', at, '--id', id];
      const [same, inner, outer] = await Promise.all([
        runCli(args(dir, 'h-same'), { env: gitEnv, timeoutMs: 20_000 }),
        runCli(args(path.join(dir, 'inner'), 'h-inner'), { env: gitEnv, timeoutMs: 20_000 }),
        runCli(args(scratch, 'h-outer'), { env: gitEnv, timeoutMs: 20_000 }),
      ]);
      expect([same.code, same.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[DISPATCH_WORKER_DIR_IN_USE\]: --dir \S+worker-held is the --dir of a live worker \(pid \d+\): give each worker its own\n$/)]);
      expect([inner.code, inner.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[DISPATCH_WORKER_DIR_IN_USE\]: --dir \S+worker-held\/inner lies inside \S+worker-held, the --dir of a live worker/)]);
      expect([outer.code, outer.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[DISPATCH_WORKER_DIR_IN_USE\]: --dir \S+ lies around \S+, the --dir of a live worker/)]);
      expect(readFileSync(planted, 'utf8')).toBe('work in progress\n');
      expect(existsSync(path.join(dir, 'inner'))).toBe(false);
    } finally {
      holder.child.kill('SIGKILL');
      await holder.exited;
    }
    // Killed: its hold is gone with it — a new worker takes the directory.
    const next = await startWorker({ id: 'h-held2', redisUrl: redis.url, remote, dir });
    try {
      // A18-18: its entry gone from the registry (the file cleaned away or re-created), the running worker puts it back
      // with its next heartbeat — until then the sandboxes planned elsewhere would not hide it.
      const registry = path.join('/tmp', `polywave-scratch-${process.getuid!()}`, 'workers');
      const real = realpathSync(dir);
      expect(readFileSync(registry, 'utf8').split('\n')).toContain(real);
      const rest = readFileSync(registry, 'utf8').split('\n').filter((line) => line !== '' && line !== real);
      writeFileSync(`${registry}.a18`, rest.map((line) => `${line}\n`).join(''), { mode: 0o600 });
      renameSync(`${registry}.a18`, registry);
      await until(() => readFileSync(registry, 'utf8').split('\n').includes(real), 10_000, 'the worker to register its --dir again');
    } finally {
      next.child.kill('SIGKILL');
      await next.exited;
    }
  }, 60_000);

  // Outside attack A19-12: a closed session's SIGHUP (node drops `nohup`'s ignore) killed a worker at once with no word,
  // its running job left to stall and its --dir held. It stops as on the first SIGTERM now: said, clean, the hold released.
  it('A19-12: SIGHUP stops a worker as the first SIGTERM does (said, exit 0, its --dir free again)', async () => {
    const dir = path.join(scratch, 'worker-hup');
    const hup = await startWorker({ id: 'h-hup', redisUrl: redis.url, remote: `file://${remoteDir}`, dir });
    hup.child.kill('SIGHUP');
    expect(await hup.exited).toBe(0);
    expect(hup.log()).toMatch(/SIGHUP: finishing the running job\(s\), then stopping/);
    expect(hup.log()).toMatch(/stopped/);
    expect(existsSync(path.join(dir, '.polywave-worker.pid'))).toBe(false);
  }, 60_000);

  // Outside attack A17-18: a worker started against a remote that never answers (a black-holed ssh host) printed
  // nothing and ran for ever, its new --dir left behind. Here the "host" is an ssh command that never answers.
  it('A17-18: a remote that does not answer → DISPATCH_REMOTE_UNREACHABLE within the bound, no --dir left', async () => {
    const silent = path.join(scratch, 'silent-ssh');
    writeFileSync(silent, '#!/bin/sh\nexec sleep 60\n', { mode: 0o755 });
    const dir = path.join(scratch, 'worker-blackhole');
    const began = Date.now();
    await expect(
      startWorkerInProcess({ redisUrl: redis.url, remote: 'ssh://git:tok3n@blackhole.invalid/repo.git', dir, concurrency: 1, labels: [], id: 'blackhole', env: { ...process.env, ...gitEnv, GIT_SSH_COMMAND: silent }, remoteCheckMs: 1500, log: () => undefined }),
    ).rejects.toMatchObject({ code: 'DISPATCH_REMOTE_UNREACHABLE', message: expect.stringMatching(/no answer within 1500 ms/) });
    expect(Date.now() - began).toBeLessThan(15_000);
    expect(existsSync(dir)).toBe(false);
  });

  // Outside attack A18-11: a remote that answered `ls-remote`, then went silent on the clone (it died, or stalls sending
  // the pack) hung the worker's start for ever with no word, its new --dir left behind. The "host" here is an ssh
  // command that serves the first call (the check) from the real bare remote and never answers the next (the clone).
  it('A18-11: a remote that answers the check, then stalls the clone → DISPATCH_REMOTE_UNREACHABLE once nothing arrived for the bound, no --dir left', async () => {
    const count = path.join(scratch, 'stall-ssh.count');
    const stalling = path.join(scratch, 'stall-ssh');
    writeFileSync(stalling, `#!/bin/sh\n[ "$1" = "-G" ] && exit 0\nn=$(( $(cat ${count} 2>/dev/null || echo 0) + 1 )); echo $n > ${count}\nshift $(( $# - 1 ))\nif [ $n -le 1 ]; then exec sh -c "$1"; else exec sleep 60; fi\n`, { mode: 0o755 });
    const dir = path.join(scratch, 'worker-stalled-clone');
    const began = Date.now();
    await expect(
      startWorkerInProcess({ redisUrl: redis.url, remote: `ssh://git@stalls.invalid${remoteDir}`, dir, concurrency: 1, labels: [], id: 'stalled-clone', env: { ...process.env, ...gitEnv, GIT_SSH_COMMAND: stalling }, remoteCheckMs: 10_000, cloneStallMs: 1500, log: () => undefined }),
    ).rejects.toMatchObject({ code: "DISPATCH_REMOTE_UNREACHABLE", message: expect.stringMatching(/^cannot clone the shared remote ssh:\/\/\S*stalls\.invalid\S+: nothing received for 1500 ms \(the remote answered, then went silent\); nothing was started$/) });
    // the check was answered (one call), the clone was the second
    expect(readFileSync(count, 'utf8').trim()).toBe('2');
    expect(Date.now() - began).toBeLessThan(15_000);
    expect(existsSync(dir)).toBe(false);
  });

  // Outside attack A19-16: a worker SIGKILLed during its start clone left the `git clone` running, orphaned, into
  // `<dir>/repo.git` — the directory the restarted worker then used (it saw `HEAD` there and took the half-made clone).
  // The clone now runs into a name of its own and is renamed into place once complete; a half-made `repo.git` from
  // before (no mark, no ref) and a killed start's part are removed, not used.
  it('A19-16: the start clone runs into a temporary name (never repo.git while it runs); a half-made repo.git and a killed start\'s part are replaced, not used', async () => {
    // 1. While the clone runs (here: a remote that answers the check, then stalls the clone), repo.git does not exist.
    const count = path.join(scratch, 'part-ssh.count');
    const stalling = path.join(scratch, 'part-ssh');
    writeFileSync(stalling, `#!/bin/sh\n[ "$1" = "-G" ] && exit 0\nn=$(( $(cat ${count} 2>/dev/null || echo 0) + 1 )); echo $n > ${count}\nshift $(( $# - 1 ))\nif [ $n -le 1 ]; then exec sh -c "$1"; else exec sleep 60; fi\n`, { mode: 0o755 });
    const stalled = path.join(scratch, 'worker-part-clone');
    const seen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const entry of existsSync(stalled) ? readdirSync(stalled) : []) seen.add(entry.replace(/\.part-.*$/, '.part-*'));
        await sleep(20);
      }
    })();
    await expect(
      startWorkerInProcess({ redisUrl: redis.url, remote: `ssh://git@stalls.invalid${remoteDir}`, dir: stalled, concurrency: 1, labels: [], id: 'part-clone', env: { ...process.env, ...gitEnv, GIT_SSH_COMMAND: stalling }, remoteCheckMs: 10_000, cloneStallMs: 1500, log: () => undefined }),
    ).rejects.toMatchObject({ code: 'DISPATCH_REMOTE_UNREACHABLE' });
    watching = false;
    await watcher;
    expect(seen.has('repo.git.part-*')).toBe(true);
    expect(seen.has('repo.git')).toBe(false);
    // 2. A --dir left by a worker killed during its clone (before the fix: `repo.git` with HEAD, a pack being received,
    // no ref) and by one killed during a clone into its part: both go, the remote is cloned anew.
    const remoteGitDir = mirrors.r16.slice('file://'.length);
    spawnSync('git', ['--git-dir', remoteGitDir, 'update-ref', 'refs/heads/h16', base], { env: { ...process.env, ...gitEnv } });
    const dir = path.join(scratch, 'worker-half-clone');
    const half = path.join(dir, 'repo.git');
    const init = spawnSync('git', ['init', '--quiet', '--bare', half], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
    expect(init.status, init.stderr).toBe(0);
    mkdirSync(path.join(half, 'objects', 'pack'), { recursive: true });
    writeFileSync(path.join(half, 'objects', 'pack', 'tmp_pack_orphan'), 'half a pack');
    mkdirSync(path.join(dir, 'repo.git.part-1-orphan', 'objects'), { recursive: true });
    const logged: string[] = [];
    const started = await startWorkerInProcess({ redisUrl: redis.url, remote: mirrors.r16, dir, concurrency: 1, labels: ['half-clone'], id: 'half-clone', env: { ...process.env, ...gitEnv }, log: (line) => logged.push(line) });
    try {
      const head = spawnSync('git', ['--git-dir', half, 'rev-parse', '--verify', 'refs/heads/h16'], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
      expect(head.stdout.trim(), head.stderr).toBe(base);
      expect(existsSync(path.join(half, 'objects', 'pack', 'tmp_pack_orphan'))).toBe(false);
      expect(readdirSync(dir).filter((entry) => entry.startsWith('repo.git'))).toEqual(['repo.git']);
      expect(logged.join('\n')).toContain('a clone that never completed');
    } finally {
      await started.close(true);
    }
  }, 60_000);

  // First and alone: it kills the only worker with the label (which also serves the unlabelled queue).
  it('F4: the only worker with a job’s label dies mid-job → DISPATCH_NO_WORKER within seconds, the job removed (no hang)', async () => {
    const target = await createDispatchRepo('rare', lettersScript({ A: ['sleep_ms: 30000'] }), { remoteDir, waves: [['A', 'B']], config: { dispatch: { labels: { A: ['rare'] }, label_wait_seconds: 1 } } });
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 80_000 });
    const { worker, job: jobId } = await runningJob('rare.w1.A.', 30_000);
    expect(worker).toBe('h-rare');
    rare.child.kill('SIGKILL');
    const killedAt = Date.now();
    const run = await running;
    const result = waveResult(run);
    expect(run.code).toBe(1);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked!.agents.map((agent) => agent.agent)).toEqual(['A']);
    expect(result.blocked!.agents[0]!.explanation).toContain(`DISPATCH_NO_WORKER: no live worker has the label(s) rare any more (waited 1 s); job ${jobId} was removed`);
    // A21-23: nor only "start one": a worker of the labels may be paused on its disk.
    expect(result.blocked!.agents[0]!.explanation).toContain('a worker of them may also be paused, its --dir full or read-only');
    // Well before the agent's 30 s sleep would have ended (registry expiry ~6 s + label wait + poll).
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    const queue = new Queue(queueNameFor(['rare'], remoteKey(remoteDir)), { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      expect(await Job.fromId(queue, jobId)).toBeUndefined();
    } finally {
      await queue.close();
    }
  }, 90_000);

  it.concurrent('F1: a job_id that is a path (or not the id its content implies) is refused before anything is touched', async ({ expect }) => {
    const victim = path.join(scratch, 'victim');
    mkdirSync(victim, { recursive: true });
    writeFileSync(path.join(victim, 'keep.txt'), 'precious\n');
    const valid = job();
    const answers = await Promise.all([
      produce(job({ job_id: '../../victim' })),
      produce(job({ job_id: '../../owned/evil', script_text: 'version: 1\nsteps:\n  - text: hi\n' })),
      // The right grammar, stored under another BullMQ id / with other content than the id names.
      produce(valid, `${valid.job_id.slice(0, -12)}000000000000`),
      produce(job({ job_id: valid.job_id, prompt: 'other content' })),
    ]);
    expect(answers.map((answer) => answer.error)).toEqual([
      'DISPATCH_INVALID_JOB: job_id "../../victim" is not a job id (<slug>.w<N>.<agent>.<base12>.a<attempt>.<digest12>)',
      'DISPATCH_INVALID_JOB: job_id "../../owned/evil" is not a job id (<slug>.w<N>.<agent>.<base12>.a<attempt>.<digest12>)',
      `DISPATCH_INVALID_JOB: job_id "${valid.job_id}" is not the id the job is stored under ("${valid.job_id.slice(0, -12)}000000000000")`,
      expect.stringMatching(new RegExp(`^DISPATCH_INVALID_JOB: job_id "${valid.job_id.replace(/\./g, '\\.')}" does not match the job's content \\(expected hostile\\.w1\\.A\\.[0-9a-f]{12}\\.a1\\.[0-9a-f]{12}\\)$`)),
    ]);
    expect(readFileSync(path.join(victim, 'keep.txt'), 'utf8')).toBe('precious\n');
    expect(existsSync(path.join(scratch, 'owned'))).toBe(false);
    expect(readdirSync(scratch).sort()).toEqual(expect.not.arrayContaining(['evil.yaml', 'owned']));
  }, 60_000);

  it.concurrent('F2: a job model that names its own endpoint never gets the worker’s key (refused unless --model-allow)', async ({ expect }) => {
    const requests: string[] = [];
    const server = http.createServer((request, response) => {
      requests.push(String(request.headers.authorization));
      response.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const answer = await produce(job({ model: `openai-compatible:http://127.0.0.1:${port}/v1#gpt`, script_text: undefined }));
      expect(answer.error).toBe(`DISPATCH_INVALID_JOB: model "openai-compatible:http://127.0.0.1:${port}/v1#gpt": names its own endpoint, which would receive this worker's credentials; start the worker with --model-allow <prefix> (e.g. --model-allow openai-compatible:http://gateway:4000/) to allow it; no live worker of its label(s) allows it`);
      const scriptPath = await produce(job({ model: 'script:/etc/passwd', script_text: undefined }));
      expect(scriptPath.error).toBe('DISPATCH_INVALID_JOB: model "script:/etc/passwd": a script job carries its script as text (script_text), never a path on the worker');
      expect(requests).toEqual([]);
      expect(main.log()).toContain('models also allowed: openai-compatible:http://gateway.invalid/');
    } finally {
      server.close();
    }
  }, 60_000);

  it.concurrent('F3: a job’s bash step does not see the worker’s model key (nothing to commit and push)', async ({ expect }) => {
    const script = ['version: 1', 'steps:', '  - bash: "printenv OPENAI_API_KEY > src/a.js; echo rc=$? >> src/a.js"', '  - commit: leak', '  - report: { status: complete, verification: PASS, notes: done }', ''].join('\n');
    const answer = await produce(job({ script_text: script }));
    expect(answer.error).toBeUndefined();
    expect(answer.value!.head).toMatch(/^[0-9a-f]{40}$/);
    const shown = spawnSync('git', ['--git-dir', remoteDir, 'show', `${answer.value!.head}:src/a.js`], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
    expect(shown.stdout).toBe('rc=1\n');
  }, 60_000);

  it.concurrent('F5: a redo of a wave with another script runs the new script (the old job’s result is not reused); F8: the remote’s credentials never reach Redis or the output', async ({ expect }) => {
    // F8: the orchestrator's remote carries a token (git takes userinfo in a file:// URL too).
    const target = { ...redo, remote: `file://x-access-token:ghp_H6SECRET@localhost${redo.remoteDir}` };
    const start = await target.repo.git.headCommit();
    const firstRun = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 80_000 });
    const first = waveResult(firstRun);
    expect(first.state).toBe('WAVE_VERIFIED');
    expect(`${firstRun.stdout}${firstRun.stderr}`).not.toContain('ghp_H6SECRET');
    const client = new Redis(redis.url);
    try {
      const stored = JSON.parse((await client.hget(`bull:${queueNameFor([], remoteKey(remoteDir))}:${first.agents[0]!.attempts[0]!.dispatch!.job_id}`, 'data'))!) as AgentJobData;
      expect(stored.remote).toBe(`file://localhost${redo.remoteDir}`);
    } finally {
      client.disconnect();
    }
    expect(target.repo.read('src/a.js')).toBe("export const a = 'a';\n");
    // Put the repository back and redo the wave with a script that writes something else.
    const worktrees = (await target.repo.run(['worktree', 'list', '--porcelain'])).split('\n').filter((line) => line.startsWith('worktree '));
    // (the first is the main checkout)
    for (const line of worktrees.slice(1)) await target.repo.run(['worktree', 'remove', '--force', line.slice('worktree '.length)]);
    await target.repo.run(['reset', '--quiet', '--hard', start]);
    for (const branch of await target.repo.git.listBranches('polywave/')) await target.repo.run(['branch', '-D', branch.name]);
    writeFileSync(target.scriptPath, lettersScript().replace("export const a = 'a'", "export const a = 'REDO-a'"));
    const second = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 80_000 }));
    expect(second.state).toBe('WAVE_VERIFIED');
    expect(target.repo.read('src/a.js')).toBe("export const a = 'REDO-a';\n");
    const ids = [first, second].map((result) => result.agents.find((agent) => agent.agent === 'A')!.attempts[0]!.dispatch!.job_id);
    expect(ids[0]!.slice(0, -13)).toBe(ids[1]!.slice(0, -13));
    expect(ids[0]).not.toBe(ids[1]);
  }, 180_000);

  it.concurrent('F4: a running job deleted from Redis (lost with a non-persistent Redis, a hostile DEL) is added again and the wave completes', async ({ expect }) => {
    const target = lost;
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 110_000 });
    const { job: jobId } = await runningJob('lost.w1.A.', 60_000);
    const client = new Redis(redis.url);
    try {
      const queue = queueNameFor([], remoteKey(remoteDir));
      expect(await client.del(`bull:${queue}:${jobId}`)).toBe(1);
      await client.lrem(`bull:${queue}:active`, 0, jobId);
    } finally {
      client.disconnect();
    }
    const run = await running;
    const result = waveResult(run);
    expect(result.state, JSON.stringify(result.blocked ?? run.stderr.slice(-1500))).toBe('WAVE_VERIFIED');
    const agentA = result.agents.find((agent) => agent.agent === 'A')!;
    const evidence = `${JSON.stringify(agentA.attempts)}\n${main.log()}\n${rare.log()}`;
    // Exactly one attempt, also in the race where the lost copy passed its lock check and pushed after the
    // copy added again started and read the branch for its lease: that copy finds the branch's head among
    // the commits runs of THIS job pushed (polywave:pushed:<job id>) and, its lock still its own, pushes
    // over it (F12 still refuses another job's push: the twins test).
    expect(agentA.attempts, evidence).toHaveLength(1);
    expect(agentA.attempts[0]!.dispatch!.job_id).toBe(jobId);
    const history = await target.repo.run(['log', '--format=%h %p %s', '--name-status', '-n', '12']);
    expect(existsSync(path.join(target.repo.dir, 'src/a.js')), `${evidence}\n${history}`).toBe(true);
    expect(target.repo.read('src/a.js')).toBe("export const a = 'a';\n");
    // It ran at least twice (the lost copy, then the one added again — on another worker, or here after the
    // first); only the accepted copy pushed (F12). A third run is BullMQ's at-least-once delivery on a starved
    // machine (seen in CI at load ~25: the tests' workers hold 2.5 s locks, renewed every 1.25 s, and a late
    // renewal makes the copy running count as stalled): still one attempt, one report, one merge (above).
    const runs = `${main.log()}\n${rare.log()}`.split('\n').filter((line) => line.includes(`job ${jobId}: agent A`));
    expect(runs.length, evidence).toBeGreaterThanOrEqual(2);
    expect(runs.length, evidence).toBeLessThanOrEqual(4);
    const merges = (await target.repo.run(['log', '--merges', '--format=%s'])).split('\n').filter((subject) => subject.startsWith('Merge ') && subject.includes('-agent-A'));
    expect(merges, evidence).toHaveLength(1);
  }, 120_000);

  it.concurrent('F4: a job that runs past the agent’s limit + the margin on a live worker that never answers fails as a timeout (no hang)', async ({ expect }) => {
    // A "worker" that takes jobs of its label and never finishes them (BullMQ keeps renewing the lock) and a live registry record.
    const connection = { host: '127.0.0.1', port: redis.port };
    const hung = new Worker(queueNameFor(['hung'], remoteKey(remoteDir)), () => new Promise(() => undefined), { connection, lockDuration: 2000 });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-hung', host: 'test', pid: 1, labels: ['hung'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remoteDir) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-B';
    const worktree = hostile.repo.sibling('wt-hung-B');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base: base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote: `file://${remoteDir}`, cwd: scratch, env, labels: { B: ['hung'] }, pollMs: 200, runMarginMs: 1000 });
    try {
      const started = Date.now();
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'B', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'p', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/b.js'], branch }, limits: { timeoutMs: 1000 }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'B', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.status).toBe('timeout');
      expect(result.outcome.failure).toEqual({ kind: 'transient', message: `job ${result.dispatch!.job_id} ran for more than 2 s on a worker (the agent's limit + 1 s) without a result` });
      expect(Date.now() - started).toBeLessThan(15_000);
      // A22-24: the run given up on is marked, so its worker stops it (test/worker-given-up.test.ts) instead of running on.
      expect(await client.exists(givenUpKey(queueNameFor(['hung'], remoteKey(remoteDir)), result.dispatch!.job_id))).toBe(1);
    } finally {
      await dispatcher.close();
      await hung.close(true);
      client.disconnect();
    }
  }, 60_000);

  // Outside attack A19-20: the watch measured a job's run time from BullMQ's `processedOn` — the WORKER's clock: a worker
  // whose clock is behind by more than the agent's limit + the margin made every job it took "time out" at the first
  // poll (and the agent run again beside it). Now on the orchestrator's own clock. A real worker 10 min behind (a
  // `--require` preload moving Date.now), on a remote of its own.
  it.concurrent('A19-20: a worker whose clock is 10 min behind runs its job to the end — no "timeout" (the run time is the orchestrator\'s clock)', async ({ expect }) => {
    const remote = mirrors.r20;
    const preload = path.join(scratch, 'clock-behind.cjs');
    writeFileSync(preload, 'const real = Date.now;\nconst skew = Number(process.env.PW_TEST_SKEW_MS || 0);\nDate.now = () => real() + skew;\n');
    const lagging = await startWorker({ id: 'lag', redisUrl: redis.url, remote, dir: path.join(scratch, 'worker-lag'), env: { NODE_OPTIONS: `--require ${preload}`, PW_TEST_SKEW_MS: '-600000' } });
    workers.push(lagging);
    const branch = 'polywave/hostile/wave1-agent-K';
    const worktree = hostile.repo.sibling('wt-lag-K');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const scriptPath = hostile.repo.sibling('lag-K.yaml');
    writeFileSync(scriptPath, ['version: 1', 'steps:', '  - write: { path: src/k.js, content: "export const k = 1;\\n" }', '  - bash: "sleep 1"', '  - commit: "feat(K): k"', '  - report: { status: complete, verification: PASS, notes: "done" }', ''].join('\n'));
    const env = { ...process.env, ...gitEnv };
    // The agent's limit 60 s + 1 s: a worker 600 s behind read as having run for 600 s at the first poll.
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, pollMs: 200, runMarginMs: 1000 });
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'K', role: 'wave', wave: 1, model: `script:${scriptPath}`, systemPrompt: 's', prompt: 'lag', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/k.js'], branch }, limits: { timeoutMs: 60_000 }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'K', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.failure).toBeUndefined();
      expect(result.outcome.status).toBe('finished');
      expect(result.dispatch?.worker).toBe('lag');
      expect(lagging.log().split('\n').filter((line) => /job hostile\.w1\.K\.\S+: agent K /.test(line))).toHaveLength(1);
      // A19-05: the run's number, handed out by Redis, in its progress (the job's first run: 1)
      const queue = new Queue(queueNameFor([], remoteKey(remote)), { connection: { host: '127.0.0.1', port: redis.port } });
      try {
        expect(((await Job.fromId(queue, result.dispatch!.job_id))?.progress as { run_no?: unknown } | undefined)?.run_no).toBe(1);
      } finally {
        await queue.close();
      }
    } finally {
      await dispatcher.close();
      lagging.child.kill('SIGKILL');
    }
  }, 120_000);

  // One pool of two workers on a remote of its own, one attack after the other (3 worker starts in all, not 6).
  it.concurrent('F7, F12, F14, F13: a busy labelled worker holds no other job; a resumed worker never pushes over the accepted branch; the second SIGTERM hands the job back unpushed; a worker SIGKILLed and restarted on its --dir runs later jobs of the branch', async ({ expect }) => {
    const remote = mirrors.r12;
    const labelled = await worker('kpa', remote, ['gpu']);
    const plain = await worker('kpb', remote);
    const pool = [labelled, plain];
    try {
      // F7: the labelled worker runs a long gpu job; unlabelled jobs added meanwhile all go to the idle worker
      // (one may run on the labelled worker only once its long job is over).
      const long = job({ remote, labels: ['gpu'], script_text: lettersScript({ A: ['sleep_ms: 6000'] }) });
      await addJob(long);
      await runnerOf([labelled], long.job_id);
      // Other agents' jobs (each pushes its own branch; jobs of one branch at once would be refused their push, F12).
      const quick = ['B', 'C', 'D'].map((agent) => job({ remote, agent, branch: `polywave/hostile/wave1-agent-${agent}`, owned_files: [`src/${agent.toLowerCase()}.js`, `src/${agent.toLowerCase()}.test.js`] }));
      const answers = await Promise.all(
        quick.map(async (data, index) => {
          await sleep(300 * index);
          return produce(data);
        }),
      );
      const longValue = (await produce(long)).value!;
      expect(answers.map((answer) => answer.error)).toEqual([undefined, undefined, undefined]);
      expect(answers.filter((answer) => answer.value!.worker === 'kpb').length).toBeGreaterThan(0);
      for (const answer of answers) if (answer.value!.worker === 'kpa') expect(answer.value!.started_at).toBeGreaterThanOrEqual(longValue.finished_at);
      const client = new Redis(redis.url);
      try {
        expect((await listWorkers(client)).find((record) => record.id === 'kpa')!.remote_key).toBe(remoteKey(remote));
      } finally {
        client.disconnect();
      }

      // F12: two jobs of one agent branch at once on the two workers (two runs of the agent): the one that
      // pushes second finds the branch moved since it started and pushes nothing — never last-writer-wins.
      // (different files, so that their commits differ even when made in the same second)
      const twins = await Promise.all(['t1', 't2'].map((text) => produce(job({ remote, script_text: lettersScript({ A: ['sleep_ms: 1500'] }).replace("export const a = 'a'", `export const a = '${text}'`) }))));
      const won = twins.filter((twin) => twin.error === undefined);
      const lost = twins.filter((twin) => twin.error !== undefined);
      expect(won.length).toBeGreaterThan(0);
      if (lost.length > 0) {
        expect(lost[0]!.error).toMatch(/^DISPATCH_BRANCH_MOVED: polywave\/hostile\/wave1-agent-A on the shared remote file:\/\/\S+ moved while job hostile\.w1\.A\.\S+ ran \(another run of it pushed\); not pushed over it$/);
        expect(remoteBranch(remote, branchA)).toBe(won[0]!.value!.head);
      } else {
        // (one worker ran both, one after the other: the second found the first's push when it started)
        const [one, two] = twins.map((twin) => twin.value!).sort((left, right) => left.started_at - right.started_at);
        expect(two!.started_at).toBeGreaterThanOrEqual(one!.finished_at - 1000);
      }

      // F12: the worker running a job is stopped; its lock lapses (2.5 s), the other worker's stalled check hands the job on.
      const data = job({ remote, script_text: lettersScript({ A: ['sleep_ms: 2000'] }) });
      await addJob(data);
      const stopped = await runnerOf(pool, data.job_id);
      stopped.child.kill('SIGSTOP');
      const other = pool.find((candidate) => candidate !== stopped)!;
      const answer = await produce(data);
      stopped.child.kill('SIGCONT');
      expect(answer.error).toBeUndefined();
      expect(answer.value!.worker).toBe(other.id);
      expect(remoteBranch(remote, branchA)).toBe(answer.value!.head);
      // (stopped before its agent ran — in A25-11's wait for its claim to be written again — the resumed worker refuses the
      // job instead, its claim long gone: it pushes nothing either way)
      await until(() => stopped.log().includes(`job ${data.job_id}: its lock was lost`) || stopped.log().includes(`job ${data.job_id}: refused`), 30_000, 'the resumed worker to find its lock lost or its claim gone');
      expect(remoteBranch(remote, branchA)).toBe(answer.value!.head);
      expect(stopped.log()).not.toContain(`job ${data.job_id}: complete`);

      // F14: SIGTERM twice to the worker running a 5 s job: it aborts the agent (the log says so, and no
      // `complete`), pushes nothing and exits.
      const next = job({ remote, script_text: lettersScript({ A: ['sleep_ms: 5000'] }), prompt: 'f14' });
      await addJob(next);
      const victim = await runnerOf(pool, next.job_id);
      const taker = pool.find((candidate) => candidate !== victim)!;
      victim.child.kill('SIGTERM');
      await until(() => victim.log().includes('SIGTERM: finishing'), 10_000, 'the first signal');
      victim.child.kill('SIGTERM');
      const signalledAt = Date.now();
      expect(await victim.exited).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(15_000);
      expect(victim.log()).toContain(`job ${next.job_id}: handed back (nothing pushed)`);
      expect(victim.log()).not.toContain(`job ${next.job_id}: complete`);
      const handed = await produce(next);
      expect(handed.error).toBeUndefined();
      expect(handed.value!.worker).toBe(taker.id);
      expect(remoteBranch(remote, branchA)).toBe(handed.value!.head);

      // F13: the last worker is SIGKILLed while it runs a job and restarted on the same --dir: the killed
      // job's worktree (the agent branch checked out) is removed at start, and attempt 2 of the agent runs.
      const dir = path.join(scratch, `worker-${taker.id}`);
      const first = job({ remote, script_text: lettersScript({ A: ['sleep_ms: 30000'] }), prompt: 'f13' });
      await addJob(first);
      await runnerOf([taker], first.job_id);
      await until(() => existsSync(path.join(dir, 'work', first.job_id)), 10_000, 'the killed job’s worktree');
      taker.child.kill('SIGKILL');
      await taker.exited;
      // The killed copy is not run again (it would sleep 30 s): gone from Redis, as after the orchestrator failed it.
      const cleaner = new Redis(redis.url);
      try {
        await cleaner.del(`bull:${queueOf(first)}:${first.job_id}`);
        await cleaner.lrem(`bull:${queueOf(first)}:active`, 0, first.job_id);
      } finally {
        cleaner.disconnect();
      }
      const restarted = await worker(taker.id, remote, taker === labelled ? ['gpu'] : [], dir);
      pool.push(restarted);
      expect(existsSync(path.join(dir, 'work', first.job_id))).toBe(false);
      const second = await produce(job({ remote, attempt: 2, prompt: 'f13' }));
      expect(second.error).toBeUndefined();
      expect(second.value!.worker).toBe(taker.id);
      expect(remoteBranch(remote, branchA)).toBe(second.value!.head);
    } finally {
      for (const member of pool) member.child.kill('SIGKILL');
    }
  }, 240_000);

  it.concurrent('issue 17 item 4 (E23A): a worker SIGKILLed mid-job → the job reruns on another worker whose agent gets the journal recovered from the job’s progress; the orchestrator’s journal keeps both runs’ entries', async ({ expect }) => {
    const remote = mirrors.r17;
    // The first worker's agent waits in bash ($J_SLOW s) until it is killed; the taker's does not wait.
    const spawnWorker = async (id: string, slow: string) => {
      const started = await startWorker({ id, redisUrl: redis.url, remote, dir: path.join(scratch, `worker-${id}`), env: { J_SLOW: slow } });
      workers.push(started);
      return started;
    };
    const first = await spawnWorker('ja', '60');
    const pool = [first];
    const branch = 'polywave/hostile/wave1-agent-D';
    const worktree = hostile.repo.sibling('wt-journal-D');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    // The rerun fails unless its prompt carries the first run's write and command (E23A summary).
    const scriptPath = hostile.repo.sibling('journal-D.yaml');
    writeFileSync(scriptPath, ['version: 1', 'steps:', '  - write: { path: src/d.js, content: "export const d = 1;\\n" }', '  - bash: "echo journal-marker-j"', '  - bash: \'sleep "${J_SLOW:-0}"\'', '  - expect_prompt: "## Session Context (Recovered from Tool Journal)"', '  - expect_prompt: "- src/d.js"', '  - expect_prompt: "`echo journal-marker-j`"', '  - commit: "feat(D): d"', '  - report: { status: complete, verification: PASS, notes: "done" }', ''].join('\n'));
    const journal = journalPaths(hostile.repo.dir, 'hostile', 1, 'D');
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, pollMs: 200 });
    const queue = new Queue(queueNameFor([], remoteKey(remote)), { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      const running = dispatcher.runAgentJob({
        options: { agentId: 'D', role: 'wave', wave: 1, model: `script:${scriptPath}`, systemPrompt: 's', prompt: 'journal', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/d.js'], branch }, env, journal },
        context: { slug: 'hostile', wave: 1, agentId: 'D', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      let jobId = '';
      await until(() => (jobId = /job (\S+): agent D of hostile/.exec(first.log())?.[1] ?? '') !== '', 60_000, 'the first worker to start the job');
      const second = await spawnWorker('jb', '0');
      pool.push(second);
      const relayed = async () => ((await Job.fromId(queue, jobId))?.progress as { journal?: unknown[] } | undefined)?.journal?.length ?? 0;
      // The write, the echo (use + result each) and the waiting bash call reached Redis: the worker dies.
      await until(async () => (await relayed()) >= 5, 60_000, 'the relayed journal');
      first.child.kill('SIGKILL');
      const result = await running;
      expect(result.outcome.failure).toBeUndefined();
      expect(result.outcome.status).toBe('finished');
      expect(result.dispatch!.worker).toBe(second.id);
      expect(result.dispatch!.stalls).toBe(1);
      expect(second.log()).toContain(`job ${jobId}: journal recovered from an earlier run (5 entries)`);
      // Both runs' entries in the orchestrator's journal: the first run's five, then the rerun's.
      const entries = await readJournal(journal.index);
      const pairs = (...tools: string[]) => tools.flatMap((tool) => [`tool_use:${tool}`, `tool_result:${tool}`]);
      expect(entries.map((entry) => `${entry.kind}:${entry.tool_name}`)).toEqual([...pairs('write_file', 'bash'), 'tool_use:bash', ...pairs('write_file', 'bash', 'bash', 'git_commit', 'set_completion')]);
      expect(entries.filter((entry) => entry.input?.command === 'echo journal-marker-j')).toHaveLength(2);
      expect(entries.every((entry) => entry.content_file === undefined)).toBe(true);
    } finally {
      await dispatcher.close();
      await queue.close();
      for (const member of pool) member.child.kill('SIGKILL');
    }
  }, 180_000);

  it.concurrent('F6: a job of another shared remote is never taken; a remote no worker serves fails DISPATCH_NO_WORKER naming it', async ({ expect }) => {
    const remote = mirrors.r6;
    const foreign = job({ remote });
    await addJob(foreign);
    await sleep(1500);
    const queue = new Queue(queueOf(foreign), { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      expect(await (await Job.fromId(queue, foreign.job_id))!.getState()).toBe('waiting');
      expect(main.log()).not.toContain(foreign.job_id);
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
    const branch = 'polywave/hostile/wave1-agent-B';
    const worktree = path.join(scratch, 'wt-f6-B');
    mkdirSync(worktree, { recursive: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labelWaitMs: 500, pollMs: 200 });
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'B', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'p', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/b.js'], branch }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'B', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.failure).toEqual({ kind: 'config', message: `DISPATCH_NO_WORKER: no live worker of the shared remote ${remote} (key ${remoteKey(remote)}) is connected (waited 1 s); start one with: polywave worker --redis ${redis.url} --remote ${remote}` });
    } finally {
      await dispatcher.close();
    }
  }, 120_000);

  it.concurrent('F18: a job whose base is not at its base ref even after the fetch fails with a coded transient error', async ({ expect }) => {
    const missing = '0123456789abcdef0123456789abcdef01234567';
    const answer = await produce(job({ base_commit: missing }));
    expect(answer.error).toMatch(new RegExp(`^DISPATCH_BASE_MISSING: the base 0123456789ab of job hostile\\.w1\\.A\\.0123456789ab\\.a1\\.[0-9a-f]{12} is not at refs/polywave/base/hostile/wave1 on the shared remote file://${remoteDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(the ref moved since the job was enqueued\\)$`));
  }, 120_000);

  it.concurrent('F15: oversized job fields are refused; a duplicate --id, a bad --label and a bad --remote stop the worker with one coded line (no directory left)', async ({ expect }) => {
    const big = await produce(job({ prompt: 'x'.repeat(1_000_001) }));
    expect(big.error).toMatch(/^DISPATCH_INVALID_JOB: job hostile\.w1\.A\.[0-9a-f]{12}\.a1\.[0-9a-f]{12}: prompt .*1000000/);
    const fresh = path.join(scratch, 'never-made');
    const [duplicate, label, badRemote] = await Promise.all([
      runCli(['worker', '--redis', redis.url, '--remote', `file://${remoteDir}`, '--dir', path.join(scratch, 'worker-dup'), '--id', 'h-main'], { env: gitEnv, timeoutMs: 60_000 }),
      runCli(['worker', '--redis', redis.url, '--remote', `file://${remoteDir}`, '--dir', fresh, '--label', 'Bad+L'], { env: gitEnv, timeoutMs: 60_000 }),
      runCli(['worker', '--redis', redis.url, '--remote', `file://${scratch}/missing.git`, '--dir', fresh, '--id', 'h-bad-remote'], { env: gitEnv, timeoutMs: 60_000 }),
    ]);
    expect([duplicate.code, duplicate.stderr.trim()]).toEqual([2, 'polywave: error[DISPATCH_WORKER_ID_IN_USE]: worker id h-main is in use by a live worker (polywave workers lists it); choose another --id']);
    expect([label.code, label.stderr.trim()]).toEqual([2, 'polywave: error[DISPATCH_INVALID_LABEL]: label "bad+l" must match ^[a-z0-9][a-z0-9_-]{0,31}$']);
    expect(badRemote.code).toBe(2);
    expect(badRemote.stderr).toMatch(/^polywave: error\[DISPATCH_REMOTE_UNREACHABLE\]: the shared remote file:\/\/.*missing\.git is unreachable \(git ls-remote: .*\); nothing was started\n$/);
    expect(existsSync(fresh)).toBe(false);
    expect(existsSync(path.join(scratch, 'worker-dup'))).toBe(false);
    expect(main.log()).not.toContain('stopped');
  }, 120_000);

  it.concurrent('F15: forged worker records are not listed and control characters never reach the terminal', async ({ expect }) => {
    const client = new Redis(redis.url);
    try {
      await client.set('polywave:workers:evil', JSON.stringify({ id: 'evil\u001b[31mRED\u001b]0;pwned\u0007', host: 'h', pid: 1, labels: ['gpu'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '' }), 'PX', 60_000);
      await client.set('polywave:workers:fake', JSON.stringify({ id: 'fake', host: 'h\nfake-worker\t\u001b[2J', pid: 1, labels: [], concurrency: 1, current: ['x\u001b[31m'], done: 0, started_at: '', heartbeat_at: '', remote_key: '000000000000' }), 'PX', 60_000);
      const listed = await runCli(['workers', '--redis', redis.url], { timeoutMs: 20_000 });
      expect(listed.code).toBe(0);
      expect(listed.stdout).not.toContain('evil');
      expect(listed.stdout).not.toContain('\u001b');
      expect(listed.stdout).toContain('fake\th\\x0afake-worker\\x09\\x1b[2J\tremote=000000000000\tlabels=-\tconcurrency=1\tdone=0\tcurrent=x\\x1b[31m\n');
    } finally {
      await client.del('polywave:workers:evil', 'polywave:workers:fake');
      client.disconnect();
    }
  }, 120_000);

  it.concurrent('issue 17 item 5: a worker’s events reach the orchestrator while the agent runs (each once, with the worker’s time and id), where it runs is known before the result; F4: a run pushes over a commit another run of the SAME job pushed', async ({ expect }) => {
    const remote = `file://${remoteDir}`;
    const branch = 'polywave/hostile/wave1-agent-E';
    const worktree = hostile.repo.sibling('wt-live-E');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const scriptPath = hostile.repo.sibling('live-E.yaml');
    // The agent waits (a bash loop) until the test has pushed the lost copy and then changed its file in the
    // worker's worktree: the race is set up whatever the machine's load (a fixed sleep lost it under CI load,
    // when the first event reached the test after the agent had already pushed).
    writeFileSync(scriptPath, ['version: 1', 'steps:', '  - write: { path: src/e.js, content: "export const e = 1;\\n" }', `  - bash: "until grep -q 'e = 2' src/e.js; do sleep 0.1; done"`, '  - commit: "feat(E): e"', '  - report: { status: complete, verification: PASS, notes: "done" }', ''].join('\n'));
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, pollMs: 200 });
    const queue = new Queue(queueNameFor([], remoteKey(remote)), { connection: { host: '127.0.0.1', port: redis.port } });
    const client = new Redis(redis.url);
    const seen: string[] = [];
    const delivered: Array<{ type: string; turn?: number; at?: number; worker?: string; received: number }> = [];
    let placed: { job_id: string; worker: string; host?: string } | undefined;
    let firstState: Promise<string> | undefined;
    try {
      const running = dispatcher.runAgentJob({
        options: { agentId: 'E', role: 'wave', wave: 1, model: `script:${scriptPath}`, systemPrompt: 's', prompt: 'live', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/e.js'], branch }, env, onEvent: (event) => seen.push(`plain ${event.type}`) },
        context: { slug: 'hostile', wave: 1, agentId: 'E', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
        onPlaced: (where) => {
          placed ??= where;
          seen.push('placed');
        },
        onWorkerEvent: (event, meta) => {
          delivered.push({ type: event.type, ...(event.type === 'turn-end' ? { turn: event.turn } : {}), ...meta, received: Date.now() });
          // The first one (the write) arrives while the agent still sleeps: the job is still running.
          if (placed) firstState ??= queue.getJobState(placed.job_id);
        },
      });
      await until(() => firstState !== undefined, 60_000, 'a live event');
      expect(await firstState).toBe('active');
      // F4's race: another run of THIS job (a lost copy) pushed the branch after this run read it for its lease.
      const lost = (await hostile.repo.run(['commit-tree', `${base}^{tree}`, '-p', base, '-m', 'lost copy'])).trim();
      await client.sadd(`polywave:pushed:${placed!.job_id}`, lost);
      await hostile.repo.run(['push', '--quiet', remote, `${lost}:refs/heads/${branch}`]);
      expect(remoteBranch(remote, branch)).toBe(lost);
      // Now let the agent go on: its file in the worker's worktree (work/<job id> under the worker's directory).
      const workerFile = ['worker-main', 'worker-rare'].map((name) => path.join(scratch, name, 'work', placed!.job_id, 'src', 'e.js')).find((file) => existsSync(file));
      expect(workerFile, 'the agent’s file in the worker’s worktree').toBeDefined();
      writeFileSync(workerFile!, 'export const e = 2;\n');
      const result = await running;
      expect(result.outcome.status, JSON.stringify(result.outcome)).toBe('finished');
      // Placed before any event, on the worker that ran it; no event went to the plain listener (each went once, with its meta).
      expect(seen[0]).toBe('placed');
      expect(seen.filter((entry) => entry.startsWith('plain'))).toEqual([]);
      expect(placed).toEqual({ job_id: result.dispatch!.job_id, worker: result.dispatch!.worker, host: os.hostname(), at: expect.any(Number) });
      const runner = [main, rare].find((candidate) => candidate.id === placed!.worker)!;
      // Each of the 4 turns once; every event with the worker's id and its time there (never after it arrived here).
      expect(delivered.filter((event) => event.type === 'turn-end').map((event) => event.turn)).toEqual([1, 2, 3, 4]);
      expect(delivered.filter((event) => event.type === 'tool-call-end')).toHaveLength(4);
      for (const event of delivered) expect(event.worker === runner.id && event.at! > 0 && event.at! <= event.received, JSON.stringify(event)).toBe(true);
      // The run pushed over the lost copy's commit (its lock still its own); the local worktree holds its commit.
      expect(runner.log()).toContain(`job ${placed!.job_id}: ${branch} was pushed by another run of this job (${lost.slice(0, 12)})`);
      const head = remoteBranch(remote, branch);
      expect(head).not.toBe(lost);
      expect((await createGit(worktree).headCommit()).trim()).toBe(head);
    } finally {
      await dispatcher.close();
      await queue.close();
      client.disconnect();
    }
  }, 120_000);

  // Outside attack A17-20: a worker stalled past its lock (SIGSTOP, a long pause) and came back while the job's next run
  // went on elsewhere: its progress kept arriving, "runs on" flipped back to it and its events counted as the job's.
  // Here a worker of our own plays the runs' messages in the order that happens: run `wa`, then `wb` (the job handed on),
  // then `wa` again (resumed, stale), then `wz` (a run that started before `wb`, first heard of now).
  it.concurrent('A17-20: once a job is handed on to another run, the earlier run’s messages are ignored — where it runs never flips back, its events are not the job’s', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const turn = (number: number) => [{ type: 'turn-end', turn: number, usage: { inputTokens: 1, outputTokens: 1 }, seq: number - 1, at: Date.now() }];
    const queueName = queueNameFor(['flip'], remoteKey(remote));
    const numbers = new Redis(redis.url);
    const player = new Worker(queueName, async (bullJob) => {
      // The runs' numbers, as their workers take them from Redis: wa 1, wz 2, wb 3 (A19-05: the order is Redis's).
      for (let count = 0; count < 3; count += 1) await numbers.incr(runCounterKey(queueName, String(bullJob.id)));
      for (const [run, worker, number, events] of [['wa:1000', 'wa', 1, turn(1)], ['wb:2000', 'wb', 3, turn(1)], ['wa:1000', 'wa', 1, turn(2)], ['wz:500', 'wz', 2, turn(3)], ['wb:2000', 'wb', 3, turn(2)]] as const) {
        await bullJob.updateProgress(testDispatchKey.sign('progress', String(bullJob.id), { job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run, run_no: number, worker, host: 'h', events }));
        await sleep(250);
      }
      return testDispatchKey.sign('agent-result', String(bullJob.id), { v: 1, job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run: 'wb:2000', run_no: 3, job_id: bullJob.id, worker: 'wb', outcome: { status: 'failed', failure: { kind: 'fatal', message: 'played' }, text: '', turns: 2, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1, denials: [] }, events: [], started_at: 2000, finished_at: Date.now() });
    }, { connection });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-flip', host: 'test', pid: 1, labels: ['flip'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-G';
    const worktree = hostile.repo.sibling('wt-flip-G');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { G: ['flip'] }, pollMs: 200 });
    const placed: string[] = [];
    const delivered: string[] = [];
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'G', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'flip', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/g.js'], branch }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'G', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
        onPlaced: (where) => placed.push(where.worker),
        onWorkerEvent: (event, meta) => delivered.push(`${meta.worker}:${event.type === 'turn-end' ? event.turn : event.type}`),
      });
      expect(result.outcome.failure?.message).toContain('played');
      expect(placed).toEqual(['wa', 'wb']);
      expect(delivered).toEqual(['wa:1', 'wb:1', 'wb:2']);
    } finally {
      await dispatcher.close();
      await player.close(true);
      await client.del('polywave:workers:h-flip');
      client.disconnect();
      numbers.disconnect();
    }
  }, 120_000);

  // Outside attacks A19-05/A19-03: A17-20 ordered a job's runs by the start time in the run id — the worker's clock. A
  // stalled worker whose clock is 10 min ahead kept "runs on" (its later report and commits were taken, the real run's
  // dropped), and one forged message `evil:9999999999999` silenced the real run. Now the order is the run's number,
  // handed out by Redis (the job's run counter); a number Redis never handed out, or none, never takes the job.
  it.concurrent('A19-05/A19-03: runs are ordered by the number Redis hands out — a worker whose clock is ahead, a far-future or forged run never takes the job from the real run', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const queueName = queueNameFor(['skew'], remoteKey(remote));
    const turn = (number: number) => [{ type: 'turn-end', turn: number, usage: { inputTokens: 1, outputTokens: 1 }, seq: number - 1, at: Date.now() }];
    const numbers = new Redis(redis.url);
    const ahead = `wahead:${Date.now() + 600_000}`;
    const fast = `wfast:${Date.now()}`;
    const player = new Worker(queueName, async (bullJob) => {
      // wahead (clock 10 min ahead) started the job, stalled; wfast (true clock) took it over: numbers 1 and 2.
      for (let count = 0; count < 2; count += 1) await numbers.incr(runCounterKey(queueName, String(bullJob.id)));
      const plays: Array<[string, string, number | undefined, unknown[]]> = [[ahead, 'wahead', 1, turn(1)], [fast, 'wfast', 2, turn(1)], [ahead, 'wahead', 1, turn(2)], ['evil:9999999999999', 'evil-worker', undefined, turn(3)], ['evil2:9999999999999', 'evil2', 7, turn(4)], [fast, 'wfast', 2, turn(2)]];
      for (const [run, worker, number, events] of plays) {
        await bullJob.updateProgress(testDispatchKey.sign('progress', String(bullJob.id), { job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run, ...(number !== undefined ? { run_no: number } : {}), worker, host: 'h', events }));
        await sleep(250);
      }
      return testDispatchKey.sign('agent-result', String(bullJob.id), { v: 1, job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run: fast, run_no: 2, job_id: bullJob.id, worker: 'wfast', outcome: { status: 'failed', failure: { kind: 'fatal', message: 'played' }, text: '', turns: 2, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1, denials: [] }, events: [], started_at: 2000, finished_at: Date.now() });
    }, { connection });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-skew', host: 'test', pid: 1, labels: ['skew'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-L';
    const worktree = hostile.repo.sibling('wt-skew-L');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { L: ['skew'] }, pollMs: 200 });
    const placed: string[] = [];
    const delivered: string[] = [];
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'L', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'skew', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/l.js'], branch }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'L', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
        onPlaced: (where) => placed.push(where.worker),
        onWorkerEvent: (event, meta) => delivered.push(`${meta.worker}:${event.type === 'turn-end' ? event.turn : event.type}`),
      });
      expect(result.outcome.failure?.message).toContain('played');
      expect(placed).toEqual(['wahead', 'wfast']);
      expect(delivered).toEqual(['wahead:1', 'wfast:1', 'wfast:2']);
    } finally {
      await dispatcher.close();
      await player.close(true);
      await client.del('polywave:workers:h-skew');
      client.disconnect();
      numbers.disconnect();
    }
  }, 120_000);

  // Outside round A24-15: the run counter (`polywave:run:<queue>:<job id>`) is a plain Redis key of ONE queue, which a
  // writer to the Redis sets at will: a copy of the signed job run on ANOTHER queue, numbered 100, took the job (its
  // events, report, commits) and its genuine result was the attempt's. Now progress and results name the queue their
  // worker took the job from (signed): another queue's are not the job's, whatever their number.
  it.concurrent('A24-15: a genuine run of a copy of the job on ANOTHER queue, its run number raised to 100, never takes the job — its result is refused (DISPATCH_REPLAYED)', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const queueName = queueNameFor(['otherq'], remoteKey(remote));
    const copyQueue = queueNameFor(['otherq'], remoteKey(remote), 'rp');
    const turn = (number: number) => [{ type: 'turn-end', turn: number, usage: { inputTokens: 1, outputTokens: 1 }, seq: number - 1, at: Date.now() }];
    const numbers = new Redis(redis.url);
    const player = new Worker(queueName, async (bullJob) => {
      const id = String(bullJob.id);
      const sig = (bullJob.data as { sig?: string }).sig;
      await numbers.incr(runCounterKey(queueName, id));
      // (the writer raises both counters — the copy's queue's, as its worker INCRs it, and this queue's, which the
      // orchestrator reads to know which numbers Redis handed out)
      await numbers.set(runCounterKey(copyQueue, id), '100');
      await numbers.set(runCounterKey(queueName, id), '100');
      for (const [run, worker, number, from, events] of [['wp:1000', 'wp', 1, queueName, turn(1)], ['wcopy:2000', 'wcopy', 100, copyQueue, turn(1)], ['wp:1000', 'wp', 1, queueName, turn(2)]] as const) {
        await bullJob.updateProgress(testDispatchKey.sign('progress', id, { job_sig: sig, queue: from, run, run_no: number, worker, host: 'h', events }));
        await sleep(250);
      }
      return testDispatchKey.sign('agent-result', id, { v: 1, job_sig: sig, queue: copyQueue, run: 'wcopy:2000', run_no: 100, job_id: bullJob.id, worker: 'wcopy', outcome: { status: 'failed', failure: { kind: 'fatal', message: 'played' }, text: '', turns: 2, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1, denials: [] }, events: [], started_at: 2000, finished_at: Date.now() });
    }, { connection });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-otherq', host: 'test', pid: 1, labels: ['otherq'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-N';
    const worktree = hostile.repo.sibling('wt-otherq-N');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { N: ['otherq'] }, pollMs: 200 });
    const placed: string[] = [];
    const delivered: string[] = [];
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'N', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'otherq', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/n.js'], branch }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'N', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
        onPlaced: (where) => placed.push(where.worker),
        onWorkerEvent: (event, meta) => delivered.push(`${meta.worker}:${event.type === 'turn-end' ? event.turn : event.type}`),
      });
      // Before the fix: the copy (#100 > #1) took the job and its result ('played') was the attempt's.
      expect(result.outcome.failure?.message).toMatch(/^DISPATCH_REPLAYED: .*it was run from another queue \(\S+\.rp@otherq\), not \S+ where this attempt enqueued the job/);
      expect(placed).toEqual(['wp']);
      expect(delivered).toEqual(['wp:1', 'wp:2']);
    } finally {
      await dispatcher.close();
      await player.close(true);
      await client.del('polywave:workers:h-otherq');
      client.disconnect();
      numbers.disconnect();
    }
  }, 120_000);

  // Outside attack A19-01/A19-08: adoption (A18-09) took ANY in-flight job of the agent whose id matched its own data —
  // a job put on the queue with another script was adopted on a first run and its work merged; one delayed for a day
  // was awaited for ever. Only a run of the same request but for its prompt, no later attempt, not held back long, is.
  it.concurrent('A19-01/A19-08: an in-flight job of the agent with other content (or delayed for a day) is not adopted: this attempt runs its own job', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const queueName = queueNameFor(['forged'], remoteKey(remote));
    const queue = new Queue(queueName, { connection });
    const branch = 'polywave/hostile/wave1-agent-H';
    const forgedData = (attempt: number, text: string) => job({ agent: 'H', attempt, branch, owned_files: ['src/h.js'], labels: ['forged'], script_text: text, prompt: 'forged' });
    const forged = forgedData(3, lettersScript().replace("export const a = 'a'", "export const a = 'FORGED'"));
    const delayed = forgedData(1, lettersScript());
    await queue.add('agent', testDispatchKey.sign('agent-job', forged.job_id, forged), { jobId: forged.job_id });
    await queue.add('agent', testDispatchKey.sign('agent-job', delayed.job_id, delayed), { jobId: delayed.job_id, delay: 86_400_000 });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-forged', host: 'test', pid: 1, labels: ['forged'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const worktree = hostile.repo.sibling('wt-forged-H');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { H: ['forged'] }, pollMs: 200 });
    const ran: string[] = [];
    let player: Worker | undefined;
    const starting = sleep(1500).then(() => {
      player = new Worker(queueName, async (bullJob) => {
        ran.push(String(bullJob.id));
        return testDispatchKey.sign('agent-result', String(bullJob.id), { v: 1, job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run: 'hand-made:1', job_id: bullJob.id, worker: 'h-forged', outcome: { status: 'failed', failure: { kind: 'fatal', message: `ran ${(bullJob.data as AgentJobData).prompt}` }, text: '', turns: 1, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1, denials: [] }, events: [], started_at: Date.now(), finished_at: Date.now() });
      }, { connection });
    });
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'H', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'mine', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/h.js'], branch }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'H', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.failure?.message).toContain('ran mine');
      expect(result.dispatch?.adopted_attempt).toBeUndefined();
      expect(result.dispatch?.job_id).toMatch(/^hostile\.w1\.H\.[0-9a-f]{12}\.a1\.[0-9a-f]{12}$/);
      expect([forged.job_id, delayed.job_id]).not.toContain(result.dispatch?.job_id);
    } finally {
      await starting;
      await dispatcher.close();
      await player?.close(true);
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await client.del('polywave:workers:h-forged');
      client.disconnect();
    }
  }, 120_000);

  // Outside attack A19-13: a second LIVE orchestrator of the same IMPL (another copy of the repository, the same Redis and
  // remote) adopted the first's running jobs and merged their work as its own. A job another orchestrator awaits is
  // refused now (DISPATCH_JOB_OWNED); a killed one's claim lapses and the job is adopted (test/dispatch-redis.test.ts).
  it.concurrent('A19-13: a job of the agent another live orchestrator awaits is refused (DISPATCH_JOB_OWNED), never run beside or adopted', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const queueName = queueNameFor(['owned'], remoteKey(remote));
    let finish: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const ran: string[] = [];
    const player = new Worker(queueName, async (bullJob) => {
      ran.push(String(bullJob.id));
      await held;
      return testDispatchKey.sign('agent-result', String(bullJob.id), { v: 1, job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run: 'hand-made:1', job_id: bullJob.id, worker: 'h-owned', outcome: { status: 'failed', failure: { kind: 'fatal', message: 'first' }, text: '', turns: 1, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1, denials: [] }, events: [], started_at: Date.now(), finished_at: Date.now() });
    }, { connection });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-owned', host: 'test', pid: 1, labels: ['owned'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-J';
    const worktree = hostile.repo.sibling('wt-owned-J');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const [first, second] = await Promise.all([0, 1].map(() => createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { J: ['owned'] }, pollMs: 200, awaitingTtlMs: 1500 })));
    const request = (prompt: string) => ({
      options: { agentId: 'J', role: 'wave' as const, wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt, cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/j.js'], branch }, env },
      context: { slug: 'hostile', wave: 1, agentId: 'J', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
    });
    try {
      const running = first!.runAgentJob(request('first'));
      const deadline = Date.now() + 30_000;
      while (ran.length === 0 && Date.now() < deadline) await sleep(50);
      expect(ran).toHaveLength(1);
      const began = Date.now();
      const refused = await second!.runAgentJob(request('second'));
      expect(refused.outcome.failure?.message).toMatch(/^DISPATCH_JOB_OWNED: job hostile\.w1\.J\.\S+ of agent J is awaited by another orchestrator \(\S+ pid \d+\): two runs of wave 1 of hostile at once; nothing started$/);
      expect(Date.now() - began).toBeLessThan(15_000);
      expect(ran).toHaveLength(1);
      finish!();
      expect((await running).outcome.failure?.message).toContain('first');
    } finally {
      finish!();
      await Promise.all([first?.close(), second?.close()]);
      await player.close(true);
      await client.del('polywave:workers:h-owned');
      client.disconnect();
    }
  }, 120_000);

  // Outside attack A18-17 (its second half): a run of a job whose push was refused because another run of the agent had
  // moved the branch failed — yet its report, written early from its progress, stayed, and its early commits were merged.
  it.concurrent('A18-17: a run that failed with DISPATCH_BRANCH_MOVED has its early report withdrawn (blocked, at the base)', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const report = { status: 'complete', commit: base, files_changed: ['src/f.js'], verification: 'PASS', notes: 'early, from the refused run' };
    const refused = new Worker(queueNameFor(['moved'], remoteKey(remote)), async (bullJob) => {
      await bullJob.updateProgress(testDispatchKey.sign('progress', String(bullJob.id), { job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run: 'wm:1000', worker: 'wm', host: 'h', report }));
      await sleep(500);
      throw new Error(`DISPATCH_BRANCH_MOVED: polywave/hostile/wave1-agent-F on the shared remote ${remote} moved while job ${bullJob.id} ran (another run of it pushed); not pushed over it`);
    }, { connection });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-moved', host: 'test', pid: 1, labels: ['moved'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-F';
    const worktree = hostile.repo.sibling('wt-moved-F');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { F: ['moved'] }, pollMs: 200 });
    const written: Array<Record<string, unknown>> = [];
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'F', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'moved', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/f.js'], branch }, env, reportCompletion: async (entry) => (written.push(entry), { ok: true, status: String(entry.status) }) },
        context: { slug: 'hostile', wave: 1, agentId: 'F', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.failure?.message).toMatch(/^DISPATCH_BRANCH_MOVED: /);
      expect(written.map((entry) => [entry.status, entry.commit])).toEqual([['complete', base], ['blocked', base]]);
      expect(written[1]!.notes).toMatch(/^withdrawn by the orchestrator: job \S+ failed on its worker \(DISPATCH_BRANCH_MOVED: /);
    } finally {
      await dispatcher.close();
      await refused.close(true);
      await client.del('polywave:workers:h-moved');
      client.disconnect();
    }
  }, 120_000);

  it.concurrent('F15: a result whose head is not a commit id is refused by the orchestrator (never given to git)', async ({ expect }) => {
    const connection = { host: '127.0.0.1', port: redis.port };
    const remote = `file://${remoteDir}`;
    const liar = new Worker(queueNameFor(['liar'], remoteKey(remote)), async (bullJob) => testDispatchKey.sign('agent-result', String(bullJob.id), { v: 1, job_sig: (bullJob.data as { sig?: string }).sig, queue: bullJob.queueName, run: 'hand-made:1', job_id: bullJob.id, worker: 'h-liar', outcome: { status: 'complete', text: '', turns: 1, usage: { inputTokens: 0, outputTokens: 0 }, durationMs: 1, denials: [] }, head: '--help', events: [], started_at: Date.now(), finished_at: Date.now() }), { connection });
    const client = new Redis(redis.url);
    await writeWorkerRecord(client, { id: 'h-liar', host: 'test', pid: 1, labels: ['liar'], concurrency: 1, current: [], done: 0, started_at: '', heartbeat_at: '', remote_key: remoteKey(remote) }, 60_000);
    const branch = 'polywave/hostile/wave1-agent-C';
    const worktree = hostile.repo.sibling('wt-liar-C');
    await hostile.repo.git.worktreeAdd({ path: worktree, branch, base, createBranch: true });
    const env = { ...process.env, ...gitEnv };
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote, cwd: scratch, env, labels: { C: ['liar'] }, pollMs: 200 });
    try {
      const result = await dispatcher.runAgentJob({
        options: { agentId: 'C', role: 'wave', wave: 1, model: `script:${hostile.scriptPath}`, systemPrompt: 's', prompt: 'p', cwd: worktree, branch, baseCommit: base, policy: { root: worktree, ownedFiles: ['src/c.js'], branch }, env },
        context: { slug: 'hostile', wave: 1, agentId: 'C', attempt: 1, baseCommit: base, branch, repoRoot: hostile.repo.dir, solo: false },
      });
      expect(result.outcome.failure).toEqual({ kind: 'fatal', message: `DISPATCH_INVALID_JOB: job ${result.dispatch!.job_id}: the result's head "--help" is not a full commit id` });
    } finally {
      await dispatcher.close();
      await liar.close(true);
      await client.del('polywave:workers:h-liar');
      client.disconnect();
    }
  }, 120_000);
});
