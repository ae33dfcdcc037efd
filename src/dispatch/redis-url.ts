import { randomBytes } from 'node:crypto';
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
    throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `not a Redis URL: ${JSON.stringify(redactRedisUrl(url))} (expected redis://host:port)` });
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `not a Redis URL: ${JSON.stringify(redactRedisUrl(url))} (expected redis://host:port)` });
  // Outside round A25-01: a user name or password that is not valid percent-encoding (`%E0%A4%A`, a bare `%`) was an
  // uncaught URIError — `error[INTERNAL]: URI malformed` — not a coded refusal.
  const decoded = (part: string, what: string): string => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `${redactRedisUrl(url)}: the ${what} is not valid percent-encoding (write a \`%\` as %25; redis://:password@host:port)` });
    }
  };
  const username = parsed.username ? decoded(parsed.username, 'user name') : '';
  const password = parsed.password ? decoded(parsed.password, 'password') : '';
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `${redactRedisUrl(url)}: the database must be a number (redis://host:port/0)` });
  return {
    // F19: an IPv6 literal comes as `[::1]`; ioredis wants the bare address.
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    ...(db !== '' ? { db: Number(db) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    // BullMQ's blocking commands need these.
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect quickly after an outage (the outage limit decides when a run gives up).
    retryStrategy: (times: number) => Math.min(50 * times, 500),
  };
}

/**
 * The URL without its password (for messages and `polywave workers`). A string `new URL` cannot
 * parse (a bad port, …) loses its whole userinfo (`//***@`): no secret is ever quoted (attack F9).
 */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return redactUserinfo(url);
  }
}

/**
 * Every `scheme://user:password@` in `text` becomes `scheme://***@` (attack F8: git remotes as
 * `https://x-access-token:<token>@host/repo.git`); for messages that name a remote or quote git's output.
 */
export function redactUserinfo(text: string): string {
  return text.replace(/(\b[A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s@'"]*@/g, '$1***@');
}

/**
 * The remote as jobs carry it (attack F8): its userinfo removed, so no credential reaches Redis;
 * a worker uses its own `--remote` (its own credentials) for git.
 */
export function remoteWithoutUserinfo(remote: string): string {
  return remote.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s@/?#]*@/, '$1');
}

/**
 * Checks that Redis answers within `timeoutMs` — before anything is enqueued or changed — and
 * throws DISPATCH_REDIS_UNREACHABLE (exit 2) with one line when it does not.
 */
export async function assertRedisReachable(url: string, timeoutMs = 3000, check: { keepsKeys?: boolean } = {}): Promise<void> {
  const options = redisOptionsFromUrl(url);
  // F10: the database is SELECTed explicitly (ioredis only reports a failed SELECT as an event and goes on in db 0).
  const { db, ...withoutDb } = options;
  const client = new Redis({ ...withoutDb, lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => undefined);
  let selecting = false;
  let policy: string | undefined;
  let refusal: string | undefined;
  try {
    await Promise.race([
      client.connect().then(async () => {
        await client.ping();
        if (db !== undefined) {
          selecting = true;
          await client.select(db);
          selecting = false;
        }
        // A21-41: INFO answers where CONFIG is renamed away (managed Redis); a server that refuses INFO is not judged.
        if (check.keepsKeys) policy = /^maxmemory_policy:(\S+)/m.exec(await client.info('memory').catch(() => ''))?.[1];
        // A23-25: one write, as every job needs (a short-lived key of its own): a full Redis (maxmemory reached under
        // noeviction) answers PING and INFO but refuses every write with "OOM command not allowed…".
        if (check.keepsKeys) refusal = await client.set(`polywave:probe:start:${randomBytes(6).toString('hex')}`, '1', 'PX', 5000).then(() => undefined, (error: unknown) => (error instanceof Error ? error.message : String(error)));
      }),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref()),
    ]);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (selecting) throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `${redactRedisUrl(url)}: Redis refuses database ${db} (${reason}); nothing was started` });
    throw new PolywaveError({ code: dispatchCodes.redisUnreachable, message: `Redis at ${redactRedisUrl(url)} is unreachable (${reason}); nothing was started` });
  } finally {
    client.disconnect();
  }
  // Outside round A21-41: a Redis that evicts any key under memory pressure (`allkeys-*`: a shared Redis run as a cache)
  // drops a job's hash while it runs; a later write recreates it without its data, and the job failed as malformed
  // (DISPATCH_INVALID_JOB, escalate) instead of being added again. BullMQ's keys have no TTL, so `volatile-*` policies
  // never evict them (A21-45): those are accepted.
  if (refusal !== undefined) throw redisRefusedWrite(url, refusal, 'nothing was started');
  if (policy !== undefined && policy.startsWith('allkeys-')) {
    throw new PolywaveError({ code: dispatchCodes.redisEvicts, message: `Redis at ${redactRedisUrl(url)} evicts keys under memory pressure (maxmemory-policy ${policy}): it would drop running jobs; nothing was started — set \`maxmemory-policy noeviction\` (or a volatile-* policy), or use a Redis of its own for polywave` });
  }
}

/** Whether `message` is Redis refusing a write because it is full (maxmemory reached, no eviction possible). */
export function isRedisFull(message: string): boolean {
  return /\bOOM command not allowed\b/.test(message);
}

/**
 * Outside round A23-25: Redis refused a write (`reason`, its reply). Full (maxmemory reached under noeviction):
 * DISPATCH_REDIS_FULL, one line naming the fix; any other refusal (a read-only replica, a missing permission):
 * DISPATCH_REDIS_UNREACHABLE with Redis's own first line. `then`: what was (not) done.
 */
export function redisRefusedWrite(url: string, reason: string, then: string): PolywaveError {
  const first = reason.split('\n')[0]!.trim();
  if (isRedisFull(first)) return new PolywaveError({ code: dispatchCodes.redisFull, message: `Redis at ${redactRedisUrl(url)} is full: it refuses writes (used memory above its maxmemory, with no key it may evict); ${then} — raise \`maxmemory\` or free memory there, docs/scale-out.md "Failures"` });
  return new PolywaveError({ code: dispatchCodes.redisUnreachable, message: `Redis at ${redactRedisUrl(url)} refuses writes (${first}); ${then}` });
}

/** The same options typed for BullMQ (its own structural type of ioredis options). */
export function bullConnectionFromUrl(url: string): ConnectionOptions {
  return redisOptionsFromUrl(url) as unknown as ConnectionOptions;
}
