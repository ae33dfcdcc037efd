import { spawn } from 'node:child_process';
import path from 'node:path';
import { openAppendConfined } from './safe-read.js';

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
        return record;
      } finally {
        await handle.close();
      }
    } finally {
      this.starting.delete(key);
    }
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
