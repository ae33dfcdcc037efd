import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnPiped, usePipedSpawnHelper, type PipedChild } from './piped-spawn.js';

/** Everything a piped child says, its exit, and its parent pid (read while it waits on stdin). */
async function talk(child: PipedChild, input: string): Promise<{ stdout: string; stderr: string; code: number | null; ppid: number }> {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<number | null>((resolve) => child.once('close', (code: number | null) => resolve(code)));
  // The child said its first line at once and now waits for ours: its parent is whoever spawned it.
  for (let tries = 0; !stdout.includes('\n') && tries < 500; tries += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const ppid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
  child.stdin.end(input);
  const code = await closed;
  return { stdout, stderr, code, ppid };
}

const script = 'printf "ready\\n"; printf "to stderr\\n" >&2; read line; printf "got %s\\n" "$line"; exit 3';

describe.runIf(process.platform === 'linux')('long-lived piped children started by the helper (the tool executors)', () => {
  it('many at once: each first line arrives (none read and lost by the helper), stdin, stderr, exit code; the helper is their parent', async () => {
    const children = await Promise.all(Array.from({ length: 24 }, () => spawnPiped('sh', ['-c', script], { cwd: process.cwd(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })));
    const results = await Promise.all(children.map((child, index) => talk(child, `line ${index}\n`)));
    results.forEach((result, index) => {
      expect(result).toMatchObject({ stdout: `ready\ngot line ${index}\n`, stderr: 'to stderr\n', code: 3 });
      expect(result.ppid).not.toBe(process.pid);
    });
    expect(new Set(results.map((result) => result.ppid)).size).toBe(1);
    // Its own process group (detached), as the executor's kill of the whole group needs.
    expect(children.every((child) => typeof child.pid === 'number')).toBe(true);
  });

  it('children that end at once, many at the same time (an executor whose sandbox fails to start): every start resolves — none waits for ever for a pipe node dropped in the helper (it closes a quick child\'s stdin on exit while the handle waits its turn) — and each ends', async () => {
    const started = await Promise.race([
      Promise.all(
        Array.from({ length: 24 }, () =>
          spawnPiped('sh', ['-c', 'exit 7'], { cwd: process.cwd(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }).then((child) => {
            const closed = new Promise<number | null>((resolve) => child.once('close', (code: number | null) => resolve(code)));
            child.stdout.resume();
            child.stderr.resume();
            child.stdin.on('error', () => {});
            child.stdin.end();
            return { child, closed };
          }),
        ),
      ),
      new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 15_000).unref()),
    ]);
    expect(started).not.toBe('hung');
    const entries = started as Array<{ child: PipedChild; closed: Promise<number | null> }>;
    // some were started here instead (their handle was dropped), and every one ends — also a relayed one whose
    // pipes had ended and closed before the last of them arrived
    expect(entries.some((entry) => entry.child instanceof ChildProcess)).toBe(true);
    const codes = await Promise.race([Promise.all(entries.map((entry) => entry.closed)), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000).unref())]);
    expect(codes).toEqual(entries.map(() => 7));
  }, 40_000);

  it('without the helper: spawned here, the same answers; a missing program fails with ENOENT either way', async () => {
    usePipedSpawnHelper(false);
    try {
      const child = await spawnPiped('sh', ['-c', script], { cwd: process.cwd(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
      const result = await talk(child, 'x\n');
      expect(result).toMatchObject({ stdout: 'ready\ngot x\n', stderr: 'to stderr\n', code: 3, ppid: process.pid });
    } finally {
      usePipedSpawnHelper(true);
    }
    for (const helper of [true, false]) {
      usePipedSpawnHelper(helper);
      const missing = await spawnPiped('/nonexistent/program', [], { cwd: process.cwd(), env: {} });
      const error = await new Promise<NodeJS.ErrnoException>((resolve) => missing.once('error', resolve));
      expect(error.code).toBe('ENOENT');
    }
    usePipedSpawnHelper(true);
  });

  it('an orchestrator killed with SIGKILL leaves neither the helper nor its children behind (the helper kills their groups: A23-54)', async () => {
    const built = fileURLToPath(new URL('../../dist/sandbox/piped-spawn.js', import.meta.url));
    expect(existsSync(built), 'npm run build first').toBe(true);
    const program = `import { spawnPiped } from ${JSON.stringify(built)};
      const children = await Promise.all([1, 2, 3].map(() => spawnPiped('sh', ['-c', 'cat; sleep 30'], { cwd: '/', env: { PATH: process.env.PATH } })));
      console.log(JSON.stringify(children.map((child) => child.pid)));
      setInterval(() => {}, 1000);`;
    const orchestrator = spawn(process.execPath, ['--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids = await new Promise<number[]>((resolve) => orchestrator.stdout.setEncoding('utf8').once('data', (line: string) => resolve(JSON.parse(line) as number[])));
    const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    expect(pids.every(alive)).toBe(true);
    const helperPid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pids[0]}/status`, 'utf8'))?.[1]);
    expect(helperPid).not.toBe(orchestrator.pid);
    orchestrator.kill('SIGKILL');
    // Outside round A23-54: the helper SIGKILLs each child's process group as it ends with its parent (before, cat saw
    // EOF and each shell went on to its sleep, orphaned — an executor, or an agent's command, kept running).
    for (let tries = 0; tries < 100 && (alive(helperPid) || pids.some(alive)); tries += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alive(helperPid), 'the helper').toBe(false);
    for (const pid of pids) expect(alive(pid) ? descendants(pid) : 'gone', `child ${pid}`).toBe('gone');
    for (const pid of pids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });

  // P17-13: the helper outlived a SIGKILLed program-execute for 23 minutes (its 'disconnect' never came), and with it an
  // agent's sandbox. Here another process keeps the orchestrator's end of the channel open: the helper still ends once
  // its parent is gone (its parent pid changed).
  it('the helper ends with its parent even when the channel stays open elsewhere (P17-13)', async () => {
    const built = fileURLToPath(new URL('../../dist/sandbox/piped-spawn.js', import.meta.url));
    expect(existsSync(built), 'npm run build first').toBe(true);
    const program = `import { spawnPiped } from ${JSON.stringify(built)};
      import { spawn } from 'node:child_process';
      import { readdirSync, readlinkSync } from 'node:fs';
      const child = await spawnPiped('sh', ['-c', 'sleep 60'], { cwd: '/', env: { PATH: process.env.PATH } });
      const sockets = readdirSync('/proc/self/fd').map(Number).filter((fd) => fd > 2 && /^socket:/.test((() => { try { return readlinkSync('/proc/self/fd/' + fd); } catch { return ''; } })()));
      const holder = spawn('sleep', ['60'], { detached: true, stdio: ['ignore', 'ignore', 'ignore', ...sockets] });
      console.log(JSON.stringify({ child: child.pid, holder: holder.pid, sockets: sockets.length }));
      setInterval(() => {}, 1000);`;
    const orchestrator = spawn(process.execPath, ['--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
    const started = await new Promise<{ child: number; holder: number; sockets: number }>((resolve) => orchestrator.stdout.setEncoding('utf8').once('data', (line: string) => resolve(JSON.parse(line) as { child: number; holder: number; sockets: number })));
    const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    try {
      expect(started.sockets).toBeGreaterThan(0);
      const helperPid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${started.child}/status`, 'utf8'))?.[1]);
      expect(helperPid).not.toBe(orchestrator.pid);
      expect(alive(helperPid)).toBe(true);
      orchestrator.kill('SIGKILL');
      for (let tries = 0; tries < 100 && alive(helperPid); tries += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(alive(helperPid), 'the helper').toBe(false);
    } finally {
      for (const pid of [started.holder, started.child]) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  });
});

/** The command lines of `pid`'s descendants (the shell runs cat, then sleep, as its children). */
function descendants(pid: number): string[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return children.flatMap((child) => {
      try {
        return [readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' '), ...descendants(child)];
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}
