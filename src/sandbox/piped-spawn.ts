/**
 * Long-lived piped children (the agents' sandboxed tool executors) started by a small helper
 * process, which hands their pipes back over its IPC channel.
 *
 * Node starts a child with fork + exec and blocks the calling thread until it has exec'd; the cost
 * grows with the parent's memory. The git helper (src/git/spawn-server.ts) takes that off the
 * orchestrator's thread for git, whose output it relays when the command ends; a tool executor
 * instead talks with the orchestrator for the agent's whole life, so its pipes must end here. The
 * helper (`node -e`, small) spawns the child detached with three pipes and sends their handles over
 * its IPC channel (libuv passes the file descriptors with SCM_RIGHTS; the helper's copies are closed
 * once sent), then reports the child's exit. The orchestrator gets a child it writes to and reads
 * from as if it had spawned it: same pid (its own process group), stdin/stdout/stderr, 'error' and
 * 'close'. A 16-agent wave's executor starts held the orchestrator's main thread for ~410 ms
 * (bench:sandbox, docs/performance.md).
 *
 * If the helper cannot start, or dies, the child is spawned here as before. The helper ends with
 * this process (its IPC channel closes); while nothing is being started it keeps nothing alive.
 *
 * It also outlives this process by the moment it takes to clean up (outside round A23-54): when its IPC channel closes
 * — this process exited, or was SIGKILLed — it SIGKILLs the process group of every child it started that still runs
 * and of every group registered with {@link killWithThisProcess} (an agent's bash command or CLI spawned here, in a
 * group of its own: `detached`). A SIGKILLed `polywave worker` left them running, orphaned: its agents' commands kept
 * running (and spending) after the job had moved to another worker. (A bubblewrap sandbox also dies with its parent,
 * `--die-with-parent`; a command run without the OS sandbox has nothing else.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';

/** What a caller uses of a piped child: its pid, its three pipes, and 'error' / 'close'. */
export interface PipedChild extends EventEmitter {
  readonly pid?: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
}

/** Options of {@link spawnPiped}. */
export interface PipedSpawnOptions {
  cwd: string;
  env: Readonly<Record<string, string>>;
}

// The helper (CommonJS, `node -e`): one IPC message per child to start; answers with the pid and the
// three pipe handles, then the exit.
const helperSource = `
const { spawn } = require('node:child_process');
// The process groups to end with the parent (A23-54): the children started here and the groups it registered.
const groups = new Set();
const reap = () => {
  for (const group of groups) {
    try { process.kill(-group, 'SIGKILL'); } catch {}
  }
};
process.on('disconnect', () => {
  reap();
  process.exit(0);
});
// Outside round P17 (P17-13): after a SIGKILL of program-execute mid-wave this helper (and under it an agent's
// bubblewrap sandbox, which dies only with it: --die-with-parent) lived on for good, reparented, 'disconnect' never
// seen — the channel's other end was still open somewhere. Its parent gone (reparented: ppid changed) is the same end.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) process.emit('disconnect');
}, 500).unref();
// Ctrl-C reaches the process group: the helper stays for the orchestrator's own shutdown.
process.on('SIGINT', () => {});
process.on('message', (request) => {
  if (typeof request.reap === 'number') {
    groups.add(request.reap);
    return;
  }
  if (typeof request.release === 'number') {
    groups.delete(request.release);
    return;
  }
  const fail = (error) => process.send({ id: request.id, error: { message: String(error && error.message), code: error && error.code } });
  let child;
  try {
    child = spawn(request.file, request.args, { cwd: request.cwd, env: request.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (error) {
    fail(error);
    return;
  }
  if (child.pid === undefined) {
    child.once('error', fail);
    return;
  }
  child.on('error', () => {});
  groups.add(child.pid);
  // Node starts reading a child's output pipes into their stream buffers at once; what this process
  // read before the handle went over would stay here (an executor's first line, lost under load).
  // Stopped now, before the event loop could read anything: the orchestrator reads it all.
  for (const stream of [child.stdout, child.stderr]) if (stream._handle) stream._handle.readStop();
  process.send({ id: request.id, pid: child.pid, pipe: 'stdin' }, child.stdin);
  process.send({ id: request.id, pipe: 'stdout' }, child.stdout);
  process.send({ id: request.id, pipe: 'stderr' }, child.stderr);
  child.once('exit', (code, signal) => {
    groups.delete(child.pid);
    process.send({ id: request.id, exit: { code, signal } });
  });
});
`;

interface Waiting {
  child: Relayed;
  settle: (ready: boolean) => void;
  pipes: Partial<Record<'stdin' | 'stdout' | 'stderr', Socket>>;
  /** Its exit, when that came first: a message without a handle is not queued behind the handles still waiting for their acknowledgement. */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

/** The child as the orchestrator sees it: the pipes the helper handed over. */
class Relayed extends EventEmitter implements PipedChild {
  pid: number | undefined;
  stdin!: Writable;
  stdout!: Readable;
  stderr!: Readable;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private open = 2;
  private closed = false;

  /** 'close' once it exited and its stdout and stderr ended (as a spawned child's). */
  attach(): void {
    for (const stream of [this.stdout, this.stderr]) {
      // One that ended and closed before the last pipe arrived (a child that ended at once) counts as closed now.
      if (stream.closed) {
        this.open -= 1;
        continue;
      }
      stream.once('close', () => {
        this.open -= 1;
        this.maybeClose();
      });
    }
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.exit = { code, signal };
    this.maybeClose();
  }

  lost(error: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('error', error);
    this.emit('close', null, null);
  }

  private maybeClose(): void {
    if (this.closed || !this.exit || this.open > 0) return;
    this.closed = true;
    this.emit('exit', this.exit.code, this.exit.signal);
    this.emit('close', this.exit.code, this.exit.signal);
  }
}

interface Helper {
  child: ChildProcess;
  waiting: Map<number, Waiting>;
  running: Map<number, Relayed>;
}

let helper: Helper | undefined;
let nextId = 0;
let disabled = false;

function keepAlive(current: Helper): void {
  const busy = current.waiting.size > 0;
  const channel = current.child.channel as unknown as { ref?: () => void; unref?: () => void } | undefined;
  if (busy) {
    current.child.ref();
    channel?.ref?.();
  } else {
    current.child.unref();
    channel?.unref?.();
  }
}

function startHelper(): Helper | undefined {
  const environment = { ...process.env };
  delete environment.NODE_OPTIONS;
  delete environment.NODE_V8_COVERAGE;
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, ['-e', helperSource], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: environment });
  } catch {
    return undefined;
  }
  const current: Helper = { child, waiting: new Map(), running: new Map() };
  const gone = () => {
    if (helper === current) helper = undefined;
    for (const waiting of current.waiting.values()) waiting.settle(false);
    current.waiting.clear();
    for (const running of current.running.values()) running.lost(new Error('the process helper ended while the child ran'));
    current.running.clear();
  };
  child.on('error', gone);
  child.on('exit', gone);
  child.on('message', (message: { id?: number; pid?: number; pipe?: 'stdin' | 'stdout' | 'stderr'; exit?: { code: number | null; signal: NodeJS.Signals | null }; error?: { message: string; code?: string } }, handle?: Socket) => {
    const id = message.id;
    if (typeof id !== 'number') return;
    if (message.exit) {
      const running = current.running.get(id);
      current.running.delete(id);
      if (running) running.exited(message.exit.code, message.exit.signal);
      else {
        const early = current.waiting.get(id);
        if (early) early.exit = message.exit;
      }
      return;
    }
    const waiting = current.waiting.get(id);
    if (!waiting) {
      handle?.destroy();
      return;
    }
    if (message.error) {
      // It could not start there: started here instead, where it fails the same way, as a real child.
      current.waiting.delete(id);
      keepAlive(current);
      waiting.settle(false);
      return;
    }
    if (message.pipe && !handle) {
      // The handle did not come with its message: node closed it in the helper before it went out (a child that
      // ended at once: node destroys its stdin on exit, and handles go one at a time, each waiting for the last's
      // acknowledgement — nine quick children at once lost some). Started here instead; never waited for forever.
      current.waiting.delete(id);
      keepAlive(current);
      for (const pipe of Object.values(waiting.pipes)) pipe?.destroy();
      waiting.settle(false);
      return;
    }
    if (message.pipe && handle) waiting.pipes[message.pipe] = handle;
    if (typeof message.pid === 'number') waiting.child.pid = message.pid;
    const { stdin, stdout, stderr } = waiting.pipes;
    if (stdin && stdout && stderr) {
      current.waiting.delete(id);
      keepAlive(current);
      Object.assign(waiting.child, { stdin, stdout, stderr });
      waiting.child.attach();
      if (waiting.exit) waiting.child.exited(waiting.exit.code, waiting.exit.signal);
      else current.running.set(id, waiting.child);
      waiting.settle(true);
    }
  });
  keepAlive(current);
  return current;
}

/** Spawns `file args` here (the fallback): the same child, started by this process (its group ends with this process all the same). */
function spawnHere(file: string, args: readonly string[], options: PipedSpawnOptions): PipedChild {
  const child = spawn(file, [...args], { cwd: options.cwd, env: options.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  const release = killWithThisProcess(child.pid);
  child.once('exit', release);
  return child;
}

/** Starts the helper now (a `polywave worker` at its start: {@link killWithThisProcess} then never waits for it to boot). */
export function startProcessReaper(): void {
  if (process.platform !== 'win32') helper ??= startHelper();
}

/**
 * Outside round A23-54: the process group `pid` (a child spawned `detached`, so its pid is its group's id) is SIGKILLed
 * when this process ends, however it ends — SIGKILL included — by the helper, which sees its IPC channel close. Call
 * the function returned once the group has ended (its child exited and its group was killed), so that a later group of
 * that id is left alone. Nothing is done where the helper cannot run (Windows, a helper that cannot start).
 */
export function killWithThisProcess(pid: number | undefined): () => void {
  if (pid === undefined || process.platform === 'win32') return () => undefined;
  helper ??= startHelper();
  const current = helper;
  if (!current) return () => undefined;
  const send = (message: { reap: number } | { release: number }) => {
    if (helper !== current || !current.child.connected) return;
    try {
      current.child.send(message, () => undefined);
    } catch {
      // the helper is gone: nothing is left to release
    }
  };
  send({ reap: pid });
  let released = false;
  return () => {
    if (released) return;
    released = true;
    send({ release: pid });
  };
}

/**
 * `file args` started detached (its own process group) with three pipes, by the helper when it runs
 * (else here). Resolves once the pipes are here; a child that cannot start emits 'error' then 'close'.
 */
export async function spawnPiped(file: string, args: readonly string[], options: PipedSpawnOptions): Promise<PipedChild> {
  if (disabled || process.platform === 'win32') return spawnHere(file, args, options);
  helper ??= startHelper();
  const current = helper;
  if (!current) return spawnHere(file, args, options);
  nextId += 1;
  const id = nextId;
  const child = new Relayed();
  const ready = await new Promise<boolean>((resolve) => {
    current.waiting.set(id, { child, settle: resolve, pipes: {} });
    keepAlive(current);
    current.child.send({ id, file, args, cwd: options.cwd, env: options.env }, (error) => {
      if (!error) return;
      current.waiting.delete(id);
      keepAlive(current);
      resolve(false);
    });
  });
  return ready ? child : spawnHere(file, args, options);
}

/** Tests: `false` spawns every child here (the fallback path); `true` through the helper again. */
export function usePipedSpawnHelper(on: boolean): void {
  disabled = !on;
}
