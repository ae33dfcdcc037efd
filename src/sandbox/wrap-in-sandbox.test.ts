import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentSandboxPlan, type SandboxPlan } from './sandbox-plan.js';
import { sandboxStatus } from './sandbox-status.js';
import { bindCopies, bwrapOptionsEnd, bwrapWordEnd, privateIpc, remountReadOnly, wrapInSandbox } from './wrap-in-sandbox.js';

// Outside attack X36-09: a path NAMED like the end of bubblewrap's options (`a -- q -c b`), quoted in the shell string
// sandbox-runtime returns, matched a plain search — `--unshare-ipc` (and a --remount-ro / --ro-bind) landed inside the
// path: the sandbox ran in the host's IPC namespace and a hidden file under that name was readable.
const line = "bwrap --new-session --ro-bind / / --bind '/w/p -- q -c r.env' '/w/p -- q -c r.env' --ro-bind /dev/null '/c/x \"-- y -c\" z' --tmpfs /t -- /usr/bin/bash -c 'inner -- a -c b'";

describe('editing the bubblewrap line (X36-09)', () => {
  it('finds the end of the options outside quotes only', () => {
    const end = bwrapOptionsEnd(line);
    expect(line.slice(end)).toBe(" -- /usr/bin/bash -c 'inner -- a -c b'");
    expect(bwrapOptionsEnd("bwrap --bind '/a -- q -c b' '/a -- q -c b'")).toBe(-1);
  });

  it('puts --unshare-ipc right after bwrap, and the other options before the real end, never inside a path', () => {
    expect(privateIpc(['-c', line])![1]).toBe(`bwrap --unshare-ipc${line.slice('bwrap'.length)}`);
    expect(privateIpc(['-c', "bwrap --bind '/a -- q -c b' '/a'"])).toBeUndefined();
    expect(remountReadOnly(['-c', line], ['/t'])[1]).toBe(line.replace(" -- /usr/bin/bash", " --remount-ro '/t' -- /usr/bin/bash"));
    expect(bindCopies(['-c', line], [{ path: '/k', source: '/s' }])[1]).toBe(line.replace(" -- /usr/bin/bash", " --ro-bind '/s' '/k' -- /usr/bin/bash"));
  });

  it('X37-01: the arguments-file form of a long profile (`sh -c … srt-args <file> bwrap … --args 3 -- …`) gets --unshare-ipc after its bwrap word', () => {
    const long = `/bin/sh -c 'exec 3<"$1" && shift && exec "$@"' srt-args /proc/42/fd/7 bwrap --new-session --args 3 --bind '/w/bwrap x' '/w/bwrap x' -- /usr/bin/bash -c 'inner'`;
    expect(long.slice(0, bwrapWordEnd(long))).toBe(`/bin/sh -c 'exec 3<"$1" && shift && exec "$@"' srt-args /proc/42/fd/7 bwrap`);
    expect(privateIpc(['-c', long])![1]).toBe(long.replace('/fd/7 bwrap --new-session', '/fd/7 bwrap --unshare-ipc --new-session'));
    expect(bwrapWordEnd("echo 'bwrap --x' -- bash -c y")).toBe(-1);
  });

  /**
   * Runs `readlink /proc/self/ns/ipc` in a sandbox of the plan `makePlan` gives for a scratch root named `rootName` (with
   * its HOME and TMPDIR); checks it started and is not in this process's IPC namespace; returns the wrapped arguments.
   */
  async function ownIpcNamespace(prefix: string, rootName: string, makePlan: (dirs: { scratch: string; root: string; home: string; tmp: string }) => SandboxPlan): Promise<string[]> {
    const scratch = mkdtempSync(path.join(os.tmpdir(), prefix));
    try {
      const root = path.join(scratch, rootName);
      const home = path.join(scratch, 'home');
      const tmp = path.join(scratch, 'tmp');
      for (const dir of [root, home, tmp]) mkdirSync(dir, { recursive: true });
      const wrapped = await wrapInSandbox(makePlan({ scratch, root, home, tmp }), 'readlink /proc/self/ns/ipc', { cwd: root, env: { ...process.env, HOME: home, TMPDIR: tmp } });
      try {
        const ran = spawnSync(wrapped.file, wrapped.args, { cwd: root, env: wrapped.env, encoding: 'utf8' });
        expect(ran.status, ran.stderr).toBe(0);
        expect(ran.stdout.trim()).toMatch(/^ipc:\[\d+\]$/);
        expect(ran.stdout.trim()).not.toBe(spawnSync('readlink', ['/proc/self/ns/ipc'], { encoding: 'utf8' }).stdout.trim());
        return wrapped.args;
      } finally {
        wrapped.release();
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  it.skipIf(process.platform !== 'linux')('X37-01: a plan too long for one argument (sandbox-runtime\'s arguments file) still starts, in its own IPC namespace', async () => {
    if (!(await sandboxStatus()).available) return;
    const args = await ownIpcNamespace('pw-x37-01-', 'wt', ({ scratch, root, home, tmp }) => {
      // ~60 hidden files with ~3 KB paths: a bubblewrap line over the kernel's 128 KiB limit for one argument
      const deep = path.join(scratch, ...Array.from({ length: 14 }, (_, index) => `${String(index).padStart(2, '0')}${'d'.repeat(200)}`));
      mkdirSync(deep, { recursive: true });
      const hidden = Array.from({ length: 60 }, (_, index) => path.join(deep, `${index}${'s'.repeat(200)}.env`));
      for (const file of hidden) writeFileSync(file, 'SECRET=1\n');
      return { writable: [root, home, tmp], readOnlyWithin: [], unreadable: hidden, allowedHosts: [] };
    });
    expect(args.join(' ')).toContain('srt-args');
  }, 60_000);

  it.skipIf(process.platform !== 'linux')('a sandbox whose writable path is named `… -- q -c …` still has its own IPC namespace', async () => {
    if (!(await sandboxStatus()).available) return;
    await ownIpcNamespace('pw-x36-09-', 'p -- q -c r.env', ({ scratch, root, home, tmp }) => agentSandboxPlan({ root, home, tmp, gitCommonDir: path.join(scratch, '.git'), otherWorktrees: [] }));
  }, 60_000);

  it('X37-07: a hidden directory whose path holds a quote (sandbox-runtime writes it \'"\'"\') gets its read-only remount', () => {
    const quoted = `bwrap --ro-bind / / --tmpfs '/v/bob'"'"'s dir' -- /usr/bin/bash -c 'x'`;
    expect(remountReadOnly(['-c', quoted], ["/v/bob's dir"])[1]).toBe(quoted.replace(" -- /usr/bin/bash", " --remount-ro '/v/bob'\\''s dir' -- /usr/bin/bash"));
  });
});
