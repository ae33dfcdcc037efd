/**
 * ESCAPE REPRODUCTION (outside attack X2, 2026-12-02), now the regression test of its fixes.
 *
 * The resident server (src/cli/resident-server.ts) runs OUTSIDE every sandbox and serves any
 * client that can connect to its socket, with the client's cwd and ENVIRONMENT (PATH included:
 * the git it spawns is looked up in the caller's PATH). Its socket lies in the orchestrator's
 * <tmp>/polywave-<uid>/ (or $XDG_RUNTIME_DIR/polywave/), which every sandbox sees read-only — and a
 * read-only bind does not stop connect(). The only thing between an agent and that server is
 * sandbox-runtime's seccomp helper (apply-seccomp, which refuses socket(AF_UNIX)). When the helper
 * is absent (an architecture it has no binary for, a package without vendor/, a noexec mount),
 * sandbox-runtime only warns and polywave still reports the sandbox "available": agents start,
 * and then one `polywave-fast scan-stubs <hidden file>` reads what the plan hides, and one
 * `polywave-fast hook subagent-stop` with PATH=<worktree>/bin runs the agent's own "git" outside
 * the sandbox (shown by hand in the report).
 *
 * 1. Defence in depth (fixed: src/sandbox/sandbox-plan.ts residentSocketDirs): the server's socket is not even visible inside an agent's
 *    sandbox (its directory belongs in the plan's unreadable set).
 * 2. Fail closed (fixed: src/sandbox/sandbox-status.ts): without the seccomp helper the sandbox is not reported available.
 * 3. The leak itself in such a degraded sandbox (fixed: such a sandbox is refused, SANDBOX_UNAVAILABLE): a file the plan hides is read
 *    through the server.
 *
 * 2 and 3 run on a copy of dist/sandbox (run `npm run build` first) with a copy of
 * sandbox-runtime that has no vendor/seccomp; nothing of the real installation is touched.
 */
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { buildAgentSandboxPlan, createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/index.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import { residentSocketPath } from '../src/cli/resident-server.js';
import { resetSandbox, sandboxStatus, type SandboxPlan } from '../src/sandbox/index.js';
import type { TestRepo } from './support/git-repo.js';
import { createAgentLayout } from './support/agent-layout.js';

const run = promisify(execFile);
const available = (await sandboxStatus()).available;
const packageRoot = path.resolve(import.meta.dirname, '..');
const cli = path.join(packageRoot, 'bin', 'polywave.js');
const fastClient = path.join(packageRoot, 'bin', 'polywave-fast');
const branch = 'polywave/resident/wave1-agent-A';
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));
const secret = 'TODO CANARY-SECRET-KEY-x2-91b7';

let repo: TestRepo;
let executor: ToolExecutor | undefined;
let context: ToolContext;
let plan: SandboxPlan;
let orchestratorEnv: Record<string, string>;
let socket: string;
let secretFile: string;
let agentEnv: Record<string, string>;

beforeAll(async () => {
  if (!available) return;
  const layout = await createAgentLayout(branch);
  repo = layout.repo;
  const { worktree, home, tmp } = layout;
  const userHome = repo.sibling('user-home');
  for (const dir of [path.join(userHome, '.ssh'), repo.sibling('orchestrator-tmp')]) mkdirSync(dir, { recursive: true });
  secretFile = path.join(userHome, '.ssh', 'id_rsa');
  writeFileSync(secretFile, `${secret}\n`);
  // The orchestrator's environment: its TMPDIR decides where its resident server listens.
  orchestratorEnv = { ...(repo.env as Record<string, string>), TMPDIR: repo.sibling('orchestrator-tmp') };
  delete orchestratorEnv.XDG_RUNTIME_DIR;
  delete orchestratorEnv.POLYWAVE_RESIDENT_SOCKET;
  socket = residentSocketPath(orchestratorEnv);
  await run(process.execPath, [cli, 'resident', 'start', '--idle-timeout', '120'], { env: orchestratorEnv, cwd: repo.dir });
  expect(existsSync(socket)).toBe(true);
  agentEnv = { ...(repo.env as Record<string, string>), HOME: home, TMPDIR: tmp };
  const jail = await createJail({ root: worktree, ownedFiles: ['src/a.ts', 'probe.sh'], branch }, { env: repo.env });
  plan = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: orchestratorEnv, userHome });
  // ~/.ssh is hidden: by itself, or with the whole home (X10 N1b)
  expect(plan.unreadable.some((hidden) => path.join(userHome, '.ssh').startsWith(hidden))).toBe(true);
  executor = createToolExecutor(plan, { cwd: jail.root, env: agentEnv });
  context = { jail, env: agentEnv, signal: new AbortController().signal, toolTimeoutMs: 30_000, maxToolOutputBytes: 30_000, branch, sandbox: plan, toolExecutor: executor };
}, 60_000);

afterAll(async () => {
  if (available) await run(process.execPath, [cli, 'resident', 'stop'], { env: orchestratorEnv }).catch(() => undefined);
  await executor?.stop();
  await resetSandbox();
});

/** `$(echo <base64> | base64 -d)`: a path the static bash check cannot see (as any computed path). */
const hidden = (value: string) => `"$(echo ${Buffer.from(value).toString('base64')} | base64 -d)"`;

describe.skipIf(!available)('the resident server is out of a sandboxed agent\'s reach', () => {
  it('inside the agent\'s sandbox the server\'s socket cannot be seen, connected to, or used', async () => {
    const command = [
      `S=${hidden(socket)}`,
      '[ -e "$S" ] && echo "SOCKET VISIBLE" || echo "socket hidden"',
      `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('CONNECTED')" "$S" 2>&1 | tail -1`,
      `POLYWAVE_RESIDENT_SOCKET="$S" ${hidden(fastClient)} scan-stubs ${hidden(secretFile)} 2>&1 | tail -3`,
    ].join('\n');
    // The static bash check refuses a visible POLYWAVE_RESIDENT_SOCKET=… (a usability filter, not the
    // boundary): the agent puts the same lines in a script of its own.
    const write = await runToolCall(tools.get('write_file' as never)!, { path: 'probe.sh', content: `${command}\n` }, context, { denials: [] }, 'w1');
    expect(write.isError, write.output).toBe(false);
    const result = await runToolCall(tools.get('bash' as never)!, { command: 'bash probe.sh' }, context, { denials: [] }, 'b1');
    expect(result.output).not.toContain('CONNECTED'); // holds today: seccomp refuses socket(AF_UNIX)
    expect(result.output).not.toContain('CANARY-SECRET'); // holds today, for the same reason only
    // Today: "SOCKET VISIBLE" — the socket is bound in read-only; only the seccomp helper stands between.
    expect(result.output, result.output).toContain('socket hidden');
  }, 60_000);

  describe('without sandbox-runtime\'s seccomp helper', () => {
    let copy: string;
    beforeAll(() => {
      // A copy of polywave's sandbox modules beside a copy of sandbox-runtime without vendor/seccomp.
      copy = repo.sibling('degraded');
      const runtime = path.join(packageRoot, 'node_modules', '@anthropic-ai', 'sandbox-runtime');
      const runtimeCopy = path.join(copy, 'node_modules', '@anthropic-ai', 'sandbox-runtime');
      mkdirSync(runtimeCopy, { recursive: true });
      cpSync(path.join(runtime, 'package.json'), path.join(runtimeCopy, 'package.json'));
      cpSync(path.join(runtime, 'dist'), path.join(runtimeCopy, 'dist'), { recursive: true });
      for (const name of readdirSync(path.join(packageRoot, 'node_modules'))) {
        if (name !== '@anthropic-ai' && !name.startsWith('.')) symlinkSync(path.join(packageRoot, 'node_modules', name), path.join(copy, 'node_modules', name));
      }
      for (const dir of ['sandbox', 'errors', 'store']) cpSync(path.join(packageRoot, 'dist', dir), path.join(copy, 'dist', dir), { recursive: true });
      writeFileSync(path.join(copy, 'package.json'), '{"type":"module"}\n');
    });

    /** Runs `program` (an ES module body) in a node of its own with the copy's modules. */
    const inCopy = (program: string) => {
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', program], { cwd: copy, env: { ...process.env, COPY: copy }, encoding: 'utf8', timeout: 60_000 });
      return `${result.stdout}${result.stderr}`;
    };

    it('the sandbox is not reported available (it would not block unix sockets)', () => {
      const out = inCopy(`const { sandboxStatus } = await import(process.env.COPY + '/dist/sandbox/sandbox-status.js'); console.log(JSON.stringify(await sandboxStatus())); process.exit(0);`);
      const status = JSON.parse(out.trim().split('\n').pop()!) as { available: boolean; detail: string };
      // Today: {"available":true,…,"detail":"bubblewrap via @anthropic-ai/sandbox-runtime (seccomp not available - unix socket access not restricted)"}
      expect(status.available, status.detail).toBe(false);
    }, 60_000);

    it('a file the plan hides is not read through the resident server', () => {
      const command = [`S=${hidden(socket)}`, `cat ${hidden(secretFile)} 2>&1 | tail -1`, `POLYWAVE_RESIDENT_SOCKET="$S" ${hidden(fastClient)} scan-stubs ${hidden(secretFile)} 2>&1`].join('\n');
      const program = [
        `const { wrapInSandbox } = await import(process.env.COPY + '/dist/sandbox/wrap-in-sandbox.js');`,
        `const { resetSandboxManager } = await import(process.env.COPY + '/dist/sandbox/sandbox-manager.js');`,
        `const { spawnSync } = await import('node:child_process');`,
        `const plan = ${JSON.stringify(plan)}; const env = ${JSON.stringify(agentEnv)}; const cwd = ${JSON.stringify(plan.writable[0])};`,
        `const w = await wrapInSandbox(plan, ${JSON.stringify(command)}, { cwd, env });`,
        `const r = spawnSync(w.file, w.args, { cwd, env: w.env, encoding: 'utf8' });`,
        `console.log(r.stdout + r.stderr); w.release(); await resetSandboxManager(); process.exit(0);`,
      ].join('\n');
      const out = inCopy(program);
      // Such a sandbox is refused outright (fail closed: SANDBOX_UNAVAILABLE, the command never runs). Before the fix
      // the direct read was contained but the server (outside the sandbox) answered with the hidden file's line:
      // {"hits":[{"file":"…/user-home/.ssh/id_rsa","line":1,"pattern":"TODO","context":"TODO CANARY-SECRET-KEY-x2-91b7"}]}
      expect(out).toMatch(/SANDBOX_UNAVAILABLE/);
      expect(out, out).not.toContain('CANARY-SECRET');
    }, 60_000);
  });
});
