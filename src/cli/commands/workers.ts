import { Redis } from 'ioredis';
import { assertRedisReachable, redactRedisUrl, redisOptionsFromUrl } from '../../dispatch/redis-url.js';
import { listWorkers, printable } from '../../dispatch/registry.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/**
 * `workers [--redis URL] [--json]` (issue 17): the live workers (their heartbeat is fresh), their
 * labels and current jobs. JSON: {redis, workers[{id, host, pid, labels, concurrency, current, done,
 * started_at, heartbeat_at, remote_key, queue?, version?, job_format?}]}; version: the worker's polywave version and the
 * job format it runs (workers before job format 2 show none — they refuse format-2 jobs as malformed); records that are not valid worker records are left out. Exit 0, 2 when Redis is unreachable.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const url = typeof options.redis === 'string' && options.redis !== '' ? options.redis : (io.env.POLYWAVE_REDIS_URL ?? 'redis://127.0.0.1:6379');
  if (!/^rediss?:\/\//.test(url)) throw new PolywaveError({ code: 'DISPATCH_INVALID_URL', message: `not a Redis URL: ${JSON.stringify(redactRedisUrl(url))} (expected redis://host:port)` });
  await assertRedisReachable(url);
  const client = new Redis(redisOptionsFromUrl(url));
  client.on('error', () => undefined);
  try {
    const workers = await listWorkers(client);
    if (options.json === true) printJson(io, { workers });
    else if (workers.length === 0) io.stdout('no live workers\n');
    else {
      for (const worker of workers) {
        // F15: a record is anyone's text: control characters (ANSI escapes, new lines) are shown escaped.
        io.stdout(`${printable(worker.id)}\t${printable(worker.host)}\tremote=${worker.remote_key ?? '-'}${worker.queue ? `\tqueue=${worker.queue}` : ''}\tlabels=${worker.labels.join(',') || '-'}\tconcurrency=${worker.concurrency}\tdone=${worker.done}\tcurrent=${worker.current.map(printable).join(',') || '-'}${worker.version !== undefined ? `\tversion=${printable(worker.version)} (job format ${worker.job_format ?? '?'})` : ''}\n`);
      }
    }
    return 0;
  } finally {
    client.disconnect();
  }
}
