import type { Redis } from 'ioredis';
import { z } from 'zod';
import { normalizeLabels, queuePattern, registryPrefix } from './job.js';
import { processExists } from '../store/process-alive.js';

/** A worker id: what `polywave worker --id` accepts and `polywave workers` lists (attack F15: nothing a terminal interprets). */
export const workerIdPattern = /^[A-Za-z0-9][-A-Za-z0-9._]{0,127}$/;

/**
 * What a live worker says about itself (key `polywave:workers:<id>`, expires unless refreshed).
 * Checked when read (attack F15: anyone on the Redis can write a record): a record that does not
 * fit is no worker.
 */
export const workerRecordSchema = z.object({
  id: z.string().regex(workerIdPattern),
  host: z.string().max(255),
  pid: z.number().int().nonnegative(),
  labels: z.array(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/)).max(6),
  concurrency: z.number().int().positive(),
  /** Job ids it runs now. */
  current: z.array(z.string().max(200)).max(1000),
  /** Jobs it finished since it started. */
  done: z.number().int().nonnegative(),
  started_at: z.string().max(64),
  heartbeat_at: z.string().max(64),
  /** The key of the shared remote it serves (attack F6: it takes the jobs of that remote only); absent in records of older workers, which serve nothing here. */
  remote_key: z.string().regex(/^[0-9a-f]{12}$/).optional(),
  /** The named queue it serves (`polywave worker --queue`); absent: the remote's default queues. */
  queue: z.string().regex(queuePattern).optional(),
  /** Version skew: its polywave version and the job format it runs (src/dispatch/job-claim.ts); absent in records of workers before job format 2. */
  version: z.string().max(40).optional(),
  job_format: z.number().int().nonnegative().optional(),
});

export type WorkerRecord = z.infer<typeof workerRecordSchema>;

/** Writes the record with a time to live: a SIGKILLed worker disappears after `ttlMs`. */
export async function writeWorkerRecord(client: Redis, record: WorkerRecord, ttlMs: number): Promise<void> {
  await client.set(`${registryPrefix}${record.id}`, JSON.stringify(record), 'PX', ttlMs);
}

/**
 * Attack F15: registers `record` unless another live worker has its id — true when registered.
 * A record left by a dead process (same host, its pid gone, or no heartbeat within `ttlMs`) is taken over.
 */
export async function claimWorkerId(client: Redis, record: WorkerRecord, ttlMs: number, options: { isAlive?: (pid: number) => boolean; pollMs?: number } = {}): Promise<boolean> {
  const key = `${registryPrefix}${record.id}`;
  const value = JSON.stringify(record);
  const first = await client.get(key);
  if (first === null || staleHere(first, record.host, options.isAlive ?? processExists)) {
    await client.set(key, value, 'PX', ttlMs);
    return true;
  }
  // Another process has it: live when its record is refreshed (its heartbeat) before it expires.
  const deadline = Date.now() + ttlMs + 500;
  while (Date.now() < deadline) {
    if ((await client.set(key, value, 'PX', ttlMs, 'NX')) === 'OK') return true;
    const now = await client.get(key);
    if (now !== null && now !== first) return false;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
  return false;
}

/** A record written by a process of this host that is gone. */
function staleHere(value: string, host: string, isAlive: (pid: number) => boolean): boolean {
  try {
    const parsed = JSON.parse(value) as { host?: unknown; pid?: unknown };
    return parsed.host === host && typeof parsed.pid === 'number' && !isAlive(parsed.pid);
  } catch {
    return true;
  }
}

/** Removes the record of `id` when it is still the one of this process (`pid`, `startedAt`). */
export async function removeWorkerRecord(client: Redis, id: string, own?: { pid: number; started_at: string }): Promise<void> {
  const key = `${registryPrefix}${id}`;
  if (own) {
    const value = await client.get(key);
    if (value !== null) {
      try {
        const parsed = JSON.parse(value) as { pid?: unknown; started_at?: unknown };
        if (parsed.pid !== own.pid || parsed.started_at !== own.started_at) return;
      } catch {
        return;
      }
    }
  }
  await client.del(key);
}

/** Every live worker with a valid record, sorted by id. */
export async function listWorkers(client: Redis): Promise<WorkerRecord[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${registryPrefix}*`, 'COUNT', 200);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  if (keys.length === 0) return [];
  const values = await client.mget(...keys);
  const records: WorkerRecord[] = [];
  values.forEach((value, index) => {
    if (!value) return;
    try {
      const parsed = workerRecordSchema.safeParse(JSON.parse(value));
      // A foreign or forged key under our prefix (not a record, or not under its own id): not a worker.
      if (parsed.success && keys[index] === `${registryPrefix}${parsed.data.id}`) records.push(parsed.data);
    } catch {
      // not JSON: not a worker
    }
  });
  return records.sort((left, right) => left.id.localeCompare(right.id));
}

/**
 * Whether `worker` serves jobs of the remote of key `remote` (attack F6) and of the named queue
 * `queue` (none: the default queues — a worker of a named queue does not serve them) with every label of `labels`.
 */
export function servesLabels(worker: Pick<WorkerRecord, 'labels' | 'remote_key' | 'queue'>, labels: readonly string[], remote?: string, queue?: string): boolean {
  if (remote !== undefined && worker.remote_key !== remote) return false;
  if ((worker.queue ?? '') !== (queue ?? '')) return false;
  const has = new Set(normalizeLabels(worker.labels));
  return normalizeLabels(labels).every((label) => has.has(label));
}

/** `text` with control characters (ANSI escapes, new lines, tabs) shown as `\xNN` — for terminal output of records anyone on the Redis can write (attack F15). */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
