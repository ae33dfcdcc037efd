import path from 'node:path';
import { checkQueueName } from '../../dispatch/job.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { startWorker } from '../../worker/worker.js';
import type { CommandIo, CommandResult } from '../io.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';

function positiveInteger(value: unknown, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(number) || number <= 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} must be a positive integer (got ${String(value)})` });
  return number;
}

/**
 * `worker --redis URL --remote GIT_URL [--dir DIR] [--concurrency N] [--label L …] [--queue NAME]` (issue 17): runs
 * agent jobs from Redis until SIGTERM/SIGINT/SIGHUP (the first finishes the running jobs, a second hands
 * them back). Log lines on stderr. Exit 0 after a graceful stop, 2 when it cannot start.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const redisUrl = typeof options.redis === 'string' && options.redis !== '' ? options.redis : io.env.POLYWAVE_REDIS_URL;
  if (!redisUrl) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'worker: --redis <url> is required (or POLYWAVE_REDIS_URL)' });
  const remote = typeof options.remote === 'string' ? options.remote : '';
  if (remote === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'worker: --remote <git-url> is required' });
  const dir = path.resolve(io.cwd, typeof options.dir === 'string' ? options.dir : '.polywave-worker');
  const labels = Array.isArray(options.label) ? (options.label as string[]) : [];
  const log = (line: string) => io.stderr(`[worker] ${line}\n`);
  const worker = await startWorker({
    redisUrl,
    remote,
    dir,
    concurrency: positiveInteger(options.concurrency, '--concurrency', 1),
    labels,
    ...(typeof options.queue === 'string' ? { queue: checkQueueName(options.queue) } : {}),
    env: io.env,
    ...(typeof options.id === 'string' && options.id !== '' ? { id: options.id } : {}),
    ...(options.lockDuration !== undefined ? { lockDurationMs: positiveInteger(options.lockDuration, '--lock-duration', 30_000) } : {}),
    ...(options.stalledInterval !== undefined ? { stalledIntervalMs: positiveInteger(options.stalledInterval, '--stalled-interval', 15_000) } : {}),
    ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
    ...(typeof options.dispatchKeyFile === 'string' && options.dispatchKeyFile !== '' ? { dispatchKeyFile: path.resolve(io.cwd, options.dispatchKeyFile) } : {}),
    ...(Array.isArray(options.modelAllow) && options.modelAllow.length > 0 ? { modelAllow: (options.modelAllow as string[]).filter((prefix) => prefix !== '') } : {}),
    log,
  });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) {
      log(`${signal}: finishing the running job(s), then stopping (again to hand them back now)`);
      void worker.close();
    } else {
      log(`${signal}: handing the running job(s) back`);
      void worker.close(true);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Outside attack A19-12: a closed session's SIGHUP (node drops `nohup`'s ignore) killed the worker at once, silently,
  // its running job left to stall and its --dir held. It stops as on the first SIGTERM: the running jobs finish first.
  process.on('SIGHUP', onSignal);
  try {
    await worker.closed;
    log('stopped');
    // Whatever is left open now (a Redis client still retrying a server that is gone: X24-12) does not keep it running.
    setTimeout(() => process.exit(), 2000).unref();
    return 0;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', onSignal);
  }
}
