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
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

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
  if (child.stdin) { child.stdin.on('error', () => {}); child.stdin.end(request.binary ? Buffer.from(request.input || '', 'base64') : request.input || ''); }
}).on('close', () => process.exit(0));
`;

interface Answer {
  id: number;
  stdout: string;
  stderr: string;
  error: { name: string; message: string; code?: string | number; signal?: NodeJS.Signals | null } | null;
}

interface Helper {
  child: ChildProcessByStdio<Writable, Readable, null>;
  pending: Map<number, (answer: Answer) => void>;
  /** The environment the helper has (sent once, then reused while it stays the same). */
  lastEnv?: string;
}

/** JSON of each environment object (git-cli passes the same object to most of its commands). */
const envJson = new WeakMap<object, string>();

let offloaded = false;
let helper: Helper | undefined;
let nextId = 0;

/** From now on, git-cli starts its commands through the helper process (idempotent); `false`: in this process again. */
export function offloadGitSpawns(on = true): void {
  offloaded = on;
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
  const environment = { ...process.env };
  // Not the parent's preload/inspector/coverage options: the helper only starts processes.
  delete environment.NODE_OPTIONS;
  delete environment.NODE_V8_COVERAGE;
  let child: ChildProcessByStdio<Writable, Readable, null>;
  try {
    child = spawn(process.execPath, ['-e', helperSource], { stdio: ['pipe', 'pipe', 'ignore'], env: environment });
  } catch {
    return undefined;
  }
  const current: Helper = { child, pending: new Map() };
  const lost = () => {
    if (helper === current) helper = undefined;
    const pending = [...current.pending.values()];
    current.pending.clear();
    for (const settle of pending) settle({ id: -1, stdout: '', stderr: 'the git helper process ended while the command ran', error: { name: 'Error', message: 'the git helper process ended while the command ran', code: 'EHELPERGONE' } });
  };
  child.on('error', lost);
  child.on('exit', lost);
  child.stdin.on('error', () => {});
  createInterface({ input: child.stdout }).on('line', (line) => {
    let answer: Answer;
    try {
      answer = JSON.parse(line) as Answer;
    } catch {
      return;
    }
    const settle = current.pending.get(answer.id);
    if (!settle) return;
    current.pending.delete(answer.id);
    if (current.pending.size === 0) keepAlive(current, false);
    settle(answer);
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
  if (!current) {
    const done = (error: Error | null, stdout: string | Buffer, stderr: string | Buffer) => callback(error as OffloadedError | null, stdout, stderr.toString());
    const child = binary
      ? execFile(file, args, { cwd: options.cwd, env: options.env, encoding: 'buffer', maxBuffer: options.maxBuffer, ...(options.signal ? { signal: options.signal } : {}) }, done)
      : execFile(file, args, { cwd: options.cwd, env: options.env, encoding: 'utf8', maxBuffer: options.maxBuffer, ...(options.signal ? { signal: options.signal } : {}) }, done);
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
    if (current.pending.size === 0) keepAlive(current, false);
    current.child.stdin.write(`${JSON.stringify({ kill: id })}\n`);
    // What execFile rejects with when its signal aborts (the command is sent SIGTERM).
    const error: OffloadedError = Object.assign(new Error('The operation was aborted', { cause: signal?.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
    callback(error, '', '');
  };
  if (signal?.aborted) {
    queueMicrotask(() => callback(Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' }), '', ''));
    return;
  }
  signal?.addEventListener('abort', onAbort, { once: true });
  current.pending.set(id, (answer) => {
    signal?.removeEventListener('abort', onAbort);
    if (settled) return;
    settled = true;
    const stdout = binary ? Buffer.from(answer.stdout, 'base64') : answer.stdout;
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
  let env = envJson.get(options.env);
  if (env === undefined) {
    env = JSON.stringify(options.env);
    envJson.set(options.env, env);
  }
  const input = typeof options.input === 'string' ? (binary ? Buffer.from(options.input).toString('base64') : options.input) : binary ? options.input.toString('base64') : options.input.toString('utf8');
  const request = JSON.stringify({ id, file, args, cwd: options.cwd, maxBuffer: options.maxBuffer, input, ...(binary ? { binary: true } : {}) });
  // The environment (~5 KB) only when it differs from the previous command's.
  current.child.stdin.write(env === current.lastEnv ? `${request}\n` : `${request.slice(0, -1)},"env":${env}}\n`);
  current.lastEnv = env;
}
