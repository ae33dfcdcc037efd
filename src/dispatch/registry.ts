import type { Redis } from 'ioredis';
import { normalizeLabels, registryPrefix } from './job.js';

/** What a live worker says about itself (key `polywave:workers:<id>`, expires unless refreshed). */
export interface WorkerRecord {
  id: string;
  host: string;
  pid: number;
  labels: string[];
  concurrency: number;
  /** Job ids it runs now. */
  current: string[];
  /** Jobs it finished since it started. */
  done: number;
  started_at: string;
  heartbeat_at: string;
}

/** Writes the record with a time to live: a SIGKILLed worker disappears after `ttlMs`. */
export async function writeWorkerRecord(client: Redis, record: WorkerRecord, ttlMs: number): Promise<void> {
  await client.set(`${registryPrefix}${record.id}`, JSON.stringify(record), 'PX', ttlMs);
}

export async function removeWorkerRecord(client: Redis, id: string): Promise<void> {
  await client.del(`${registryPrefix}${id}`);
}

/** Every live worker, sorted by id. */
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
  for (const value of values) {
    if (!value) continue;
    try {
      records.push(JSON.parse(value) as WorkerRecord);
    } catch {
      // a foreign key under our prefix: not a worker
    }
  }
  return records.sort((left, right) => left.id.localeCompare(right.id));
}

/** Whether some live worker has every label of `labels`. */
export function servesLabels(worker: Pick<WorkerRecord, 'labels'>, labels: readonly string[]): boolean {
  const has = new Set(normalizeLabels(worker.labels));
  return normalizeLabels(labels).every((label) => has.has(label));
}
