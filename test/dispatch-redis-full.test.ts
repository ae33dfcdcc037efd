import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, lettersScript, runWaveCli, useDispatchRig } from './dispatch-support.js';

// Outside round A23-25: a Redis that is full — maxmemory reached under `noeviction` (the policy polywave asks for) —
// answers PING and INFO but refuses every write with "OOM command not allowed when used memory > 'maxmemory'". A worker
// printed that reply as `error[INTERNAL]` and hung; a run got BullMQ's raw reply. Both now stop at start with one coded
// line, exit 2, nothing started. Real parts: Debian's redis-server with a tiny --maxmemory, filled by the test.

const { scratch, redis } = useDispatchRig('pw-redis-full-', { redisArgs: ['--maxmemory', '2mb', '--maxmemory-policy', 'noeviction'] });
let url = '';

beforeAll(async () => {
  url = redis.url;
  const client = new Redis(url, { lazyConnect: true });
  client.on('error', () => undefined);
  await client.connect();
  // Filled until it refuses: used memory above maxmemory.
  await client.eval("for i=1,4000 do redis.call('set','fill'..i,string.rep('x',1000)) end return 1", 0).catch(() => undefined);
  await expect(client.set('probe', '1')).rejects.toThrow(/OOM command not allowed/);
  client.disconnect();
}, 30_000);

const oneLine = (stderr: string) => stderr.split('\n').filter((line) => line.includes('error['));

describe('a full Redis (A23-25)', () => {
  it('a worker does not start: DISPATCH_REDIS_FULL, one line, exit 2, no --dir made', async () => {
    const target = await createDispatchRepo('fullw', lettersScript(), { waves: [['A', 'B']] });
    const dir = path.join(scratch, 'worker-full');
    const started = await runCli(['worker', '--redis', url, '--remote', target.remote, '--dir', dir, '--id', 'full1'], { env: gitEnv, timeoutMs: 60_000 });
    expect(started.code).toBe(2);
    expect(oneLine(started.stderr)).toEqual([`polywave: error[DISPATCH_REDIS_FULL]: Redis at ${url} is full: it refuses writes (used memory above its maxmemory, with no key it may evict); nothing was started — raise \`maxmemory\` or free memory there, docs/scale-out.md "Failures"`]);
    expect(started.stderr).not.toMatch(/OOM command|INTERNAL|\n\s+at /);
    expect(existsSync(dir)).toBe(false);
  }, 90_000);

  it('a dispatched run does not start: DISPATCH_REDIS_FULL, exit 2, the manifest untouched', async () => {
    const target = await createDispatchRepo('fullr', lettersScript(), { waves: [['A', 'B']] });
    const before = readFileSync(target.implPath, 'utf8');
    const run = await runWaveCli(target, 1, { redisUrl: url });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/error\[DISPATCH_REDIS_FULL\]: Redis at redis:\/\/127\.0\.0\.1:\d+ is full: it refuses writes .*nothing was started/);
    expect(run.stderr).not.toMatch(/OOM command|INTERNAL|\n\s+at /);
    expect(readFileSync(target.implPath, 'utf8')).toBe(before);
    expect(await target.repo.run(['status', '--porcelain'])).toBe('');
  }, 90_000);
});
