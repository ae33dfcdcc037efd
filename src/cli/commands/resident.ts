import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
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
      const reason = await runResidentServer({ socketPath, idleTimeoutMs: idle * 1000, log: (line) => io.stderr(`${line}\n`) });
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
  // stop
  const pid = readPidFile(`${socketPath}.pid`) ?? ((await residentStatus(socketPath))?.pid as number | undefined);
  let stopped = false;
  if (pid !== undefined) {
    try {
      process.kill(pid, 'SIGTERM');
      for (let waited = 0; waited < 10_000; waited += 50) {
        if (!processAlive(pid)) {
          stopped = true;
          break;
        }
        await sleep(50);
      }
    } catch {
      stopped = false;
    }
  }
  if (json) printJson(io, { stopped, pid: pid ?? null, socket: socketPath });
  else io.stdout(stopped ? `stopped the resident server (pid ${pid})\n` : `no resident server was running (socket ${socketPath})\n`);
  return 0;
}
