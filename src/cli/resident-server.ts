/**
 * Resident mode (issues 13, 14, 15): a warm `polywave` server on a per-user Unix socket, and the
 * wire format that native/polywave-client.c speaks. A hook's call then costs the native client's
 * start plus the command's own work in an already warm Node (no Node start, no module loading, a
 * JIT that has seen the YAML parser before): an empty `node -e 0` alone is ~2× the Go binary's
 * whole call (docs/performance.md), which no change inside a fresh Node process can go below.
 *
 * Only read-only commands run here (ALLOW-LIST below); any other call is answered "not
 * resident-capable" and the client runs `node bin/polywave.js` itself, exactly as without a server.
 * Requests run one at a time, each with the caller's cwd (process.chdir) and environment (both
 * given to the command in its CommandIo, and as process.env for the duration, so that a git or a
 * path resolved against the process sees the caller's too). Nothing is cached between requests:
 * every request reads its files again — what stays warm is the loaded code.
 *
 * Wire format (all integers unsigned 32-bit big-endian):
 *   request   "PWR1" u32 length, then: u8 kind ('r' run, 's' status), u32 argc + argc × (u32 len, bytes),
 *             u32 len + cwd, u32 envc + envc × (u32 len, "NAME=value")
 *   response  frames of u8 type + u32 length + payload: 'o' stdout bytes, 'e' stderr bytes,
 *             'x' exit code (1 byte, last frame), 'n' not resident-capable (1 byte: 0 this command,
 *             1 this server is stopping — the client then also starts a new one), before any 'o'/'e'.
 */
import { lstatSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { invokedCommandName } from './invoked-command.js';
import { privateUserDir } from './private-dir.js';
import type { CommandIo, CommandResult } from './io.js';

/**
 * Commands that change nothing, take env/cwd only from their io and keep no state in the process
 * between calls: the only ones run resident. Not check-callers/analyze-deps (yet): the analysis
 * engine keeps per-process state that a long-lived server would carry from one call to the next —
 * check-callers' `lineCache` (context lines of files as first read: an edited file would show its old
 * lines), `repoContext`'s per-path repository roots, and the cumulative `engineCounters` behind
 * POLYWAVE_ANALYSIS_STATS=1. They can join once that state is per call.
 */
export const residentCommands: ReadonlySet<string> = new Set([
  'validate',
  'validate-program',
  'check-completion',
  'scan-stubs',
  'list-impls',
  'list-programs',
  'resolve-impl',
  'program-status',
  'query',
  'metrics',
  'check-conflicts',
  'freeze-check',
]);

/** Arguments that make an otherwise allowed call write (validate --fix, scan-stubs --append-impl), read stdin or run forever: run by node. */
const notResidentArguments = new Set(['-', '--fix', '--follow', '-f', '--append-impl']);

export const requestMagic = 'PWR1';
/** A request larger than this (argv + environment) is refused: the socket is the user's only, but a bound is cheap. */
const maxRequestBytes = 16 * 1024 * 1024;
const requestTimeoutMs = 10_000;

/** The package directory (realpath), found from this module: dist/cli/ and dist/bundle/ are both two levels down. */
export function packageDir(): string {
  return realpathSync(fileURLToPath(new URL('../../', import.meta.url)));
}

function readVersion(root: string): string {
  return (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

/** FNV-1a (32 bits) of the bytes of `text`, 8 hex digits — the same function the native client computes. */
export function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** The socket of this package and version: POLYWAVE_RESIDENT_SOCKET, or `<tmp>/polywave-<uid>/resident-<hash>.sock`. */
export function residentSocketPath(env: Readonly<Record<string, string | undefined>>, root = packageDir(), version = readVersion(root)): string {
  if (env.POLYWAVE_RESIDENT_SOCKET) return path.resolve(env.POLYWAVE_RESIDENT_SOCKET);
  const tmp = (env.TMPDIR || env.TMP || env.TEMP || '/tmp').replace(/(.)\/+$/, '$1');
  const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  return path.join(tmp, `polywave-${uid}`, `resident-${fnv1a(`${root}\n${version}`)}.sock`);
}

/** True when `dir` may hold our socket (see {@link privateUserDir}). */
export const safeSocketDir = privateUserDir;


/** True when the call may run in the server: an allowed command, no stdin, no write flag, no --follow. */
export function residentCapable(argv: readonly string[]): boolean {
  const name = invokedCommandName(argv);
  if (!name || !residentCommands.has(name)) return false;
  return !argv.some((argument) => notResidentArguments.has(argument) || /^--(fix|follow|append-impl)(=|$)/.test(argument) || /^--file=-$/.test(argument));
}

export interface ParsedRequest {
  kind: 'r' | 's';
  argv: string[];
  cwd: string;
  env: Record<string, string>;
}

/** Encodes a request (used by `resident status` and tests; the native client writes the same bytes). */
export function encodeRequest(request: ParsedRequest): Buffer {
  const parts: Buffer[] = [Buffer.from(request.kind, 'latin1')];
  const u32 = (value: number) => {
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(value);
    parts.push(buffer);
  };
  const text = (value: string) => {
    const bytes = Buffer.from(value, 'utf8');
    u32(bytes.length);
    parts.push(bytes);
  };
  u32(request.argv.length);
  request.argv.forEach(text);
  text(request.cwd);
  const entries = Object.entries(request.env);
  u32(entries.length);
  for (const [name, value] of entries) text(`${name}=${value}`);
  const payload = Buffer.concat(parts);
  const header = Buffer.alloc(8);
  header.write(requestMagic, 0, 'latin1');
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

/** Decodes a request payload (after the 8-byte header); throws on a malformed one. */
export function decodeRequest(payload: Buffer): ParsedRequest {
  let offset = 0;
  const need = (count: number) => {
    if (offset + count > payload.length) throw new Error('truncated request');
  };
  const u32 = () => {
    need(4);
    const value = payload.readUInt32BE(offset);
    offset += 4;
    return value;
  };
  const text = () => {
    const length = u32();
    need(length);
    const value = payload.toString('utf8', offset, offset + length);
    offset += length;
    return value;
  };
  need(1);
  const kind = String.fromCharCode(payload[offset++]!);
  if (kind !== 'r' && kind !== 's') throw new Error('unknown request kind');
  const argv = Array.from({ length: u32() }, text);
  const cwd = text();
  const env: Record<string, string> = {};
  const envCount = u32();
  for (let index = 0; index < envCount; index += 1) {
    const entry = text();
    const equals = entry.indexOf('=');
    if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1);
  }
  return { kind, argv, cwd, env };
}

export function frame(type: string, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

/** Reads the frames of one response: stdout, stderr, exit code, or the "not resident-capable" answer. */
export function readResponse(socket: net.Socket): Promise<{ stdout: string; stderr: string; code?: number; notCapable?: number }> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let settled = false;
    const finish = (result: { code?: number; notCapable?: number }) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ...result });
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 5) {
        const length = buffer.readUInt32BE(1);
        if (buffer.length < 5 + length) break;
        const type = String.fromCharCode(buffer[0]!);
        const body = buffer.subarray(5, 5 + length);
        buffer = buffer.subarray(5 + length);
        if (type === 'o') out.push(body);
        else if (type === 'e') err.push(body);
        else if (type === 'x') return finish({ code: body[0] ?? 2 });
        else if (type === 'n') return finish({ notCapable: body[0] ?? 0 });
      }
    });
    socket.on('error', (error) => {
      if (!settled) {
        settled = true;
        reject(error);
      }
    });
    socket.on('close', () => {
      if (!settled) {
        settled = true;
        reject(new Error('connection closed before the exit code'));
      }
    });
  });
}

/** Sends one request to the socket and reads the answer. */
export function sendRequest(socketPath: string, request: ParsedRequest, timeoutMs = 5000): Promise<{ stdout: string; stderr: string; code?: number; notCapable?: number }> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    const timer = setTimeout(() => socket.destroy(new Error('timeout')), timeoutMs);
    socket.on('connect', () => {
      socket.write(encodeRequest(request));
      readResponse(socket).then(resolve, reject).finally(() => clearTimeout(timer));
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/**
 * What identifies the code a server runs: the version and the size and mtime of both entry files
 * (bin/polywave.js runs the newer of dist/bundle/main.js and dist/cli/main.js: a `tsc` alone changes
 * what node runs, so it must make the server stale too).
 */
function bundleIdentity(root: string): string {
  let version = '?';
  try {
    version = readVersion(root);
  } catch {
    // unreadable package.json: compared as '?'
  }
  const parts = [version];
  for (const file of [path.join(root, 'dist', 'bundle', 'main.js'), path.join(root, 'dist', 'cli', 'main.js')]) {
    try {
      const stats = statSync(file);
      parts.push(`${stats.size}:${stats.mtimeMs}`);
    } catch {
      parts.push('none');
    }
  }
  return parts.join(':');
}

/** True when `pid` runs: exists for kill(pid, 0) and, on Linux, is not a zombie that nothing reaped (a container's init may not). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return true;
  }
}

export function readPidFile(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export interface ServerOptions {
  socketPath: string;
  idleTimeoutMs: number;
  /** Where the server reports that it stopped and why (stderr of a foreground server; /dev/null when started by the client). */
  log: (line: string) => void;
}

/**
 * Runs the server until it stops: idle timeout, SIGTERM/SIGINT, its socket file removed or replaced,
 * or the code on disk changed (a stale server answers "stopping" and exits). Resolves with the reason,
 * or 'already-running' when another live server holds the socket's pid file.
 */
export async function runResidentServer(options: ServerOptions): Promise<string> {
  const root = packageDir();
  const identity = bundleIdentity(root);
  const socketPath = options.socketPath;
  const pidFile = `${socketPath}.pid`;
  if (!safeSocketDir(path.dirname(socketPath), true)) return 'unsafe-socket-dir';

  // One server per socket: the pid file names it (the native client creates it with O_EXCL and
  // writes the pid of the server it starts; a manual start writes its own).
  const holder = readPidFile(pidFile);
  if (holder !== undefined && holder !== process.pid && processAlive(holder)) return 'already-running';
  writePidFile(pidFile);
  if (await answers(socketPath)) return 'already-running';
  rmSync(socketPath, { force: true });

  const { main } = (await import(new URL('./main.js', import.meta.url).href)) as { main: (argv: string[], io: CommandIo) => Promise<CommandResult> };
  const server = net.createServer();
  let served = 0;
  let stopping: string | undefined;
  let queue: Promise<void> = Promise.resolve();
  let socketIno = 0;

  let idleTimer: NodeJS.Timeout | undefined;
  const armIdle = () => {
    if (idleTimer) clearTimeout(idleTimer);
    // A stopping server ends when its queue drains: no new timer may keep it alive.
    if (stopping) return;
    idleTimer = setTimeout(() => stop('idle'), options.idleTimeoutMs);
  };

  let resolveDone!: (reason: string) => void;
  const done = new Promise<string>((resolve) => (resolveDone = resolve));
  const ownsSocket = () => {
    try {
      return lstatSync(socketPath).ino === socketIno;
    } catch {
      return false;
    }
  };
  function stop(reason: string): void {
    if (stopping) return;
    stopping = reason;
    if (idleTimer) clearTimeout(idleTimer);
    clearInterval(watch);
    if (ownsSocket()) rmSync(socketPath, { force: true });
    if (readPidFile(pidFile) === process.pid) rmSync(pidFile, { force: true });
    server.close();
    // Requests already queued finish; then the server ends.
    void queue.then(() => resolveDone(reason));
  }
  const watch = setInterval(() => {
    if (!ownsSocket()) stop('socket-removed');
    else if (readPidFile(pidFile) !== process.pid) stop('pid-file-replaced');
  }, 1000);

  const onSignal = () => stop('signal');
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);

  server.on('connection', (socket) => {
    armIdle();
    socket.on('error', () => undefined);
    const chunks: Buffer[] = [];
    let received = 0;
    let handled = false;
    let length = -1;
    // A request must arrive whole within 10 s (a connection that sends nothing, or half, is dropped).
    socket.setTimeout(requestTimeoutMs, () => {
      if (!handled) socket.destroy();
    });
    socket.on('data', (chunk: Buffer) => {
      if (handled) return;
      chunks.push(chunk);
      received += chunk.length;
      if (received < 8) return;
      if (length < 0) {
        const head = Buffer.concat(chunks).subarray(0, 8);
        if (head.toString('latin1', 0, 4) !== requestMagic || head.readUInt32BE(4) > maxRequestBytes) {
          handled = true;
          socket.destroy();
          return;
        }
        length = head.readUInt32BE(4);
      }
      if (received < 8 + length) return;
      handled = true;
      socket.setTimeout(0);
      const buffer = Buffer.concat(chunks);
      let request: ParsedRequest;
      try {
        request = decodeRequest(buffer.subarray(8, 8 + length));
      } catch {
        socket.destroy();
        return;
      }
      if (request.kind === 's') {
        const usage = process.cpuUsage();
        const status = { running: true, pid: process.pid, socket: socketPath, version: identity.split(':')[0], requests: served, cpu_user_us: usage.user, cpu_system_us: usage.system, uptime_s: Math.round(process.uptime()) };
        socket.end(Buffer.concat([frame('o', `${JSON.stringify(status)}\n`), frame('x', Buffer.from([0]))]));
        return;
      }
      if (stopping || bundleIdentity(root) !== identity || !ownsSocket()) {
        // Socket and pid file go first: the client starts the next server as soon as it reads the answer.
        stop(stopping ?? 'stale');
        socket.end(frame('n', Buffer.from([1])));
        return;
      }
      if (!residentCapable(request.argv)) {
        socket.end(frame('n', Buffer.from([0])));
        return;
      }
      // A failed request must not stop the ones queued after it.
      queue = queue.then(() => runOne(request, socket)).catch(() => {
        if (!socket.destroyed) socket.destroy();
      });
    });
  });

  async function runOne(request: ParsedRequest, socket: net.Socket): Promise<void> {
    if (socket.destroyed) return;
    const savedCwd = process.cwd();
    try {
      process.chdir(request.cwd);
    } catch {
      socket.end(frame('n', Buffer.from([0])));
      return;
    }
    // The caller's environment in the real one (not a replaced object): os.tmpdir() and child
    // processes read it through getenv().
    const savedEnv = swapEnvironment(request.env);
    const io: CommandIo = {
      cwd: request.cwd,
      env: request.env,
      now: () => new Date(),
      stderrIsTty: false,
      stdout: (text) => {
        if (!socket.destroyed) socket.write(frame('o', text));
      },
      stderr: (text) => {
        if (!socket.destroyed) socket.write(frame('e', text));
      },
      readStdin: () => Promise.reject(new Error('standard input is not available in resident mode')),
    };
    let code: CommandResult = 2;
    try {
      code = await main(request.argv, io);
    } catch (error) {
      io.stderr(`polywave: error[INTERNAL]: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`);
    } finally {
      swapEnvironment(savedEnv);
      try {
        process.chdir(savedCwd);
      } catch {
        process.chdir('/');
      }
      served += 1;
      if (!socket.destroyed) socket.end(frame('x', Buffer.from([code])));
      armIdle();
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const previousMask = process.umask(0o077);
    server.listen(socketPath, () => {
      process.umask(previousMask);
      resolve();
    });
  });
  socketIno = lstatSync(socketPath).ino;
  // Lost a race with another starter: the pid file is theirs now.
  if (readPidFile(pidFile) !== process.pid) stop('already-running');
  armIdle();
  const reason = await done;
  process.removeListener('SIGTERM', onSignal);
  process.removeListener('SIGINT', onSignal);
  options.log(`polywave resident: stopped (${reason}) after ${served} request(s)`);
  return reason;
}

/** Makes process.env exactly `next`; returns what it was. */
function swapEnvironment(next: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const previous: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined) previous[name] = value;
    if (!Object.hasOwn(next, name)) delete process.env[name];
  }
  for (const [name, value] of Object.entries(next)) {
    if (value !== undefined && process.env[name] !== value) process.env[name] = value;
  }
  return previous;
}

function writePidFile(file: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${process.pid}\n`, { mode: 0o600 });
  renameSync(temp, file);
}

/** True when a server answers on the socket (a status request within 2 s). */
export async function answers(socketPath: string): Promise<boolean> {
  try {
    const response = await sendRequest(socketPath, { kind: 's', argv: [], cwd: '/', env: {} }, 2000);
    return response.code === 0;
  } catch {
    return false;
  }
}

/** Status of the server on `socketPath`: its JSON, or undefined when none answers. */
export async function residentStatus(socketPath: string): Promise<Record<string, unknown> | undefined> {
  try {
    const response = await sendRequest(socketPath, { kind: 's', argv: [], cwd: '/', env: {} }, 2000);
    return response.code === 0 ? (JSON.parse(response.stdout) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
