/**
 * ESCAPE REPRODUCTION (outside attack X18-03/04, 2026-12-03): a file descriptor that polywave's launcher left open
 * without close-on-exec (a directory outside the sandbox) reached every sandboxed command — agent bash and quality
 * gates — which wrote anywhere through `/proc/self/fd/N/`. Every sandboxed command now starts with every descriptor
 * above stderr closed. Real sandbox: the wrapped command is spawned with a directory as its fd 3 and fd 4.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/agent-sandbox.js';
import { sandboxStatus, wrapInSandbox } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

describe('no descriptor the launcher leaked reaches a sandboxed command (X18-03/04)', () => {
  it.skipIf(!available)('a directory open as fd 3 and 4 cannot be written through /proc/self/fd', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const worktree = repo.sibling('wt-A');
    await repo.run(['worktree', 'add', '--quiet', '-b', 'a', worktree]);
    const outside = repo.sibling('outside');
    const home = repo.sibling('home');
    const tmp = repo.sibling('tmp');
    for (const dir of [outside, home, tmp]) mkdirSync(dir);
    const plan = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env as Record<string, string> });
    const probe = 'ls /proc/self/fd | tr "\\n" " "; echo; for n in 3 4 5; do echo pwned > /proc/self/fd/$n/written-$n 2>/dev/null && echo WROTE-$n; done; echo done';
    const wrapped = await wrapInSandbox(plan, probe, { cwd: worktree, env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp } });
    const fd = openSync(outside, 'r');
    const output = await new Promise<string>((resolve) => {
      const child = spawn(wrapped.file, wrapped.args, { cwd: worktree, env: wrapped.env, stdio: ['ignore', 'pipe', 'pipe', fd, fd] });
      let text = '';
      child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.on('close', () => resolve(text));
    }).finally(() => {
      closeSync(fd);
      wrapped.release();
    });
    expect(output).toContain('done');
    expect(output).not.toMatch(/WROTE-\d/);
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(path.join(outside, 'written-3'))).toBe(false);
  }, 60_000);
});
