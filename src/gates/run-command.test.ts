import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { runShellCommand } from './run-command.js';

const logPath = (): string => path.join(makeTempDir('polywave-cmd-'), 'out.log');

describe('runShellCommand', () => {
  it('returns exit code and output, interleaved', async () => {
    const result = await runShellCommand('echo a; echo b >&2; exit 7', { cwd: makeTempDir('polywave-cmd-'), timeoutMs: 10_000, logPath: logPath() });
    expect(result).toMatchObject({ exitCode: 7, signal: null, timedOut: false, canceled: false, outputTruncated: false });
    expect(result.output).toContain('a\n');
    expect(result.output).toContain('b\n');
    expect(result.error).toBeUndefined();
  });

  it('runs in cwd with the given environment', async () => {
    const cwd = makeTempDir('polywave-cmd-');
    const result = await runShellCommand('pwd; echo "$GATE_VALUE"', { cwd, env: { PATH: process.env.PATH, GATE_VALUE: 'from-env' }, timeoutMs: 10_000, logPath: logPath() });
    expect(result.output).toBe(`${cwd}\nfrom-env\n`);
  });

  it('a missing cwd is a result with exit -1 and an error, not an exception', async () => {
    const result = await runShellCommand('true', { cwd: path.join(makeTempDir('polywave-cmd-'), 'missing'), timeoutMs: 10_000, logPath: logPath() });
    expect(result.exitCode).toBe(-1);
    expect(result.error).toMatch(/command failed to start/);
  });

  it('escalates to SIGKILL when the command ignores SIGTERM', async () => {
    const start = performance.now();
    const result = await runShellCommand("trap '' TERM; sleep 30 & wait; sleep 30", { cwd: makeTempDir('polywave-cmd-'), timeoutMs: 500, killGraceMs: 500, logPath: logPath() });
    expect(performance.now() - start).toBeLessThan(3000);
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(-1);
  });

  it('does not hang when a background process keeps the output pipe open', async () => {
    const start = performance.now();
    const result = await runShellCommand('sleep 30 & echo done', { cwd: makeTempDir('polywave-cmd-'), timeoutMs: 60_000, logPath: logPath() });
    expect(performance.now() - start).toBeLessThan(3000);
    expect(result).toMatchObject({ exitCode: 0, output: 'done\n', timedOut: false });
  });

  it('an already aborted signal does not start the command', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await runShellCommand('echo never', { cwd: makeTempDir('polywave-cmd-'), timeoutMs: 10_000, logPath: logPath(), signal: controller.signal });
    expect(result).toMatchObject({ canceled: true, exitCode: -1, output: '' });
  });
});
