/**
 * bash: checked by the jail before it runs, run in its own process group with cwd = root and a
 * timeout, audited with git after it runs (a change outside ownership or a moved branch is
 * reported to the model as an error with a denial — the files are not reverted).
 *
 * With a sandbox plan in the context the command runs inside the OS sandbox (sandbox/) — in the
 * agent's tool executor when it has one (one sandbox per agent, a plain process start per call),
 * else in a sandbox of its own: writes
 * outside the plan fail with a read-only file system, the network is the plan's allow-list, and
 * every process the command started dies with it (a PID namespace: `set -m`, `setsid`, `nohup`,
 * double forks and `disown` included). Refusals the sandbox caused are reported as denials.
 */
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { createGit } from '../../git/git-cli.js';
import { statusWithBranch } from '../../git/status-with-branch.js';
import { isCredentialVariable } from '../credentials.js';
import { staleViewCode } from '../sandbox/appeared-since-start.js';
import { gitCommitHint, isGitWriteRefusal, sandboxDenialsIn } from '../sandbox/sandbox-denials.js';
import { vanishedMountAttempts, wrapInSandbox } from '../../sandbox/wrap-in-sandbox.js';
import { killWithThisProcess } from '../../sandbox/piped-spawn.js';
import { denialResult, defineTool, errorMessage, errorResult } from './shared.js';
import type { AgentTool, ToolResult } from './types.js';

/** Output kept in memory per call: the first and the last half of this. */
const maxCapturedBytes = 2 * 1024 * 1024;
/** After SIGTERM, SIGKILL follows after this long. */
const killGraceMs = 2000;

/** Variables removed from the child environment: they make bash run files or change what `cd` and git do. */
const strippedVariables = ['BASH_ENV', 'ENV', 'CDPATH', 'PWD', 'OLDPWD', 'SHELLOPTS', 'BASHOPTS', 'GLOBIGNORE', 'PROMPT_COMMAND', 'GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT', 'POLYWAVE_ALLOW_MAIN_COMMIT'];

/**
 * The environment of an agent's bash commands and of its sandboxed tool executor: `env` without the
 * variables above and without credentials (`*_API_KEY`, `*_AUTH_TOKEN`, `GH_TOKEN`… — see
 * isCredentialVariable): the model keys stay with the backend, a command cannot print or commit them.
 */
export function bashEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || strippedVariables.includes(name) || name.startsWith('BASH_FUNC_') || isCredentialVariable(name, value)) continue;
    out[name] = value;
  }
  return out;
}

interface RunResult {
  output: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  droppedBytes: number;
  spawnError?: string;
}

/** Keeps the head and the tail of a stream, counting what falls out in between. */
class Capture {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  dropped = 0;
  constructor(private readonly half: number) {}
  push(chunk: Buffer): void {
    if (this.headBytes < this.half) {
      const take = chunk.subarray(0, this.half - this.headBytes);
      this.head.push(take);
      this.headBytes += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (chunk.length === 0) return;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tailBytes > this.half && this.tail.length > 0) {
      const first = this.tail[0]!;
      const excess = this.tailBytes - this.half;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.dropped += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.dropped += excess;
      }
    }
  }
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    return this.dropped > 0 ? `${head}\n[… ${this.dropped} bytes of output dropped …]\n${tail}` : head + tail;
  }
}

/** A started command: how it ends and how to stop it. */
interface StartedCommand {
  done: Promise<{ exitCode: number | null; signal: NodeJS.Signals | null; spawnError?: string }>;
  kill(signal: 'SIGTERM' | 'SIGKILL'): void;
}

/** `bash -c` spawned here in a process group of its own (no sandbox, or a sandbox per call). */
function spawnLocal(spawnSpec: { file: string; args: string[] }, options: { cwd: string; env: Record<string, string> }, onOutput: (chunk: Buffer) => void): StartedCommand {
  const child = spawn(spawnSpec.file, spawnSpec.args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  // A23-54: the command's group also ends with this process, SIGKILLed or not (a killed worker left it running).
  const releaseGroup = killWithThisProcess(child.pid);
  const kill = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is gone
    }
  };
  const done = new Promise<{ exitCode: number | null; signal: NodeJS.Signals | null; spawnError?: string }>((resolve) => {
    let exit: { exitCode: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    const finish = (spawnError?: string) => {
      if (settled) return;
      settled = true;
      resolve({ exitCode: exit?.exitCode ?? null, signal: exit?.signal ?? null, ...(spawnError !== undefined ? { spawnError } : {}) });
    };
    child.stdout.on('data', onOutput);
    child.stderr.on('data', onOutput);
    child.on('error', (error) => finish(errorMessage(error)));
    child.on('exit', (code, signal) => {
      exit = { exitCode: code, signal };
      // Background children of the command must not outlive the call.
      kill('SIGKILL');
      releaseGroup();
      const fallback = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, 1000);
      fallback.unref();
    });
    child.on('close', () => finish());
  });
  return { done, kill };
}

/** Captures a started command's output and stops it at the timeout or when the run is aborted. */
async function supervise(start: (onOutput: (chunk: Buffer) => void) => StartedCommand, options: { timeoutMs: number; signal: AbortSignal }): Promise<RunResult> {
  const capture = new Capture(maxCapturedBytes / 2);
  let timedOut = false;
  let aborted = false;
  const started = start((chunk) => capture.push(chunk));
  const stop = () => {
    started.kill('SIGTERM');
    setTimeout(() => started.kill('SIGKILL'), killGraceMs).unref();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, options.timeoutMs);
  const onAbort = () => {
    aborted = true;
    stop();
  };
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const end = await started.done.catch((error: unknown) => ({ exitCode: null, signal: null, spawnError: errorMessage(error) }));
    return { output: capture.text(), exitCode: end.exitCode, signal: end.signal, timedOut, aborted, droppedBytes: capture.dropped, ...(end.spawnError !== undefined ? { spawnError: end.spawnError } : {}) };
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', onAbort);
  }
}

const bashInput = z.object({
  command: z.string().min(1).describe('The bash command, run with the worktree root as the working directory.'),
  timeout_ms: z.number().int().positive().optional().describe('Timeout in milliseconds (capped by the per-tool limit).'),
  description: z.string().optional().describe('A few words on what the command does (for the journal).'),
});

export const bashTool: AgentTool = defineTool<z.infer<typeof bashInput>>({
  name: 'bash',
  description:
    'Run a bash command in the worktree (cwd = worktree root). Stay inside the worktree: no cd outside, no ~ or $HOME paths, no git checkout/switch/stash/push/reset --hard. Output is cut to the output limit; the exit status is appended.',
  inputSchema: bashInput,
  async execute(input, context): Promise<ToolResult> {
    const decision = await context.jail.checkBash(input.command);
    // The file the jail refused when it knows it (X6 N9: the report names it), else the command.
    if (!decision.allowed) return denialResult('bash', decision, decision.target ?? input.command);
    const root = context.jail.root;
    const git = createGit(root, { env: context.env });
    let headBefore: string | undefined;
    // Files already changed before this call are not this call's doing (the end-of-run E42
    // audit still judges them): only new changes are blamed on the command.
    let dirtyBefore = new Set<string>();
    try {
      // HEAD and the status in one process (status --branch), not a rev-parse beside a status.
      const { head, entries: status } = await statusWithBranch(git);
      headBefore = head;
      dirtyBefore = new Set(status.flatMap((entry) => (entry.from === undefined ? [entry.path] : [entry.path, entry.from])));
    } catch {
      headBefore = undefined;
    }
    const timeoutMs = Math.max(1, Math.min(input.timeout_ms ?? context.toolTimeoutMs, context.toolTimeoutMs));
    const env = bashEnvironment(context.env);
    let run: RunResult;
    const executor = context.sandbox !== undefined && context.toolExecutor?.plan === context.sandbox ? context.toolExecutor : undefined;
    if (executor) {
      // The agent's sandbox is already running (its tool executor): a plain process start there.
      run = await supervise((onOutput) => executor.run(input.command, { cwd: root, env, onOutput }), { timeoutMs, signal: context.signal });
    } else {
      // (again with a fresh wrap when bubblewrap stopped on a mount point that vanished after the wrap: it ran nothing)
      for (let attempt = 1; ; attempt += 1) {
        let spawnSpec = { file: 'bash', args: ['-c', input.command], env };
        let release = (): void => {};
        let ranNothing = (_output: string): string | undefined => undefined;
        if (context.sandbox) {
          try {
            const wrapped = await wrapInSandbox(context.sandbox, input.command, { cwd: root, env, signal: context.signal, fresh: attempt > 1 });
            spawnSpec = { file: wrapped.file, args: wrapped.args, env: wrapped.env };
            release = wrapped.release;
            ranNothing = wrapped.ranNothing;
          } catch (error) {
            return errorResult(`cannot start the sandbox for this command: ${errorMessage(error)}`);
          }
        }
        try {
          run = await supervise((onOutput) => spawnLocal(spawnSpec, { cwd: root, env: spawnSpec.env }, onOutput), { timeoutMs, signal: context.signal });
        } finally {
          release();
        }
        if (!context.sandbox || attempt >= vanishedMountAttempts || run.exitCode !== 1 || run.timedOut || run.aborted || ranNothing(run.output) === undefined) break;
      }
    }
    // X39-01: a path the sandbox does not hide appeared while the command ran: it was killed, and what it printed is
    // withheld (it may hold what it read there); the backend ends the run (transient) after this call.
    if (executor?.staleView !== undefined) {
      const reason = `${executor.staleView} — the command and everything it started were killed and its output withheld; this run ends and is relaunched in a sandbox that hides it`;
      return { output: `[${staleViewCode}] ${reason}`, isError: true, denial: { tool: 'bash', code: staleViewCode, reason, target: input.command } };
    }
    if (run.spawnError !== undefined) return errorResult(`cannot run bash: ${run.spawnError}`);
    let output = run.output;
    if (output !== '' && !output.endsWith('\n')) output += '\n';
    if (run.timedOut) output += `[timed out after ${timeoutMs} ms; the process group was killed]`;
    else if (run.aborted) output += '[aborted; the process group was killed]';
    else if (run.exitCode !== null) output += `[exit status ${run.exitCode}]`;
    else output += `[killed by ${run.signal ?? 'a signal'}]`;
    const failed = run.timedOut || run.aborted || run.exitCode !== 0;
    const sandboxDenials = context.sandbox ? sandboxDenialsIn(run.output, { plan: context.sandbox, cwd: root }) : [];
    if (context.sandbox && isGitWriteRefusal(input.command, run.output)) output += `\n${gitCommitHint}`;

    const audit = await context.jail.audit(headBefore !== undefined ? { baseCommit: headBefore } : {});
    const violations = audit.violations.filter(
      (violation) => violation.code === 'JAIL_BRANCH_MOVED' || (violation.code === 'JAIL_UNOWNED_CHANGE' && !(violation.path !== undefined && dirtyBefore.has(violation.path))),
    );
    if (violations.length === 0) {
      const sandboxDenial = sandboxDenials[0];
      if (sandboxDenial === undefined) return { output, isError: failed };
      return { output, isError: true, denial: { tool: 'bash', code: sandboxDenial.code, reason: sandboxDenials.map((denial) => denial.reason).join(' '), target: input.command } };
    }
    const warnings = violations.map((violation) => `WARNING (${violation.code}): ${violation.reason}`);
    output += `\n${warnings.join('\n')}\nThese changes were NOT reverted. Undo them (restore files you do not own, return to your branch) before you continue.`;
    const first = violations[0]!;
    return {
      output,
      isError: true,
      denial: { tool: 'bash', code: first.code, reason: violations.map((violation) => violation.reason).join(' '), target: first.path ?? input.command },
    };
  },
});
