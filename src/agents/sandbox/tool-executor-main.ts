/**
 * The program of the per-agent tool executor: it runs INSIDE the agent's sandbox and does the file
 * tools' reads and writes there, so the operating system decides what they can reach — a symlink
 * swapped between the jail's check and the open ends in a denied write, not in a file outside.
 *
 * Protocol: JSON lines over stdio. Request `{id, op, path, …}`, answer `{id, ok: true, …}` or
 * `{id, ok: false, code, message}`. File requests are answered one at a time, in order; a `run`
 * answers when its command has ended, other requests are served meanwhile.
 * - `write {path, data (base64)}` → `{existed, bytes}`: parents created, the final component
 *   opened with O_NOFOLLOW (an existing file without O_CREAT, a new one with O_EXCL), then, on
 *   Linux, the opened file's real path (`/proc/self/fd`) must be `path` itself before anything is
 *   written (`EXDEV` otherwise: a path component was swapped; a file the call created there is
 *   removed again).
 * - `read {path, limit}` → `{data (base64), size}`: O_NOFOLLOW, regular files only.
 * - `list {path}` → `{entries: [{name, kind, target?}]}`.
 * - `stat {path}` → `{kind, size}` (`kind`: file, directory, symlink, other), lstat semantics.
 * - `run {command, cwd, env}` → output chunks `{id, chunk (base64)}`, then `{exitCode, signal}` or
 *   `{spawnError}`: `bash -c command` in a process group of its own. When bash exits, every other
 *   process of the executor's PID namespace is killed (`kill(-1)`: all but the namespace's init
 *   and the executor), so nothing the command started outlives the call — background jobs,
 *   `setsid`, double forks and daemons included. That sweep needs the executor to be the child of
 *   the namespace's init inside sandbox-runtime (SANDBOX_RUNTIME=1, parent PID 1: the nested
 *   namespace of sandbox-runtime's seccomp helper, where the sandbox's own proxy bridges are not);
 *   anywhere else only the command's process group is killed. The host runs one command at a time.
 * - `signal {target, signal}` → `{}`: SIGTERM to the running command's process group; SIGKILL to
 *   it and the sweep.
 *
 * The function below is started as the program text of `node -e` (see tool-executor.ts): it must
 * be self-contained — no imports, no outer variables; built-in modules come from
 * `process.getBuiltinModule`.
 */
export function toolExecutorMain(): void {
  const fs = process.getBuiltinModule('node:fs');
  const pathModule = process.getBuiltinModule('node:path');
  const readline = process.getBuiltinModule('node:readline');
  const childProcess = process.getBuiltinModule('node:child_process');
  const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

  type Request = { id: number; op: string; path: string; data?: string; limit?: number; command?: string; cwd?: string; env?: Record<string, string>; target?: number; signal?: string };
  type Answer = Record<string, unknown>;

  const kindOf = (stats: import('node:fs').Stats): string => (stats.isFile() ? 'file' : stats.isDirectory() ? 'directory' : stats.isSymbolicLink() ? 'symlink' : 'other');

  /** The opened file must be `expected` itself; a file this call created elsewhere is removed again. */
  const verifyOpened = (fd: number, expected: string, created: boolean): void => {
    if (process.platform !== 'linux') return;
    let actual: string;
    try {
      actual = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return;
    }
    if (actual !== expected) {
      if (created) {
        try {
          fs.unlinkSync(actual);
        } catch {
          // gone already, or not ours to remove
        }
      }
      const error = new Error(`${expected} resolved to ${actual} when it was opened (a path component was swapped)`) as NodeJS.ErrnoException;
      error.code = 'EXDEV';
      throw error;
    }
  };

  const write = (request: Request): Answer => {
    const target = request.path;
    fs.mkdirSync(pathModule.dirname(target), { recursive: true });
    let existed = true;
    let fd: number;
    try {
      fd = fs.openSync(target, O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      existed = false;
      fd = fs.openSync(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o666);
    }
    try {
      if (!fs.fstatSync(fd).isFile()) {
        const error = new Error(`${target} is not a regular file`) as NodeJS.ErrnoException;
        error.code = 'EINVAL';
        throw error;
      }
      verifyOpened(fd, target, !existed);
      const buffer = Buffer.from(request.data ?? '', 'base64');
      fs.ftruncateSync(fd, 0);
      let offset = 0;
      while (offset < buffer.length) offset += fs.writeSync(fd, buffer, offset, buffer.length - offset, offset);
      return { existed, bytes: buffer.length };
    } finally {
      fs.closeSync(fd);
    }
  };

  const read = (request: Request): Answer => {
    const fd = fs.openSync(request.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    try {
      const stats = fs.fstatSync(fd);
      if (!stats.isFile()) return { kind: kindOf(stats), size: stats.size, data: '' };
      const length = Math.min(stats.size, Math.max(0, request.limit ?? stats.size));
      const buffer = Buffer.alloc(length);
      let offset = 0;
      while (offset < length) {
        const bytesRead = fs.readSync(fd, buffer, offset, length - offset, offset);
        if (bytesRead === 0) break;
        offset += bytesRead;
      }
      return { kind: 'file', size: stats.size, data: buffer.subarray(0, offset).toString('base64') };
    } finally {
      fs.closeSync(fd);
    }
  };

  const list = (request: Request): Answer => {
    const entries = fs.readdirSync(request.path, { withFileTypes: true }).map((entry) => {
      const kind = entry.isFile() ? 'file' : entry.isDirectory() ? 'directory' : entry.isSymbolicLink() ? 'symlink' : 'other';
      let target: string | undefined;
      if (kind === 'symlink') {
        try {
          target = fs.readlinkSync(pathModule.join(request.path, entry.name));
        } catch {
          target = undefined;
        }
      }
      return target === undefined ? { name: entry.name, kind } : { name: entry.name, kind, target };
    });
    return { entries };
  };

  const stat = (request: Request): Answer => {
    const stats = fs.lstatSync(request.path);
    return { kind: kindOf(stats), size: stats.size };
  };

  const send = (message: Answer): void => {
    process.stdout.write(`${JSON.stringify(message)}\n`);
  };

  /** Inside sandbox-runtime as the child of the PID namespace's init: kill(-1) reaches only the agent's processes. */
  const canSweep = process.platform === 'linux' && process.env.SANDBOX_RUNTIME === '1' && process.ppid === 1;
  const killGroup = (pid: number | undefined, signal: NodeJS.Signals): void => {
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is gone
    }
  };
  /** SIGKILL to every process of the namespace but init and this one (repeated: a fork in flight). */
  const sweep = (): void => {
    if (!canSweep) return;
    for (let round = 0; round < 3; round += 1) {
      try {
        process.kill(-1, 'SIGKILL');
      } catch {
        return;
      }
    }
  };
  const runs = new Map<number, import('node:child_process').ChildProcess>();

  const run = (request: Request): void => {
    let child: import('node:child_process').ChildProcess;
    try {
      child = childProcess.spawn('bash', ['-c', String(request.command ?? '')], { cwd: request.cwd, env: request.env ?? {}, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      send({ id: request.id, ok: true, spawnError: (error as Error).message });
      return;
    }
    runs.set(request.id, child);
    let exit: { exitCode: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    const finish = (answer: Answer): void => {
      if (settled) return;
      settled = true;
      runs.delete(request.id);
      send({ id: request.id, ok: true, ...answer });
    };
    const forward = (chunk: Buffer): void => send({ id: request.id, chunk: chunk.toString('base64') });
    child.stdout!.on('data', forward);
    child.stderr!.on('data', forward);
    child.on('error', (error) => finish({ spawnError: error.message }));
    child.on('exit', (code, signal) => {
      exit = { exitCode: code, signal };
      // The call is over: nothing it started may go on.
      killGroup(child.pid, 'SIGKILL');
      sweep();
      // A process that escaped both (outside this namespace it cannot be) must not hold the answer.
      setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        finish(exit!);
      }, 1000).unref();
    });
    child.on('close', () => finish(exit ?? { exitCode: null, signal: null }));
  };

  const signalRun = (request: Request): Answer => {
    const child = runs.get(Number(request.target));
    if (child) {
      const signal = request.signal === 'SIGKILL' ? 'SIGKILL' : 'SIGTERM';
      killGroup(child.pid, signal);
      if (signal === 'SIGKILL') sweep();
    }
    return {};
  };

  const operations: Record<string, (request: Request) => Answer> = { write, read, list, stat };
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    let request: Request;
    try {
      request = JSON.parse(line) as Request;
    } catch {
      return;
    }
    let answer: Answer;
    if (request.op === 'run') {
      if (typeof request.command === 'string' && typeof request.cwd === 'string' && pathModule.isAbsolute(request.cwd)) run(request);
      else send({ id: request.id, ok: false, code: 'EINVAL', message: 'bad request run' });
      return;
    }
    try {
      if (request.op === 'signal') {
        send({ id: request.id, ok: true, ...signalRun(request) });
        return;
      }
      const operation = operations[request.op];
      if (!operation || typeof request.path !== 'string' || !pathModule.isAbsolute(request.path)) throw Object.assign(new Error(`bad request ${request.op}`), { code: 'EINVAL' });
      answer = { id: request.id, ok: true, ...operation(request) };
    } catch (error) {
      const failure = error as NodeJS.ErrnoException;
      answer = { id: request.id, ok: false, code: failure.code ?? 'EIO', message: failure.message };
    }
    send(answer);
  });
  send({ id: 0, ok: true, ready: process.pid, env: process.env, sweep: canSweep });
}
