// Resident mode from the outside: the native client (dist/native/polywave-client, built by
// `npm run build` when a C compiler is there) against one warm server on a socket in a temporary
// directory, compared byte for byte with `node bin/polywave.js`. One server for the file (started
// in beforeAll); the last cases stop it, make it stale, kill it and start it again on purpose.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callerLimitsTighter, ownLimits, processAlive, residentCapable, residentCommands, stdinCommands } from '../src/cli/resident-server.js';
import { insertEvents, openEventStore } from '../src/observability/event-store.js';
import { binPath, corpusRoot, repoRoot, runCli } from './support/cli.js';

const client = path.join(repoRoot, 'dist', 'native', 'polywave-client');
const implDir = path.join(corpusRoot, 'polywave-go', 'IMPL');
const valid = path.join(implDir, 'IMPL-impl-rollback.yaml');
const invalid = path.join(implDir, 'complete', 'IMPL-baseline-gate-enforcement.yaml');
const bundle = path.join(repoRoot, 'dist', 'bundle', 'main.js');

function haveClient(): boolean {
  if (process.platform === 'win32' || !existsSync(bundle) || !existsSync(valid)) return false;
  if (!existsSync(client)) spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'build-native-client.mjs'), '--quiet']);
  return existsSync(client);
}
const enabled = haveClient();

let scratch = '';
let socketDir = '';
let socketPath = '';
let serverPid = 0;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The variables that say "CI" to the client (it then starts no server): unset unless a case sets them. */
const noCi = { CI: undefined, GITHUB_ACTIONS: undefined, GITLAB_CI: undefined, BUILDKITE: undefined, JENKINS_URL: undefined, TF_BUILD: undefined, NODE_OPTIONS: undefined };

/** Runs the native client with pipes (not a terminal: the resident path). */
function runClient(args: string[], options: { cwd?: string; env?: Record<string, string | undefined>; socket?: string; input?: string; started?: (pid: number) => void; binary?: string } = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.binary ?? client, args, {
      cwd: options.cwd ?? repoRoot,
      // POLYWAVE_RESIDENT=1: a call that finds no server starts one at once (without it, only the second such call
      // within 60 s does, and never in CI: the cases that test that say POLYWAVE_RESIDENT: undefined).
      env: { ...process.env, ...noCi, NO_COLOR: '1', POLYWAVE_RESIDENT: '1', POLYWAVE_RESIDENT_SOCKET: options.socket ?? socketPath, ...options.env },
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    options.started?.(child.pid!);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function status(socket = socketPath): { running?: boolean; pid?: number; requests?: number } {
  const result = spawnSync(process.execPath, [binPath, 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socket } });
  return JSON.parse(result.stdout) as { running?: boolean; pid?: number; requests?: number };
}

/** Polls `predicate` every 100 ms for `ms` of wall-clock time (a predicate that spawns a process takes time too). */
async function waitFor(predicate: () => boolean, ms = 20_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (predicate()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return predicate();
}

const alive = processAlive;

function manifest(slug: string): string {
  return readFileSync(valid, 'utf8').replace(/^feature_slug: .*$/m, `feature_slug: ${slug}`);
}

describe('what runs resident', () => {
  it('only read-only calls of the allow-list: no stdin, no writing flag, no --follow (analysis commands: test/resident-analysis.test.ts)', ({ expect }) => {
    const capable = [['validate', 'x.yaml'], ['--repo-dir', 'r', 'list-impls'], ['--repo-dir=r', 'check-completion', 'x', '--agent', 'A'], ['query', 'events', '--limit', '100'], ['metrics', 'slug'], ['scan-stubs', 'a.ts']];
    const not = [
      ['validate', 'x.yaml', '--fix'],
      ['validate', 'x.yaml', '--fix=true'],
      ['validate', '-'],
      ['scan-stubs', 'a.ts', '--append-impl', 'x.yaml', '--wave', '1'],
      ['query', 'events', '--follow'],
      ['solve', 'x.yaml'],
      ['set-completion', 'x.yaml'],
      ['hook', 'post-tool-use'],
      ['--help'],
      [],
    ];
    expect(capable.filter((argv) => !residentCapable(argv))).toEqual([]);
    expect(not.filter((argv) => residentCapable(argv))).toEqual([]);
    // hook reads stdin: resident only for a client that sends it on request (features bit 0)
    expect(residentCapable(['hook', 'pre-tool-use'], 1)).toBe(true);
    expect(residentCapable(['hook', 'pre-tool-use'], 0)).toBe(false);
    expect(residentCapable(['set-completion', '-'], 1)).toBe(false);
  });
});

describe.skipIf(!enabled)('the native client build', () => {
  it('compiles it into dist/native and bin/polywave-fast; under npm pack both are the portable form (no compiled code in the tarball)', ({ expect }) => {
    const copy = mkdtempSync(path.join(tmpdir(), 'polywave-native-build-'));
    try {
      for (const part of ['package.json', 'scripts/build-native-client.mjs', 'native/polywave-client.c', 'bin/polywave.js']) {
        mkdirSync(path.dirname(path.join(copy, part)), { recursive: true });
        copyFileSync(path.join(repoRoot, part), path.join(copy, part));
      }
      const build = (env: Record<string, string>, ...args: string[]) => spawnSync(process.execPath, [path.join(copy, 'scripts', 'build-native-client.mjs'), '--quiet', ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
      const head = (file: string) => readFileSync(file).subarray(0, 4).toString('latin1');
      expect(build({}).status).toBe(0);
      expect(head(path.join(copy, 'dist', 'native', 'polywave-client'))).toMatch(/^\x7fELF|^\xcf\xfa/);
      expect(readFileSync(path.join(copy, 'bin', 'polywave-fast'))).toEqual(readFileSync(path.join(copy, 'dist', 'native', 'polywave-client')));
      expect(build({ npm_command: 'pack' }).status).toBe(0);
      // dist/native stays for whoever runs from this checkout meanwhile (its seccomp filter is what makes the sandbox
      // available); package.json's "files" leaves it out of the tarball.
      expect(existsSync(path.join(copy, 'dist', 'native', 'polywave-client'))).toBe(true);
      expect((JSON.parse(readFileSync(path.join(copy, 'package.json'), 'utf8')) as { files: string[] }).files).toContain('!dist/native');
      expect(readFileSync(path.join(copy, 'bin', 'polywave-fast'), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n[\s\S]*import '\.\/polywave\.js';\n$/);
      expect(statSync(path.join(copy, 'bin', 'polywave-fast')).mode & 0o111).toBe(0o111);
      expect(build({ npm_command: 'pack' }, '--after-pack').status).toBe(0);
      expect(head(path.join(copy, 'bin', 'polywave-fast'))).not.toBe('#!/u');
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!enabled)('resident mode (native client + warm server)', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'polywave-resident-'));
    socketDir = path.join(scratch, 'sock');
    mkdirSync(socketDir, { mode: 0o700 });
    socketPath = path.join(socketDir, 'r.sock');
    mkdirSync(path.join(scratch, 'repo', 'docs', 'IMPL'), { recursive: true });
    writeFileSync(path.join(scratch, 'repo', 'docs', 'IMPL', 'IMPL-cwd-probe.yaml'), manifest('cwd-probe'));
    const server = spawn(process.execPath, [binPath, 'resident', 'start', '--foreground', '--idle-timeout', '300'], {
      env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath },
      stdio: 'ignore',
      detached: true,
    });
    server.unref();
    serverPid = server.pid!;
    expect(await waitFor(() => status().running === true)).toBe(true);
  }, 60_000);

  afterAll(() => {
    const running = status();
    for (const pid of [serverPid, running.pid ?? 0]) {
      // SIGKILL: a server left stopped (SIGSTOP) by a failed case would not act on SIGTERM
      if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('answers exactly like node bin/polywave.js: valid, invalid (exit 1), unreadable (exit 2), check-completion, list-impls, scan-stubs', async () => {
    const notYaml = path.join(scratch, 'not-yaml.yaml');
    writeFileSync(notYaml, 'key: [unclosed\n');
    writeFileSync(path.join(scratch, 'stub.ts'), 'export function f() {\n  // TODO: finish\n  return 1;\n}\n');
    const calls: Array<{ args: string[]; cwd?: string; code: number }> = [
      { args: ['validate', valid], code: 0 },
      { args: ['validate', invalid], code: 1 },
      { args: ['validate', notYaml], code: 2 },
      { args: ['validate', path.join(scratch, 'missing.yaml')], code: 2 },
      { args: ['check-completion', valid, '--agent', 'A'], code: 1 },
      { args: ['list-impls', '--dir', implDir], code: 0 },
      { args: ['scan-stubs', 'stub.ts'], cwd: scratch, code: 0 },
    ];
    const before = status().requests ?? 0;
    const pairs = await Promise.all(calls.map(async (call) => [await runClient(call.args, { cwd: call.cwd }), await runCli(call.args, { cwd: call.cwd })] as const));
    pairs.forEach(([resident, node], index) => {
      expect(resident, calls[index]!.args.join(' ')).toEqual({ code: node.code, stdout: node.stdout, stderr: node.stderr });
      expect(resident.code).toBe(calls[index]!.code);
    });
    expect(pairs[2]![0].stderr).toMatch(/^polywave: error\[V046_PARSE_ERROR\]: .*\n$/);
    expect(status().requests).toBe(before + calls.length);
  }, 120_000);

  it('hook <event> with its payload on stdin: byte-identical to node (deny, block, pass, unreadable payload), its log file gets the caller\'s umask; 150,000 arguments: one coded line', async () => {
    const wave = { agent_type: 'polywave-wave-agent', cwd: scratch };
    const impl = path.join(scratch, 'repo', 'docs', 'IMPL', 'IMPL-broken.yaml');
    const calls: Array<{ args: string[]; input: string; code: number }> = [
      { args: ['hook', 'pre-tool-use'], input: JSON.stringify({ ...wave, tool_name: 'Write', tool_input: { file_path: path.join(scratch, 'x.ts'), content: 'x' } }), code: 0 },
      { args: ['hook', 'post-tool-use'], input: JSON.stringify({ tool_name: 'Write', tool_input: { file_path: impl }, cwd: scratch }), code: 0 },
      { args: ['hook', 'pre-tool-use'], input: JSON.stringify({ tool_name: 'Read', tool_input: { file_path: valid } }), code: 0 },
      { args: ['hook', 'subagent-stop'], input: 'not json', code: 2 },
    ];
    writeFileSync(impl, 'feature_slug: broken\nwaves: [\n');
    const before = status().requests ?? 0;
    const pairs = await Promise.all(calls.map(async (call) => [await runClient(call.args, { input: call.input, cwd: scratch }), await runCli(call.args, { input: call.input, cwd: scratch })] as const));
    pairs.forEach(([resident, node], index) => {
      expect(resident, calls[index]!.args.join(' ')).toEqual({ code: node.code, stdout: node.stdout, stderr: node.stderr });
      expect(resident.code).toBe(calls[index]!.code);
    });
    expect(JSON.parse(pairs[0]![0].stdout)).toMatchObject({ hookSpecificOutput: { permissionDecision: 'deny' } });
    expect(JSON.parse(pairs[1]![0].stdout)).toMatchObject({ decision: 'block' });
    expect(status().requests).toBe(before + calls.length);
    // the plugin's launcher (claude-plugin/hooks/polywave-hook.sh) goes through the native client of its package
    const launcher = spawnSync('sh', [path.join(repoRoot, 'claude-plugin', 'hooks', 'polywave-hook.sh'), 'pre-tool-use'], { cwd: scratch, input: calls[0]!.input, encoding: 'utf8', env: { ...process.env, POLYWAVE_BIN: '', POLYWAVE_RESIDENT_SOCKET: socketPath } });
    expect({ code: launcher.status, stdout: launcher.stdout, stderr: launcher.stderr }).toEqual({ code: 0, stdout: pairs[0]![1].stdout, stderr: '' });
    expect(status().requests).toBe(before + calls.length + 1);
    // the log: appended by the server with the caller's umask (027 → 0640), as node would create it
    const log = path.join(scratch, 'hook-log.jsonl');
    const umaskCall = await new Promise<number | null>((resolve) => {
      const child = spawn('sh', ['-c', `umask 027 && exec "$0" hook pre-tool-use --log ${log}`, client], { cwd: scratch, env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath }, stdio: ['pipe', 'ignore', 'ignore'] });
      child.stdin.end(calls[0]!.input);
      child.on('close', resolve);
    });
    expect(umaskCall).toBe(0);
    expect(statSync(log).mode & 0o777).toBe(0o640);
    expect(JSON.parse(readFileSync(log, 'utf8'))).toMatchObject({ event: 'pre-tool-use', action: 'deny' });
    expect(status().requests).toBe(before + calls.length + 2);
    // 150,000 arguments (commander overflowed V8's stack: INTERNAL with a stack trace)
    const many = ['validate', ...Array.from({ length: 150_000 }, () => 'x')];
    expect(await runClient(many)).toEqual({ code: 2, stdout: '', stderr: 'polywave: error[RESOURCE_EXHAUSTION]: 150001 arguments: at most 65536 in one call (split the list, e.g. with xargs -n 32768)\n' });
    expect(status().requests).toBe(before + calls.length + 3);
  }, 60_000);

  it('query events and metrics over an event store (issue 14: the ≤ 100 ms path of bench:events): the same bytes and exit codes as node', async () => {
    const store = path.join(scratch, 'events.db');
    const db = openEventStore(store)!;
    const rows = Array.from({ length: 60 }, (_, index) => {
      const seq = index + 1;
      const agent = ['A', 'B', 'C'][index % 3]!;
      const type = index % 4 === 0 ? 'agent-end' : 'agent-tool-call';
      const payload = type === 'agent-end' ? { v: 1, type, slug: 'probe', wave: 1, agent, attempt: 1, status: 'complete', turns: 3, input_tokens: 900, output_tokens: 120, cost_usd: 0.004, duration_ms: 5_000 } : { v: 1, type, slug: 'probe', wave: 1, agent, attempt: 1, tool: 'bash', is_error: false, duration_ms: seq };
      return { run_id: 'run-probe', seq, ts: Date.UTC(2026, 11, 2) + seq, type, activity_type: null, slug: 'probe', wave: 1, agent, program: null, payload: JSON.stringify(payload) };
    });
    insertEvents(db, rows);
    db.close();
    const env = { POLYWAVE_EVENTS_DB: store };
    const calls = [
      ['query', 'events', '--impl', 'probe', '--limit', '100'],
      ['query', 'events', '--impl', 'probe', '--agent', 'B', '--format', 'json'],
      ['metrics', 'probe', '--format', 'json'],
      ['metrics', 'no-such-impl'],
      ['query', 'events', '--limit', 'many'],
    ];
    const before = status().requests ?? 0;
    for (const args of calls) {
      const [resident, node] = [await runClient(args, { env }), await runCli(args, { env })];
      expect(resident, args.join(' ')).toEqual({ code: node.code, stdout: node.stdout, stderr: node.stderr });
    }
    expect(JSON.parse((await runClient(calls[1]!, { env })).stdout)).toHaveLength(20);
    expect(status().requests).toBe(before + calls.length + 1); // every call answered by the server, none by node
  }, 120_000);

  it('resident: bad input is one coded line, exit 2', async () => {
    const [action, idle] = await Promise.all([runCli(['resident', 'restart']), runCli(['resident', 'start', '--idle-timeout', 'soon'])]);
    expect(action).toMatchObject({ code: 2, stdout: '', stderr: 'polywave: error[X001_INVALID_INPUT]: resident expects start, stop or status, got "restart"\n' });
    expect(idle).toMatchObject({ code: 2, stdout: '', stderr: 'polywave: error[X001_INVALID_INPUT]: --idle-timeout expects a positive number of seconds, got "soon"\n' });
  }, 60_000);

  it('runs a command that writes (set-completion) through node, which really writes; POLYWAVE_RESIDENT=0 bypasses the server', async () => {
    const file = path.join(scratch, 'IMPL-write.yaml');
    copyFileSync(valid, file);
    const before = status().requests ?? 0;
    const result = await runClient(['set-completion', file, '--agent', 'A', '--status', 'complete', '--commit', 'abc1234'], { cwd: scratch });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toMatch(/commit: "?abc1234"?/);
    const bypass = await runClient(['validate', valid], { env: { POLYWAVE_RESIDENT: '0' } });
    expect(bypass.code).toBe(0);
    expect(JSON.parse(bypass.stdout)).toMatchObject({ valid: true });
    expect(status().requests).toBe(before);
  }, 60_000);

  it("takes the caller's cwd and environment (list-impls' default docs/IMPL; TMPDIR and POLYWAVE_NO_CACHE reach its parse cache)", async () => {
    // written in beforeAll: the parse cache stores only files unchanged for a second
    const repo = path.join(scratch, 'repo');
    const cacheOn = path.join(scratch, 'tmp-on');
    const cacheOff = path.join(scratch, 'tmp-off');
    mkdirSync(cacheOn);
    mkdirSync(cacheOff);
    const on = await runClient(['list-impls'], { cwd: repo, env: { TMPDIR: cacheOn } });
    const off = await runClient(['list-impls'], { cwd: repo, env: { TMPDIR: cacheOff, POLYWAVE_NO_CACHE: '1' } });
    const node = await runCli(['list-impls'], { cwd: repo, env: { POLYWAVE_NO_CACHE: '1' } });
    expect(on).toEqual({ code: 0, stdout: node.stdout, stderr: '' });
    expect(off).toEqual(on);
    expect(JSON.parse(on.stdout).impls.map((impl: { feature_slug: string }) => impl.feature_slug)).toEqual(['cwd-probe']);
    expect(readdirSync(path.join(cacheOn, `polywave-${process.getuid!()}`)).filter((name) => name.startsWith('list-impls-'))).toHaveLength(1);
    expect(existsSync(path.join(cacheOff, `polywave-${process.getuid!()}`))).toBe(false);
    // --repo-dir before the command, relative to the caller's cwd
    const relative = await runClient(['--repo-dir', 'repo', 'list-impls', '--dir', 'repo/docs/IMPL'], { cwd: scratch, env: { POLYWAVE_NO_CACHE: '1' } });
    expect(relative.stdout).toBe(node.stdout);
  }, 60_000);

  it('runs node itself, as the caller asked, under NODE_OPTIONS, tighter resource limits or a higher nice level; in CI it uses a running server but starts none', async () => {
    const before = status().requests ?? 0;
    // NODE_OPTIONS (--inspect, --max-old-space-size, …) must apply: a --require'd file proves node ran the call
    // (its answer is node's: the one the other calls below must give)
    const probe = path.join(scratch, 'node-options-probe.cjs');
    const ran = path.join(scratch, 'node-options-ran');
    writeFileSync(probe, `require('node:fs').writeFileSync(${JSON.stringify(ran)}, 'ran');\n`);
    const expected = await runClient(['validate', valid], { env: { NODE_OPTIONS: `--require ${probe}` } });
    expect(readFileSync(ran, 'utf8')).toBe('ran');
    expect(expected).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(expected.stdout)).toMatchObject({ valid: true });
    // limits tighter than the server's (virtual memory, open files' hard limit — node raises the soft one to it —, nice)
    const own = ownLimits()!;
    expect(own).toMatchObject({ as: expect.any(Number), nofile: expect.any(Number), nice: expect.any(Number) });
    expect([callerLimitsTighter('as=inf data=inf cpu=inf nofile=inf nice=0', { ...own, nice: 0 }), callerLimitsTighter('as=1000000 nice=0', { ...own, as: Infinity, nice: 0 }), callerLimitsTighter(`nofile=${own.nofile!} nice=${own.nice! + 1}`, own), callerLimitsTighter(undefined, own)]).toEqual([false, true, true, false]);
    // (virtual memory by callerLimitsTighter above; end to end the subtle one, open files' hard limit, and nice)
    // (`nice -n 3` raises the caller's nice level by 3 relative to the test's own, as the server inherits it: util-linux's
    // `renice -n 3` sets 3 absolutely — under a test run started with `nice` (10) that is LOWER than the server's)
    const limited = [`ulimit -n ${Math.min(own.nofile! - 1, 4096)} && exec`, 'exec nice -n 3'];
    for (const limit of limited) {
      const result = await new Promise<Result>((resolve) => {
        const child = spawn('sh', ['-c', `${limit} "$0" validate "$1"`, client, valid], { env: { ...process.env, ...noCi, POLYWAVE_RESIDENT_SOCKET: socketPath }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(result, limit).toEqual(expected);
    }
    expect(status().requests, 'none of these reached the server').toBe(before);
    // CI: a running server is used …
    expect(await runClient(['validate', valid], { env: { CI: 'true', POLYWAVE_RESIDENT: undefined } })).toEqual(expected);
    expect(status().requests).toBe(before + 1);
    // … but no call starts one, nor leaves the marker a second call would start one on (outside CI the first call does)
    const ciDir = path.join(scratch, 'ci-sock');
    mkdirSync(ciDir, { mode: 0o700 });
    for (const ci of [{ CI: 'true' }, { GITHUB_ACTIONS: 'true' }]) {
      expect(await runClient(['validate', valid], { socket: path.join(ciDir, 'r.sock'), env: { ...ci, POLYWAVE_RESIDENT: undefined } })).toEqual(expected);
    }
    expect(readdirSync(ciDir)).toEqual([]);
    // The client's list of commands that may start a server is the server's allow-list.
    const listed = /resident_commands\[\] = \{([^}]*)\}/.exec(readFileSync(path.join(repoRoot, 'native', 'polywave-client.c'), 'utf8'))![1]!.match(/"[^"]+"/g)!.map((name) => name.slice(1, -1));
    expect(listed.sort()).toEqual([...residentCommands, ...stdinCommands].sort());
  }, 60_000);

  it('20 concurrent clients each get their own answer', async () => {
    const dirs = Array.from({ length: 20 }, (_, index) => {
      const dir = path.join(scratch, `many-${index}`, 'docs', 'IMPL');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `IMPL-many-${index}.yaml`), manifest(`many-${index}`));
      return path.dirname(path.dirname(dir));
    });
    const results = await Promise.all(dirs.map((dir) => runClient(['list-impls'], { cwd: dir, env: { POLYWAVE_NO_CACHE: '1' } })));
    results.forEach((result, index) => {
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).impls.map((impl: { feature_slug: string }) => impl.feature_slug)).toEqual([`many-${index}`]);
    });
  }, 60_000);

  it('refuses a socket directory open to others, a symlink or owned by someone else: node answers, no server starts there', async () => {
    const open = path.join(scratch, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const link = path.join(scratch, 'link');
    symlinkSync(socketDir, link);
    const foreign = path.join(scratch, 'foreign');
    mkdirSync(foreign, { mode: 0o700 });
    const canChown = process.getuid!() === 0;
    if (canChown) chownSync(foreign, 65534, 65534);
    // node's answer (the server's: the same bytes, first case), asked of the server: one Node start less
    const node = await runClient(['validate', valid]);
    const before = status().requests ?? 0;
    for (const dir of canChown ? [open, link, foreign] : [open, link]) {
      const result = await runClient(['validate', valid], { socket: path.join(dir, 'r.sock') });
      expect(result).toEqual({ code: 0, stdout: node.stdout, stderr: node.stderr });
    }
    expect(readdirSync(open)).toEqual([]);
    expect(readdirSync(foreign)).toEqual([]);
    // the symlink led to the live server's directory: still not used
    expect(status().requests).toBe(before);
  }, 60_000);

  it('finds the default socket the same way as the server: <TMPDIR>/polywave-<uid>/resident-<hash>.sock; the first call that finds no server starts none, the second within 60 s does', async () => {
    const tmp = path.join(scratch, 'default-tmp');
    mkdirSync(tmp);
    // Not forced (POLYWAVE_RESIDENT unset), not CI: the first call that finds no server starts none (a marker
    // <socket>.seen, 0600), a call of a command the server cannot run neither, the next one within 60 s starts it.
    const env = { TMPDIR: tmp, XDG_RUNTIME_DIR: undefined, POLYWAVE_RESIDENT_SOCKET: undefined, POLYWAVE_RESIDENT: undefined };
    const dir = path.join(tmp, `polywave-${process.getuid!()}`);
    const first = await runClient(['list-impls', '--dir', implDir], { env });
    expect(first.code).toBe(0);
    // (list-impls' parse cache lives in that directory too)
    const ours = () => readdirSync(dir).filter((name) => name.startsWith('resident-'));
    const files = () => ours().map((name) => name.replace(/^resident-[0-9a-f]{8}\.sock/, 'S'));
    expect(files()).toEqual(['S.seen']);
    expect(statSync(path.join(dir, ours()[0]!)).mode & 0o777).toBe(0o600);
    expect((await runClient(['--version'], { env })).code).toBe(0);
    expect(files()).toEqual(['S.seen']);
    const statusIn = () => {
      const result = spawnSync(process.execPath, [binPath, 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, ...env } });
      return JSON.parse(result.stdout) as { running: boolean; socket: string; requests?: number };
    };
    const second = await runClient(['list-impls', '--dir', implDir], { env });
    expect(second).toEqual(first);
    expect(files()).toContain('S.pid');
    expect(await waitFor(() => statusIn().running)).toBe(true);
    expect(statusIn().socket).toMatch(new RegExp(`^${tmp}/polywave-${process.getuid!()}/resident-[0-9a-f]{8}\\.sock$`));
    const third = await runClient(['list-impls', '--dir', implDir], { env });
    expect(third).toEqual(first);
    expect(statusIn().requests).toBe(1);
    spawnSync(process.execPath, [binPath, 'resident', 'stop'], { env: { ...process.env, ...env } });
    expect(statusIn().running).toBe(false);
  }, 60_000);

  it('`resident status` / `resident stop` under POLYWAVE_RESIDENT=1 start no server on their way (outside round X47)', async () => {
    for (const args of [['resident', 'status', '--json'], ['resident', 'stop']]) {
      const socket = path.join(socketDir, `self-${args[1]}.sock`);
      const result = await runClient(args, { socket });
      // (status: exit 1, the plain "no, not running"; stop: nothing to stop, exit 0)
      expect([result.code, result.stdout.includes('"running": false') || result.stdout.includes('no resident server was running')]).toEqual([args[1] === 'status' ? 1 : 0, true]);
      // a server started on the way would be up within a few seconds (its socket), and status would say so
      expect(await waitFor(() => existsSync(socket), 3000)).toBe(false);
      expect(status(socket).running).not.toBe(true);
    }
  });

  it('prefers $XDG_RUNTIME_DIR/polywave/ for the default socket; without it, a squatted <tmp>/polywave-<uid>/ (open to others) → node answers, no error, no server', async () => {
    const runtime = path.join(scratch, 'xdg');
    mkdirSync(runtime, { mode: 0o700 });
    const tmp = path.join(scratch, 'squatted-tmp');
    const squatted = path.join(tmp, `polywave-${process.getuid!()}`);
    mkdirSync(squatted, { recursive: true });
    chmodSync(squatted, 0o777);
    // (answered by node: the same bytes as the resident answers below)
    const squat = await runClient(['list-impls', '--dir', implDir], { env: { TMPDIR: tmp, XDG_RUNTIME_DIR: undefined, POLYWAVE_RESIDENT_SOCKET: undefined } });
    expect(squat).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(squat.stdout).impls.length).toBeGreaterThan(0);
    expect(readdirSync(squatted)).toEqual([]);
    const env = { TMPDIR: tmp, XDG_RUNTIME_DIR: runtime, POLYWAVE_RESIDENT_SOCKET: undefined };
    const statusIn = () => JSON.parse(spawnSync(process.execPath, [binPath, 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, ...env } }).stdout) as { running: boolean; socket: string; requests?: number };
    expect(await runClient(['list-impls', '--dir', implDir], { env })).toEqual(squat);
    expect(await waitFor(() => statusIn().running)).toBe(true);
    expect(statusIn().socket).toMatch(new RegExp(`^${runtime}/polywave/resident-[0-9a-f]{8}\\.sock$`));
    expect(statSync(path.join(runtime, 'polywave')).mode & 0o777).toBe(0o700);
    expect(await runClient(['list-impls', '--dir', implDir], { env })).toEqual(squat);
    expect(statusIn().requests).toBe(1);
    spawnSync(process.execPath, [binPath, 'resident', 'stop'], { env: { ...process.env, ...env } });
    expect(statusIn().running).toBe(false);
    expect(readdirSync(squatted)).toEqual([]);
  }, 60_000);

  it('resident stop signals only a resident server, never whatever process reused a stale pid file\'s pid', async () => {
    const dir = path.join(scratch, 'pid-reuse');
    mkdirSync(dir, { mode: 0o700 });
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(dir, 'r.sock.pid'), `${bystander.pid}\n`);
      const stop = spawnSync(process.execPath, [binPath, 'resident', 'stop', '--json'], { encoding: 'utf8', env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: path.join(dir, 'r.sock') } });
      expect(stop.status).toBe(0);
      expect(JSON.parse(stop.stdout)).toMatchObject({ stopped: false, running: false, pid: null });
      expect(alive(bystander.pid!)).toBe(true);
    } finally {
      bystander.kill('SIGKILL');
    }
  }, 60_000);

  it('a stale server (bundle changed) is not used and exits; the call answers through node and a new server takes the socket', async () => {
    // On a copy of the package (its own bundle and client): making it stale touches no file that another
    // test file's server (test/resident-analysis.test.ts, running beside this one) checks on every request.
    const pkg = path.join(scratch, 'pkg');
    mkdirSync(path.join(pkg, 'bin'), { recursive: true });
    mkdirSync(path.join(pkg, 'dist', 'native'), { recursive: true });
    copyFileSync(path.join(repoRoot, 'package.json'), path.join(pkg, 'package.json'));
    copyFileSync(binPath, path.join(pkg, 'bin', 'polywave.js'));
    cpSync(path.join(repoRoot, 'dist', 'bundle'), path.join(pkg, 'dist', 'bundle'), { recursive: true });
    copyFileSync(client, path.join(pkg, 'dist', 'native', 'polywave-client'));
    chmodSync(path.join(pkg, 'dist', 'native', 'polywave-client'), 0o755);
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(pkg, 'node_modules'));
    const copyClient = path.join(pkg, 'dist', 'native', 'polywave-client');
    const socket = path.join(socketDir, 'stale.sock');
    const call = () => runClient(['validate', valid], { socket, binary: copyClient });
    // No server on that socket: node answers and the client starts one (from the copy).
    const first = await call();
    expect(first.code, first.stderr).toBe(0);
    expect(await waitFor(() => status(socket).running === true)).toBe(true);
    const oldPid = status(socket).pid!;
    const warm = await call();
    expect(warm.stdout).toBe(first.stdout);
    expect(status(socket).requests).toBe(1);

    const copyBundle = path.join(pkg, 'dist', 'bundle', 'main.js');
    const times = statSync(copyBundle);
    utimesSync(copyBundle, times.atime, new Date(times.mtime.getTime() + 5000));
    const result = await call();
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ valid: true });
    try {
      expect(await waitFor(() => !alive(oldPid))).toBe(true);
      expect(await waitFor(() => status(socket).running === true && status(socket).pid !== oldPid)).toBe(true);
      const fresh = status(socket);
      expect(fresh.requests).toBe(0);
      const again = await call();
      expect(again.stdout).toBe(result.stdout);
      expect(status(socket).requests).toBe(1);
    } finally {
      for (const pid of [oldPid, status(socket).pid ?? 0]) if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 90_000);

  it('a server killed during the call: the client answers through node, never hangs; then no server → fallback and a new one; resident stop stops it', async () => {
    const victim = status().pid!;
    process.kill(victim, 'SIGSTOP');
    const pending = runClient(['validate', invalid]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(victim, 'SIGKILL');
    const result = await pending;
    const node = await runCli(['validate', invalid]);
    expect(result).toEqual({ code: 1, stdout: node.stdout, stderr: node.stderr });
    // The killed server left its socket file: refused → node answers and a server is started for the next call.
    const next = await runClient(['validate', invalid]);
    expect(next).toEqual(result);
    expect(await waitFor(() => status().running === true)).toBe(true);
    const stop = spawnSync(process.execPath, [binPath, 'resident', 'stop', '--json'], { encoding: 'utf8', env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath } });
    expect(stop.status).toBe(0);
    expect(JSON.parse(stop.stdout)).toMatchObject({ stopped: true });
    expect(status().running).toBe(false);
    expect(existsSync(socketPath)).toBe(false);
  }, 90_000);

  it('a client killed while its call hangs in the server (a git that never answers): the server ends, the next caller is answered without waiting for it, a new server takes over', async () => {
    const first = await runClient(['validate', valid]);
    expect(await waitFor(() => status().running === true)).toBe(true);
    const victim = status().pid!;
    const fakeBin = path.join(scratch, 'hung-git');
    const gitPid = path.join(scratch, 'hung-git.pid');
    mkdirSync(fakeBin);
    // Sleeps far longer than the test may take on a loaded 2-core CI (30 s was not enough there: the
    // "still running" check below then failed); both sleepers are killed in the finally blocks.
    writeFileSync(path.join(fakeBin, 'git'), `#!/bin/sh\necho $$ > ${gitPid}\nexec sleep 600\n`, { mode: 0o755 });
    const transcript = path.join(scratch, 'scout-transcript.txt');
    writeFileSync(transcript, '[polywave:scout:probe] go\n');
    const payload = JSON.stringify({ agent_type: 'polywave-scout', agent_transcript_path: transcript, cwd: scratch });
    let clientPid = 0;
    const hung = runClient(['hook', 'subagent-stop'], { input: payload, cwd: scratch, env: { PATH: `${fakeBin}:${process.env.PATH}` }, started: (pid) => (clientPid = pid) });
    expect(await waitFor(() => existsSync(gitPid), 20_000)).toBe(true);
    const sleeper = Number(readFileSync(gitPid, 'utf8'));
    try {
      process.kill(clientPid, 'SIGKILL');
      expect((await hung).code).toBe(null);
      const startedNext = Date.now();
      const next = await runClient(['validate', valid]);
      expect(next).toEqual(first);
      // answered without waiting for the hung git (a 600 s sleep; the old server's exit may end it meanwhile)
      expect(Date.now() - startedNext).toBeLessThan(30_000);
      expect(await waitFor(() => !alive(victim))).toBe(true);
      expect(await waitFor(() => status().running === true && status().pid !== victim)).toBe(true);
    } finally {
      if (alive(sleeper)) process.kill(sleeper, 'SIGKILL');
    }
    spawnSync(process.execPath, [binPath, 'resident', 'stop'], { env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath } });
    // The run limit (POLYWAVE_RESIDENT_MAX_RUN_S, here 1 s, passed to the server the client starts): the hook's
    // stdin is spent, so its caller gets one coded line and exit 2, and the server ends.
    rmSync(gitPid, { force: true });
    await runClient(['validate', valid], { env: { POLYWAVE_RESIDENT_MAX_RUN_S: '1' } });
    expect(await waitFor(() => status().running === true)).toBe(true);
    const limited = status().pid!;
    const startedTimedOut = Date.now();
    const timedOut = await runClient(['hook', 'subagent-stop'], { input: payload, cwd: scratch, env: { PATH: `${fakeBin}:${process.env.PATH}` } });
    const secondSleeper = Number(readFileSync(gitPid, 'utf8'));
    try {
      expect(timedOut).toEqual({ code: 2, stdout: '', stderr: 'polywave: error[RESIDENT_TIMEOUT]: the call ran longer than 1 s in the resident server (POLYWAVE_RESIDENT=0 runs without it)\n' });
      // the limit answered, not the hung git's end (a 600 s sleep)
      expect(Date.now() - startedTimedOut).toBeLessThan(30_000);
      expect(await waitFor(() => !alive(limited))).toBe(true);
    } finally {
      if (alive(secondSleeper)) process.kill(secondSleeper, 'SIGKILL');
    }
  }, 90_000);
});
