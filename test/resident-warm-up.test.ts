// The resident server's warm-up (src/analysis/engine/warm-up.ts): once it listens, the server runs
// the analysis engine once on a sample repository of its own, in a private temporary directory, so
// that a caller's first cold call does not run the engine before V8 has optimised it. What must
// hold, tried from outside: the sample really exercises every language (references found in each),
// nothing of it is left behind (not on success, not when the server stops mid-way, not when a step
// fails), a request that arrives during the warm-up is answered at once, and
// POLYWAVE_RESIDENT_PRELOAD=0 turns it off. And the server's git commands go through the spawn
// helper, which runs with the server's own environment, not with the first caller's.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sweepStaleWarmUps, warmUpEngine, warmUpSample } from '../src/analysis/engine/warm-up.js';
import { processAlive } from '../src/cli/resident-server.js';
import { createGit } from '../src/git/git-cli.js';
import { endGitSpawnHelper, gitSpawnHelperKind, offloadGitSpawns } from '../src/git/spawn-server.js';
import { binPath, repoRoot } from './support/cli.js';

const client = path.join(repoRoot, 'dist', 'native', 'polywave-client');
const bundle = path.join(repoRoot, 'dist', 'bundle', 'main.js');
const enabled = process.platform === 'linux' && existsSync(bundle) && existsSync(client);

const scratches: string[] = [];
const servers: number[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'polywave-warm-up-test-'));
  scratches.push(dir);
  return dir;
}
afterAll(() => {
  for (const pid of servers) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  for (const dir of scratches) rmSync(dir, { recursive: true, force: true });
});

/** Runs `fn` with TMPDIR pointing at a fresh private directory (os.tmpdir() reads it at each call). */
async function withTmpdir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = path.join(scratch(), 'tmp');
  mkdirSync(dir);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await fn(dir);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

describe('warmUpEngine', () => {
  it('finds references in every language of its sample and leaves no directory behind', async () => {
    await withTmpdir(async (dir) => {
      const result = await warmUpEngine(process.env);
      expect(result).toBeDefined();
      // Each search met its symbol in every file that uses it: TS+TSX+JS, Go (qualified and not), Python+Rust.
      expect(result!.references.sharedHelper).toBeGreaterThan(40);
      expect(result!.references['SharedHelper in go/p0/f0.go']).toBeGreaterThan(5);
      expect(result!.references.shared_helper).toBeGreaterThan(30);
      expect(result!.references['shared_helper in src/part0/m0.rs']).toBeGreaterThan(10);
      expect(result!.graphEdges).toBeGreaterThan(6);
      expect(readdirSync(dir)).toEqual([]);
    });
  }, 60_000);

  it('samples every language the engine reads, the searched words also in comments and strings', () => {
    const files = Object.keys(warmUpSample());
    for (const ext of ['.ts', '.tsx', '.js', '.go', '.py', '.rs']) expect(files.some((file) => file.endsWith(ext)), ext).toBe(true);
    const texts = Object.values(warmUpSample()).join('\n');
    expect(texts).toMatch(/\/\*\* compute\d+: sharedHelper named in a comment/);
    expect(texts).toMatch(/"shared_helper"/);
  });

  it('stops when told to, and removes its directory when it stops or a step fails', async () => {
    await withTmpdir(async (dir) => {
      expect(await warmUpEngine(process.env, async () => false)).toBeUndefined();
      expect(readdirSync(dir)).toEqual([]);
      let steps = 0;
      await expect(
        warmUpEngine(process.env, async () => {
          steps += 1;
          if (steps === 3) throw new Error('stopped in the middle');
          return true;
        }),
      ).rejects.toThrow('stopped in the middle');
      expect(readdirSync(dir)).toEqual([]);
    });
  }, 60_000);
});

describe('the warm-up\'s directory (outside round X42)', () => {
  it('is made under the temporary directory it is given, never under a caller\'s relative TMPDIR and cwd of the moment', async () => {
    const root = scratch();
    const own = path.join(root, 'own-tmp');
    const callerCwd = path.join(root, 'caller');
    mkdirSync(own);
    mkdirSync(callerCwd);
    const savedCwd = process.cwd();
    const savedTmp = process.env.TMPDIR;
    let calls = 0;
    try {
      const result = await warmUpEngine(
        process.env,
        async () => {
          // A request runs meanwhile: the process has its caller's environment and cwd (the resident server swaps both).
          calls += 1;
          if (calls === 1) {
            process.env.TMPDIR = 'tmp';
            process.chdir(callerCwd);
          }
          return true;
        },
        own,
      );
      expect(result?.references.sharedHelper).toBeGreaterThan(40);
    } finally {
      process.chdir(savedCwd);
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    }
    expect(readdirSync(callerCwd)).toEqual([]);
    expect(readdirSync(own)).toEqual([]);
    await expect(warmUpEngine(process.env, async () => true, 'relative/tmp')).rejects.toThrow('must be absolute');
  }, 60_000);

  it('removes its directory when the process exits in the middle, and a killed one\'s at the next warm-up', async () => {
    const root = scratch();
    // A process that exits (as the server does on a request timeout: process.exit) during the warm-up's second step.
    const script = `
      const { warmUpEngine } = await import(${JSON.stringify(path.join(repoRoot, 'dist', 'analysis', 'engine', 'warm-up.js'))});
      let calls = 0;
      await warmUpEngine(process.env, async () => { calls += 1; if (calls === 3) process.exit(0); return true; }, ${JSON.stringify(root)});
    `;
    const exited = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(exited.status, exited.stderr).toBe(0);
    expect(readdirSync(root).filter((name) => name.startsWith('polywave-warm-up-'))).toEqual([]);
    // SIGKILLed: nothing can clean up then; the next warm-up removes a dead process's directory (and only that).
    const deadPid = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    mkdirSync(path.join(root, `polywave-warm-up-${deadPid}-abcdef`, 'ts'), { recursive: true });
    mkdirSync(path.join(root, `polywave-warm-up-${process.pid}-other`));
    mkdirSync(path.join(root, 'polywave-warm-up-notapid'));
    expect(sweepStaleWarmUps(root)).toBe(1);
    expect(readdirSync(root).sort()).toEqual([`polywave-warm-up-${process.pid}-other`, 'polywave-warm-up-notapid']);
  }, 60_000);
});

describe('the git spawn helper of a process that swaps its environment per request', () => {
  afterEach(() => {
    endGitSpawnHelper();
    offloadGitSpawns(false);
  });

  it.runIf(process.platform === 'linux')('runs with the environment of the moment offloading was turned on, not of its first command', async () => {
    const repo = scratch();
    spawnSync('git', ['init', '-q', repo]);
    endGitSpawnHelper();
    const saved = process.env.POLYWAVE_WARM_UP_MARK;
    process.env.POLYWAVE_WARM_UP_MARK = 'server';
    try {
      offloadGitSpawns();
      // A caller's environment swapped in before the first git command starts the helper.
      process.env.POLYWAVE_WARM_UP_MARK = 'caller';
      await createGit(repo).run(['rev-parse', '--git-dir']);
      expect(gitSpawnHelperKind()).toBeDefined();
      const helpers = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      const marks = helpers.flatMap((pid) => {
        try {
          const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
          return environ.filter((entry) => entry.startsWith('POLYWAVE_WARM_UP_MARK='));
        } catch {
          return [];
        }
      });
      expect(marks).toEqual(['POLYWAVE_WARM_UP_MARK=server']);
    } finally {
      if (saved === undefined) delete process.env.POLYWAVE_WARM_UP_MARK;
      else process.env.POLYWAVE_WARM_UP_MARK = saved;
    }
  }, 30_000);
});

describe.skipIf(!enabled)('the resident server warms up after it listens', () => {
  function startServer(extraEnv: Record<string, string>): { socketPath: string; tmp: string } {
    const dir = scratch();
    mkdirSync(path.join(dir, 'sock'), { mode: 0o700 });
    const tmp = path.join(dir, 'tmp');
    mkdirSync(tmp);
    const socketPath = path.join(dir, 'sock', 'r.sock');
    const server = spawn(process.execPath, [binPath, 'resident', 'start', '--foreground', '--idle-timeout', '120'], { env: { ...process.env, TMPDIR: tmp, POLYWAVE_RESIDENT_SOCKET: socketPath, ...extraEnv }, stdio: 'ignore', detached: true });
    server.unref();
    servers.push(server.pid!);
    return { socketPath, tmp };
  }
  function status(socketPath: string): Record<string, unknown> {
    const result = spawnSync(process.execPath, [binPath, 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath } });
    return JSON.parse(result.stdout) as Record<string, unknown>;
  }
  function clientStatus(socketPath: string): { ms: number; running: boolean } {
    // Through the native client: a request the server itself answers, timed from outside.
    const started = performance.now();
    const result = spawnSync(process.execPath, [binPath, 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath } });
    return { ms: performance.now() - started, running: (JSON.parse(result.stdout) as { running?: boolean }).running === true };
  }

  it('answers requests during the warm-up, reports it when done, and leaves nothing in its temporary directory', async () => {
    const { socketPath, tmp } = startServer({});
    let answered = 0;
    let slowest = 0;
    for (let waited = 0; waited < 30_000 && status(socketPath).warm_up_ms === undefined; waited += 50) {
      const call = clientStatus(socketPath);
      if (call.running) {
        answered += 1;
        slowest = Math.max(slowest, call.ms);
      }
    }
    const done = status(socketPath);
    expect(done.running).toBe(true);
    expect(typeof done.warm_up_ms).toBe('number');
    expect(typeof done.warm_up_cpu_ms).toBe('number');
    expect(answered).toBeGreaterThan(0);
    // A status call is a node start-up plus one round trip; the warm-up must not hold it for seconds.
    expect(slowest).toBeLessThan(2_000);
    // The sample's directory is gone (its cache packs were written before it was removed, not after).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(readdirSync(tmp).filter((name) => name.startsWith('polywave-warm-up-'))).toEqual([]);
  }, 60_000);

  it('does not warm up with POLYWAVE_RESIDENT_PRELOAD=0', async () => {
    const { socketPath, tmp } = startServer({ POLYWAVE_RESIDENT_PRELOAD: '0' });
    for (let waited = 0; waited < 20_000 && status(socketPath).running !== true; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const current = status(socketPath);
    expect(current.running).toBe(true);
    expect(current.warm_up_ms).toBeUndefined();
    expect(readdirSync(tmp)).toEqual([]);
  }, 60_000);
});
