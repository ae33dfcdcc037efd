/**
 * Quality gates inside the OS sandbox (issue 11, item 1: "gates: worktree + build caches
 * writable"), through the real gate runner on a real repository and worktree: a gate writes its
 * directory, its TMPDIR and the repository's gate build cache (not the user's caches); it cannot write outside (the main checkout from a
 * worktree, `.git`, a sibling directory), read the user's credentials or reach the network; its
 * processes end with it. The result shape and the E38 cache are those of an unsandboxed gate;
 * `sandbox: false` turns it off.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGates } from '../src/gates/run-gates.js';
import type { GateSpec } from '../src/gates/types.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

async function layout(): Promise<{ repo: TestRepo; worktree: string; home: string; env: Record<string, string> }> {
  const repo = await createTestRepo({ files: { 'src/a.txt': 'a\n' } });
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch: 'polywave/gates/wave1-agent-A', base: 'HEAD', createBranch: true });
  const home = repo.sibling('home');
  mkdirSync(path.join(home, '.ssh'), { recursive: true });
  writeFileSync(path.join(home, '.ssh', 'id_rsa'), 'gate-secret\n');
  mkdirSync(path.join(home, '.npm'), { recursive: true });
  return { repo, worktree, home, env: { ...(repo.env as Record<string, string>), HOME: home } };
}

const gate = (command: string, extra: Partial<GateSpec> = {}): GateSpec => ({ type: 'custom', command, required: true, ...extra });

describe.skipIf(!available)('quality gates in the sandbox', () => {
  it("writes the gate directory, its TMPDIR and the build caches (the repository's gate build cache: test/sandbox-gate-cache.test.ts)", async () => {
    const { worktree, home, env } = await layout();
    const run = await runGates({
      repoDir: worktree,
      env,
      noCache: true,
      gates: [gate('echo built > build.out && echo "$TMPDIR" > tmpdir.out && touch "$TMPDIR/x" && mkdir -p "$XDG_CACHE_HOME/tool" && echo cached > "$XDG_CACHE_HOME/tool/entry" && echo "$XDG_CACHE_HOME" > xdg.out && mkdir -p "$npm_config_cache" && touch "$npm_config_cache/entry"')],
    });
    expect(run.passed, run.results[0]!.output).toBe(true);
    expect(readFileSync(path.join(worktree, 'build.out'), 'utf8')).toBe('built\n');
    const tmpdir = readFileSync(path.join(worktree, 'tmpdir.out'), 'utf8').trim();
    expect(path.basename(tmpdir)).toMatch(/^polywave-gate-/);
    expect(existsSync(tmpdir)).toBe(false); // removed after the gate
    const xdg = readFileSync(path.join(worktree, 'xdg.out'), 'utf8').trim();
    expect(xdg.startsWith(path.join(home, '.cache', 'polywave', 'gate-build-cache'))).toBe(true);
    expect(readFileSync(path.join(xdg, 'tool/entry'), 'utf8')).toBe('cached\n');
  });

  it('cannot write outside (main checkout, .git, a sibling), read the credentials or reach the network', async () => {
    const { repo, worktree, env } = await layout();
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('reached\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    let connections = 0;
    server.on('connection', () => (connections += 1));
    const port = (server.address() as net.AddressInfo).port;
    const configBefore = readFileSync(repo.path('.git/config'), 'utf8');
    try {
      const attempts = [
        `node -e "require('fs').writeFileSync(require('path').join(require('path').dirname(process.cwd()), 'repo', 'README.md'), 'pwned')"`,
        `node -e "require('fs').appendFileSync(require('path').join(require('path').dirname(process.cwd()), 'repo', '.git', 'config'), '[core]\\\\n')"`,
        'echo pwned > ../outside.txt',
        'cat "$HOME/.ssh/id_rsa"',
        `curl -sS -m 5 http://127.0.0.1:${port}/`,
        `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))"`,
      ];
      const run = await runGates({ repoDir: worktree, env, noCache: true, gates: attempts.map((command) => gate(command)) });
      for (const result of run.results) {
        expect(result.passed, `${result.command}\n${result.output}`).toBe(false);
        expect(result.output).not.toContain('gate-secret');
      }
      expect(repo.read('README.md')).toBe('# test repository\n');
      expect(readFileSync(repo.path('.git/config'), 'utf8')).toBe(configBefore);
      expect(existsSync(repo.sibling('outside.txt'))).toBe(false);
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('a gate in the main checkout: the checkout is writable, its .git is not (a hook cannot be planted)', async () => {
    const { repo, env } = await layout();
    const run = await runGates({ repoDir: repo.dir, env, noCache: true, gates: [gate('echo ok > verified.out'), gate('printf "#!/bin/sh\\n" > .git/hooks/post-merge')] });
    expect(run.results.map((result) => result.passed)).toEqual([true, false]);
    expect(repo.read('verified.out')).toBe('ok\n');
    expect(existsSync(repo.path('.git/hooks/post-merge'))).toBe(false);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('?? verified.out');
  });

  it('the result shape and the E38 cache are unchanged; sandbox: false runs the gate as before', async () => {
    const { repo, worktree, env } = await layout();
    const spec = [gate('echo gate-output')];
    const first = await runGates({ repoDir: worktree, env, gates: spec });
    const second = await runGates({ repoDir: worktree, env, gates: spec });
    expect(first.results[0]).toMatchObject({ passed: true, from_cache: false, exit_code: 0, timed_out: false, canceled: false });
    expect(first.results[0]!.output).toContain('gate-output');
    expect(second.results[0]).toMatchObject({ passed: true, from_cache: true });
    expect(Object.keys(second.results[0]!).sort()).toEqual(expect.arrayContaining(Object.keys(first.results[0]!).filter((key) => key !== 'skip_reason')));
    const outside = repo.sibling('unsandboxed.txt');
    const unsandboxed = await runGates({ repoDir: worktree, env, noCache: true, sandbox: false, gates: [gate(`echo x > '${outside}'`)] });
    expect(unsandboxed.passed).toBe(true);
    expect(existsSync(outside)).toBe(true);
  });

  it('a timeout still stops the gate and everything it started', async () => {
    const { worktree, env } = await layout();
    const started = performance.now();
    const run = await runGates({ repoDir: worktree, env, noCache: true, gates: [gate('sleep 64.5 & sleep 64.6', { timeout_seconds: 1 } as Partial<GateSpec>)] });
    expect(run.results[0]).toMatchObject({ passed: false, timed_out: true });
    expect(performance.now() - started).toBeLessThan(15_000);
  });
});
