import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { dispatchKeyOf } from '../src/dispatch/auth.js';
import { holdJobClaim } from '../src/dispatch/job-claim.js';
import { queueNameFor, remoteKey } from '../src/dispatch/job.js';
import { binPath, runCli, type CliResult } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

// Issue 17 test rig: a real redis-server on a free loopback port, a `file://` bare remote, real
// `node bin/polywave.js worker` processes with their own clone directories.

/** Git with no system/global config (as the test repositories) and an identity for the workers' clones. */
export const gitEnv: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Polywave Worker',
  GIT_AUTHOR_EMAIL: 'worker@example.invalid',
  GIT_COMMITTER_NAME: 'Polywave Worker',
  GIT_COMMITTER_EMAIL: 'worker@example.invalid',
};

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A redis-server of its own (no persistence), stopped by `stop()`. */
export interface TestRedis {
  port: number;
  url: string;
  stop(): Promise<void>;
  /** Starts it again on the same port (after `stop`). */
  restart(): Promise<void>;
  /** Stops the process (SIGSTOP): its connections stay open, nothing answers — a hung server or a network partition. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
}

/** `extraArgs`: more redis-server options (e.g. `--maxmemory 2mb`), on every start. */
export async function startRedis(dir: string, port?: number, extraArgs: readonly string[] = []): Promise<TestRedis> {
  const chosen = port ?? (await freePort());
  mkdirSync(dir, { recursive: true });
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn('redis-server', ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs], { stdio: 'ignore' });
    // Never outlive the test process (a failed test must not leave a server behind).
    const started = child;
    process.once('exit', () => started.kill('SIGKILL'));
    for (let tries = 0; tries < 100; tries += 1) {
      if (await canConnect(chosen)) return;
      await sleep(50);
    }
    throw new Error('redis-server did not start');
  };
  await launch();
  return {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    stop: async () => {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    },
    restart: launch,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
  };
}

/** What {@link useDispatchRig} gives a test file. */
export interface DispatchRig {
  /** A directory of the file's own (`<tmp>/<prefix>XXXXXX`), removed after the file: workers' `--dir`s, remotes, the server's. */
  scratch: string;
  /** The file's redis-server in `<scratch>/redis`, started in `beforeAll` (read before that, or with `redis: false`, it throws). */
  redis: TestRedis;
  /** The workers the tests start (push each): SIGKILLed after the file. */
  workers: TestWorker[];
}

/**
 * The setup the dispatch and worker test files share: a scratch directory (made now), a redis-server of the file started
 * in `beforeAll` (unless `redis: false` — a file that starts its own in its tests, or one skipped here), and after the file
 * every worker in `workers` SIGKILLed, the server stopped and the scratch removed. Call it at the top of the file (or of a
 * describe). An `afterAll` the file registers after this call runs before this one (vitest runs after-hooks in reverse
 * order): the server and the workers are still there for it.
 */
export function useDispatchRig(prefix: string, options: { redis?: boolean; redisArgs?: readonly string[] } = {}): DispatchRig {
  const scratch = mkdtempSync(path.join(os.tmpdir(), prefix));
  const workers: TestWorker[] = [];
  let server: TestRedis | undefined;
  const started = (): TestRedis => {
    if (!server) throw new Error(`${prefix}: the redis-server of useDispatchRig is not running (it starts in beforeAll)`);
    return server;
  };
  const redis: TestRedis = {
    get port() {
      return started().port;
    },
    get url() {
      return started().url;
    },
    stop: () => started().stop(),
    restart: () => started().restart(),
    pause: () => started().pause(),
    resume: () => started().resume(),
  };
  if (options.redis !== false) {
    beforeAll(async () => {
      server = await startRedis(path.join(scratch, 'redis'), undefined, options.redisArgs);
    }, 60_000);
  }
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await server?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });
  return { scratch, redis, workers };
}

/** A test repository of `files` whose HEAD is pushed as `main` to a new bare repository `remoteDir` (its `file://` URL: `remote`). */
export async function createPushedRepo(remoteDir: string, files: Record<string, string>): Promise<{ repo: TestRepo; remote: string }> {
  const repo = await createTestRepo({ files });
  await repo.git.run(['init', '--quiet', '--bare', remoteDir]);
  const remote = `file://${remoteDir}`;
  await repo.git.run(['push', '--quiet', remote, 'HEAD:refs/heads/main']);
  return { repo, remote };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A `polywave worker` process. */
export interface TestWorker {
  id: string;
  child: ChildProcess;
  log: () => string;
  exited: Promise<number | null>;
}

/**
 * A worker whose `--dir` is a small disk of its own: a tmpfs of `mb` MB mounted there in a mount namespace of the worker's
 * (`unshare -m`, root; `-Urm` otherwise), filled whole while the file `fill` exists and emptied again once `unfill`
 * exists (a loop beside the worker, ended with it). {@link smallDiskSupported} says whether this machine can.
 */
export interface SmallDisk {
  mb: number;
  fill: string;
  unfill: string;
  /** Where the disk is mounted (default: the worker's `--dir`) — e.g. the worker's TMPDIR. */
  at?: string;
}

const unshareArgs = (): string[] => (process.getuid?.() === 0 ? ['-m'] : ['-Urm']);

/** Whether {@link SmallDisk} workers can run here (unshare and a tmpfs mount in a namespace of one's own). */
export function smallDiskSupported(): boolean {
  const result = spawnSync('unshare', [...unshareArgs(), 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs "$d" && umount "$d" && rmdir "$d"'], { encoding: 'utf8' });
  return result.status === 0;
}

export async function startWorker(options: { id: string; redisUrl: string; remote: string; dir: string; labels?: string[]; extra?: string[]; env?: Record<string, string>; smallDisk?: SmallDisk }): Promise<TestWorker> {
  const args = [binPath, 'worker', '--redis', options.redisUrl, '--remote', options.remote, '--dir', options.dir, '--id', options.id, '--lock-duration', '2500', '--stalled-interval', '500', ...(options.labels ?? []).flatMap((label) => ['--label', label]), ...(options.extra ?? [])];
  const disk = options.smallDisk;
  if (disk) mkdirSync(disk.at ?? options.dir, { recursive: true });
  // (the loop ends when the worker — `exec`ed in place of this shell, its pid — is gone)
  const diskScript = disk
    ? `mount -t tmpfs -o size=${disk.mb}m tmpfs "$D" || exit 3; (while kill -0 $$ 2>/dev/null; do if [ -e "$FILL" ] && [ ! -e "$D/.fill" ]; then dd if=/dev/zero of="$D/.fill" bs=64k 2>/dev/null; fi; if [ -e "$UNFILL" ] && [ -e "$D/.fill" ]; then rm -f "$D/.fill"; fi; sleep 0.1; done) & exec "$@"`
    : '';
  const child = disk
    ? spawn('unshare', [...unshareArgs(), 'sh', '-c', diskScript, 'sh', process.execPath, ...args], { env: { ...process.env, ...gitEnv, NO_COLOR: '1', ...options.env, D: disk.at ?? options.dir, FILL: disk.fill, UNFILL: disk.unfill }, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, args, { env: { ...process.env, ...gitEnv, NO_COLOR: '1', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  process.once('exit', () => child.kill('SIGKILL'));
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Generous: a loaded CI box (2 cores, other suites) can take many seconds to start a node process.
  const deadline = Date.now() + 60_000;
  while (!log.includes('ready:')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      // Never left running when the test gives up on it (it would outlive the test process).
      child.kill('SIGKILL');
      throw new Error(`worker ${options.id} did not start: ${log}`);
    }
    await sleep(50);
  }
  return { id: options.id, child, log: () => log, exited };
}

/** 8 script agents in 2 waves (A–D, then E–H), each owning src/<x>.js and src/<x>.test.js. */
export const waveAgents = [
  ['A', 'B', 'C', 'D'],
  ['E', 'F', 'G', 'H'],
] as const;

/** The IMPL of `waves` (default {@link waveAgents}; a test whose point needs fewer agents names its own, e.g. [['A', 'B']]). */
export function twoWaveImpl(slug: string, waves: ReadonlyArray<readonly string[]> = waveAgents): string {
  const rows = waves.flatMap((ids, index) => ids.flatMap((id) => [`src/${id.toLowerCase()}.js`, `src/${id.toLowerCase()}.test.js`].flatMap((file) => [`    - file: ${file}`, `      agent: ${id}`, `      wave: ${index + 1}`, '      action: new'])));
  return [
    'title: Eight letters',
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...rows,
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const x: string"',
    '      location: src/a.js',
    'waves:',
    ...waves.flatMap((ids, index) => [`    - number: ${index + 1}`, '      agents:', ...ids.flatMap((id) => [`        - id: ${id}`, `          task: Implement src/${id.toLowerCase()}.js.`, '          files:', `            - src/${id.toLowerCase()}.js`, `            - src/${id.toLowerCase()}.test.js`])]),
    '',
  ].join('\n');
}

/** The script of every agent; `extra` adds steps (by agent id) before the commit. */
export function lettersScript(extra: Record<string, string[]> = {}): string {
  return [
    'version: 1',
    'agents:',
    ...waveAgents.flat().flatMap((id) => {
      const lower = id.toLowerCase();
      return [
        `  ${id}:`,
        '    steps:',
        // `expect: ok`: a write that fails fails the agent with the tool's answer (a silent loss was a
        // commit of the test file alone — dispatch F4 in CI — with nothing saying why).
        `      - write: { path: src/${lower}.js, content: "export const ${lower} = '${lower}';\\n" }`,
        '        expect: ok',
        `      - write: { path: src/${lower}.test.js, content: "import { ${lower} } from './${lower}.js';\\nif (${lower} !== '${lower}') throw new Error('bad');\\n" }`,
        '        expect: ok',
        ...(extra[id] ?? []).map((step) => `      - ${step}`),
        `      - commit: "feat(${id}): letter ${lower}"`,
        '      - report: { status: complete, verification: PASS, notes: "done" }',
      ];
    }),
    '',
  ].join('\n');
}

/** A repository with the IMPL, its script, and a bare `file://` clone of it as the shared remote. */
export interface DispatchRepo {
  repo: TestRepo;
  implPath: string;
  scriptPath: string;
  remoteDir: string;
  remote: string;
}

export async function createDispatchRepo(slug: string, script: string, options: { remoteDir?: string; config?: Record<string, unknown>; waves?: ReadonlyArray<readonly string[]>; gates?: readonly string[] } = {}): Promise<DispatchRepo> {
  // Required pre-merge test gates (E21), when `gates` names their commands.
  const gates = (options.gates ?? []).flatMap((command) => ['        - type: test', `          command: ${JSON.stringify(command)}`, '          required: true']);
  const impl = twoWaveImpl(slug, options.waves) + (gates.length > 0 ? ['quality_gates:', '    level: standard', '    gates:', ...gates, ''].join('\n') : '');
  const files: Record<string, string> = { [`docs/IMPL/IMPL-${slug}.yaml`]: impl, 'src/index.js': 'export {};\n' };
  if (options.config) files['polywave.config.json'] = `${JSON.stringify({ repos: [{ name: 'repo', path: '.' }], ...options.config }, null, 2)}\n`;
  const repo = await createTestRepo({ files });
  const scriptPath = repo.sibling('agents.yaml');
  writeFileSync(scriptPath, script);
  // Several repositories may share one remote: each pushes only its own slug's bases and agent branches.
  const remoteDir = options.remoteDir ?? repo.sibling('remote.git');
  if (!options.remoteDir) await repo.run(['clone', '--quiet', '--bare', repo.dir, remoteDir]);
  return { repo, implPath: repo.path(`docs/IMPL/IMPL-${slug}.yaml`), scriptPath, remoteDir, remote: `file://${remoteDir}` };
}

/** An empty bare repository guarded by scripts/remote-guard-hook (the shared remote of the tests). */
export async function createGuardedRemote(dir: string, hookSource: string): Promise<string> {
  const { spawnSync } = await import('node:child_process');
  const result = spawnSync('git', ['init', '--quiet', '--bare', '-b', 'main', dir], { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(result.stderr);
  const hook = path.join(dir, 'hooks', 'update');
  writeFileSync(hook, hookSource, { mode: 0o755 });
  return `file://${dir}`;
}

/** `run-wave` through the CLI (dispatch flags when `redisUrl` is given). */
export function runWaveCli(target: DispatchRepo, wave: number, options: { redisUrl?: string; extra?: string[]; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  const args = ['run-wave', target.implPath, '--wave', String(wave), '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', ...(options.redisUrl ? ['--dispatch', options.redisUrl, '--dispatch-remote', target.remote] : []), ...(options.extra ?? [])];
  return runCli(args, { cwd: target.repo.dir, env: { ...gitEnv, ...options.env }, timeoutMs: options.timeoutMs ?? 60_000 });
}

/** The run-wave-result line of a `--json` run. */
export function waveResult(result: CliResult): { success: boolean; state: string; blocked?: { reason: string; agents: Array<{ agent: string; explanation: string }> }; agents: Array<{ agent: string; status: string; attempts: Array<{ attempt?: number; dispatch?: { job_id: string; worker?: string; stalls: number; enqueue_to_start_ms?: number; finish_to_result_ms?: number; adopted_attempt?: number } }> }> } {
  const line = result.stdout.split('\n').filter((entry) => entry.includes('"run-wave-result"')).at(-1);
  if (!line) throw new Error(`no run-wave-result (exit ${result.code}): ${result.stderr.slice(-2000)}`);
  return (JSON.parse(line) as { result: ReturnType<typeof waveResult> }).result;
}

/** Files of HEAD outside docs/IMPL (the manifest records SHAs and paths, which differ by run) with their blob ids. */
export async function treeWithoutManifest(repo: TestRepo): Promise<string> {
  return (await repo.run(['ls-tree', '-r', 'HEAD']))
    .split('\n')
    .filter((line) => line !== '' && !line.includes('\tdocs/IMPL/'))
    .join('\n');
}

/** Subjects of the merges since `since`, oldest first. */
export async function mergeOrder(repo: TestRepo, since: string): Promise<string[]> {
  return (await repo.run(['log', '--reverse', '--merges', '--format=%s', `${since}..HEAD`])).split('\n').filter(Boolean);
}

export const workersRoot = (repo: TestRepo, id: string) => path.join(repo.root, `worker-${id}`);

/** The queue the orchestrator would put `data` in: its labels, its remote's key (attack F6). */
/**
 * The test run's dispatch key (A21-43): vitest.config.ts puts POLYWAVE_DISPATCH_KEY in every test process's environment,
 * which the workers and CLI runs the tests start inherit; tests that play a worker or an orchestrator sign with it.
 */
export const testDispatchKey = dispatchKeyOf(process.env.POLYWAVE_DISPATCH_KEY ?? '');

const testClaims = new Map<string, { name: (sig: string | undefined) => Promise<void>; release: () => void }>();

/**
 * Issue 17 (replayed jobs): a worker runs a signed job only while an orchestrator awaits it — its signed claim naming the
 * job's `sig` (src/dispatch/job-claim.ts). A test that plays the orchestrator holds one, as an orchestrator does, until
 * {@link releaseTestClaim} or `lifetimeMs`.
 */
export async function holdTestClaim(redisPort: number, jobId: string, sig: string | undefined, lifetimeMs = 300_000): Promise<void> {
  const id = `${redisPort}:${jobId}`;
  const held = testClaims.get(id);
  if (held) return held.name(sig);
  const client = new Redis({ host: '127.0.0.1', port: redisPort, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  const claim = holdJobClaim(client, testDispatchKey, jobId, `test:${process.pid}:${jobId}`, 6000, [sig]);
  const timer = setTimeout(() => releaseTestClaim(redisPort, jobId), lifetimeMs);
  timer.unref();
  testClaims.set(id, {
    name: claim.name,
    release: () => {
      clearTimeout(timer);
      claim.release();
      setTimeout(() => client.disconnect(), 500).unref();
    },
  });
  await claim.written;
}

/** Ends the claim {@link holdTestClaim} holds on `jobId`. */
export function releaseTestClaim(redisPort: number, jobId: string): void {
  const id = `${redisPort}:${jobId}`;
  testClaims.get(id)?.release();
  testClaims.delete(id);
}

export function queueOf(data: unknown): string {
  const { labels, remote } = data as { labels?: string[]; remote: string };
  return queueNameFor(labels ?? [], remoteKey(remote));
}

/**
 * Adds `data` to the agent queue under `jobId` as a hostile or hand-made producer would, and waits
 * for the worker's answer by reading the job's state (every 50 ms, up to `timeoutMs`). Not
 * QueueEvents + waitUntilFinished: its event stream is read from "now", and a worker that refuses a
 * job within milliseconds can fail it before a busy test process issued its first read — the event
 * is then never seen (a flake the CI hit).
 */
export async function produceJob(redisPort: number, data: unknown, jobId: string, timeoutMs: number, queueName = queueOf(data), options: { unsigned?: boolean; claim?: boolean } = {}): Promise<{ value?: unknown; error?: string }> {
  const queue = new Queue(queueName, { connection: { host: '127.0.0.1', port: redisPort } });
  const claimed = !options.unsigned && options.claim !== false;
  try {
    // Signed with the test run's dispatch key, as an orchestrator signs (A21-43), unless the test forges one; and awaited
    // as an orchestrator awaits it (its signed claim, issue 17) unless the test plays a replay.
    const signed = options.unsigned ? data : testDispatchKey.sign('agent-job', jobId, data as object);
    if (claimed) await holdTestClaim(redisPort, jobId, (signed as { sig?: string }).sig);
    await queue.add('agent', signed, { jobId });
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const seen = await Job.fromId(queue, jobId);
      const state = seen ? await seen.getState() : 'missing';
      if (state === 'completed' || state === 'failed') {
        // Read again: the job read before getState may be from before it finished (no result, no reason yet).
        const job = (await Job.fromId(queue, jobId))!;
        return state === 'completed' ? { value: job.returnvalue } : { error: job.failedReason };
      }
      await sleep(50);
    }
    return { error: `job ${jobId} did not finish within ${timeoutMs} ms` };
  } finally {
    if (claimed) releaseTestClaim(redisPort, jobId);
    await queue.close();
  }
}

/** An agent's completion report in the IMPL doc on disk (undefined when there is none). */
export const reportOf = (implPath: string, agent: string) => (parseYaml(readFileSync(implPath, 'utf8')) as { completion_reports?: Record<string, { status?: string; notes?: string }> }).completion_reports?.[agent];

/** Agent A of a letters script: commits, reports complete, then works on (sleeps `sleepMs`, commits again). */
export const reportsEarly = (script: string, sleepMs = 8000) =>
  script.replace(
    / {2}A:\n[\s\S]*?(?=\n {2}B:)/,
    [
      '  A:',
      '    steps:',
      '      - write: { path: src/a.js, content: "export const a = \'early\';\\n" }',
      '        expect: ok',
      '      - write: { path: src/a.test.js, content: "import { a } from \'./a.js\';\\nif (!a) throw new Error(\'bad\');\\n" }',
      '        expect: ok',
      '      - commit: "feat(A): early"',
      '      - report: { status: complete, verification: PASS, notes: "done early" }',
      `      - sleep_ms: ${sleepMs}`,
      '      - write: { path: src/a.js, content: "export const a = \'after report\';\\n" }',
      '        expect: ok',
      '      - commit: "feat(A): after report"',
    ].join('\n'),
  );
