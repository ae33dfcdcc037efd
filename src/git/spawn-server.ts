/**
 * Git commands started by a small helper process instead of by the orchestrator itself.
 *
 * Node starts a child with fork + exec, and `spawn` returns only once the child has exec'd: the
 * calling thread is blocked meanwhile, and fork/exec cost grows with the parent's memory (its page
 * tables are copied, then torn down in the child). An orchestrator running a PROGRAM tier (several
 * IMPLs at once, each with hundreds of git commands) spent ~40% of its main thread in `spawn`
 * (bench:program, docs/performance.md): the IMPLs ran concurrently but queued on that thread.
 *
 * Once {@link offloadGitSpawns} is called, git-cli hands each command to one long-lived helper
 * (`node -e`, ~40 MB) that runs `execFile` with exactly the same arguments, cwd, environment,
 * stdin and output limit and answers with stdout, stderr and the error (exit code, signal, errno
 * code) — what git-cli would have seen itself. The helper ends when this process ends (its stdin
 * closes); while no command is pending it does not keep this process alive. If it cannot start or
 * dies, commands run in this process again (a command that was running when it died fails).
 */
import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { getSystemErrorName } from 'node:util';

/** The error an offloaded command ended with: the fields git-cli reads from execFile's error. */
export type OffloadedError = Error & { code?: string | number | null; signal?: NodeJS.Signals | null };

/** Options of one offloaded command (execFile's, plus the stdin text). */
export interface OffloadedExecOptions {
  cwd: string;
  env: Readonly<Record<string, string>>;
  maxBuffer: number;
  /** Written to the command's stdin, which is then closed (text, or bytes: sent to the helper as base64). */
  input: string | Buffer;
  /** 'buffer': stdout is binary (a git pack): it travels back as base64 and reaches the callback as a Buffer. */
  encoding?: 'utf8' | 'buffer';
  signal?: AbortSignal;
  /** Each piece of stdout as the command writes it (text commands): the callback still gets all of it. */
  onStdout?: (chunk: string) => void;
}

export type OffloadedCallback = (error: OffloadedError | null, stdout: string, stderr: string) => void;
/** The callback of a binary command ({@link OffloadedExecOptions.encoding} 'buffer'). */
export type OffloadedBinaryCallback = (error: OffloadedError | null, stdout: Buffer, stderr: string) => void;

// The helper (CommonJS, run by `node -e`): one JSON request per stdin line, one JSON answer per stdout line.
const helperSource = `
const { execFile } = require('node:child_process');
const { createInterface } = require('node:readline');
const running = new Map();
let lastEnv;
const answer = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
// Ctrl-C reaches the whole process group: the git commands running get it themselves (as when the
// orchestrator starts them); the helper stays for the commands the orchestrator runs after it.
process.on('SIGINT', () => {});
createInterface({ input: process.stdin }).on('line', (line) => {
  let request;
  try { request = JSON.parse(line); } catch { return; }
  if (request.kill !== undefined) { const child = running.get(request.kill); if (child) child.kill('SIGTERM'); return; }
  if (request.umask !== undefined) { process.umask(request.umask); return; }
  if (request.env) lastEnv = request.env;
  let child;
  try {
    // binary: stdin arrives as base64 and stdout goes back as base64 (a git pack in or out).
    child = execFile(request.file, request.args, { cwd: request.cwd, env: lastEnv, encoding: request.binary ? 'buffer' : 'utf8', maxBuffer: request.maxBuffer }, (error, stdout, stderr) => {
      running.delete(request.id);
      answer({ id: request.id, stdout: request.binary ? stdout.toString('base64') : stdout, stderr: request.binary ? stderr.toString('utf8') : stderr, error: error ? { name: error.name, message: error.message, code: error.code, signal: error.signal } : null });
    });
  } catch (error) {
    answer({ id: request.id, stdout: '', stderr: '', error: { name: error.name, message: error.message, code: error.code } });
    return;
  }
  running.set(request.id, child);
  if (request.stream && child.stdout) child.stdout.on('data', (piece) => answer({ id: request.id, piece }));
  if (child.stdin) { child.stdin.on('error', () => {}); child.stdin.end(request.binary ? Buffer.from(request.input || '', 'base64') : request.input || ''); }
}).on('close', () => process.exit(0));
`;

interface Answer {
  id: number;
  /** A piece of a streamed command's stdout (not its end): the node helper's text, the native helper's bytes. */
  piece?: string | Buffer;
  /** base64 from the node helper when the command is binary; the bytes themselves from the native one. */
  stdout: string | Buffer;
  stderr: string;
  error: { name: string; message: string; code?: string | number; signal?: NodeJS.Signals | null } | null;
}

interface Helper {
  child: ChildProcessByStdio<Writable, Readable, null>;
  /** dist/native/polywave-spawn (binary frames) rather than the node helper (JSON lines). */
  native: boolean;
  pending: Map<number, (answer: Answer) => void>;
  /** The command line of each pending command of the native helper (its failures' messages name it). */
  commandLines: Map<number, string>;
  /** The environment the helper has (sent once, then reused while it stays the same). */
  lastEnv?: string;
  /** The umask last sent to the helper (undefined: none sent, its commands get the one it started with). */
  umask?: number;
}

/**
 * The umask the helper's commands are to get, when the process changes its own (the resident server sets
 * its caller's per request and tells it here); undefined: the helper's own, inherited from this process at
 * its start. Told rather than read: reading it (`process.umask()` without an argument) sets it to 0 for a
 * moment, and a file another thread creates meanwhile gets mode 0666 (X42-09).
 */
let commandUmask: number | undefined;

/** From now on, commands started through the helper get `mask` as their umask (undefined: the helper's own). */
export function setCommandUmask(mask: number | undefined): void {
  commandUmask = mask === undefined ? undefined : mask & 0o777;
}

/**
 * dist/native/polywave-spawn (native/polywave-spawn.c) when it was built and is executable: the same
 * helper without Node's fork of a whole process per command (~3.5 ms of CPU each, against ~0.1 ms
 * with its posix_spawn; docs/performance.md). Found from this module: src/git/, dist/git/ and
 * dist/bundle/ are all two levels below the package directory. POLYWAVE_SPAWN_HELPER=node: the node
 * helper even so.
 */
let nativeHelperPath: string | undefined | null = null;
export function nativeSpawnHelper(): string | undefined {
  if (process.env.POLYWAVE_SPAWN_HELPER === 'node' || process.platform === 'win32') return undefined;
  if (nativeHelperPath === null) {
    const candidate = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'native', 'polywave-spawn');
    nativeHelperPath = undefined;
    try {
      accessSync(candidate, fsConstants.X_OK);
      nativeHelperPath = candidate;
    } catch {
      // not built (no C compiler, POLYWAVE_NO_NATIVE, the npm tarball before its install): the node helper
    }
  }
  return nativeHelperPath;
}

/** A length-prefixed message of the native helper's protocol: u32 length, then the parts. */
function frame(parts: readonly Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32LE(body.length, 0);
  return Buffer.concat([head, body]);
}

function u32(value: number): Buffer {
  const bytes = Buffer.allocUnsafe(4);
  bytes.writeUInt32LE(value >>> 0, 0);
  return bytes;
}

function lengthPrefixed(text: string | Buffer): Buffer[] {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  return [u32(bytes.length), bytes];
}

const signalNames = new Map<number, NodeJS.Signals>(Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]));

/** The native helper's answer as the error execFile would have given (exit status, signal, start failure, maxBuffer). */
function nativeAnswer(id: number, kind: number, value: number, stdout: Buffer, stderr: string, commandLine: string): Answer {
  if (kind === 0 && value === 0) return { id, stdout, stderr, error: null };
  if (kind === 0) return { id, stdout, stderr, error: { name: 'Error', message: `Command failed: ${commandLine}\n${stderr}`, code: value, signal: null } };
  if (kind === 1) return { id, stdout, stderr, error: { name: 'Error', message: `Command failed: ${commandLine}\n${stderr}`, signal: signalNames.get(value) ?? null } };
  if (kind === 2) {
    let code: string;
    try {
      code = getSystemErrorName(-value);
    } catch {
      code = 'UNKNOWN';
    }
    return { id, stdout: Buffer.alloc(0), stderr: '', error: { name: 'Error', message: `spawn ${commandLine.split(' ')[0] ?? ''} ${code}`, code } };
  }
  const stream = kind === 3 ? 'stdout' : 'stderr';
  return { id, stdout, stderr, error: { name: 'RangeError', message: `${stream} maxBuffer length exceeded`, code: 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER' } };
}

/**
 * Reads the native helper's answers (u32 length, u32 id, u8 kind, i32 value, u32 + stdout, u32 + stderr) from its
 * stdout. A frame's bytes are copied once into a buffer of its announced size (X40-01: appending each 64 KB chunk to
 * what had arrived was quadratic — a 16 MB answer, a `git status` of 100,000 untracked files an agent made, held the
 * main thread 7 s).
 */
function readNativeAnswers(current: Helper, deliver: (answer: Answer) => void): void {
  let head: Buffer = Buffer.alloc(0);
  let frame: Buffer | undefined;
  let filled = 0;
  const finish = (body: Buffer) => {
    const id = body.readUInt32LE(0);
    const kind = body.readUInt8(4);
    const value = body.readInt32LE(5);
    const outLength = body.readUInt32LE(9);
    const stdout = body.subarray(13, 13 + outLength);
    const errLength = body.readUInt32LE(13 + outLength);
    const stderr = body.subarray(17 + outLength, 17 + outLength + errLength).toString('utf8');
    if (kind === 5) {
      deliver({ id, piece: Buffer.from(stdout), stdout: '', stderr: '', error: null });
      return;
    }
    const commandLine = current.commandLines.get(id) ?? '';
    current.commandLines.delete(id);
    deliver(nativeAnswer(id, kind, value, stdout, stderr, commandLine));
  };
  current.child.stdout.on('data', (chunk: Buffer) => {
    let at = 0;
    while (at < chunk.length) {
      if (frame === undefined) {
        // the 4-byte length, which may itself be split across chunks
        const need = 4 - head.length;
        head = Buffer.concat([head, chunk.subarray(at, at + need)]);
        at += Math.min(need, chunk.length - at);
        if (head.length < 4) return;
        frame = Buffer.allocUnsafe(head.readUInt32LE(0));
        filled = 0;
        head = Buffer.alloc(0);
      }
      const take = Math.min(frame.length - filled, chunk.length - at);
      chunk.copy(frame, filled, at, at + take);
      filled += take;
      at += take;
      if (filled === frame.length) {
        const body = frame;
        frame = undefined;
        finish(body);
      }
    }
  });
}

/** JSON of each environment object (git-cli passes the same object to most of its commands). */
const envJson = new WeakMap<object, string>();

let offloaded = false;
let helper: Helper | undefined;
let nextId = 0;

/**
 * The helper's own environment: the process's when offloading was first turned on. A long-lived
 * process that runs its callers' requests in their environments (the resident server swaps
 * `process.env` per request) starts its helper with its own, not with whichever caller's came first;
 * each command still runs with the environment it is given.
 */
let helperEnvironment: Record<string, string | undefined> | undefined;

/** From now on, git-cli starts its commands through the helper process (idempotent); `false`: in this process again. */
export function offloadGitSpawns(on = true): void {
  offloaded = on;
  if (on) helperEnvironment ??= { ...process.env };
}

/** Tests: the helper process ends; the next command starts a new one (native or node, per POLYWAVE_SPAWN_HELPER then). */
export function endGitSpawnHelper(): void {
  const current = helper;
  helper = undefined;
  nativeHelperPath = null;
  current?.child.stdin.end();
}

/** Which helper runs the commands now (undefined: none started yet). */
export function gitSpawnHelperKind(): 'native' | 'node' | undefined {
  return helper ? (helper.native ? 'native' : 'node') : undefined;
}

/** Whether git commands go through the helper. */
export function gitSpawnsOffloaded(): boolean {
  return offloaded;
}

function keepAlive(current: Helper, alive: boolean): void {
  if (alive) {
    current.child.ref();
    (current.child.stdout as Readable & { ref?: () => void }).ref?.();
  } else {
    current.child.unref();
    (current.child.stdout as Readable & { unref?: () => void }).unref?.();
  }
}

function startHelper(): Helper | undefined {
  const environment = { ...(helperEnvironment ?? process.env) };
  // Not the parent's preload/inspector/coverage options: the helper only starts processes.
  delete environment.NODE_OPTIONS;
  delete environment.NODE_V8_COVERAGE;
  const native = nativeSpawnHelper();
  let child: ChildProcessByStdio<Writable, Readable, null>;
  try {
    child = native ? spawn(native, [], { stdio: ['pipe', 'pipe', 'ignore'], env: environment }) : spawn(process.execPath, ['-e', helperSource], { stdio: ['pipe', 'pipe', 'ignore'], env: environment });
  } catch {
    return undefined;
  }
  const current: Helper = { child, native: native !== undefined, pending: new Map(), commandLines: new Map() };
  const lost = () => {
    if (helper === current) helper = undefined;
    const pending = [...current.pending.values()];
    current.pending.clear();
    for (const settle of pending) settle({ id: -1, stdout: '', stderr: 'the git helper process ended while the command ran', error: { name: 'Error', message: 'the git helper process ended while the command ran', code: 'EHELPERGONE' } });
  };
  child.on('error', lost);
  child.on('exit', lost);
  child.stdin.on('error', () => {});
  const deliver = (answer: Answer) => {
    const settle = current.pending.get(answer.id);
    if (!settle) return;
    if (answer.piece !== undefined) {
      settle(answer);
      return;
    }
    current.pending.delete(answer.id);
    if (current.pending.size === 0) keepAlive(current, false);
    settle(answer);
  };
  if (current.native) readNativeAnswers(current, deliver);
  else
    createInterface({ input: child.stdout }).on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      deliver(answer);
    });
  keepAlive(current, false);
  return current;
}

/** execFile(file, args) run by the helper (or here, when it cannot run); the callback gets what execFile would give. */
export function execFileOffloaded(file: string, args: readonly string[], options: OffloadedExecOptions, callback: OffloadedCallback): void {
  offload(file, args, { ...options, encoding: 'utf8' }, (error, stdout, stderr) => callback(error, stdout as string, stderr));
}

/** The same for a command whose stdout is binary (stdin may be too): stdout reaches the callback as a Buffer. */
export function execFileBinaryOffloaded(file: string, args: readonly string[], options: Omit<OffloadedExecOptions, 'encoding'>, callback: OffloadedBinaryCallback): void {
  offload(file, args, { ...options, encoding: 'buffer' }, (error, stdout, stderr) => callback(error, Buffer.isBuffer(stdout) ? stdout : Buffer.from(stdout, 'base64'), stderr));
}

function offload(file: string, args: readonly string[], options: OffloadedExecOptions, callback: (error: OffloadedError | null, stdout: string | Buffer, stderr: string) => void): void {
  const binary = options.encoding === 'buffer';
  helper ??= startHelper();
  const current = helper;
  // A NUL in an argument is execFile's own error (thrown at once): run here, where it is raised the same way.
  if (!current || (current.native && (file.includes('\0') || args.some((arg) => arg.includes('\0')) || options.cwd.includes('\0') || environmentJson(options.env).includes('\\u0000')))) {
    const done = (error: Error | null, stdout: string | Buffer, stderr: string | Buffer) => callback(error as OffloadedError | null, stdout, stderr.toString());
    const child = binary
      ? execFile(file, args, { cwd: options.cwd, env: options.env, encoding: 'buffer', maxBuffer: options.maxBuffer, ...(options.signal ? { signal: options.signal } : {}) }, done)
      : execFile(file, args, { cwd: options.cwd, env: options.env, encoding: 'utf8', maxBuffer: options.maxBuffer, ...(options.signal ? { signal: options.signal } : {}) }, done);
    if (options.onStdout && !binary) child.stdout?.on('data', options.onStdout);
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.input);
    return;
  }
  nextId += 1;
  const id = nextId;
  let settled = false;
  const signal = options.signal;
  const onAbort = () => {
    if (settled) return;
    settled = true;
    current.pending.delete(id);
    current.commandLines.delete(id);
    if (current.pending.size === 0) keepAlive(current, false);
    current.child.stdin.write(current.native ? frame([Buffer.from('K'), u32(id)]) : `${JSON.stringify({ kill: id })}\n`);
    // What execFile rejects with when its signal aborts (the command is sent SIGTERM).
    const error: OffloadedError = Object.assign(new Error('The operation was aborted', { cause: signal?.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
    callback(error, '', '');
  };
  if (signal?.aborted) {
    queueMicrotask(() => callback(Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' }), '', ''));
    return;
  }
  signal?.addEventListener('abort', onAbort, { once: true });
  // A streamed command (text only): pieces go to onStdout as they come (decoded across piece boundaries); the
  // native helper's final answer holds only the rest, so its stdout is the pieces plus that.
  const stream = options.onStdout && !binary ? options.onStdout : undefined;
  const decoder = stream ? new StringDecoder('utf8') : undefined;
  const pieces: Buffer[] = [];
  current.pending.set(id, (answer) => {
    if (answer.piece !== undefined) {
      if (settled || !stream) return;
      if (Buffer.isBuffer(answer.piece)) {
        pieces.push(answer.piece);
        const text = decoder!.write(answer.piece);
        if (text !== '') stream(text);
      } else stream(answer.piece);
      return;
    }
    signal?.removeEventListener('abort', onAbort);
    if (settled) return;
    settled = true;
    if (stream && current.native && Buffer.isBuffer(answer.stdout)) {
      const rest = answer.stdout;
      const tail = decoder!.write(rest) + decoder!.end();
      if (tail !== '') stream(tail);
      if (pieces.length > 0) answer = { ...answer, stdout: Buffer.concat([...pieces, rest]) };
    }
    const stdout = Buffer.isBuffer(answer.stdout) ? (binary ? answer.stdout : answer.stdout.toString('utf8')) : binary ? Buffer.from(answer.stdout, 'base64') : answer.stdout;
    if (!answer.error) {
      callback(null, stdout, answer.stderr);
      return;
    }
    const error: OffloadedError = Object.assign(new Error(answer.error.message), { name: answer.error.name });
    if (answer.error.code !== undefined && answer.error.code !== null) error.code = answer.error.code;
    if (answer.error.signal !== undefined) error.signal = answer.error.signal;
    callback(error, stdout, answer.stderr);
  });
  if (current.pending.size === 1) keepAlive(current, true);
  if (current.native) {
    sendNative(current, id, file, args, options, stream !== undefined);
    return;
  }
  let env = envJson.get(options.env);
  if (env === undefined) {
    env = JSON.stringify(options.env);
    envJson.set(options.env, env);
  }
  const input = typeof options.input === 'string' ? (binary ? Buffer.from(options.input).toString('base64') : options.input) : binary ? options.input.toString('base64') : options.input.toString('utf8');
  const mask = commandUmask;
  if (mask !== undefined && mask !== current.umask) {
    current.child.stdin.write(`${JSON.stringify({ umask: mask })}\n`);
    current.umask = mask;
  }
  const request = JSON.stringify({ id, file, args, cwd: options.cwd, maxBuffer: options.maxBuffer, input, ...(binary ? { binary: true } : {}), ...(stream ? { stream: true } : {}) });
  // The environment (~5 KB) only when it differs from the previous command's.
  current.child.stdin.write(env === current.lastEnv ? `${request}\n` : `${request.slice(0, -1)},"env":${env}}\n`);
  current.lastEnv = env;
}

/** JSON of an environment object, computed once per object (git-cli passes the same object to most of its commands). */
function environmentJson(env: Readonly<Record<string, string>>): string {
  let json = envJson.get(env);
  if (json === undefined) {
    json = JSON.stringify(env);
    envJson.set(env, json);
  }
  return json;
}

/** The environment as execFile passes it (`KEY=value` for each key whose value is not undefined). */
function environmentPairs(env: Readonly<Record<string, string | undefined>>): string[] {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(env)) if (value !== undefined) pairs.push(`${key}=${String(value)}`);
  return pairs;
}

/** One command to the native helper: its environment first when it differs from the last one sent. */
function sendNative(current: Helper, id: number, file: string, args: readonly string[], options: OffloadedExecOptions, stream = false): void {
  const env = environmentJson(options.env);
  const messages: Buffer[] = [];
  // Files a command creates get the mode they would get when started here (the caller's umask in a resident server).
  const mask = commandUmask;
  if (mask !== undefined && mask !== current.umask) {
    messages.push(frame([Buffer.from('U'), u32(mask)]));
    current.umask = mask;
  }
  if (env !== current.lastEnv) {
    const pairs = environmentPairs(options.env);
    messages.push(frame([Buffer.from('E'), u32(pairs.length), ...pairs.flatMap((pair) => lengthPrefixed(pair))]));
    current.lastEnv = env;
  }
  const input = typeof options.input === 'string' ? Buffer.from(options.input, 'utf8') : options.input;
  const strings = [file, options.cwd, file, ...args];
  messages.push(frame([Buffer.from(stream ? 'S' : 'R'), u32(id), u32(Math.min(options.maxBuffer, 0xffffffff)), u32(strings.length), ...strings.flatMap((text) => lengthPrefixed(text)), u32(input.length), input]));
  current.commandLines.set(id, [file, ...args].join(' '));
  current.child.stdin.write(messages.length === 1 ? messages[0] : Buffer.concat(messages));
}
