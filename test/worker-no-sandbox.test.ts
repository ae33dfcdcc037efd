/**
 * Outside round A21-05 (issue 17), the regression test of its fix: a worker where the OS sandbox cannot run, started
 * without `--unsafe-no-sandbox`, registered and took its share of every wave, failing each job fatal
 * (`SANDBOX_UNAVAILABLE`: since A20-19 it refuses every agent and gate job) while healthy workers idled — a black hole
 * that logged `ready:` with no warning. Now it does not start: `SANDBOX_UNAVAILABLE` naming the fix, exit 2, nothing
 * registered and no `--dir` made.
 *
 * Real parts: a redis-server on loopback, a bare `file://` remote, the real `polywave worker` command with the sandbox
 * turned off (POLYWAVE_SANDBOX=off). Needs `npm run build`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import type { TestRepo } from './support/git-repo.js';
import { createPushedRepo, gitEnv, useDispatchRig } from './dispatch-support.js';

const { scratch, redis } = useDispatchRig('pw-worker-no-sandbox-');
let repo: TestRepo;
let remote: string;

beforeAll(async () => {
  ({ repo, remote } = await createPushedRepo(path.join(scratch, 'remote.git'), { 'src/a.js': "export const a = 'a';\n" }));
}, 60_000);

afterAll(() => {
  repo?.cleanup();
});

describe('a worker without the OS sandbox and without --unsafe-no-sandbox (A21-05)', () => {
  it('does not start: SANDBOX_UNAVAILABLE naming the fix, exit 2, nothing registered', async () => {
    const dir = path.join(scratch, 'worker-nosb');
    const run = await runCli(['worker', '--redis', redis.url, '--remote', remote, '--dir', dir, '--id', 'nosb'], { env: { ...gitEnv, POLYWAVE_SANDBOX: 'off' }, timeoutMs: 20_000 });
    // Before the fix: `ready:` and it ran until killed (code null), taking jobs it could only fail.
    expect(run.stderr).not.toContain('ready:');
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/error\[SANDBOX_UNAVAILABLE\]: worker nosb on .+: the OS sandbox is unavailable here \(disabled by POLYWAVE_SANDBOX=off\), .*does not start \(nothing registered\); .*--unsafe-no-sandbox/);
    expect(existsSync(dir)).toBe(false);
    const client = new Redis(redis.url);
    try {
      expect((await client.keys('*')).filter((key) => key.includes('nosb'))).toEqual([]);
    } finally {
      client.disconnect();
    }
  }, 60_000);
});
