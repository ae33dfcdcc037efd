/**
 * ESCAPE REPRODUCTIONS (outside attack X35-11/12/13, 2026-12-04), now the regression tests of their fixes.
 *
 * X35-11: kernel keyrings are not namespaced. From the sandbox, `/proc/keys` lists the user's keyring (`_uid.<uid>`);
 * KEYCTL_LINK of it into the sandbox's own session keyring gave possession, then KEYCTL_READ read every key in it
 * (Kerberos tickets in a KEYRING ccache, cached passphrases) and add_key planted one. native/polywave-seccomp.c now
 * refuses add_key, request_key and keyctl (EPERM) in every sandbox and in Claude Code's Bash (its shell prefix).
 *
 * X35-12: bubblewrap ran without `--unshare-ipc`: a host process's System V shared memory segment (and message
 * queues, semaphores) could be read and written from the sandbox. polywave's wrapper now adds `--unshare-ipc` (a
 * private IPC namespace: System V IPC still works inside, for a test suite's database); Claude Code's Bash, whose
 * bubblewrap polywave does not build, gets the calls refused instead (`polywave-seccomp --no-ipc`).
 *
 * The secrets are real: a key added to the test process's user keyring and a SysV segment made by a host process,
 * both read back on the host afterwards to show nothing was planted or overwritten.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seccompShellPrefixScript } from '../src/agents/backends/claude-code.js';
import { createJail } from '../src/agents/jail/jail.js';
import { buildAgentSandboxPlan, createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/index.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { datagramFilter } from '../src/sandbox/wrap-in-sandbox.js';
import type { TestRepo } from './support/git-repo.js';
import { createAgentLayout } from './support/agent-layout.js';

const available = (await sandboxStatus()).available && process.platform === 'linux' && datagramFilter() !== undefined;
const branch = 'polywave/keys/wave1-agent-A';
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));
const keyPayload = `X35SECRET-keyring-${process.pid}`;
const shmPayload = `X35SECRET-sysv-shm-${process.pid}`;
const shmKey = 0x35000000 + (process.pid % 0xffff);

/** The probe an agent runs: link the user's keyring, read every key it lists, plant one; read and write the host's segment. */
const probe = String.raw`
import ctypes, os, re, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = {'x86_64': dict(add_key=248, keyctl=250, shmget=29, shmat=30, shmdt=67), 'aarch64': dict(add_key=217, keyctl=219, shmget=194, shmat=196, shmdt=197)}[os.uname().machine]
def sys_(name, *args):
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(nr[name], *args)
    return result, ctypes.get_errno()
keys = open('/proc/keys').read().splitlines()
for line in keys:
    fields = line.split()
    if len(fields) > 8 and fields[7] == 'keyring' and fields[8].startswith('_uid.'):
        print('LINK', fields[8], sys_('keyctl', 8, int(fields[0], 16), ctypes.c_long(-3)))
for line in open('/proc/keys').read().splitlines():
    fields = line.split()
    buffer = ctypes.create_string_buffer(256)
    got, errno = sys_('keyctl', 11, int(fields[0], 16), buffer, 256)
    if got > 0: print('READ', fields[8] if len(fields) > 8 else '?', buffer.raw[:got])
print('ADD_KEY', sys_('add_key', b'user', b'x35planted', b'planted', 7, ctypes.c_long(-4)))
print('IPC_NS', os.readlink('/proc/self/ns/ipc'))
shmid, errno = sys_('shmget', int(sys.argv[1]), 0, 0)
print('SHMGET', shmid, errno)
if shmid >= 0:
    libc.syscall.restype = ctypes.c_void_p
    address = libc.syscall(nr['shmat'], shmid, None, 0)
    if address not in (None, ctypes.c_void_p(-1).value):
        print('SHM_READ', ctypes.string_at(address, 64).split(b'\0')[0])
        ctypes.memmove(address, b'WRITTEN-FROM-SANDBOX\0', 21)
# System V IPC inside the sandbox's own namespace still works (a database a test suite starts needs it)
own, errno = sys_('shmget', 0, 4096, 0o1600)
print('OWN_SHM', 'ok' if own >= 0 else 'refused %d' % errno)
`;

/** A host process holding a SysV segment with the secret; it prints the segment's content when told to end. */
const holder = String.raw`
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = libc.shmget(int(sys.argv[1]), 4096, 0o1600 | 0o600)
address = libc.shmat(shmid, None, 0)
ctypes.memmove(address, sys.argv[2].encode() + b'\0', len(sys.argv[2]) + 1)
print('READY', flush=True)
sys.stdin.read()
print('HOST_SEES', ctypes.string_at(address, 64).split(b'\0')[0].decode(), flush=True)
libc.shmctl(shmid, 0, None)
`;

let repo: TestRepo;
let executor: ToolExecutor | undefined;
let context: ToolContext;
let host: ChildProcess | undefined;
let hostOutput = '';
let keyId = '';
let scratch = '';

/** python3 on the host: the key's id in the user keyring. */
function addHostKey(): string {
  const added = spawnSync('python3', ['-c', `import ctypes;libc=ctypes.CDLL(None);libc.syscall.restype=ctypes.c_long;print(libc.syscall(${os.arch() === 'arm64' ? 217 : 248}, b'user', b'x35-test-key', b'${keyPayload}', ${keyPayload.length}, ctypes.c_long(-4)))`], { encoding: 'utf8' });
  return added.stdout.trim();
}

beforeAll(async () => {
  if (!available) return;
  scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-keys-'));
  keyId = addHostKey();
  expect(Number(keyId)).toBeGreaterThan(0);
  writeFileSync(path.join(scratch, 'holder.py'), holder);
  host = spawn('python3', [path.join(scratch, 'holder.py'), String(shmKey), shmPayload], { stdio: ['pipe', 'pipe', 'inherit'] });
  host.stdout!.on('data', (chunk: Buffer) => (hostOutput += chunk.toString()));
  for (let i = 0; i < 200 && !hostOutput.includes('READY'); i += 1) await sleep(20);
  expect(hostOutput).toContain('READY');
  const layout = await createAgentLayout(branch);
  repo = layout.repo;
  const { worktree, home, tmp } = layout;
  const env = { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
  const jail = await createJail({ root: worktree, ownedFiles: ['src/a.ts', 'probe.py'], branch }, { env: repo.env });
  const plan = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
  executor = createToolExecutor(plan, { cwd: jail.root, env });
  context = { jail, env, signal: new AbortController().signal, toolTimeoutMs: 30_000, maxToolOutputBytes: 30_000, branch, sandbox: plan, toolExecutor: executor };
}, 60_000);

afterAll(async () => {
  host?.stdin?.end();
  await sleep(200);
  host?.kill('SIGKILL');
  // KEYCTL_INVALIDATE of this test's key and of any key a failing run planted
  if (keyId) spawnSync('python3', ['-c', `import ctypes;libc=ctypes.CDLL(None);libc.syscall.restype=ctypes.c_long\nfor line in open('/proc/keys'):\n    if 'x35-test-key' in line or 'x35planted' in line: libc.syscall(${os.arch() === 'arm64' ? 219 : 250}, 21, int(line.split()[0], 16))`]);
  await executor?.stop();
  await resetSandbox();
});

/** The host's user keyring listing (key descriptions), read on the host. */
const hostKeys = (): string => readFileSync('/proc/keys', 'utf8');
/** The host's own IPC namespace. */
const hostIpc = (): string => spawnSync('readlink', ['/proc/self/ns/ipc'], { encoding: 'utf8' }).stdout.trim();

describe.skipIf(!available)('X35-11/12: the kernel keyring and the host\'s System V IPC from a sandbox', () => {
  it('an agent\'s bash reads no key of the user\'s keyring, plants none, and neither sees nor writes a host process\'s shared memory', async () => {
    const write = await runToolCall(tools.get('write_file' as never)!, { path: 'probe.py', content: probe }, context, { denials: [] }, 'w1');
    expect(write.isError, write.output).toBe(false);
    const result = await runToolCall(tools.get('bash' as never)!, { command: `python3 probe.py ${shmKey}; echo "exit=$?"` }, context, { denials: [] }, 'b1');
    const output = result.output;
    // Before the fix: `LINK _uid.0 (0, 0)`, `READ x35-test-key b'X35SECRET-keyring-…'`, `ADD_KEY (<id>, 0)`,
    // the host's IPC namespace, `SHM_READ b'X35SECRET-sysv-shm-…'` and the host seeing WRITTEN-FROM-SANDBOX.
    expect(output).toContain('exit=0');
    expect(output).not.toContain(keyPayload);
    expect(output).not.toMatch(/^READ /m);
    expect(output).toMatch(/^ADD_KEY \(-1, 1\)$/m); // EPERM
    for (const line of output.split('\n').filter((text) => text.startsWith('LINK '))) expect(line).toMatch(/\(-1, 1\)$/);
    expect(hostKeys()).not.toContain('x35planted');
    expect(output).not.toContain(shmPayload);
    expect(output).toMatch(/^SHMGET -1 2$/m); // ENOENT: the host's segment does not exist in the sandbox's namespace
    const ipc = /^IPC_NS (.+)$/m.exec(output)?.[1];
    expect(ipc).toMatch(/^ipc:\[\d+\]$/);
    expect(ipc).not.toBe(hostIpc());
    expect(output).toMatch(/^OWN_SHM ok$/m);
    host!.stdin!.end();
    for (let i = 0; i < 100 && !hostOutput.includes('HOST_SEES'); i += 1) await sleep(20);
    expect(hostOutput).toContain(`HOST_SEES ${shmPayload}`);
  }, 60_000);

  it('Claude Code\'s Bash (its own bubblewrap, polywave\'s filter through CLAUDE_CODE_SHELL_PREFIX): keyring and System V IPC calls are refused', () => {
    const prefix = path.join(scratch, 'prefix.sh');
    writeFileSync(prefix, seccompShellPrefixScript(datagramFilter()!), { mode: 0o755 });
    writeFileSync(path.join(scratch, 'probe.py'), probe);
    // Run the way Claude Code runs a Bash command: `<prefix> '<command>'` (here on the host: the filter alone is under test).
    const ran = spawnSync(prefix, [`python3 ${path.join(scratch, 'probe.py')} ${shmKey}`], { encoding: 'utf8' });
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stdout).not.toContain(keyPayload);
    expect(ran.stdout).not.toMatch(/^READ /m);
    expect(ran.stdout).toMatch(/^ADD_KEY \(-1, 1\)$/m);
    expect(ran.stdout).toMatch(/^SHMGET -1 1$/m); // EPERM: refused, not merely absent
    expect(ran.stdout).not.toContain(shmPayload);
    expect(ran.stdout).toMatch(/^OWN_SHM refused 1$/m);
    expect(hostKeys()).not.toContain('x35planted');
  });
});
