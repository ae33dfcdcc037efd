import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { OutputCollector, type OutputLimits } from './output.js';
import { timerDelay } from '../engine/timer-delay.js';

/** Options of {@link runShellCommand}. */
export interface ShellCommandOptions {
  cwd: string;
  /** Kill the whole process group after this long. */
  timeoutMs: number;
  signal?: AbortSignal;
  env?: Readonly<Record<string, string | undefined>>;
  /** Where the full output goes when it is truncated. */
  logPath: string;
  outputLimits?: Partial<OutputLimits>;
  /** Time between SIGTERM and SIGKILL when stopping the process group. Default 2000 ms. */
  killGraceMs?: number;
}

/** A finished shell command (execa-style: the same shape whatever happened). */
export interface ShellCommandResult {
  exitCode: number;
  signal: string | null;
  timedOut: boolean;
  canceled: boolean;
  durationMs: number;
  output: string;
  outputTruncated: boolean;
  fullOutputPath?: string;
  /** Set when the runner (not the command) has something to say: timeout, spawn failure. */
  error?: string;
}

/** How long to wait for stdout/stderr to close after the shell exits before giving up on them. */
const pipeDrainMs = 1000;

let cachedShell: string | undefined;

/** `bash` when installed (what most gate commands are written for), else POSIX `sh`. */
export function gateShell(): string {
  cachedShell ??= ['/bin/bash', '/usr/bin/bash'].find((candidate) => existsSync(candidate)) ?? '/bin/sh';
  return cachedShell;
}

/**
 * Runs `command` with `bash -c` (or `sh -c`) in `cwd`, stdout and stderr interleaved into one
 * output, in its own process group so a timeout or an abort stops every process the command
 * started (SIGTERM to the group, SIGKILL after a grace period). Never throws: a command that
 * cannot start is a result with exit code -1 and an `error`.
 */
export function runShellCommand(command: string, options: ShellCommandOptions): Promise<ShellCommandResult> {
  const start = performance.now();
  const collector = new OutputCollector(options.logPath, options.outputLimits);
  const killGraceMs = options.killGraceMs ?? 2000;

  return new Promise<ShellCommandResult>((resolve) => {
    let timedOut = false;
    let canceled = false;
    let settled = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let spawnError: Error | undefined;
    const timers: NodeJS.Timeout[] = [];

    if (options.signal?.aborted) {
      resolve({ exitCode: -1, signal: null, timedOut: false, canceled: true, durationMs: 0, output: '', outputTruncated: false, error: 'canceled before the command started' });
      return;
    }

    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(gateShell(), ['-c', command], {
        cwd: options.cwd,
        env: { ...(options.env ?? process.env) } as NodeJS.ProcessEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Own process group (setsid): the group can be killed as a whole.
        detached: true,
        windowsHide: true,
      });
    } catch (error) {
      resolve({
        exitCode: -1,
        signal: null,
        timedOut: false,
        canceled: false,
        durationMs: Math.round(performance.now() - start),
        output: '',
        outputTruncated: false,
        error: `command failed to start: ${error instanceof Error ? error.message : String(error)}`,
      });
      return;
    }

    const killGroup = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // The group is already gone.
        try {
          child.kill(signal);
        } catch {
          // nothing left to kill
        }
      }
    };
    const stop = (): void => {
      killGroup('SIGTERM');
      const hard = setTimeout(() => killGroup('SIGKILL'), killGraceMs);
      hard.unref();
      timers.push(hard);
    };

    const onAbort = (): void => {
      if (exitCode !== null || exitSignal !== null) return;
      canceled = true;
      stop();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });

    if (options.timeoutMs > 0 && Number.isFinite(options.timeoutMs)) {
      const timer = setTimeout(() => {
        if (exitCode !== null || exitSignal !== null) return;
        timedOut = true;
        stop();
      }, timerDelay(options.timeoutMs));
      timers.push(timer);
    }

    child.stdout?.on('data', (chunk: Buffer) => collector.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => collector.push(chunk));

    const finish = async (): Promise<void> => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      const collected = await collector.finish();
      const durationMs = Math.round(performance.now() - start);
      let error: string | undefined;
      if (spawnError) error = `command failed to start: ${spawnError.message}`;
      else if (timedOut) error = `command timed out after ${formatDuration(options.timeoutMs)} (process group killed)`;
      else if (canceled) error = 'canceled (process group killed)';
      resolve({
        exitCode: exitCode ?? -1,
        signal: exitSignal,
        timedOut,
        canceled,
        durationMs,
        output: collected.output,
        outputTruncated: collected.truncated,
        ...(collected.fullOutputPath ? { fullOutputPath: collected.fullOutputPath } : {}),
        ...(error ? { error } : {}),
      });
    };

    child.on('error', (error) => {
      // ENOENT for a missing cwd or shell; the process never ran.
      spawnError = error;
      void finish();
    });
    child.on('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      // Something the command left behind may still hold our pipes open: give the pipes a
      // moment, then kill what is left of the group and stop waiting.
      const drain = setTimeout(() => {
        killGroup('SIGKILL');
        child.stdout?.destroy();
        child.stderr?.destroy();
        void finish();
      }, pipeDrainMs);
      timers.push(drain);
    });
    child.on('close', () => {
      void finish();
    });
  });
}

function formatDuration(milliseconds: number): string {
  if (milliseconds % 60_000 === 0) return `${milliseconds / 60_000} min`;
  if (milliseconds % 1000 === 0) return `${milliseconds / 1000} s`;
  return `${milliseconds} ms`;
}
