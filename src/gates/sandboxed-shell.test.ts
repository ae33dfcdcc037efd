import { mkdirSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../sandbox/index.js';
import { runSandboxedShell } from './sandboxed-shell.js';

const available = (await sandboxStatus()).available;

describe('runSandboxedShell (outside attack X3 #20: verify-build and the scaffold build check)', () => {
  it('runs without credentials, and in the sandbox wherever it is available', async () => {
    const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-sbshell-')));
    const repo = path.join(base, 'repo');
    const home = path.join(base, 'home');
    mkdirSync(repo);
    mkdirSync(home);
    writeFileSync(path.join(repo, 'x.txt'), 'x\n');
    const env = { ...process.env, HOME: home, ANTHROPIC_API_KEY: 'CANARY-KEY', DATABASE_URL: 'postgres://u:CANARY-PW@h/db', PLAIN_MARKER: 'visible' };
    const command = `echo "key=[$ANTHROPIC_API_KEY] db=[$DATABASE_URL] plain=[$PLAIN_MARKER] sandbox=[$SANDBOX_RUNTIME]"; touch "$HOME/ESCAPED" 2>/dev/null; touch built.txt`;
    const run = (sandbox: boolean) => runSandboxedShell(command, { cwd: repo, env, timeoutMs: 60_000, logPath: path.join(base, `log-${sandbox}.txt`), sandbox });
    const inSandbox = await run(true);
    const homeAfterSandbox = readdirSync(home);
    const unsandboxed = await run(false);
    for (const result of [inSandbox, unsandboxed]) expect([result.exitCode, result.output]).toEqual([0, expect.stringContaining('key=[] db=[] plain=[visible]')]);
    expect([inSandbox.sandboxed, unsandboxed.sandboxed]).toEqual([available, false]);
    expect(readdirSync(repo).filter((name) => name !== '.git').sort()).toEqual(['built.txt', 'x.txt']);
    if (available) {
      // The sandboxed run wrote its directory, not the home (only polywave's gate build cache is there); without the sandbox it could, as gates there.
      expect([inSandbox.output, homeAfterSandbox.includes('ESCAPED')]).toEqual([expect.stringContaining('sandbox=[1]'), false]);
      expect(readdirSync(home)).toContain('ESCAPED');
      expect(unsandboxed.output).toContain('sandbox=[]');
    }
  });
});
