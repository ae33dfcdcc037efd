import { describe, expect, it } from 'vitest';
import { prewarmSandboxStatus, sandboxStatus } from './sandbox-status.js';

// A run starts the sandbox probe at its beginning (prewarm); the first agent or gate then gets the
// very answer that probe gives, never a second probe (issue 12's bench:program: ~0.5 s of a tier's start).
describe('the sandbox probe, started early', () => {
  it('prewarm starts the one probe per process and setting; sandboxStatus answers from it', async () => {
    const env = { POLYWAVE_SANDBOX: 'off', PATH: process.env.PATH };
    prewarmSandboxStatus(env);
    const first = sandboxStatus({ env });
    expect(sandboxStatus({ env: { ...env } })).toBe(first);
    await expect(first).resolves.toMatchObject({ available: false, mechanism: 'none', detail: 'disabled by POLYWAVE_SANDBOX=off' });
    // Another setting is another probe (not the cached "off").
    expect(sandboxStatus({ env: { POLYWAVE_SANDBOX: '', PATH: process.env.PATH } })).not.toBe(first);
  });
});
