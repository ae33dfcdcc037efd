/**
 * The program of the per-agent tool executor: it runs INSIDE the agent's sandbox and does the file
 * tools' reads and writes there, so the operating system decides what they can reach — a symlink
 * swapped between the jail's check and the open ends in a denied write, not in a file outside.
 *
 * Protocol: JSON lines over stdio. Request `{id, op, path, …}`, answer `{id, ok: true, …}` or
 * `{id, ok: false, code, message}`. One request at a time, in order.
 * - `write {path, data (base64)}` → `{existed, bytes}`: parents created, the final component
 *   opened with O_NOFOLLOW (an existing file without O_CREAT, a new one with O_EXCL), then, on
 *   Linux, the opened file's real path (`/proc/self/fd`) must be `path` itself before anything is
 *   written (`EXDEV` otherwise: a path component was swapped; a file the call created there is
 *   removed again).
 * - `read {path, limit}` → `{data (base64), size}`: O_NOFOLLOW, regular files only.
 * - `list {path}` → `{entries: [{name, kind, target?}]}`.
 * - `stat {path}` → `{kind, size}` (`kind`: file, directory, symlink, other), lstat semantics.
 *
 * The function below is started as the program text of `node -e` (see tool-executor.ts): it must
 * be self-contained — no imports, no outer variables; built-in modules come from
 * `process.getBuiltinModule`.
 */
export function toolExecutorMain(): void {
  const fs = process.getBuiltinModule('node:fs');
  const pathModule = process.getBuiltinModule('node:path');
  const readline = process.getBuiltinModule('node:readline');
  const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

  type Request = { id: number; op: string; path: string; data?: string; limit?: number };
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
    try {
      const operation = operations[request.op];
      if (!operation || typeof request.path !== 'string' || !pathModule.isAbsolute(request.path)) throw Object.assign(new Error(`bad request ${request.op}`), { code: 'EINVAL' });
      answer = { id: request.id, ok: true, ...operation(request) };
    } catch (error) {
      const failure = error as NodeJS.ErrnoException;
      answer = { id: request.id, ok: false, code: failure.code ?? 'EIO', message: failure.message };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  });
  process.stdout.write(`${JSON.stringify({ id: 0, ok: true, ready: process.pid })}\n`);
}
