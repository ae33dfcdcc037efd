/**
 * polywave's second seccomp filter without a C compiler (issue 11; outside attacks X2 #6, X35-11, follow-up X36-06):
 * where dist/native/polywave-seccomp was not built, every polywave sandbox still gets the same filter — bubblewrap
 * loads it as a BPF program (src/sandbox/seccomp-program.ts, `--seccomp`) — so the kernel keyring calls and Unix
 * datagram socketpairs stay refused and the sandbox is available; before, it was unavailable there unless the user
 * opted out, and the opt-out left both open. A sandbox with network hosts allowed still needs the native program (the
 * library's network bridge inside the sandbox needs datagram pairs): refused there, as is the claude-code backend. Runs on a copy of dist/sandbox without dist/native (`npm run build`
 * first), nothing installed touched; and in process with POLYWAVE_SECCOMP_PROGRAM=bpf beside the built program.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createClaudeCodeBackend } from '../src/agents/backends/claude-code.js';
import type { ModelSpec } from '../src/agents/contract.js';
import { resetSandbox, sandboxStatus, wrapInSandbox } from '../src/sandbox/index.js';
import { seccompProgram } from '../src/sandbox/seccomp-program.js';
import { seccompProgramVariable } from '../src/sandbox/wrap-in-sandbox.js';
import { createEscapeLayout, escapeRequest } from './support/sandbox-escapes.js';
import { makeTempDir } from './support/temp.js';

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const supported = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch);
const available = supported && (await sandboxStatus()).available;

/** What a sandboxed command reports: the keyring call and a datagram pair refused (EPERM), a stream pair made. */
const probe = String.raw`python3 - <<'PY'
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
nr = {'x86_64': 250, 'aarch64': 219}[os.uname().machine]
got = libc.syscall(nr, 0, ctypes.c_long(-3), 0)
print('KEYCTL', 'EPERM' if got < 0 and ctypes.get_errno() == errno.EPERM else 'ALLOWED %d' % got)
try:
    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    print('DGRAM ALLOWED')
except PermissionError:
    print('DGRAM EPERM')
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
a.sendall(b'ok')
print('STREAM', b.recv(2).decode())
PY`;

afterAll(async () => {
  delete process.env[seccompProgramVariable];
  await resetSandbox();
});

describe.runIf(supported)('the BPF program', () => {
  it('is the native program\'s filter: 18 instructions of 8 bytes, starting with the architecture check', () => {
    const bytes = seccompProgram();
    expect(bytes.length).toBe(18 * 8);
    // ld [4] (seccomp_data.arch)
    expect(bytes.readUInt16LE(0)).toBe(0x20);
    expect(bytes.readUInt32LE(4)).toBe(4);
    // the last instruction allows
    expect(bytes.readUInt16LE(17 * 8)).toBe(0x06);
    expect(bytes.readUInt32LE(17 * 8 + 4)).toBe(0x7fff0000);
    expect(() => seccompProgram('ia32')).toThrow(/x64 and arm64 only/);
  });
});

describe.runIf(available)('polywave sandboxes under the BPF program (POLYWAVE_SECCOMP_PROGRAM=bpf, in process)', () => {
  it('refuses the keyring calls and Unix datagram pairs; stream pairs, the command and its output are as always', async () => {
    process.env[seccompProgramVariable] = 'bpf';
    const work = makeTempDir('polywave-bpf-');
    const wrapped = await wrapInSandbox({ writable: [work], readOnlyWithin: [], unreadable: [], allowedHosts: [] }, probe, { cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work } });
    try {
      expect(wrapped.args.join(' ')).toContain('--seccomp 58');
      const result = spawnSync(wrapped.file, wrapped.args, { cwd: work, env: wrapped.env, encoding: 'utf8', timeout: 60_000 });
      expect(result.stdout, result.stderr).toContain('KEYCTL EPERM');
      expect(result.stdout).toContain('DGRAM EPERM');
      expect(result.stdout).toContain('STREAM ok');
    } finally {
      wrapped.release();
      delete process.env[seccompProgramVariable];
    }
  }, 60_000);
});

describe.runIf(available)('a sandbox with network hosts under the BPF program', () => {
  it("is refused (SANDBOX_UNAVAILABLE): bubblewrap would filter sandbox-runtime's network bridge too, which needs datagram pairs", async () => {
    process.env[seccompProgramVariable] = 'bpf';
    const work = makeTempDir('polywave-bpf-net-');
    try {
      await expect(wrapInSandbox({ writable: [work], readOnlyWithin: [], unreadable: [], allowedHosts: ['registry.npmjs.org'] }, 'true', { cwd: work, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work } })).rejects.toMatchObject({
        code: 'SANDBOX_UNAVAILABLE',
        message: expect.stringMatching(/network hosts allowed \(registry\.npmjs\.org\).*npm rebuild polywave/),
      });
    } finally {
      delete process.env[seccompProgramVariable];
    }
  }, 60_000);
});

describe.runIf(available)('the claude-code backend without the native program', () => {
  it("refuses to start (SANDBOX_UNAVAILABLE, how to fix it): only a prefix program puts Claude Code's Bash under the filter", async () => {
    const layout = await createEscapeLayout();
    const model: ModelSpec = { backend: 'claude-code', modelId: 'claude-sonnet-4-5', raw: 'claude-code:claude-sonnet-4-5' };
    const { request } = await escapeRequest(layout, model, { [seccompProgramVariable]: 'bpf' });
    const outcome = await createClaudeCodeBackend().run(request);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('config');
    expect(outcome.failure?.message).toMatch(/^SANDBOX_UNAVAILABLE: .*polywave-seccomp, which was not built here.*npm rebuild polywave.*POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER=1/);
  }, 60_000);
});

describe.runIf(supported && existsSync(path.join(packageRoot, 'dist', 'sandbox', 'seccomp-program.js')))('the sandbox where polywave-seccomp was not built', () => {
  it('is available, and its commands run under the same filter (bubblewrap loads the BPF program); the opt-out drops it', () => {
    const copy = makeTempDir('polywave-no-filter-');
    mkdirSync(path.join(copy, 'node_modules'));
    for (const name of readdirSync(path.join(packageRoot, 'node_modules'))) {
      if (!name.startsWith('.')) symlinkSync(path.join(packageRoot, 'node_modules', name), path.join(copy, 'node_modules', name));
    }
    for (const dir of ['sandbox', 'errors', 'store']) cpSync(path.join(packageRoot, 'dist', dir), path.join(copy, 'dist', dir), { recursive: true });
    expect(existsSync(path.join(copy, 'dist', 'native'))).toBe(false);
    writeFileSync(path.join(copy, 'package.json'), '{"type":"module"}\n');
    const work = makeTempDir('polywave-no-filter-work-');
    const runIn = (env: Record<string, string>) => {
      const program = [
        `const { sandboxStatus } = await import(process.env.ROOT + '/dist/sandbox/sandbox-status.js');`,
        `const { wrapInSandbox } = await import(process.env.ROOT + '/dist/sandbox/wrap-in-sandbox.js');`,
        `const { spawnSync } = await import('node:child_process');`,
        `const status = await sandboxStatus();`,
        `if (!status.available) { console.log(JSON.stringify({ status })); process.exit(0); }`,
        `const wrapped = await wrapInSandbox({ writable: [process.env.WORK], readOnlyWithin: [], unreadable: [], allowedHosts: [] }, process.env.PROBE, { cwd: process.env.WORK, env: { PATH: process.env.PATH, HOME: process.env.WORK } });`,
        `const run = spawnSync(wrapped.file, wrapped.args, { cwd: process.env.WORK, env: wrapped.env, encoding: 'utf8' });`,
        `console.log(JSON.stringify({ status, stdout: run.stdout, stderr: run.stderr })); process.exit(0);`,
      ].join('\n');
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', program], { cwd: copy, env: { ...process.env, POLYWAVE_SANDBOX: '', POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER: '', [seccompProgramVariable]: '', ...env, ROOT: copy, WORK: work, PROBE: probe }, encoding: 'utf8', timeout: 60_000 });
      return JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}') as { status: { available: boolean; detail?: string }; stdout?: string; stderr?: string };
    };
    const filtered = runIn({});
    expect(filtered.status.available, filtered.status.detail).toBe(true);
    expect(filtered.stdout, filtered.stderr).toContain('KEYCTL EPERM');
    expect(filtered.stdout).toContain('DGRAM EPERM');
    expect(filtered.stdout).toContain('STREAM ok');
    // The explicit opt-out: no second filter at all (what it accepts, shown).
    const optedOut = runIn({ POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER: '1' });
    expect(optedOut.status.available).toBe(true);
    expect(optedOut.stdout, optedOut.stderr).toContain('DGRAM ALLOWED');
    expect(optedOut.stdout).toContain('KEYCTL ALLOWED');
  }, 90_000);
});
