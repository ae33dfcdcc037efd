/**
 * Resident mode (issues 13, 14, 15): a warm `polywave` server on a per-user Unix socket, and the
 * wire format that native/polywave-client.c speaks. A hook's call then costs the native client's
 * start plus the command's own work in an already warm Node (no Node start, no module loading, a
 * JIT that has seen the YAML parser before): an empty `node -e 0` alone is ~2× the Go binary's
 * whole call (docs/performance.md), which no change inside a fresh Node process can go below.
 *
 * Only read-only commands run here (ALLOW-LIST below, and `hook`: see {@link stdinCommands}); any
 * other call is answered "not resident-capable" and the client runs `node bin/polywave.js` itself,
 * exactly as without a server. Requests run one at a time, each with the caller's cwd
 * (process.chdir), environment (given to the command in its CommandIo, and as process.env for the
 * duration, so that a git or a path resolved against the process sees the caller's too) and umask.
 * Every request reads its files again: what stays warm is the loaded code, and for the analysis
 * commands facts keyed by git blob id (content-addressed, so an edit is a new key; per-call state —
 * repository roots, line caches, counters — lives one call only: src/analysis/engine/scope.ts and
 * docs/analysis.md). Resource limits (ulimit) and nice level are the ones of the caller that started
 * the server; a caller whose own are tighter runs in node ({@link callerLimitsTighter}).
 *
 * One request never holds the others up for long: a request waits at most 5 s in the queue (then
 * 'n' 0: its client runs node), at most 32 wait, and a request that runs longer than 60 s, or whose
 * client went away (Ctrl-C, killed) and that is still running 0.3 s later, ends the server: the
 * commands here only read, so stopping one half-way is safe, and process.chdir/env are global, so
 * the next request could not run beside it. Queued requests are then answered 'n' 1 (their clients
 * run node and start a new server); the timed-out request's client gets 'n' 0 (runs node) when
 * nothing was written yet, else a RESIDENT_TIMEOUT line and exit 2.
 *
 * Wire format (all integers unsigned 32-bit big-endian):
 *   request   "PWR1" u32 length, then: u8 kind ('r' run, 's' status), u32 argc + argc × (u32 len, bytes),
 *             u32 len + cwd, u32 envc + envc × (u32 len, "NAME=value"),
 *             then (optional: older clients end here) u32 features, u32 umask,
 *             then (optional) u32 count + count × (u32 len, text): today one text, the caller's limits
 *             "as=<n|inf> data=… cpu=… nofile=… nice=<n>" (soft RLIMIT_AS/DATA/CPU, the hard RLIMIT_NOFILE —
 *             node raises its soft limit to it — and the nice level).
 *             features bit 0: the client answers 'i' (it sends its stdin on request).
 *             A caller whose limits are tighter than the server's own is answered 'n' 0 (its client
 *             runs node, under them): {@link callerLimitsTighter}.
 *   response  frames of u8 type + u32 length + payload: 'o' stdout bytes, 'e' stderr bytes,
 *             'x' exit code (1 byte, last frame), 'n' not resident-capable (1 byte: 0 this command,
 *             1 this server is stopping — the client then also starts a new one), before any 'o'/'e';
 *             'i' (empty): the command reads its standard input — the client answers on the same
 *             connection with u32 len + bytes: all of its stdin, at most {@link maxStdinBytes}
 *             (a command that reads stdin here must refuse more than that itself, as `hook` does
 *             above 8 MiB: the answer is then the one node gives).
 */
import { lstatSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { invokedCommandName } from './invoked-command.js';
import { privateUserDir } from '../sandbox/private-dir.js';
import type { CommandIo, CommandResult } from './io.js';
import type { WarmUpResult } from '../analysis/engine/warm-up.js';
import { processExists } from '../store/process-alive.js';

/**
 * Commands that change nothing, take env/cwd only from their io and keep no state in the process
 * between calls that could change an answer: the only ones run resident. The Scout's analysis
 * commands are among them: each run is one analysis call (src/analysis/engine/scope.ts) — repository
 * roots, file lines and stats counters live for that call only; what stays in memory is keyed by
 * git blob id (facts, lines and words of exact content), and which blob each path holds is asked of
 * git on every call. (They write only the content-addressed analysis cache under .git, as node does.)
 * Not `solve` (it rewrites the IMPL unless --dry-run).
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
  'check-callers',
  'analyze-deps',
  'detect-cascades',
  'detect-shared-types',
  'detect-wiring',
  'detect-scaffolds',
  'check-test-cascade',
  'analyze-suitability',
  'suggest-wave-structure',
  'list-error-ranges',
]);

/**
 * Commands that read their standard input and may still run resident, for clients that send it
 * ('i', features bit 0). `hook <event>` (the Claude Code plugin's hooks, on every tool call): it
 * reads the payload, files, and runs git read-only (worktree list, status, rev-parse), and takes
 * cwd and env from its io. Its only writes are the optional decision log (`--log` /
 * POLYWAVE_HOOK_LOG, one appended line, resolved against the caller's cwd) and, for a refused call
 * in an agent worktree, one line in that agent's denials.jsonl (confined-write): the server is the
 * same user and applies the caller's umask, so the files are the ones node would write. The jail's bash
 * parser it loads stays loaded (code, not data).
 */
export const stdinCommands: ReadonlySet<string> = new Set(['hook']);

/** Feature bits of a request (see the wire format). */
export const clientSendsStdin = 1;
/** The most stdin a client sends: the hook's own limit (8 MiB) + 1 byte, so that it refuses a larger payload exactly as node does. */
export const maxStdinBytes = 8 * 1024 * 1024 + 1;
const maxQueueWaitMs = 5_000;
const maxQueued = 32;
const defaultMaxRunMs = 60_000;
const abandonedGraceMs = 300;

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

/**
 * The socket of this package and version: POLYWAVE_RESIDENT_SOCKET; else
 * `$XDG_RUNTIME_DIR/polywave/resident-<hash>.sock` when XDG_RUNTIME_DIR is an absolute directory of
 * ours closed to others (/run/user/<uid>: private by design, nobody else can create our directory in
 * it first); else `<tmp>/polywave-<uid>/resident-<hash>.sock` (on a shared /tmp another user may
 * have made that directory: it is refused, and calls run through node).
 */
export function residentSocketPath(env: Readonly<Record<string, string | undefined>>, root = packageDir(), version = readVersion(root)): string {
  if (env.POLYWAVE_RESIDENT_SOCKET) return path.resolve(env.POLYWAVE_RESIDENT_SOCKET);
  const name = `resident-${fnv1a(`${root}\n${version}`)}.sock`;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && path.isAbsolute(runtime) && privateUserDir(runtime, false)) return path.join(runtime, 'polywave', name);
  const tmp = (env.TMPDIR || env.TMP || env.TEMP || '/tmp').replace(/(.)\/+$/, '$1');
  const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  return path.join(tmp, `polywave-${uid}`, name);
}

/** True when `dir` may hold our socket (see {@link privateUserDir}). */
export const safeSocketDir = privateUserDir;


/** True when the call may run in the server: an allowed command (a stdin one only for a client that sends stdin), no write flag, no --follow. */
export function residentCapable(argv: readonly string[], features = 0): boolean {
  const name = invokedCommandName(argv);
  if (!name || !(residentCommands.has(name) || (stdinCommands.has(name) && (features & clientSendsStdin) !== 0))) return false;
  return !argv.some((argument) => notResidentArguments.has(argument) || /^--(fix|follow|append-impl)(=|$)/.test(argument) || /^--file=-$/.test(argument));
}

export interface ParsedRequest {
  kind: 'r' | 's';
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** Absent in requests of older clients. */
  features?: number;
  umask?: number;
  /** The caller's resource limits text (see the wire format); absent in requests of older clients. */
  limits?: string;
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
  if (request.features !== undefined || request.umask !== undefined) {
    u32(request.features ?? 0);
    u32(request.umask ?? 0o022);
    if (request.limits !== undefined) {
      u32(1);
      text(request.limits);
    }
  }
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
  if (offset === payload.length) return { kind, argv, cwd, env };
  const features = u32();
  const umask = u32() & 0o777;
  if (offset === payload.length) return { kind, argv, cwd, env, features, umask };
  const extras = Array.from({ length: u32() }, text);
  return { kind, argv, cwd, env, features, umask, ...(extras[0] !== undefined ? { limits: extras[0] } : {}) };
}

/** Parses a limits text ("as=inf data=… nice=0"): Infinity for "inf"; unknown names are kept. */
export function parseLimits(text: string): Record<string, number> {
  const limits: Record<string, number> = {};
  for (const part of text.trim().split(/\s+/)) {
    const match = /^([a-z]+)=(inf|-?\d+)$/.exec(part);
    if (match) limits[match[1]!] = match[2] === 'inf' ? Infinity : Number(match[2]);
  }
  return limits;
}

/** This process's own limits: /proc/self/limits (Linux) and its nice level; else what its starter (the native client) put in POLYWAVE_RESIDENT_LIMITS; undefined when unknown. */
export function ownLimits(env: Readonly<Record<string, string | undefined>> = process.env): Record<string, number> | undefined {
  try {
    const rows: Record<string, string> = { 'Max address space': 'as', 'Max data size': 'data', 'Max cpu time': 'cpu', 'Max open files': 'nofile' };
    const limits: Record<string, number> = {};
    for (const line of readFileSync('/proc/self/limits', 'utf8').split('\n')) {
      const name = Object.keys(rows).find((row) => line.startsWith(row));
      const soft = name ? line.slice(name.length).trim().split(/\s+/)[0] : undefined;
      if (name && soft) limits[rows[name]!] = soft === 'unlimited' ? Infinity : Number(soft);
    }
    limits.nice = os.getPriority();
    if (Object.keys(limits).length === 5) return limits;
  } catch {
    // not Linux
  }
  return env.POLYWAVE_RESIDENT_LIMITS ? parseLimits(env.POLYWAVE_RESIDENT_LIMITS) : undefined;
}

/** True when a caller's limits are tighter than `own` (a lower soft limit, or a higher nice level): the call must run in node, under them. Unknown own limits: any finite caller limit is tighter. */
export function callerLimitsTighter(callerText: string | undefined, own: Readonly<Record<string, number>> | undefined): boolean {
  if (callerText === undefined) return false;
  const caller = parseLimits(callerText);
  for (const [name, value] of Object.entries(caller)) {
    const mine = own?.[name];
    if (name === 'nice') {
      if (value > (mine ?? 0)) return true;
    } else if (mine === undefined ? Number.isFinite(value) : value < mine) return true;
  }
  return false;
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
  if (!processExists(pid)) return false;
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
  /** A request running longer ends the server (default 60 s; POLYWAVE_RESIDENT_MAX_RUN_S in `resident start`). */
  maxRunMs?: number;
}

/**
 * Runs the server until it stops: idle timeout, SIGTERM/SIGINT, its socket file removed or replaced,
 * or the code on disk changed (a stale server answers "stopping" and exits). Resolves with the reason,
 * or 'already-running' when another live server holds the socket's pid file.
 */
export async function runResidentServer(options: ServerOptions): Promise<string> {
  const root = packageDir();
  const identity = bundleIdentity(root);
  const limits = ownLimits();
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
  const gitHelper = await import('../git/spawn-server.js');
  const server = net.createServer();
  let served = 0;
  let stopping: string | undefined;
  let warmUp: WarmUpResult | undefined;
  const maxRunMs = options.maxRunMs ?? defaultMaxRunMs;
  // The server's own files (pid file, socket) for this user only; each request runs with its caller's umask.
  process.umask(0o077);
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
    void drained().then(() => resolveDone(reason));
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
    const job: Job = { socket, wrote: false, started: false, settled: false, stdin: { buffered: Buffer.alloc(0) } };
    socket.on('data', (chunk: Buffer) => {
      if (handled) {
        job.stdin.feed?.(chunk);
        if (!job.stdin.feed) job.stdin.buffered = Buffer.concat([job.stdin.buffered, chunk]);
        return;
      }
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
      // Bytes after the request are the start of the stdin answer (a client sends it only after 'i').
      job.stdin.buffered = buffer.subarray(8 + length);
      let request: ParsedRequest;
      try {
        request = decodeRequest(buffer.subarray(8, 8 + length));
      } catch {
        socket.destroy();
        return;
      }
      if (request.kind === 's') {
        const usage = process.cpuUsage();
        const status = { running: true, pid: process.pid, socket: socketPath, version: identity.split(':')[0], requests: served, ...(warmUp ? { warm_up_ms: Math.round(warmUp.ms), warm_up_cpu_ms: Math.round(warmUp.cpuMs) } : {}), cpu_user_us: usage.user, cpu_system_us: usage.system, uptime_s: Math.round(process.uptime()) };
        socket.end(Buffer.concat([frame('o', `${JSON.stringify(status)}\n`), frame('x', Buffer.from([0]))]));
        return;
      }
      if (stopping || bundleIdentity(root) !== identity || !ownsSocket()) {
        // Socket and pid file go first: the client starts the next server as soon as it reads the answer.
        stop(stopping ?? 'stale');
        socket.end(frame('n', Buffer.from([1])));
        return;
      }
      if (!residentCapable(request.argv, request.features ?? 0) || waiting.length >= maxQueued || callerLimitsTighter(request.limits, limits)) {
        socket.end(frame('n', Buffer.from([0])));
        return;
      }
      job.request = request;
      // Waited too long behind a slow request: the client runs node itself.
      job.queueTimer = setTimeout(() => {
        if (job.started || job.settled) return;
        job.settled = true;
        waiting.splice(waiting.indexOf(job), 1);
        if (!socket.destroyed) socket.end(frame('n', Buffer.from([0])));
      }, maxQueueWaitMs);
      socket.on('close', () => {
        if (job.started && !job.settled) {
          // The client went away (Ctrl-C, killed): its answer is not wanted. A request still running
          // a moment later is ended with the server (see the file comment).
          const grace = setTimeout(() => {
            if (!job.settled) abort('client-gone');
          }, abandonedGraceMs);
          grace.unref();
        }
      });
      waiting.push(job);
      pump();
    });
  });

  interface Job {
    socket: net.Socket;
    request?: ParsedRequest;
    wrote: boolean;
    started: boolean;
    settled: boolean;
    queueTimer?: NodeJS.Timeout;
    stdin: { buffered: Buffer; feed?: (chunk: Buffer) => void };
  }
  const waiting: Job[] = [];
  let running: Job | undefined;
  let idleResolvers: Array<() => void> = [];
  const drained = () => (running || waiting.length > 0 ? new Promise<void>((resolve) => idleResolvers.push(resolve)) : Promise.resolve());

  function pump(): void {
    if (running) return;
    const job = waiting.shift();
    if (!job) {
      const resolvers = idleResolvers;
      idleResolvers = [];
      for (const resolve of resolvers) resolve();
      return;
    }
    if (job.queueTimer) clearTimeout(job.queueTimer);
    if (job.socket.destroyed || job.settled) {
      job.settled = true;
      pump();
      return;
    }
    running = job;
    job.started = true;
    void runOne(job)
      .catch(() => {
        if (!job.socket.destroyed) job.socket.destroy();
      })
      .finally(() => {
        job.settled = true;
        running = undefined;
        pump();
      });
  }

  /** Ends the server now (a request hangs or was abandoned): the queued requests go to node. */
  function abort(reason: string): never {
    stop(reason);
    for (const job of waiting.splice(0)) {
      job.settled = true;
      if (!job.socket.destroyed) job.socket.end(frame('n', Buffer.from([1])));
    }
    options.log(`polywave resident: stopped (${reason}) after ${served} request(s)`);
    // Let the answers above reach their sockets, then exit: the running request's work (a git, a
    // read) cannot be cancelled in this process, and nothing may run beside it.
    setTimeout(() => process.exit(0), 50);
    return undefined as never;
  }

  /** The client's stdin, asked for with an 'i' frame once (the client answers u32 length + bytes). */
  function stdinOf(job: Job): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = job.socket;
      if (socket.destroyed) return reject(new Error('the client went away'));
      const check = () => {
        const have = job.stdin.buffered;
        if (have.length < 4) return;
        const size = have.readUInt32BE(0);
        if (size > maxStdinBytes) {
          job.stdin.feed = () => undefined;
          socket.destroy();
          return reject(new Error('standard input answer too large'));
        }
        if (have.length < 4 + size) return;
        job.stdin.feed = () => undefined;
        socket.removeListener('close', onClose);
        resolve(have.toString('utf8', 4, 4 + size));
      };
      const onClose = () => reject(new Error('the client went away before sending its standard input'));
      socket.once('close', onClose);
      job.stdin.feed = (chunk) => {
        job.stdin.buffered = Buffer.concat([job.stdin.buffered, chunk]);
        check();
      };
      // From here the call cannot be run again by node (the client's stdin is consumed).
      job.wrote = true;
      socket.write(frame('i', Buffer.alloc(0)));
      check();
    });
  }

  async function runOne(job: Job): Promise<void> {
    const socket = job.socket;
    const request = job.request!;
    if (socket.destroyed) return;
    const savedCwd = process.cwd();
    try {
      process.chdir(request.cwd);
    } catch {
      socket.end(frame('n', Buffer.from([0])));
      return;
    }
    // The caller's environment in the real one (not a replaced object): os.tmpdir() and child
    // processes read it through getenv(). The caller's umask: a file the command creates (a hook's
    // log, a cache) gets the mode it would get from node; older clients do not send one: 022.
    const savedEnv = swapEnvironment(request.env);
    process.umask(request.umask ?? 0o022);
    gitHelper.setCommandUmask(request.umask ?? 0o022);
    let stdinRead: Promise<string> | undefined;
    const io: CommandIo = {
      cwd: request.cwd,
      env: request.env,
      now: () => new Date(),
      stderrIsTty: false,
      stdout: (text) => {
        job.wrote = true;
        if (!socket.destroyed) socket.write(frame('o', text));
      },
      stderr: (text) => {
        job.wrote = true;
        if (!socket.destroyed) socket.write(frame('e', text));
      },
      readStdin: () => {
        if ((request.features ?? 0) & clientSendsStdin) return (stdinRead ??= stdinOf(job));
        return Promise.reject(new Error('standard input is not available in resident mode'));
      },
    };
    const runLimit = setTimeout(() => {
      if (job.settled) return;
      job.settled = true;
      if (!socket.destroyed) {
        if (!job.wrote) socket.end(frame('n', Buffer.from([0])));
        else socket.end(Buffer.concat([frame('e', `polywave: error[RESIDENT_TIMEOUT]: the call ran longer than ${Math.round(maxRunMs / 1000)} s in the resident server (POLYWAVE_RESIDENT=0 runs without it)\n`), frame('x', Buffer.from([2]))]));
      }
      abort('request-timeout');
    }, maxRunMs);
    let code: CommandResult = 2;
    try {
      code = await main(request.argv, io);
    } catch (error) {
      io.stderr(`polywave: error[INTERNAL]: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`);
    } finally {
      clearTimeout(runLimit);
      swapEnvironment(savedEnv);
      process.umask(0o077);
      gitHelper.setCommandUmask(0o077);
      try {
        process.chdir(savedCwd);
      } catch {
        process.chdir('/');
      }
      served += 1;
      if (!socket.destroyed && !job.settled) socket.end(frame('x', Buffer.from([code])));
      armIdle();
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  socketIno = lstatSync(socketPath).ino;
  // Git commands through the spawn helper (the C one when built): a fork of this process — large, with
  // the grammars' WebAssembly memories mapped — cost its main thread ~8 ms per command, four per
  // cold analysis call; the helper starts each for ~0.1 ms. It runs with this process's environment.
  gitHelper.offloadGitSpawns();
  gitHelper.setCommandUmask(0o077);
  // The analysis commands' grammars and queries, loaded once the server listens (not on a first
  // check-callers' path), then the engine run once on a sample of its own (warm-up.ts: a first cold
  // call otherwise ran before V8 had optimised it, ~2.5× slower), each step after the running request;
  // POLYWAVE_RESIDENT_PRELOAD=0 leaves all of it to the first call that needs it.
  // Work the analysis engine leaves for idle time (the word index of a new tree: index.ts scheduleIndexFill),
  // one task at a time, each slice after the running request and the waiting ones.
  let idleChain = Promise.resolve();
  void import('../analysis/engine/scope.js').then(({ setIdleRunner }) =>
    setIdleRunner((task) => {
      idleChain = idleChain
        .then(() =>
          task(async () => {
            await drained();
            return !stopping;
          }),
        )
        .catch(() => undefined);
    }),
  );
  if (process.env.POLYWAVE_RESIDENT_PRELOAD !== '0') {
    const ownEnvironment = { ...process.env };
    // The server's own temporary directory, absolute, taken now: during a request process.env and the cwd are the caller's (X42-02/03).
    const ownTmp = path.resolve(os.tmpdir());
    setTimeout(() => {
      if (stopping) return;
      void (async () => {
        await (await import('../analysis/engine/extract.js')).preloadLanguages();
        const { warmUpEngine } = await import('../analysis/engine/warm-up.js');
        warmUp = await warmUpEngine(
          ownEnvironment,
          async () => {
            await drained();
            return !stopping;
          },
          ownTmp,
        );
      })().catch(() => undefined);
    }, 50).unref();
  }
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
