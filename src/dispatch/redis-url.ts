import { Redis, type RedisOptions } from 'ioredis';
import type { ConnectionOptions } from 'bullmq';
import { PolywaveError } from '../errors/polywave-error.js';
import { dispatchCodes } from './codes.js';

/** BullMQ's connection options from a `redis://[:password@]host[:port][/db]` URL (rediss:// for TLS). */
export function redisOptionsFromUrl(url: string): RedisOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `not a Redis URL: ${JSON.stringify(url)} (expected redis://host:port)` });
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `not a Redis URL: ${JSON.stringify(url)} (expected redis://host:port)` });
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `${url}: the database must be a number (redis://host:port/0)` });
  return {
    host: parsed.hostname || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db !== '' ? { db: Number(db) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    // BullMQ's blocking commands need these.
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect quickly after an outage (the outage limit decides when a run gives up).
    retryStrategy: (times: number) => Math.min(50 * times, 500),
  };
}

/** The URL without its password (for messages and `polywave workers`). */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/**
 * Checks that Redis answers within `timeoutMs` — before anything is enqueued or changed — and
 * throws DISPATCH_REDIS_UNREACHABLE (exit 2) with one line when it does not.
 */
export async function assertRedisReachable(url: string, timeoutMs = 3000): Promise<void> {
  const options = redisOptionsFromUrl(url);
  const client = new Redis({ ...options, lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await Promise.race([
      client.connect().then(() => client.ping()),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref()),
    ]);
  } catch (error) {
    throw new PolywaveError({ code: dispatchCodes.redisUnreachable, message: `Redis at ${redactRedisUrl(url)} is unreachable (${error instanceof Error ? error.message : String(error)}); nothing was started` });
  } finally {
    client.disconnect();
  }
}

/** The same options typed for BullMQ (its own structural type of ioredis options). */
export function bullConnectionFromUrl(url: string): ConnectionOptions {
  return redisOptionsFromUrl(url) as unknown as ConnectionOptions;
}
