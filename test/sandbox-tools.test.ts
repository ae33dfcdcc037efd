/**
 * The agent tools inside the OS sandbox, through the real jail, runToolCall and a real worktree:
 *
 * - bash: every process a call started is dead when the call returns — `set -m`, setsid, nohup,
 *   a double fork, disown, a detached node child, a python daemon — also after a timeout and an
 *   abort (checked in the host's /proc right after the call, not after a pause).
 * - write_file / edit_file: a path component swapped between the jail's check and the write, by a
 *   separate process flipping it in a tight loop, never sends a write outside the worktree (the
 *   executor writes inside the sandbox) nor into another directory of it (the opened file's real
 *   path is verified); read_file/list_dir through the executor cannot read what the sandbox hides.
 * - the executor's cost per write.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolDenial } from '../src/agents/contract.js';
import { createJail } from '../src/agents/jail/jail.js';
import type { Jail } from '../src/agents/jail/types.js';
import { buildAgentSandboxPlan, createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/index.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext, ToolResult } from '../src/agents/tools/types.js';
import { resetSandbox, sandboxStatus, type SandboxPlan } from '../src/sandbox/index.js';
import type { TestRepo } from './support/git-repo.js';
import { createAgentLayout } from './support/agent-layout.js';
import { processesWith } from './support/processes.js';

const branch = 'polywave/tools/wave1-agent-A';
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));
const available = (await sandboxStatus()).available;

interface Setup {
  repo: TestRepo;
  worktree: string;
  jail: Jail;
  plan: SandboxPlan;
  executor: ToolExecutor;
  context: ToolContext;
}

const ownedFiles = ['src/a.ts', 'jobs.sh', 'abort.sh', 'detach.js', 'daemon.py', 'd/f.txt', 'notes.txt'];

async function setup(): Promise<Setup> {
  const { repo, worktree, home, tmp } = await createAgentLayout(branch);
  const env = { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
  const jail = await createJail({ root: worktree, ownedFiles, branch }, { env: repo.env });
  const plan = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
  const executor = createToolExecutor(plan, { cwd: jail.root, env });
  const context: ToolContext = { jail, env, signal: new AbortController().signal, toolTimeoutMs: 30_000, maxToolOutputBytes: 30_000, branch, sandbox: plan, toolExecutor: executor };
  return { repo, worktree, jail, plan, executor, context };
}

async function call(context: ToolContext, tool: string, input: Record<string, unknown>, denials: ToolDenial[] = []): Promise<ToolResult> {
  return runToolCall(tools.get(tool as never)!, input, context, { denials }, `call-${Math.random().toString(36).slice(2)}`);
}


let shared: Setup;
beforeAll(async () => {
  if (available) shared = await setup();
}, 60_000);
afterAll(async () => {
  await shared?.executor.stop();
  await resetSandbox();
});

/** The two ways a sandboxed bash call runs: in the agent's tool executor, or in a sandbox of its own. */
const paths = [
  { name: 'in the tool executor', context: () => shared.context },
  { name: 'in a sandbox per call (no executor)', context: (): ToolContext => ({ ...shared.context, toolExecutor: undefined }) },
];

describe.skipIf(!available).each(paths)('bash $name: nothing a call started outlives it', ({ context: contextOf }) => {
  it('set -m, setsid, nohup, a double fork, disown, a detached node child, a python daemon: all dead when the call returns', async () => {
    const context = contextOf();
    const jobs = [
      'set -m',
      'sleep 61.4321 &',
      'setsid sleep 61.4322 &',
      'nohup sleep 61.4323 >/dev/null 2>&1 &',
      '(sleep 61.4324 &)',
      'sleep 61.4325 & disown',
      'node detach.js',
      'python3 daemon.py',
      'echo started',
    ].join('\n');
    expect((await call(context, 'write_file', { path: 'jobs.sh', content: `${jobs}\n` })).isError).toBe(false);
    expect((await call(context, 'write_file', { path: 'detach.js', content: "require('child_process').spawn('sleep', ['61.4326'], { detached: true, stdio: 'ignore' }).unref();\n" })).isError).toBe(false);
    expect((await call(context, 'write_file', { path: 'daemon.py', content: "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execvp('sleep', ['sleep', '61.4327'])\n    os._exit(0)\n" })).isError).toBe(false);
    const result = await call(context, 'bash', { command: 'bash jobs.sh' });
    expect(result.output).toContain('started');
    expect(result.isError, result.output).toBe(false);
    expect(processesWith('61.432')).toEqual([]);
  });

  it('after a timeout: the command and its children are gone', async () => {
    const started = performance.now();
    const result = await call(contextOf(), 'bash', { command: 'sleep 62.111 & sleep 62.112', timeout_ms: 1500 });
    expect(result.output).toContain('timed out');
    expect(performance.now() - started).toBeLessThan(10_000);
    await sleep(300);
    expect(processesWith('62.11')).toEqual([]);
  });

  it('after an abort: the command and its children are gone', async () => {
    expect((await call(shared.context, 'write_file', { path: 'abort.sh', content: 'setsid sleep 63.111 &\nsleep 63.112\n' })).isError).toBe(false);
    const controller = new AbortController();
    const pending = call({ ...contextOf(), signal: controller.signal }, 'bash', { command: 'bash abort.sh' });
    await sleep(1500);
    controller.abort();
    const result = await pending;
    expect(result.output).toMatch(/aborted|was not run/);
    await sleep(300);
    expect(processesWith('63.11')).toEqual([]);
  });
});

describe.skipIf(!available)('bash in the tool executor: the executor itself', () => {
  it('a command that kills everything it can see (kill -9 -1, its parent) ends only the executor: the next call starts a new one', async () => {
    const { context, executor } = shared;
    const killed = await call(context, 'bash', { command: 'kill -9 -1; kill -9 $PPID; sleep 1; echo survived' });
    expect(killed.isError).toBe(true);
    const next = await call(context, 'bash', { command: 'echo next-call-ran' });
    expect(next.output).toContain('next-call-ran');
    expect(next.isError).toBe(false);
    expect(executor.running).toBe(true);
  });

  it('two calls at once run one after the other: the second is not killed by the end of the first', async () => {
    const { context } = shared;
    const [first, second] = await Promise.all([
      call(context, 'bash', { command: 'sleep 0.3; echo first-done' }),
      call(context, 'bash', { command: 'sleep 0.6; echo second-done' }),
    ]);
    expect(first.output).toContain('first-done');
    expect(second.output).toContain('second-done');
  });

  it('the sweep leaves the sandbox\'s network bridge alone: an allowed host is reached on every call', async () => {
    const server = http.createServer((_request, response) => response.end('reached-the-host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const plan = { ...shared.plan, allowedHosts: ['127.0.0.1'] };
    const executor = createToolExecutor(plan, { cwd: shared.jail.root, env: shared.context.env as Record<string, string> });
    try {
      const context: ToolContext = { ...shared.context, sandbox: plan, toolExecutor: executor };
      for (let round = 0; round < 3; round += 1) {
        // `sleep` in the background: the sweep at the end of each call kills it, not the bridge.
        const result = await call(context, 'bash', { command: `sleep 30 & curl -sS -m 10 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${port}/` });
        expect(result.output, result.output).toContain('reached-the-host');
      }
    } finally {
      await executor.stop();
      server.close();
    }
  });
});

describe.skipIf(!available)('the executor\'s own environment', () => {
  it('starts without NODE_EXTRA_CA_CERTS (no certificate bundle parsed at its start); the commands it runs still get it', async () => {
    const marker = shared.repo.sibling('no-such-ca-bundle.pem');
    const env = { ...(shared.context.env as Record<string, string>), NODE_EXTRA_CA_CERTS: marker };
    const executor = createToolExecutor(shared.plan, { cwd: shared.jail.root, env });
    try {
      const result = await call({ ...shared.context, env, toolExecutor: executor }, 'bash', { command: 'echo "ca=[$NODE_EXTRA_CA_CERTS]"' });
      expect(result.output).toContain(`ca=[${marker}]`);
      const executors = processesWith('toolExecutorMain').map((line) => line.split(':')[0]!);
      expect(executors.length).toBeGreaterThan(0);
      for (const pid of executors) {
        let environment = '';
        try {
          environment = readFileSync(`/proc/${pid}/environ`, 'utf8');
        } catch {
          continue; // exited meanwhile
        }
        expect(environment).not.toContain('NODE_EXTRA_CA_CERTS=');
      }
    } finally {
      await executor.stop();
    }
  });
});

describe.skipIf(!available)('bash in the sandbox: the network is the plan\'s allow-list', () => {
  it('no host allowed: no network at all, no proxy (an outside address is a denial); the host on sandbox.network.allow: reached through the proxy', async () => {
    const server = http.createServer((_request, response) => response.end('reached-the-host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      // Inside the sandbox 127.0.0.1 is the sandbox's own loopback: the host is only reachable through the proxy.
      const viaProxy = `curl -sS -m 10 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${port}/`;
      // With no host allowed there is no proxy (no relay processes in the sandbox), only a loopback interface.
      const denials: ToolDenial[] = [];
      const closed = await call(shared.context, 'bash', { command: `echo "proxy=[$HTTP_PROXY]"; ${viaProxy}; curl -sS -m 5 http://192.0.2.1:${port}/; node -e "console.log('interfaces=' + Object.keys(require('os').networkInterfaces()).join(' '))"` }, denials);
      expect(closed.output).not.toContain('reached-the-host');
      expect(closed.output).toContain('proxy=[]');
      expect(closed.output).toContain('interfaces=lo\n');
      expect(denials[0]?.code).toBe('SANDBOX_NETWORK_DENIED');
      const direct = await call({ ...shared.context, toolExecutor: undefined }, 'bash', { command: `curl -sS -m 5 http://127.0.0.1:${port}/` });
      expect(direct.output).not.toContain('reached-the-host');
      const allowed = { ...shared.plan, allowedHosts: ['127.0.0.1'] };
      const refusedDenials: ToolDenial[] = [];
      const refused = await call({ ...shared.context, sandbox: { ...shared.plan, allowedHosts: ['192.0.2.1'] } }, 'bash', { command: viaProxy }, refusedDenials);
      expect(refused.output).not.toContain('reached-the-host');
      expect(refusedDenials[0]?.code).toBe('SANDBOX_NETWORK_DENIED');
      const open = await call({ ...shared.context, sandbox: allowed }, 'bash', { command: viaProxy });
      expect(open.output, open.output).toContain('reached-the-host');
    } finally {
      server.close();
    }
  });
});

/** A separate process that swaps `<worktree>/d` between a real directory and a symlink to `target` as fast as it can. */
function startFlipper(worktree: string, target: string): ChildProcess {
  const program = `
const fs = require('fs'); const path = require('path');
const d = path.join(${JSON.stringify(worktree)}, 'd'), real = path.join(${JSON.stringify(worktree)}, 'd-real');
// Each state is held 0.2–1 ms, so a check and the open that follows it straddle a swap often. A
// directory the writer re-created meanwhile (mkdir -p) is removed, so the cycle never gets stuck.
const dwell = () => { const until = process.hrtime.bigint() + BigInt(200000 + Math.floor(Math.random() * 800000)); while (process.hrtime.bigint() < until); };
for (;;) {
  try { fs.rmSync(real, { recursive: true, force: true }); fs.renameSync(d, real); } catch {}
  try { fs.symlinkSync(${JSON.stringify(target)}, d); } catch {}
  dwell();
  try { fs.rmSync(d, { recursive: true, force: true }); } catch {}
  try { fs.renameSync(real, d); } catch {}
  dwell();
}`;
  return spawn(process.execPath, ['-e', program], { stdio: 'ignore' });
}

describe.skipIf(!available)('file tools in the sandbox: no check-then-open race', () => {
  const iterations = 300;

  type Tally = { ok: number; denied: Record<string, number>; failed: number };
  async function race(target: string, tool: 'write_file' | 'edit_file', context: ToolContext = shared.context, until?: (tally: Tally) => boolean): Promise<Tally> {
    const { worktree } = shared;
    // A fresh start: no link or directory left by an earlier race.
    rmSync(path.join(worktree, 'd'), { recursive: true, force: true });
    rmSync(path.join(worktree, 'd-real'), { recursive: true, force: true });
    mkdirSync(path.join(worktree, 'd'), { recursive: true });
    writeFileSync(path.join(worktree, 'd', 'f.txt'), 'start\n');
    const flipper = startFlipper(worktree, target);
    const tally = { ok: 0, denied: {} as Record<string, number>, failed: 0 };
    try {
      await sleep(200);
      // At least `iterations`, and on until the race was hit once (a refusal after the jail let it through), at most 5×.
      // (With `until`, on until that outcome was seen, at most 20× — on a loaded machine the flipper may get
      // no core for a while: the positive control waits for the outside file, the decoy for a swap caught.)
      const raced = () => (until ? until(tally) : Object.keys(tally.denied).some((code) => code.startsWith('SANDBOX_')) || tally.failed > 0);
      const limit = iterations * (until ? 20 : 5);
      for (let index = 0; index < limit && (until ? !raced() : index < iterations || !raced()); index += 1) {
        const denials: ToolDenial[] = [];
        const input = tool === 'write_file' ? { path: 'd/f.txt', content: `written ${index}\n` } : { path: 'd/f.txt', old_string: '\n', new_string: ` edit ${index}\n` };
        const result = await call(context, tool, input, denials);
        if (!result.isError) tally.ok += 1;
        else if (denials[0]) tally.denied[denials[0].code] = (tally.denied[denials[0].code] ?? 0) + 1;
        else tally.failed += 1;
      }
    } finally {
      flipper.kill('SIGKILL');
      await new Promise((resolve) => flipper.once('exit', resolve));
    }
    return tally;
  }

  it(`a directory flipped to a symlink OUTSIDE the worktree, ${iterations} writes and ${iterations} edits racing it: the outside file never changes`, async () => {
    const outside = shared.repo.sibling('outside');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'f.txt'), 'victim\n');
    // write_file races at least `iterations` times and on until a write landed and the sandbox refused one the jail let through (at most 20×): the default stop
    // (a refusal or a failed call) could end both races with failures only on a loaded machine (seen once in CI).
    const writes = await race(outside, 'write_file', shared.context, (tally) => tally.ok + tally.failed + Object.values(tally.denied).reduce((sum, count) => sum + count, 0) >= iterations && tally.ok > 0 && Object.keys(tally.denied).some((code) => code.startsWith('SANDBOX_')));
    const edits = await race(outside, 'edit_file');
    console.info(`[race outside] write_file ${JSON.stringify(writes)}; edit_file ${JSON.stringify(edits)}`);
    expect(readFileSync(path.join(outside, 'f.txt'), 'utf8')).toBe('victim\n');
    expect(readdirSync(outside)).toEqual(['f.txt']);
    expect(writes.ok).toBeGreaterThan(0);
    // The race was really run: the jail let writes through that the swap then sent outside, and the sandbox refused them.
    expect(Object.keys({ ...writes.denied, ...edits.denied }).some((code) => code.startsWith('SANDBOX_'))).toBe(true);
    // Every refused write was refused by the jail (a symlink when it looked) or by the sandbox.
    for (const code of [...Object.keys(writes.denied), ...Object.keys(edits.denied)]) expect(code).toMatch(/^(JAIL_|SANDBOX_)/);
  }, 300_000);

  it(`a directory flipped to a symlink to ANOTHER directory of the worktree: the decoy never gets written (the opened path is verified)`, async () => {
    const decoy = path.join(shared.worktree, 'decoy');
    mkdirSync(decoy, { recursive: true });
    writeFileSync(path.join(decoy, 'f.txt'), 'decoy\n');
    const writes = await race(decoy, 'write_file', shared.context, (tally) => (tally.denied.SANDBOX_PATH_SWAPPED ?? 0) > 0);
    console.info(`[race decoy] write_file ${JSON.stringify(writes)}`);
    expect(readFileSync(path.join(decoy, 'f.txt'), 'utf8')).toBe('decoy\n');
    expect(writes.denied.SANDBOX_PATH_SWAPPED ?? 0).toBeGreaterThan(0);
    expect(readdirSync(decoy)).toEqual(['f.txt']);
  }, 300_000);

  it('positive control: the same race against the in-process writer (no executor) does reach the outside file', async () => {
    const outside = shared.repo.sibling('outside-control');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'f.txt'), 'victim\n');
    const { toolExecutor: _executor, ...inProcess } = shared.context;
    const reachedNow = () => readFileSync(path.join(outside, 'f.txt'), 'utf8') !== 'victim\n';
    const writes = await race(outside, 'write_file', inProcess, () => reachedNow());
    const reached = reachedNow();
    console.info(`[race control] in-process write_file ${JSON.stringify(writes)}; the outside file ${reached ? 'WAS overwritten' : 'was not reached this time'}`);
    expect(reached).toBe(true);
  }, 300_000);

  it('read_file and list_dir go through the executor: the sandbox hides what it hides', async () => {
    const { context, repo } = shared;
    mkdirSync(repo.sibling('user-home/.ssh'), { recursive: true });
    writeFileSync(repo.sibling('user-home/.ssh/id_rsa'), 'secret-key\n');
    // A link inside the worktree to the secret: the jail refuses it (outside the root) before the executor.
    const link = await call(context, 'read_file', { path: repo.sibling('user-home/.ssh/id_rsa') });
    expect(link.isError).toBe(true);
    expect(link.output).not.toContain('secret-key');
    expect((await call(context, 'read_file', { path: 'src/a.ts' })).output).toContain('export const a = 1;');
    expect((await call(context, 'list_dir', { path: 'src' })).output).toBe('a.ts');
  });

  it('the executor: a write outside the sandbox fails with EROFS; a symbolic link in the last component with ELOOP', async () => {
    const { executor, repo, worktree } = shared;
    await expect(executor.write(repo.sibling('outside-direct.txt'), 'x')).rejects.toMatchObject({ code: 'EROFS' });
    expect(existsSync(repo.sibling('outside-direct.txt'))).toBe(false);
    writeFileSync(repo.sibling('victim2.txt'), 'v\n');
    await import('node:fs/promises').then((fs) => fs.symlink(repo.sibling('victim2.txt'), path.join(worktree, 'link.txt')));
    await expect(executor.write(path.join(worktree, 'link.txt'), 'x')).rejects.toMatchObject({ code: 'ELOOP' });
    expect(readFileSync(repo.sibling('victim2.txt'), 'utf8')).toBe('v\n');
  });

  it('measures the sandbox start-up cost per bash call (interleaved with the same call unsandboxed)', async () => {
    const { context } = shared;
    const { sandbox: _plan, toolExecutor: _executor, ...unsandboxed } = context;
    const sandboxed: number[] = [];
    const plain: number[] = [];
    await call(context, 'bash', { command: 'true' }); // the wrapper is built once per plan and reused
    for (let index = 0; index < 30; index += 1) {
      let started = performance.now();
      expect((await call(unsandboxed, 'bash', { command: 'true' })).isError).toBe(false);
      plain.push(performance.now() - started);
      started = performance.now();
      expect((await call(context, 'bash', { command: 'true' })).isError).toBe(false);
      sandboxed.push(performance.now() - started);
    }
    const quantile = (samples: number[], q: number) => [...samples].sort((left, right) => left - right)[Math.min(samples.length - 1, Math.floor(samples.length * q))]!;
    const overhead = sandboxed.map((value, index) => value - plain[index]!);
    console.info(
      `[bash] one bash call through the tool (jail check + git audit included): unsandboxed median ${quantile(plain, 0.5).toFixed(0)} ms, p95 ${quantile(plain, 0.95).toFixed(0)} ms; sandboxed median ${quantile(sandboxed, 0.5).toFixed(0)} ms, p95 ${quantile(sandboxed, 0.95).toFixed(0)} ms; sandbox start-up per call median ${quantile(overhead, 0.5).toFixed(0)} ms, p95 ${quantile(overhead, 0.95).toFixed(0)} ms`,
    );
  }, 300_000);

  it('measures the executor: start-up once, then the cost per write_file', async () => {
    const { context } = shared;
    const samples: number[] = [];
    for (let index = 0; index < 200; index += 1) {
      const started = performance.now();
      const result = await call(context, 'write_file', { path: 'notes.txt', content: `line ${index}\n`.repeat(20) });
      samples.push(performance.now() - started);
      expect(result.isError).toBe(false);
    }
    samples.sort((left, right) => left - right);
    const median = samples[Math.floor(samples.length / 2)]!;
    const p95 = samples[Math.floor(samples.length * 0.95)]!;
    console.info(`[executor] write_file through the sandboxed executor (jail check included): median ${median.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms over ${samples.length} writes`);
    const raw: number[] = [];
    for (let index = 0; index < 200; index += 1) {
      const started = performance.now();
      await shared.executor.write(path.join(shared.worktree, 'notes.txt'), `raw ${index}\n`);
      raw.push(performance.now() - started);
    }
    raw.sort((left, right) => left - right);
    console.info(`[executor] executor.write alone: median ${raw[100]!.toFixed(2)} ms, p95 ${raw[190]!.toFixed(2)} ms`);
    expect(median).toBeLessThan(200);
  }, 120_000);
});
