/**
 * The host side of the per-agent tool executor (tool-executor-main.ts): one long-lived process
 * started inside the agent's sandbox on the first file-tool call, spoken to in JSON lines over
 * stdio, stopped by {@link ToolExecutor.stop} at the end of the run.
 *
 * Two programs speak that protocol: dist/native/polywave-executor (native/polywave-executor.c,
 * built with the native client when a C compiler is there), started when it exists — the program
 * itself starts in ~1 ms; a sandboxed executor start measured ~65–75 ms of CPU with it against
 * ~125–150 ms with node's, per agent — and toolExecutorMain as `node -e` otherwise, or when
 * POLYWAVE_EXECUTOR=node is set in polywave's own environment.
 */
import { accessSync, constants as fsConstants } from 'node:fs';
export { closeHeld, heldDirectoryRemoved, holdHiddenDirectories } from './appeared-since-start.js';
import { closeHeld, createAppearedCheck, heldDirectoryRemoved, hiddenIdentity, holdHiddenDirectories, staleCheckIntervalMs, staleViewCode } from './appeared-since-start.js';
import { registeredWorkerDirs } from '../../sandbox/scratch-dirs.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnPiped, type PipedChild } from '../../sandbox/piped-spawn.js';
import type { SandboxPlan } from '../../sandbox/sandbox-plan.js';
import { toolExecutorMain } from './tool-executor-main.js';
import { sandboxCommandVariable, shellQuote, vanishedMountAttempts, wrapInSandbox } from '../../sandbox/wrap-in-sandbox.js';

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

/** A start bubblewrap gave up on because a path it was to mount vanished after the wrap (see vanishedMountPoint). */
class VanishedMountError extends Error {
  constructor(
    readonly path: string,
    override readonly cause: unknown,
  ) {
    super(`bubblewrap stopped on ${path}, which vanished after the sandbox's command was built`);
  }
}

/** How a command run by the executor ended (`spawnError`: it could not start). */
export interface ExecutorRunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: string;
}

/** A command running in the executor: its end, and a way to stop it. */
export interface ExecutorRun {
  done: Promise<ExecutorRunResult>;
  /** SIGTERM: the command's process group; SIGKILL: every process the agent has in the sandbox. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): void;
}

/** Options of {@link ToolExecutor.run}. */
export interface ExecutorRunOptions {
  /** Absolute working directory (inside the sandbox's view). */
  cwd: string;
  /** The command's environment; the sandbox's own variables (its proxy) are laid over it. */
  env: Record<string, string>;
  /** Output of stdout and stderr, interleaved as it comes. */
  onOutput(chunk: Buffer): void;
}

/** File operations done inside the sandbox. Paths are absolute (already checked by the jail). */
export interface ToolExecutor {
  /**
   * Runs `bash -c command` inside the sandbox, one command at a time (later ones wait): a plain
   * process start instead of a new sandbox per call. When it exits, everything it started is
   * killed (see tool-executor-main.ts).
   */
  run(command: string, options: ExecutorRunOptions): ExecutorRun;
  write(absolute: string, content: string | Uint8Array): Promise<{ existed: boolean; bytes: number }>;
  read(absolute: string, limit: number): Promise<{ kind: EntryKind; size: number; data: Buffer }>;
  list(absolute: string): Promise<Array<{ name: string; kind: EntryKind; target?: string }>>;
  stat(absolute: string): Promise<{ kind: EntryKind; size: number }>;
  /** Starts the process now (it otherwise starts on the first request); rejects when it cannot. */
  start(): Promise<void>;
  /** Ends the process (and its sandbox). Later calls start a new one. */
  stop(): Promise<void>;
  /** Whether a process is running now (tests). */
  readonly running: boolean;
  /**
   * Why this executor's sandbox view went stale DURING a command (X39-01): a path it does not hide appeared while the
   * command ran, so the command's processes (the whole sandbox) were killed and its output withheld. Once set, every
   * later request fails with {@link staleViewCode}: the backend ends the run as a transient failure (a relaunch gets a
   * new sandbox that hides it), the model never sees what the call may have read.
   */
  readonly staleView: string | undefined;
  /** How many processes (sandboxes) it has started so far (tests: a new sandbox per change of what it must hide). */
  readonly starts: number;
  /** The sandbox plan the executor runs with. */
  readonly plan: SandboxPlan;
}

type Answer = { id: number; ok: boolean; code?: string; message?: string } & Record<string, unknown>;

interface Session {
  child: PipedChild;
  pending: Map<number, { resolve: (answer: Answer) => void; reject: (error: Error) => void; onChunk?: (chunk: Buffer) => void }>;
  /** What the sandbox changed in the environment it was started with: laid over every command's. */
  sandboxEnv: { set: Record<string, string>; unset: string[] };
  ready: Promise<void>;
  exited: Promise<void>;
  release: () => void;
  /** See SandboxedCommand.hiddenPathAppeared. */
  hiddenPathAppeared: () => boolean;
  /** {@link hiddenIdentity} of the plan's unreadable paths when this sandbox was made. */
  hiddenAtStart: string;
  /** Descriptors of hidden paths held from the start ({@link holdHiddenDirectories}); closed when it ends. */
  held: number[];
  stderr: string;
  /** Host-side deadlines running for this session (X31-12), and why one fired. */
  timers: Set<NodeJS.Timeout>;
  deadlineReason?: string;
  /** The plan's unreadable paths when this sandbox was made, each with its {@link hiddenIdentity} then (X39-01). */
  watched: Array<{ entry: string; identity: string }>;
  /** Set when the check during a command found the view stale (X39-01): the executor was killed for it. */
  staleReason?: string;
}

/** The program text `node -e` runs inside the sandbox. */
export function toolExecutorSource(): string {
  return `(${toolExecutorMain.toString()})()`;
}

/**
 * dist/native/polywave-executor when it was built and is executable, else undefined. Found from
 * this module: src/agents/sandbox/ and dist/agents/sandbox/ are three levels below the package
 * directory, dist/bundle/ (the bundled CLI) two.
 */
let nativeExecutorPath: string | undefined | null = null;
export function nativeToolExecutor(): string | undefined {
  if (nativeExecutorPath === null) {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const nested = path.basename(here) === 'sandbox' && path.basename(path.dirname(here)) === 'agents';
    const candidate = path.join(here, nested ? '../../..' : '../..', 'dist', 'native', 'polywave-executor');
    nativeExecutorPath = undefined;
    if (process.platform === 'linux' || process.platform === 'darwin') {
      try {
        accessSync(candidate, fsConstants.X_OK);
        nativeExecutorPath = candidate;
      } catch {
        // not built (no C compiler, POLYWAVE_NO_NATIVE, the npm tarball before its install): node's
      }
    }
  }
  return nativeExecutorPath;
}

/** Which program an executor runs: `native` unless it was not built or POLYWAVE_EXECUTOR=node. */
export function toolExecutorProgram(requested?: 'native' | 'node'): 'native' | 'node' {
  const wanted = requested ?? (process.env.POLYWAVE_EXECUTOR === 'node' ? 'node' : 'native');
  return wanted === 'native' && nativeToolExecutor() !== undefined ? 'native' : 'node';
}

/**
 * The command the sandbox runs for the executor. The native one gets `--protocol=toolExecutorMain`
 * (it ignores its arguments): the protocol it speaks, and the name both executors are found by
 * in a process list.
 */
function executorCommand(program: 'native' | 'node'): string {
  const native = program === 'native' ? nativeToolExecutor() : undefined;
  if (native !== undefined) return `exec ${shellQuote(native)} --protocol=toolExecutorMain`;
  return `exec ${shellQuote(process.execPath)} -e ${shellQuote(toolExecutorSource())}`;
}


/** Options of {@link createToolExecutor}. */
export interface ToolExecutorOptions {
  /** Working directory of the executor (the agent's root). */
  cwd: string;
  env: Record<string, string>;
  /** Time allowed for the process to start (default 20 s). */
  startTimeoutMs?: number;
  /**
   * The program: `native` (dist/native/polywave-executor; node's when it was not built) or `node`
   * (toolExecutorMain). Default: native, unless POLYWAVE_EXECUTOR=node is set in this process's environment.
   */
  program?: 'native' | 'node';
}

/** A tool executor for `plan`; its process starts on the first request. */
export function createToolExecutor(plan: SandboxPlan, options: ToolExecutorOptions): ToolExecutor {
  let session: Session | undefined;
  let starting: Promise<Session> | undefined;
  let nextId = 1;
  let starts = 0;

  const start = async (fresh = false): Promise<Session> => {
    const command = executorCommand(toolExecutorProgram(options.program));
    // The executor itself makes no TLS connection: started without NODE_EXTRA_CA_CERTS, node does not
    // read and parse that certificate bundle at start-up (~60 ms of CPU per agent with the system
    // bundle; the native executor reads no such variable). The commands it runs get the environment
    // they are given, the variable included.
    const executorEnv = { ...options.env };
    delete executorEnv.NODE_EXTRA_CA_CERTS;
    // (taken before the wrap: a path that changes after this moment is seen at the next request)
    // (X43-18: and the files it shows as they were, the git config above all: one replaced is no longer what it shows)
    const watched = [...plan.unreadable, ...(plan.watchedFiles ?? [])].map((entry) => ({ entry, identity: hiddenIdentity([entry]) }));
    const hiddenAtStart = watched.map((item) => item.identity).join('');
    const held = holdHiddenDirectories(plan.unreadable);
    starts += 1;
    let wrapped: Awaited<ReturnType<typeof wrapInSandbox>>;
    let child: PipedChild;
    try {
      wrapped = await wrapInSandbox(plan, command, { cwd: options.cwd, env: executorEnv, fresh });
      // Started by a small helper process that hands the pipes back (sandbox/piped-spawn.ts): not a fork of this one.
      child = await spawnPiped(wrapped.file, wrapped.args, { cwd: options.cwd, env: wrapped.env });
    } catch (error) {
      closeHeld(held);
      throw error;
    }
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
      hiddenPathAppeared: wrapped.hiddenPathAppeared,
      hiddenAtStart,
      held,
      stderr: '',
      sandboxEnv: { set: {}, unset: [] },
      timers: new Set(),
      watched,
    };
    child.stderr.on('data', (chunk: Buffer) => {
      if (current.stderr.length < 8192) current.stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => undefined);
    // Answers are read line by line with a bound (X31-10: one list_dir answer of ~720 MB — 30,000 names with escaped
    // control characters — made node's readline throw "Invalid string length" and took the orchestrator down, with every
    // after-run check). A longer line ends the executor: its requests fail as tool errors, the next one starts another.
    const answerLimit = maxAnswerBytes();
    onBoundedLines(child.stdout, answerLimit, (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      if (answer.id === 0) {
        current.sandboxEnv = sandboxChanges(executorEnv, answer.env);
        resolveReady();
        return;
      }
      const waiter = pending.get(answer.id);
      if (!waiter) return;
      if (typeof answer.chunk === 'string') {
        waiter.onChunk?.(Buffer.from(answer.chunk, 'base64'));
        return;
      }
      pending.delete(answer.id);
      waiter.resolve(answer);
    }, () => {
      overflowed = true;
      killGroup(child.pid);
    });
    let overflowed = false;
    const onGone = (error?: Error) => {
      wrapped.release();
      closeHeld(current.held);
      if (session === current) session = undefined;
      for (const timer of current.timers) clearTimeout(timer);
      current.timers.clear();
      const reason = current.staleReason
        ? new ToolExecutorError(staleViewCode, `${staleViewCode}: ${current.staleReason} — the command and everything it started were killed, its output withheld`)
        : current.deadlineReason
        ? new ToolExecutorError('ETIMEDOUT', `the tool executor was killed: ${current.deadlineReason}; the next call starts another`)
        : overflowed
        ? new ToolExecutorError('E2BIG', `the tool executor's answer was larger than ${Math.round(answerLimit / 1024 / 1024)} MiB (a directory listing or output too large to pass back): the executor was stopped, the next call starts another`)
        : new ToolExecutorError('EPIPE', `the tool executor ended${error ? `: ${error.message}` : ''}${current.stderr.trim() ? ` (${current.stderr.trim().split('\n').slice(-3).join(' | ')})` : ''}`);
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
      const vanished = wrapped.ranNothing(current.stderr);
      if (vanished !== undefined) throw new VanishedMountError(vanished, error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return current;
  };

  /** {@link start}, again with a fresh wrap when bubblewrap stopped on a mount point that vanished meanwhile (it ran nothing). */
  const startTried = async (): Promise<Session> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await start(attempt > 1);
      } catch (error) {
        if (!(error instanceof VanishedMountError)) throw error;
        if (attempt >= vanishedMountAttempts) throw error.cause;
      }
    }
  };

  /** Ends `current` (as stop() does): its processes and its sandbox go. */
  const end = async (current: Session): Promise<void> => {
    if (session === current) session = undefined;
    current.child.stdin.end();
    const timer = setTimeout(() => killGroup(current.child.pid), 2000);
    await current.exited;
    clearTimeout(timer);
    killGroup(current.child.pid);
    current.release();
  };

  const appeared = createAppearedCheck(plan, options.cwd);

  /**
   * X39-01: the check DURING a command (every {@link staleCheckIntervalMs} while one runs). bubblewrap's mounts are fixed
   * for the sandbox's life, so a path that appears while a command runs — another agent's worktree added, another run's
   * scratch parent registered or made again, a hidden path made again or absent at the start and there now — is
   * readable to that command until it ends; nothing can be mounted over it from outside. The same cases as the check
   * of the one-sandbox backends (createStaleViewCheck): not a `polywave worker`'s directory started since (the check
   * between requests still hides it; killing every running command of the host whenever a worker starts or re-makes
   * its directory was judged too dear), and a hidden path that is merely gone hides nothing (no stale view).
   */
  const duringCall = createAppearedCheck(plan, options.cwd, { workerDirs: false });
  let staleView: string | undefined;
  const staleDuringCall = (current: Session): string | undefined => {
    const added = duringCall.added();
    if (added.length > 0) {
      // (the plan hides them from now on: the bash tool knows this executor by its plan, a relaunch builds its own)
      for (const entry of added) if (!plan.unreadable.includes(entry)) plan.unreadable.push(entry);
      return `${added.length === 1 ? 'a path' : 'paths'} this sandbox does not hide appeared during a command: ${added.join(', ')}`;
    }
    let workers: Set<string> | undefined;
    for (const { entry, identity } of current.watched) {
      const now = hiddenIdentity([entry]);
      if (now === identity || now === '-\n') continue;
      workers ??= new Set(registeredWorkerDirs());
      if (workers.has(entry)) continue;
      return identity === '-\n' ? `a hidden path absent when this sandbox started appeared during a command: ${entry}` : `a hidden path was removed and made again during a command (its mount no longer covers it): ${entry}`;
    }
    return undefined;
  };
  /** Runs {@link staleDuringCall} every {@link staleCheckIntervalMs} while `current` runs a command; stale: kills it all. */
  const watchDuringCall = (current: Session): (() => void) => {
    const interval = setInterval(() => {
      if (current.staleReason !== undefined || session !== current) return;
      let why: string | undefined;
      try {
        why = staleDuringCall(current);
      } catch (error) {
        why = `the check of what appeared during a command failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (why === undefined) return;
      current.staleReason = why;
      staleView ??= why;
      killGroup(current.child.pid);
    }, staleCheckIntervalMs);
    interval.unref();
    return () => clearInterval(interval);
  };

  /** X43-18: why `current`'s view of a {@link SandboxPlan.watchedFiles} file is stale (replaced, or made), or undefined. */
  const replacedWatchedFile = (current: Session): string | undefined => {
    const files = new Set(plan.watchedFiles ?? []);
    for (const { entry, identity } of current.watched) {
      if (!files.has(entry)) continue;
      const now = hiddenIdentity([entry]);
      if (now !== identity && now !== '-\n') return `a file this sandbox shows as it was when it started (masked) was replaced since: ${entry}`;
    }
    return undefined;
  };

  const ensure = async (): Promise<Session> => {
    // X39-01: once a command was killed for a stale view, nothing more runs in this executor (fail closed)
    if (staleView !== undefined) throw new ToolExecutorError(staleViewCode, `${staleViewCode}: ${staleView}; this agent's run ends, a relaunch gets a sandbox that hides it`);
    // X38-03/X38-09/X39: before anything else runs — only between requests, none in flight — a new sandbox when a
    // path the plan hides appeared, changed (removed and made again: X39-03) or another run registered a scratch parent
    // or added a worktree since (nothing covers those in this sandbox). Also before the first start, so that the plan
    // has what appeared since it was made. (The plan's list grows in place: the bash tool knows this executor by its plan.)
    if (!session || session.pending.size === 0) {
      // X43-18: a file it shows as it was (a git config, masked or not) replaced since it started: a new sandbox from
      // this plan would show the new one as the plan judged the old (a credential set since, unmasked): the run ends.
      const replaced = session ? replacedWatchedFile(session) : undefined;
      if (replaced !== undefined) {
        staleView ??= replaced;
        await end(session!);
        throw new ToolExecutorError(staleViewCode, `${staleViewCode}: ${staleView}; this agent's run ends, a relaunch gets a sandbox that hides it`);
      }
      const added = appeared.added();
      if (added.length > 0) plan.unreadable.push(...added);
      if (session && (added.length > 0 || session.hiddenPathAppeared() || heldDirectoryRemoved(session.held) || hiddenIdentity([...plan.unreadable, ...(plan.watchedFiles ?? [])]) !== session.hiddenAtStart)) await end(session);
    }
    if (session) return session;
    starting ??= startTried().then(
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
    let timer: NodeJS.Timeout | undefined;
    const answer = await new Promise<Answer>((resolve, reject) => {
      current.pending.set(id, { resolve, reject });
      current.child.stdin.write(`${JSON.stringify({ id, op, ...body })}\n`);
      // X31-12: an executor that does not answer (stopped by the agent's own SIGSTOP, or hung) is killed from here.
      timer = deadline(current, requestDeadlineMs(), `${op} was not answered in ${Math.round(requestDeadlineMs() / 1000)} s`);
    }).finally(() => clearDeadline(current, timer));
    if (!answer.ok) throw new ToolExecutorError(answer.code ?? 'EIO', answer.message ?? `${op} failed`);
    return answer;
  };

  /** Runs wait for each other: a command's end kills everything the agent has running. */
  let runQueue: Promise<unknown> = Promise.resolve();

  const run = (command: string, runOptions: ExecutorRunOptions): ExecutorRun => {
    let requested: 'SIGTERM' | 'SIGKILL' | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let finished = false;
    let started: { current: Session; id: number } | undefined;
    const sendSignal = (signal: 'SIGTERM' | 'SIGKILL'): void => {
      if (!started) return;
      const id = nextId++;
      started.current.pending.set(id, { resolve: () => undefined, reject: () => undefined });
      started.current.child.stdin.write(`${JSON.stringify({ id, op: 'signal', target: started.id, signal })}\n`);
      // X31-12: the command's process may have stopped the executor itself (SIGSTOP from inside its namespace): a SIGKILL
      // the executor does not carry out in time ends the executor from here, and the run with it.
      if (signal === 'SIGKILL' && !finished) killTimer = deadline(started.current, killAnswerMs, 'it did not carry out a SIGKILL of the command (stopped or hung)');
    };
    const done = runQueue.then(async (): Promise<ExecutorRunResult> => {
      if (requested !== undefined) return { exitCode: null, signal: requested };
      const current = await ensure();
      const id = nextId++;
      const env: Record<string, string> = { ...runOptions.env, ...current.sandboxEnv.set };
      for (const name of current.sandboxEnv.unset) delete env[name];
      const answer = new Promise<Answer>((resolve, reject) => {
        current.pending.set(id, { resolve, reject, onChunk: runOptions.onOutput });
        current.child.stdin.write(`${JSON.stringify({ id, op: 'run', command, cwd: runOptions.cwd, env })}\n`);
      });
      started = { current, id };
      const unwatch = watchDuringCall(current);
      const result = await answer.finally(() => {
        finished = true;
        unwatch();
        clearDeadline(current, killTimer);
      });
      // (and once more as it ends: what appeared in the last interval of the call is not handed back either)
      if (current.staleReason === undefined) {
        const why = staleDuringCall(current);
        if (why !== undefined) {
          current.staleReason = why;
          staleView ??= why;
          killGroup(current.child.pid);
        }
      }
      if (current.staleReason !== undefined) throw new ToolExecutorError(staleViewCode, `${staleViewCode}: ${current.staleReason} — the command and everything it started were killed, its output withheld`);
      if (!result.ok) throw new ToolExecutorError(result.code ?? 'EIO', result.message ?? 'run failed');
      if (typeof result.spawnError === 'string') return { exitCode: null, signal: null, spawnError: result.spawnError };
      return { exitCode: typeof result.exitCode === 'number' ? result.exitCode : null, signal: typeof result.signal === 'string' ? (result.signal as NodeJS.Signals) : null };
    });
    runQueue = done.catch(() => undefined);
    return {
      done,
      kill(signal) {
        if (!started) requested = signal;
        else sendSignal(signal);
      },
    };
  };

  return {
    get starts() {
      return starts;
    },
    get running() {
      return session !== undefined;
    },
    get staleView() {
      return staleView;
    },
    plan,
    run,
    async start() {
      await ensure();
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
      await end(current);
    },
  };
}

/** How long a file request may wait for the executor's answer (POLYWAVE_EXECUTOR_REQUEST_MS lowers it: tests). */
const requestDeadlineMs = (): number => Number(process.env.POLYWAVE_EXECUTOR_REQUEST_MS) || 120_000;
/** How long a SIGKILL of a command may take the executor before the executor is killed. */
const killAnswerMs = 3000;
/** Kills `session`'s executor (its whole sandbox) unless {@link clearDeadline} comes first; its requests then fail with `why`. */
function deadline(session: Pick<Session, 'child' | 'timers' | 'deadlineReason'>, ms: number, why: string): NodeJS.Timeout {
  const timer = setTimeout(() => {
    session.timers.delete(timer);
    session.deadlineReason = why;
    killGroup(session.child.pid);
  }, ms);
  timer.unref();
  session.timers.add(timer);
  return timer;
}

function clearDeadline(session: Pick<Session, 'timers'>, timer: NodeJS.Timeout | undefined): void {
  if (timer === undefined) return;
  clearTimeout(timer);
  session.timers.delete(timer);
}

/** The largest answer line read from an executor (a 16 MiB read_file is ~22 MB of base64); POLYWAVE_EXECUTOR_MAX_ANSWER_BYTES in polywave's own environment lowers it (tests). */
const maxAnswerBytes = (): number => Number(process.env.POLYWAVE_EXECUTOR_MAX_ANSWER_BYTES) || 64 * 1024 * 1024;

/**
 * Calls `onLine` with each newline-ended line of `stream` (UTF-8), kept as bytes until it ends; a line longer than
 * `maxBytes` is dropped and `onOverflow` called (node's readline keeps a partial line in one string, which throws past
 * V8's string limit).
 */
export function onBoundedLines(stream: NodeJS.ReadableStream, maxBytes: number, onLine: (line: string) => void, onOverflow: () => void): void {
  let parts: Buffer[] = [];
  let size = 0;
  let dropping = false;
  stream.on('data', (data: Buffer | string) => {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(10, start);
      const piece = end === -1 ? chunk.subarray(start) : chunk.subarray(start, end);
      if (!dropping) {
        size += piece.length;
        if (size > maxBytes) {
          dropping = true;
          parts = [];
          onOverflow();
        } else if (piece.length > 0) parts.push(piece);
      }
      if (end === -1) return;
      if (!dropping) onLine(Buffer.concat(parts, size).toString('utf8'));
      parts = [];
      size = 0;
      dropping = false;
      start = end + 1;
    }
  });
}

/** What the sandbox set or removed in the environment `given` to the executor (`actual`: the executor's own). */
function sandboxChanges(given: Record<string, string>, actual: unknown): Session['sandboxEnv'] {
  const set: Record<string, string> = {};
  const unset: string[] = [];
  if (actual === null || typeof actual !== 'object') return { set, unset };
  const seen = actual as Record<string, unknown>;
  for (const [name, value] of Object.entries(seen)) {
    if (name === sandboxCommandVariable || typeof value !== 'string' || given[name] === value) continue;
    set[name] = value;
  }
  for (const name of Object.keys(given)) if (!(name in seen)) unset.push(name);
  return { set, unset };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
