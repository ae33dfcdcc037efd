/**
 * The host side of the per-agent tool executor (tool-executor-main.ts): one long-lived process
 * started inside the agent's sandbox on the first file-tool call, spoken to in JSON lines over
 * stdio, stopped by {@link ToolExecutor.stop} at the end of the run.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { SandboxPlan } from '../../sandbox/sandbox-plan.js';
import { toolExecutorMain } from './tool-executor-main.js';
import { shellQuote, wrapInSandbox } from '../../sandbox/wrap-in-sandbox.js';

/** What a directory entry is (lstat semantics: a symbolic link is `symlink`). */
export type EntryKind = 'file' | 'directory' | 'symlink' | 'other';

/** A failed executor request: `code` is the errno name inside the sandbox (EROFS, ELOOP, ENOENT, EXDEV…). */
export class ToolExecutorError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message.includes(code) ? message : `${code}: ${message}`);
    this.name = 'ToolExecutorError';
    this.code = code;
  }
}

/** File operations done inside the sandbox. Paths are absolute (already checked by the jail). */
export interface ToolExecutor {
  write(absolute: string, content: string | Uint8Array): Promise<{ existed: boolean; bytes: number }>;
  read(absolute: string, limit: number): Promise<{ kind: EntryKind; size: number; data: Buffer }>;
  list(absolute: string): Promise<Array<{ name: string; kind: EntryKind; target?: string }>>;
  stat(absolute: string): Promise<{ kind: EntryKind; size: number }>;
  /** Ends the process (and its sandbox). Later calls start a new one. */
  stop(): Promise<void>;
  /** Whether a process is running now (tests). */
  readonly running: boolean;
}

type Answer = { id: number; ok: boolean; code?: string; message?: string } & Record<string, unknown>;

interface Session {
  child: ChildProcessByStdio<Writable, Readable, Readable>;
  pending: Map<number, { resolve: (answer: Answer) => void; reject: (error: Error) => void }>;
  ready: Promise<void>;
  exited: Promise<void>;
  release: () => void;
  stderr: string;
}

/** The program text `node -e` runs inside the sandbox. */
export function toolExecutorSource(): string {
  return `(${toolExecutorMain.toString()})()`;
}

/** Options of {@link createToolExecutor}. */
export interface ToolExecutorOptions {
  /** Working directory of the executor (the agent's root). */
  cwd: string;
  env: Record<string, string>;
  /** Time allowed for the process to start (default 20 s). */
  startTimeoutMs?: number;
}

/** A tool executor for `plan`; its process starts on the first request. */
export function createToolExecutor(plan: SandboxPlan, options: ToolExecutorOptions): ToolExecutor {
  let session: Session | undefined;
  let starting: Promise<Session> | undefined;
  let nextId = 1;

  const start = async (): Promise<Session> => {
    const command = `exec ${shellQuote(process.execPath)} -e ${shellQuote(toolExecutorSource())}`;
    const wrapped = await wrapInSandbox(plan, command, { cwd: options.cwd, env: options.env });
    const child = spawn(wrapped.file, wrapped.args, { cwd: options.cwd, env: wrapped.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const pending: Session['pending'] = new Map();
    let resolveReady!: () => void;
    let rejectReady!: (error: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      resolveReady = resolve;
      rejectReady = reject;
    });
    const current: Session = {
      child,
      pending,
      ready,
      exited: new Promise<void>((resolve) => child.once('close', () => resolve())),
      release: wrapped.release,
      stderr: '',
    };
    child.stderr.on('data', (chunk: Buffer) => {
      if (current.stderr.length < 8192) current.stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      if (answer.id === 0) {
        resolveReady();
        return;
      }
      const waiter = pending.get(answer.id);
      if (!waiter) return;
      pending.delete(answer.id);
      waiter.resolve(answer);
    });
    const onGone = (error?: Error) => {
      wrapped.release();
      if (session === current) session = undefined;
      const reason = new ToolExecutorError('EPIPE', `the tool executor ended${error ? `: ${error.message}` : ''}${current.stderr.trim() ? ` (${current.stderr.trim().split('\n').slice(-3).join(' | ')})` : ''}`);
      rejectReady(reason);
      for (const waiter of pending.values()) waiter.reject(reason);
      pending.clear();
    };
    child.once('error', (error) => onGone(error));
    child.once('close', () => onGone());
    const timer = setTimeout(() => rejectReady(new ToolExecutorError('ETIMEDOUT', 'the tool executor did not start in time')), options.startTimeoutMs ?? 20_000);
    try {
      await ready;
    } catch (error) {
      killGroup(child.pid);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return current;
  };

  const ensure = async (): Promise<Session> => {
    if (session) return session;
    starting ??= start().then(
      (started) => {
        session = started;
        starting = undefined;
        return started;
      },
      (error: unknown) => {
        starting = undefined;
        throw error;
      },
    );
    return starting;
  };

  const request = async (op: string, body: Record<string, unknown>): Promise<Answer> => {
    const current = await ensure();
    const id = nextId++;
    const answer = await new Promise<Answer>((resolve, reject) => {
      current.pending.set(id, { resolve, reject });
      current.child.stdin.write(`${JSON.stringify({ id, op, ...body })}\n`);
    });
    if (!answer.ok) throw new ToolExecutorError(answer.code ?? 'EIO', answer.message ?? `${op} failed`);
    return answer;
  };

  return {
    get running() {
      return session !== undefined;
    },
    async write(absolute, content) {
      const data = (typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content)).toString('base64');
      const answer = await request('write', { path: absolute, data });
      return { existed: answer.existed === true, bytes: Number(answer.bytes ?? 0) };
    },
    async read(absolute, limit) {
      const answer = await request('read', { path: absolute, limit });
      return { kind: answer.kind as EntryKind, size: Number(answer.size ?? 0), data: Buffer.from(String(answer.data ?? ''), 'base64') };
    },
    async list(absolute) {
      const answer = await request('list', { path: absolute });
      return answer.entries as Array<{ name: string; kind: EntryKind; target?: string }>;
    },
    async stat(absolute) {
      const answer = await request('stat', { path: absolute });
      return { kind: answer.kind as EntryKind, size: Number(answer.size ?? 0) };
    },
    async stop() {
      const current = session ?? (starting ? await starting.catch(() => undefined) : undefined);
      session = undefined;
      if (!current) return;
      current.child.stdin.end();
      const timer = setTimeout(() => killGroup(current.child.pid), 2000);
      await current.exited;
      clearTimeout(timer);
      killGroup(current.child.pid);
      current.release();
    },
  };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
