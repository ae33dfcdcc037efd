/**
 * The tool executor inside a real OS sandbox, run with both of its programs — the native one
 * (native/polywave-executor.c, when it was built) and node's (toolExecutorMain): the same requests,
 * the same answers. Each case fails with an executor that gets it wrong: a write through a swapped
 * directory (EXDEV, nothing left behind), a final symbolic link (ELOOP), a write outside (EROFS), a
 * background job that would outlive its call, 1 MB of output, a huge environment, signals by name.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentLayout } from '../../../test/support/agent-layout.js';
import { resetSandbox, sandboxStatus } from '../../sandbox/index.js';
import type { SandboxPlan } from '../../sandbox/sandbox-plan.js';
import { buildAgentSandboxPlan } from './agent-sandbox.js';
import { createToolExecutor, onBoundedLines, nativeToolExecutor, toolExecutorProgram, type ExecutorRunResult, type ToolExecutor } from './tool-executor.js';
import { processesWith } from '../../../test/support/processes.js';

const available = (await sandboxStatus()).available;

interface Layout {
  worktree: string;
  outside: string;
  plan: SandboxPlan;
  env: Record<string, string>;
}

let layout: Layout;
beforeAll(async () => {
  if (!available) return;
  const { repo, worktree, home, tmp } = await createAgentLayout('polywave/exec/wave1-agent-A');
  const plan = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
  layout = { worktree, outside: repo.sibling('outside'), plan, env: { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string> };
  mkdirSync(layout.outside, { recursive: true });
}, 60_000);
afterAll(async () => {
  await resetSandbox();
});


describe('onBoundedLines', () => {
  it('gives each line whole across chunks, drops one past the bound (once, then goes on after its newline)', async () => {
    const { PassThrough } = await import('node:stream');
    const stream = new PassThrough();
    const lines: string[] = [];
    let overflows = 0;
    onBoundedLines(stream, 8, (line) => lines.push(line), () => (overflows += 1));
    for (const chunk of ['ab', 'c\nde', 'f\n', '0123456', '789abc', 'def\nok\n', 'é\n']) stream.write(Buffer.from(chunk));
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual(['abc', 'def', 'ok', 'é']);
    expect(overflows).toBe(1);
  });
});

describe('which program', () => {
  it('native unless POLYWAVE_EXECUTOR=node or it was not built', () => {
    const saved = process.env.POLYWAVE_EXECUTOR;
    try {
      delete process.env.POLYWAVE_EXECUTOR;
      expect(toolExecutorProgram()).toBe(nativeToolExecutor() ? 'native' : 'node');
      process.env.POLYWAVE_EXECUTOR = 'node';
      expect(toolExecutorProgram()).toBe('node');
      expect(toolExecutorProgram('native')).toBe(nativeToolExecutor() ? 'native' : 'node');
    } finally {
      if (saved === undefined) delete process.env.POLYWAVE_EXECUTOR;
      else process.env.POLYWAVE_EXECUTOR = saved;
    }
  });
});

const programs = [
  { program: 'native' as const, skip: !available || nativeToolExecutor() === undefined },
  { program: 'node' as const, skip: !available },
];

for (const { program, skip } of programs) {
  describe.skipIf(skip)(`the ${program} tool executor in the sandbox`, () => {
    let executor: ToolExecutor;
    beforeAll(() => {
      executor = createToolExecutor(layout.plan, { cwd: layout.worktree, env: layout.env, program });
    });
    afterAll(async () => {
      await executor?.stop();
    });

    const run = async (command: string, env: Record<string, string> = layout.env, cwd = layout.worktree): Promise<ExecutorRunResult & { output: Buffer }> => {
      const chunks: Buffer[] = [];
      const result = await executor.run(command, { cwd, env, onOutput: (chunk) => chunks.push(chunk) }).done;
      return { ...result, output: Buffer.concat(chunks) };
    };

    it('runs the program it was asked for', async () => {
      await executor.start();
      const marker = program === 'native' ? 'polywave-executor' : '(function toolExecutorMain';
      expect(processesWith(marker).length, processesWith('toolExecutorMain').join('\n')).toBeGreaterThan(0);
    });

    it('X31-10: an answer past the bound (a listing of long names with control characters) is a tool error, never a crash of this process; the next request starts another executor', async () => {
      const dir = path.join(layout.worktree, program, 'junk');
      mkdirSync(dir, { recursive: true });
      for (let index = 0; index < 400; index += 1) symlinkSync('\u0001'.repeat(3000), path.join(dir, `${String(index).padStart(4, '0')}${'\u0002'.repeat(200)}`));
      const saved = process.env.POLYWAVE_EXECUTOR_MAX_ANSWER_BYTES;
      process.env.POLYWAVE_EXECUTOR_MAX_ANSWER_BYTES = String(1024 * 1024);
      const bounded = createToolExecutor(layout.plan, { cwd: layout.worktree, env: layout.env, program });
      try {
        await expect(bounded.list(dir)).rejects.toMatchObject({ code: 'E2BIG', message: expect.stringContaining('larger than 1 MiB') as unknown });
        expect((await bounded.stat(dir)).kind).toBe('directory');
      } finally {
        if (saved === undefined) delete process.env.POLYWAVE_EXECUTOR_MAX_ANSWER_BYTES;
        else process.env.POLYWAVE_EXECUTOR_MAX_ANSWER_BYTES = saved;
        await bounded.stop();
      }
    });

    it('X31-12: an executor the command stopped (SIGSTOP to its parent) is killed from the host: the run and a file request end with ETIMEDOUT, the next request starts another', async () => {
      const stopped = createToolExecutor(layout.plan, { cwd: layout.worktree, env: layout.env, program });
      const saved = process.env.POLYWAVE_EXECUTOR_REQUEST_MS;
      try {
        const started = performance.now();
        const running = stopped.run('kill -STOP $PPID; sleep 60', { cwd: layout.worktree, env: layout.env, onOutput: () => undefined });
        setTimeout(() => running.kill('SIGKILL'), 500).unref();
        await expect(running.done).rejects.toMatchObject({ code: 'ETIMEDOUT', message: expect.stringContaining('SIGKILL') as unknown });
        expect(performance.now() - started).toBeLessThan(15_000);
        const again = stopped.run('kill -STOP $PPID', { cwd: layout.worktree, env: layout.env, onOutput: () => undefined });
        process.env.POLYWAVE_EXECUTOR_REQUEST_MS = '1500';
        // (time for the command to start and stop the executor: 300 ms was not always enough on a loaded machine)
        await new Promise((resolve) => setTimeout(resolve, 1200));
        await expect(stopped.stat(layout.worktree)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
        await expect(again.done).rejects.toMatchObject({ code: 'ETIMEDOUT' });
        expect((await stopped.stat(layout.worktree)).kind).toBe('directory');
      } finally {
        if (saved === undefined) delete process.env.POLYWAVE_EXECUTOR_REQUEST_MS;
        else process.env.POLYWAVE_EXECUTOR_REQUEST_MS = saved;
        await stopped.stop();
      }
    });

    it('write, read, list, stat: parents created, existed, limit, kinds and link targets', async () => {
      const file = path.join(layout.worktree, program, 'deep', 'f.bin');
      const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13, 34, 92]);
      expect(await executor.write(file, bytes)).toEqual({ existed: false, bytes: bytes.length });
      expect(await executor.write(file, bytes)).toEqual({ existed: true, bytes: bytes.length });
      expect(readFileSync(file)).toEqual(bytes);
      expect(await executor.read(file, 4)).toEqual({ kind: 'file', size: bytes.length, data: bytes.subarray(0, 4) });
      expect(await executor.read(file, 1000)).toEqual({ kind: 'file', size: bytes.length, data: bytes });
      expect((await executor.read(path.dirname(file), 10)).kind).toBe('directory');
      expect(await executor.write(file, '')).toEqual({ existed: true, bytes: 0 });
      expect(readFileSync(file, 'utf8')).toBe('');
      symlinkSync('f.bin', path.join(path.dirname(file), 'link'));
      writeFileSync(path.join(path.dirname(file), 'é "q"\t.txt'), 'x');
      const entries = await executor.list(path.dirname(file));
      expect(entries).toEqual([
        { name: 'f.bin', kind: 'file' },
        { name: 'link', kind: 'symlink', target: 'f.bin' },
        { name: 'é "q"\t.txt', kind: 'file' },
      ]);
      expect(await executor.stat(path.join(path.dirname(file), 'link'))).toEqual({ kind: 'symlink', size: 5 });
      await expect(executor.stat(path.join(layout.worktree, 'no-such'))).rejects.toMatchObject({ code: 'ENOENT', message: expect.stringContaining("no such file or directory, lstat '") });
      await expect(executor.list(path.join(layout.worktree, 'no-such'))).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(executor.write(path.dirname(file), 'x')).rejects.toMatchObject({ code: 'EISDIR' });
      await expect(executor.read('relative/path', 10)).rejects.toMatchObject({ code: 'EINVAL' });
    });

    it('refusals: EROFS outside, ELOOP for a final symbolic link, EXDEV through a swapped directory (nothing left behind)', async () => {
      await expect(executor.write(path.join(layout.outside, `${program}.txt`), 'x')).rejects.toMatchObject({ code: 'EROFS', message: expect.stringContaining('read-only file system') });
      expect(existsSync(path.join(layout.outside, `${program}.txt`))).toBe(false);
      const dir = path.join(layout.worktree, `${program}-refusals`);
      mkdirSync(path.join(dir, 'real'), { recursive: true });
      writeFileSync(path.join(dir, 'target.txt'), 'keep');
      symlinkSync(path.join(dir, 'target.txt'), path.join(dir, 'final-link'));
      await expect(executor.write(path.join(dir, 'final-link'), 'x')).rejects.toMatchObject({ code: 'ELOOP' });
      await expect(executor.read(path.join(dir, 'final-link'), 10)).rejects.toMatchObject({ code: 'ELOOP' });
      expect(readFileSync(path.join(dir, 'target.txt'), 'utf8')).toBe('keep');
      symlinkSync(path.join(dir, 'real'), path.join(dir, 'swapped'));
      await expect(executor.write(path.join(dir, 'swapped', 'new.txt'), 'x')).rejects.toMatchObject({ code: 'EXDEV' });
      expect(existsSync(path.join(dir, 'real', 'new.txt'))).toBe(false);
      writeFileSync(path.join(dir, 'real', 'old.txt'), 'old');
      await expect(executor.write(path.join(dir, 'swapped', 'old.txt'), 'new')).rejects.toMatchObject({ code: 'EXDEV' });
      expect(readFileSync(path.join(dir, 'real', 'old.txt'), 'utf8')).toBe('old');
    });

    it('run: output, exit codes, signal names, a missing cwd', async () => {
      const plain = await run('echo out; echo err >&2; exit 7');
      expect(plain).toMatchObject({ exitCode: 7, signal: null });
      expect(plain.output.toString()).toBe('out\nerr\n');
      expect(await run('kill -TERM $$')).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
      expect(await run('kill -KILL $$')).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
      const missing = await run('echo never', layout.env, path.join(layout.worktree, 'no-such-dir'));
      expect(missing.spawnError).toMatch(/ENOENT/);
      expect(missing.output.length).toBe(0);
      // stdin is /dev/null: a read ends at once
      expect((await run('cat; echo read-done')).output.toString()).toBe('read-done\n');
    });

    it('1 MB of output comes through intact, in order', async () => {
      const result = await run('i=0; while [ $i -lt 16384 ]; do printf "%063d\\n" $i; i=$((i+1)); done');
      expect(result.exitCode).toBe(0);
      expect(result.output.length).toBe(16384 * 64);
      let expected = '';
      for (let i = 0; i < 16384; i += 1) expected += `${String(i).padStart(63, '0')}\n`;
      expect(createHash('sha256').update(result.output).digest('hex')).toBe(createHash('sha256').update(expected).digest('hex'));
    });

    it('a huge environment reaches the command exactly', async () => {
      const env: Record<string, string> = { ...layout.env, BIG: 'b'.repeat(120_000), QUOTED: 'a "b" \\ c\n\té😀' };
      for (let i = 0; i < 2000; i += 1) env[`POLYWAVE_TEST_VAR_${i}`] = `value-${i}`;
      const result = await run('printf "%s" "$BIG" | wc -c; printf "%s" "$QUOTED"; echo; env | grep -c ^POLYWAVE_TEST_VAR_', env);
      expect(result.output.toString()).toBe(`120000\n${env.QUOTED}\n2000\n`);
      // one string over the kernel's 128 KiB limit: bash cannot start, node's words for it
      expect(await run('echo never', { ...layout.env, BIG: 'b'.repeat(200_000) })).toMatchObject({ exitCode: null, signal: null, spawnError: 'spawn E2BIG' });
    });

    it('nothing a call started outlives it: background jobs, setsid, a double fork', async () => {
      const marker = program === 'native' ? '71.5151' : '71.5252';
      const result = await run(`sleep ${marker}1 & setsid sleep ${marker}2 & (sleep ${marker}3 &) ; sleep 0.3; echo started`);
      expect(result.output.toString()).toContain('started');
      expect(result.exitCode).toBe(0);
      expect(processesWith(marker)).toEqual([]);
    });

    it('a run is stopped by SIGTERM (its group) and SIGKILL (everything it started); the next run works', async () => {
      const marker = program === 'native' ? '72.5151' : '72.5252';
      const term = executor.run(`sleep ${marker}1`, { cwd: layout.worktree, env: layout.env, onOutput: () => undefined });
      await sleep(500);
      term.kill('SIGTERM');
      expect(await term.done).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
      const killed = executor.run(`trap '' TERM; setsid sleep ${marker}2 & sleep ${marker}3`, { cwd: layout.worktree, env: layout.env, onOutput: () => undefined });
      await sleep(500);
      killed.kill('SIGKILL');
      expect((await killed.done).signal).toBe('SIGKILL');
      expect(processesWith(marker)).toEqual([]);
      expect((await run('echo again')).output.toString()).toBe('again\n');
    });

    it('stop ends the process; a later request starts a new one', async () => {
      await executor.stop();
      expect(executor.running).toBe(false);
      expect((await executor.stat(layout.worktree)).kind).toBe('directory');
      expect(executor.running).toBe(true);
    });
  });
}
