/**
 * Outside round A25-01/A25-02 (issue 17): bad Redis URLs are refused with a stable code, exit 2, no stack and no secret.
 * A25-01: a user name or password that is not valid percent-encoding (`redis://:%E0%A4%A@host`, `redis://u:%@host`) came
 * out as `error[INTERNAL]: URI malformed` (an uncaught URIError) from `polywave workers`, `polywave worker` and
 * `run-wave --dispatch`. A25-02: `polywave workers` quoted the password of a URL whose scheme it refuses
 * (`https://user:secret@host`, `Redis://:secret@host` from POLYWAVE_REDIS_URL) — the other commands redact it.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';

const key = { POLYWAVE_DISPATCH_KEY: 'a25a25a25a25a25a25a25a25a25a25a25a25a25a25' };

describe('bad Redis URLs (A25-01, A25-02)', () => {
  it('a bad percent-escape in the userinfo: DISPATCH_INVALID_URL, exit 2, no INTERNAL, the password not quoted', async () => {
    for (const url of ['redis://:%E0%A4%A@127.0.0.1:1', 'redis://u:%@127.0.0.1:1', 'redis://%ZZ@127.0.0.1:1']) {
      for (const args of [['workers', '--redis', url], ['worker', '--redis', url, '--remote', 'file:///nonexistent/remote.git', '--dir', '/nonexistent/a25-worker']]) {
        const result = await runCli(args, { env: key, timeoutMs: 30_000 });
        // Before the fix: `polywave: error[INTERNAL]: URI malformed (set POLYWAVE_DEBUG=1 for details)`.
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toContain('error[DISPATCH_INVALID_URL]');
        expect(result.stderr).toContain('percent-encoding');
        expect(result.stderr).not.toContain('INTERNAL');
        expect(result.stderr).not.toContain('%E0%A4%A');
      }
    }
  }, 120_000);

  it('`polywave workers` never quotes the password of a URL it refuses', async () => {
    const flag = await runCli(['workers', '--redis', 'https://user:hunter2secret@127.0.0.1:1'], { timeoutMs: 30_000 });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('error[DISPATCH_INVALID_URL]');
    // Before the fix: `not a Redis URL: "https://user:hunter2secret@127.0.0.1:1"`.
    expect(flag.stderr).not.toContain('hunter2secret');
    const fromEnv = await runCli(['workers'], { env: { POLYWAVE_REDIS_URL: 'Redis://:hunter2secret@127.0.0.1:1' }, timeoutMs: 30_000 });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('error[DISPATCH_INVALID_URL]');
    expect(fromEnv.stderr).not.toContain('hunter2secret');
  }, 60_000);
});
