import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { packageDir, processAlive, readPidFile, residentSocketPath, residentStatus, runResidentServer, safeSocketDir } from '../resident-server.js';

const defaultIdleSeconds = 15 * 60;

function idleSeconds(value: unknown): number {
  if (value === undefined) return defaultIdleSeconds;
  const text = String(value).trim();
  if (!/^\d+(\.\d+)?$/.test(text) || Number(text) <= 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--idle-timeout expects a positive number of seconds, got "${text}"` });
  return Number(text);
}

/** True when `pid`'s command line is a polywave resident server's (Linux /proc; elsewhere, trusted). */
function isResidentServer(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.includes('resident') && argv.includes('start');
  } catch {
    return process.platform !== 'linux';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `polywave resident start|stop|status`: the warm server the native client (dist/native/polywave-client) talks to. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const action = args[0];
  if (action !== 'start' && action !== 'stop' && action !== 'status') {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `resident expects start, stop or status, got "${action ?? ''}"` });
  }
  const socketPath = residentSocketPath(io.env);
  const json = options.json === true;
  if (action === 'start') {
    const idle = idleSeconds(options.idleTimeout);
    if (!safeSocketDir(path.dirname(socketPath), true)) {
      throw new PolywaveError({ code: 'RESIDENT_UNSAFE_DIR', message: `${path.dirname(socketPath)} is not a directory owned by you and closed to others (mode 0700, not a symlink): no resident server` });
    }
    if (options.foreground === true) {
      const maxRun = Number(io.env.POLYWAVE_RESIDENT_MAX_RUN_S);
      const reason = await runResidentServer({ socketPath, idleTimeoutMs: idle * 1000, log: (line) => io.stderr(`${line}\n`), ...(maxRun > 0 ? { maxRunMs: maxRun * 1000 } : {}) });
      if (reason === 'already-running') {
        io.stderr(`polywave resident: a server already runs on ${socketPath}\n`);
        return 1;
      }
      return 0;
    }
    const running = await residentStatus(socketPath);
    if (!running) {
      const nul = openSync('/dev/null', 'r+');
      const child = spawn(process.execPath, [path.join(packageDir(), 'bin', 'polywave.js'), 'resident', 'start', '--foreground', '--idle-timeout', String(idle)], {
        cwd: '/',
        env: io.env as NodeJS.ProcessEnv,
        detached: true,
        stdio: [nul, nul, nul],
      });
      child.unref();
    }
    for (let waited = 0; waited < 15_000; waited += 50) {
      const status = await residentStatus(socketPath);
      if (status) {
        if (json) printJson(io, status);
        else io.stdout(`resident server running: pid ${String(status.pid)}, socket ${socketPath}\n`);
        return 0;
      }
      await sleep(50);
    }
    throw new PolywaveError({ code: 'RESIDENT_START_FAILED', message: `the resident server did not answer on ${socketPath} within 15 s` });
  }
  if (action === 'status') {
    const status = await residentStatus(socketPath);
    if (json) printJson(io, status ?? { running: false, socket: socketPath });
    else io.stdout(status ? `running: pid ${String(status.pid)}, ${String(status.requests)} request(s), socket ${socketPath}\n` : `not running (socket ${socketPath})\n`);
    return status ? 0 : 1;
  }
  // stop: only a process that is our server — the one answering on the socket, or the pid file's
  // holder when its command line is `… resident start` (a pid file outlives a killed server; its pid
  // may belong to anything since).
  const answering = (await residentStatus(socketPath))?.pid as number | undefined;
  const recorded = readPidFile(`${socketPath}.pid`);
  const pid = answering ?? (recorded !== undefined && processAlive(recorded) && isResidentServer(recorded) ? recorded : undefined);
  if (pid === undefined) {
    if (json) printJson(io, { stopped: false, running: false, pid: null, socket: socketPath });
    else io.stdout(`no resident server was running (socket ${socketPath})\n`);
    return 0;
  }
  let stopped = false;
  try {
    process.kill(pid, 'SIGTERM');
    // A request in progress finishes first.
    for (let waited = 0; waited < 30_000; waited += 50) {
      if (!processAlive(pid)) {
        stopped = true;
        break;
      }
      await sleep(50);
    }
  } catch {
    stopped = !processAlive(pid);
  }
  if (json) printJson(io, { stopped, running: !stopped, pid, socket: socketPath });
  else io.stdout(stopped ? `stopped the resident server (pid ${pid})\n` : `the resident server (pid ${pid}) is still stopping (a request is running)\n`);
  return stopped ? 0 : 1;
}
