import { spawn } from 'node:child_process';
import { readdir, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readRunLockHolder, runInProgressCode, runLockPath } from '../cli/run-lock.js';
import { openAppendConfined, readConfined } from './safe-read.js';
import { processExists } from '../store/process-alive.js';

/** A `polywave run` started from the page: tracked while it lives, never killed by the server. */
export interface StartedRun {
  pid: number;
  repo: string;
  slug: string;
  started_at: string;
  log: string;
  exit_code: number | null;
  running: boolean;
  /** The run refused to start: another run of the plan holds its run lock (RUN_IN_PROGRESS); the refusal's line. */
  busy?: string;
}

export interface RunLauncherOptions {
  /** `node <bin> run …` */
  bin: string;
  /** The store the server reads: the run records there (so its events reach the page). */
  storePath: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  /** POLYWAVE_EVENTS_FLUSH_MS for these runs: 0 writes each event as it is emitted (live pages). */
  flushMs: number;
  /** How long start() waits for the run to take its plan's run lock (or to exit) before answering. Default 20 s. */
  lockWaitMs?: number;
}

/**
 * Starts `polywave run <impl> --yes` in its own process group (detached: stopping the server
 * leaves it running, like a run started from a terminal), output to
 * `.polywave-state/serve/<slug>-<time>.log`, and tracks its pid and exit code.
 */
export class RunLauncher {
  private readonly runs = new Map<number, StartedRun>();
  private readonly starting = new Set<string>();

  constructor(private readonly options: RunLauncherOptions) {}

  /**
   * Starts the run. The log is opened through the repository confinement (a committed symlink
   * `.polywave-state/serve → elsewhere` is refused with SERVE_PATH, never written through). The
   * (repo, slug) pair is taken before the first await: two requests at once start one run.
   */
  async start(input: { repo: string; implPath: string; slug: string; extraArgs?: string[] }): Promise<StartedRun> {
    const key = `${input.repo}\0${input.slug}`;
    if (this.starting.has(key)) throw new Error(`a run of ${input.slug} is being started`);
    this.starting.add(key);
    try {
      const at = this.options.now();
      const log = path.join(input.repo, '.polywave-state', 'serve', `${input.slug}-${at.toISOString().replace(/[:.]/g, '-')}.log`);
      const handle = await openAppendConfined(input.repo, log);
      try {
        const child = spawn(process.execPath, [this.options.bin, 'run', input.implPath, '--yes', '--repo-dir', input.repo, '--store', this.options.storePath, ...(input.extraArgs ?? [])], {
          cwd: input.repo,
          detached: true,
          stdio: ['ignore', handle.fd, handle.fd],
          env: { ...this.options.env, POLYWAVE_EVENTS_FLUSH_MS: String(this.options.flushMs) } as NodeJS.ProcessEnv,
        });
        const record: StartedRun = { pid: child.pid ?? -1, repo: input.repo, slug: input.slug, started_at: at.toISOString(), log, exit_code: null, running: true };
        child.on('exit', (code) => {
          record.running = false;
          record.exit_code = code;
        });
        child.on('error', () => {
          record.running = false;
        });
        child.unref();
        this.runs.set(record.pid, record);
        await handle.close().catch(() => undefined);
        await this.settled(child, record, runLockPath(input.repo, input.implPath));
        if (!record.running && record.exit_code === 2) {
          // attack-serve-15 N1: another run of the plan (another server, a terminal) holds its run lock: not a launch of ours.
          const tail = await readConfined(input.repo, log, { maxBytes: 16_384, tail: true }).then((read) => read.buffer.toString('utf8'), () => '');
          const line = tail.split('\n').find((text) => text.includes(runInProgressCode));
          if (line !== undefined) {
            this.runs.delete(record.pid);
            // attack-serve-17 X5: the message alone (the JSON answer has its own code), not the CLI's `polywave: error[…]:` prefix.
            record.busy = line.trim().replace(/^polywave: error\[[A-Z0-9_]+\]:\s*/, '');
            // Not a launch: its log would otherwise show as the plan's last launch after a restart (launchFromLog).
            await unlink(log).catch(() => undefined);
          }
        }
        return record;
      } finally {
        await handle.close().catch(() => undefined);
      }
    } finally {
      this.starting.delete(key);
    }
  }

  /**
   * Resolves once the started run holds its plan's run lock (its pid in the lock's record) or has
   * exited, or after lockWaitMs (a slow start: answered as started, the page follows its outcome).
   */
  private settled(child: import('node:child_process').ChildProcess, record: StartedRun, lockPath: string): Promise<void> {
    const limit = Date.now() + (this.options.lockWaitMs ?? 20_000);
    const host = os.hostname();
    return new Promise((resolve) => {
      const check = () => {
        const holder = readRunLockHolder(lockPath);
        if (!record.running || (holder?.pid === record.pid && holder.hostname === host) || Date.now() >= limit) {
          clearInterval(timer);
          child.off('exit', exited);
          resolve();
        }
      };
      // 'exit' may come before the record's own listener ran: let it set exit_code first.
      const exited = () => setImmediate(check);
      const timer = setInterval(check, 25);
      child.on('exit', exited);
      check();
    });
  }

  /** The newest run this server started for (repo, slug), running or ended (what the review page shows). */
  latest(repo: string, slug: string): StartedRun | undefined {
    let newest: StartedRun | undefined;
    for (const run of this.runs.values()) if (run.repo === repo && run.slug === slug && (!newest || run.started_at >= newest.started_at)) newest = run;
    return newest;
  }

  /** True while a run of (repo, slug) is being started by this server. */
  isStarting(repo: string, slug: string): boolean {
    return this.starting.has(`${repo}\0${slug}`);
  }

  /** The run this server started for (repo, slug) that is still running, if any. */
  running(repo: string, slug: string): StartedRun | undefined {
    return [...this.runs.values()].find((run) => run.running && run.repo === repo && run.slug === slug);
  }

  list(): StartedRun[] {
    return [...this.runs.values()];
  }
}

/** What the review page shows of a plan's last launch from this server (attack-serve-15 N2). */
export interface LaunchView {
  pid: number;
  started_at: string;
  running: boolean;
  exit_code: number | null;
  /** The log, relative to the repository. */
  log: string;
  /** Its last lines (at most 30; the answer is redacted like every other). */
  log_tail: string[];
  /** Why it stopped, when the log says (its `error[…]` line, or the line after `run: stopped`). */
  reason: string | null;
  /** What a human must do when the page cannot do it (a tamper finding to accept in a terminal). */
  hint: string | null;
  /** Found on disk, not started by this server process (a run from the page before the server restarted): exit code read from the log. */
  from_log?: boolean;
}

/** `<slug>-<ISO time with : and . as ->.log`, the name RunLauncher gives a log. */
function logTime(slug: string, name: string): string | undefined {
  if (!name.startsWith(`${slug}-`) || !name.endsWith('.log')) return undefined;
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2})-(\d{2})-(\d{2})-(\d{3})Z$/.exec(name.slice(slug.length + 1, -4));
  return match ? `${match[1]}:${match[2]}:${match[3]}.${match[4]}Z` : undefined;
}

/**
 * The newest log of a run started from a page for (repo, slug) when this server started none — after a
 * server restart the page still shows the last launch: running while the plan's run lock names a live
 * process on this host, else the outcome its log states (`run: COMPLETE` 0, `run: stopped` 1, an
 * `error[…]` line 2; none: null).
 */
export async function launchFromLog(repo: string, slug: string, implPath: string, implRelative: string): Promise<LaunchView | null> {
  const directory = path.join(repo, '.polywave-state', 'serve');
  const names = await readdir(directory).catch(() => [] as string[]);
  let newest: { name: string; at: string } | undefined;
  for (const name of names) {
    const at = logTime(slug, name);
    if (at !== undefined && (!newest || at > newest.at)) newest = { name, at };
  }
  if (!newest) return null;
  const holder = readRunLockHolder(runLockPath(repo, implPath));
  let alive = false;
  if (holder && holder.hostname === os.hostname() && holder.since >= newest.at) alive = processExists(holder.pid);
  const run: StartedRun = { pid: alive ? holder!.pid : 0, repo, slug, started_at: newest.at, log: path.join(directory, newest.name), exit_code: null, running: alive };
  const view = await describeLaunch(run, implRelative).catch(() => undefined);
  if (!view) return null;
  if (!alive) {
    const text = view.log_tail.join('\n');
    view.exit_code = /^run: COMPLETE/m.test(text) ? 0 : /^run: stopped/m.test(text) ? 1 : /^(?:polywave: )?error\[/m.test(text) ? 2 : null;
  }
  return { ...view, from_log: true };
}

/** The launch as the review page shows it: state, exit code, the log's last lines and the reason. */
export async function describeLaunch(run: StartedRun, implRelative: string): Promise<LaunchView> {
  const text = await readConfined(run.repo, run.log, { maxBytes: 16_384, tail: true }).then((read) => read.buffer.toString('utf8'), () => '');
  // Progress lines redraw with \r: keep each line's last state.
  const lines = text.split('\n').map((line) => line.split('\r').pop()!.trimEnd()).filter((line) => line.trim() !== '');
  const errorLine = [...lines].reverse().find((line) => /^(?:polywave: )?error\[[A-Z0-9_]+\]/.test(line));
  const stoppedAt = lines.findLastIndex((line) => /^run: stopped/.test(line));
  const reason = errorLine ?? (stoppedAt >= 0 && stoppedAt + 1 < lines.length ? lines[stoppedAt + 1]!.trim() : stoppedAt >= 0 ? lines[stoppedAt]! : null);
  const tamper = !run.running && /TAMPER_DETECTED|SANDBOX_CONFIG_CHANGED/.test(text);
  // The wave and the step that stopped, when the log says (`prepare-wave: [tamper_check] failed — TAMPER_DETECTED: wave 1 …`).
  const tamperLine = [...lines].reverse().find((line) => /TAMPER_DETECTED|SANDBOX_CONFIG_CHANGED/.test(line)) ?? '';
  const wave = /\bwave (\d+)\b/.exec(tamperLine)?.[1] ?? [...lines].reverse().map((line) => /\bwave (\d+) (?:stopped|failed)/.exec(line)?.[1]).find((found) => found !== undefined) ?? '<n>';
  const step = /^finalize-wave:/.test(tamperLine) ? 'finalize-wave' : 'prepare-wave';
  const config = /SANDBOX_CONFIG_CHANGED/.test(tamperLine);
  return {
    pid: run.pid,
    started_at: run.started_at,
    running: run.running,
    exit_code: run.exit_code,
    log: path.relative(run.repo, run.log),
    log_tail: lines.slice(-30),
    reason: run.running ? null : reason,
    hint: tamper
      ? `The run stopped on changes made since the wave was prepared (above). The page never accepts them for you: review them; if they are yours and intended, accept them in a terminal in the repository — ${config ? '`polywave accept-config`' : `\`polywave ${step} ${implRelative} --wave ${wave} --accept-changes\``} — then Resume here.`
      : null,
  };
}
