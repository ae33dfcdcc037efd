import { spawn } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import path from 'node:path';

/** A `polywave run` started from the page: tracked while it lives, never killed by the server. */
export interface StartedRun {
  pid: number;
  repo: string;
  slug: string;
  started_at: string;
  log: string;
  exit_code: number | null;
  running: boolean;
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
}

/**
 * Starts `polywave run <impl> --yes` in its own process group (detached: stopping the server
 * leaves it running, like a run started from a terminal), output to
 * `.polywave-state/serve/<slug>-<time>.log`, and tracks its pid and exit code.
 */
export class RunLauncher {
  private readonly runs = new Map<number, StartedRun>();

  constructor(private readonly options: RunLauncherOptions) {}

  start(input: { repo: string; implPath: string; slug: string; extraArgs?: string[] }): StartedRun {
    const at = this.options.now();
    const logDir = path.join(input.repo, '.polywave-state', 'serve');
    mkdirSync(logDir, { recursive: true });
    const log = path.join(logDir, `${input.slug}-${at.toISOString().replace(/[:.]/g, '-')}.log`);
    const fd = openSync(log, 'a');
    try {
      const child = spawn(process.execPath, [this.options.bin, 'run', input.implPath, '--yes', '--repo-dir', input.repo, '--store', this.options.storePath, ...(input.extraArgs ?? [])], {
        cwd: input.repo,
        detached: true,
        stdio: ['ignore', fd, fd],
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
      return record;
    } finally {
      closeSync(fd);
    }
  }

  /** The run this server started for (repo, slug) that is still running, if any. */
  running(repo: string, slug: string): StartedRun | undefined {
    return [...this.runs.values()].find((run) => run.running && run.repo === repo && run.slug === slug);
  }

  list(): StartedRun[] {
    return [...this.runs.values()];
  }
}
