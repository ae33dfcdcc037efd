/**
 * The claude-code backend: runs Claude Code itself (the Claude Agent SDK's native CLI) in the
 * agent's worktree, with polywave's rules enforced IN PROCESS through SDK hook callbacks:
 *
 * - PreToolUse → `jail.checkToolUse` for every tool call; the jail is the single authority, so an
 *   allowed call is answered `permissionDecision: 'allow'` and a refused one `'deny'` with the
 *   reason (the model receives it as an error tool_result).
 * - PostToolUse (Bash) → `jail.audit()`: a change the static check could not foresee is reported to
 *   the model as context and recorded as a denial.
 * - Stop (wave agents, E42) → refuses to finish while owned files have uncommitted changes or no
 *   completion report is on record; gives in after {@link maxStopBlocks} refusals.
 * - `set_completion` → an in-process MCP tool (`mcp__polywave__set_completion`) that calls
 *   `request.reportCompletion`.
 * - `git_commit` → an in-process MCP tool (`mcp__polywave__git_commit`): the `git_commit` tool's
 *   code (owned files only, on the agent branch), run in this process — outside the sandbox.
 *
 * SANDBOXED (`request.sandbox`, DESIGN §3.1): Claude Code's own OS sandbox (sandbox-runtime, the
 * SDK's `sandbox` option) confines every Bash command and whatever it starts — writable: the
 * worktree and the private HOME/TMPDIR; read-only: the worktree's `.git` and the repository's
 * common git directory (Claude Code would otherwise open it for git: refs, objects, other
 * worktrees' state); unreadable: other worktrees and secrets; network: `sandbox.network.allow`
 * only (Claude Code itself talks to the model from outside the sandbox, so the model endpoint is
 * not opened to the agent's commands). `allowUnsandboxedCommands: false` (the model cannot ask
 * to leave it), no background Bash (each call's processes die with it, in the sandbox's PID
 * namespace), and the file tools (Write/Edit/NotebookEdit), which Claude Code runs in its own
 * process, stay behind the PreToolUse jail. Git is read-only in Bash, so the agent commits through
 * `git_commit`. A plan with no usable sandbox here is a `config` failure (SANDBOX_UNAVAILABLE);
 * without a plan (the runner allowed `--unsafe-no-sandbox`) the hooks are the only confinement.
 * Sandboxed, every Bash command also runs under polywave-seccomp (native/polywave-seccomp.c, the
 * filter our own executor runs every sandboxed command through) when it was built here, inside
 * Claude Code's sandbox, through Claude Code's CLAUDE_CODE_SHELL_PREFIX (see
 * {@link seccompShellPrefixScript}): a Bash command and everything it starts cannot make a Unix
 * datagram socketpair, which sandbox-runtime's own filter lets through (outside attack #6: such a
 * socket reaches any host datagram socket the sandbox can see). A filter that cannot be applied
 * here is a `config` failure (SANDBOX_UNAVAILABLE), never a run without it.
 *
 * The SDK is an optional dependency: it is loaded with a dynamic `import()` inside `run`, and a
 * missing SDK (or native binary) is a `config` failure with an install hint, never a stack trace.
 * Offline behaviour, environment and pitfalls: reference/claude-agent-sdk-offline.md.
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync, unlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type {
  HookCallback,
  HookCallbackMatcher,
  HookEvent,
  Options,
  SDKAssistantMessage,
  SDKMessage,
  SDKResultMessage,
  SDKUserMessage,
} from '@anthropic-ai/claude-agent-sdk';
import { createGit } from '../../git/git-cli.js';
import {
  agentSpecVersion,
  classifyProviderError,
  emptyUsage,
  type AgentBackend,
  type AgentFailureKind,
  type AgentOutcome,
  type AgentOutcomeStatus,
  type AgentRunRequest,
  type AgentUsage,
  type ToolDenial,
} from '../contract.js';
import type { JailDecision } from '../jail/types.js';
import { planWritesIn, sandboxStatus, sandboxUnavailableMessage, type SandboxPlan } from '../sandbox/index.js';
import { createStaleViewCheck, staleCheckIntervalMs, staleViewCode, type StaleViewCheck } from '../sandbox/appeared-since-start.js';
import { gitCommitHint, isGitWriteRefusal, sandboxDenialsIn } from '../sandbox/sandbox-denials.js';
import { fillReportFromGit, gitCommitTool } from '../tools/report-tools.js';
import { claudeAgentSdkPackage, installCommandFor } from '../model-preflight.js';
import { secondFilter } from '../../sandbox/wrap-in-sandbox.js';
import { noDatagramFilterVariable } from '../../sandbox/sandbox-status.js';
import { withAbsolutePath } from '../../sandbox/search-path.js';

type ClaudeAgentSdk = typeof import('@anthropic-ai/claude-agent-sdk');

export interface ClaudeCodeBackendOptions {
  /** Loads the SDK (tests inject a failing loader; default: dynamic import of the package). */
  loadSdk?: () => Promise<ClaudeAgentSdk>;
}

/** The MCP server / tool names the model sees: `mcp__polywave__set_completion`. */
export const completionServerName = 'polywave';
export const completionToolName = `mcp__${completionServerName}__set_completion`;
export const gitCommitToolName = `mcp__${completionServerName}__git_commit`;

/** How long an aborted run waits for the Claude Code process to exit before returning anyway. */
export const abortGraceMs = 15_000;

/** How often the E42 Stop check may refuse to let the agent finish before it gives in (no endless loop). */
export const maxStopBlocks = 2;

/** The start of the failure when the SDK cannot be loaded; the install command that fits this install follows (N3). */
export const sdkMissingMessage = 'the claude-code backend needs @anthropic-ai/claude-agent-sdk';

/** Added to authentication failures: the agent's HOME is isolated, so a `claude login` session is not visible to it. */
export const authHint =
  'the claude-code backend runs Claude Code with an isolated HOME, so a `claude login` session is not used: set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`)';

/** Subagent tools: their calls run in another context we cannot confine, so wave agents never get them. */
const subagentTools: ReadonlySet<string> = new Set(['Task', 'Agent']);

/**
 * Claude Code's built-in tools an agent gets: exactly the ones the jail understands. Everything
 * else Claude Code ships (Workflow, EnterWorktree, Monitor, Cron*, RemoteTrigger, Web*…) stays off,
 * so a tool we never reviewed cannot become a way around the jail.
 */
const confinedTools = ['Read', 'Write', 'Edit', 'NotebookEdit', 'Glob', 'Grep', 'Bash'] as const;

/**
 * Claude Code's sandbox settings (the SDK's `sandbox` option) for a plan: Bash and everything it
 * starts run in sandbox-runtime with the plan's write/read sets, the git directories read-only
 * (`gitDirectories`: the repository's common git directory, which Claude Code otherwise makes
 * writable for git in a worktree), no way out of the sandbox, the network allow-list strict.
 */
export function claudeCodeSandboxSettings(plan: SandboxPlan, gitDirectories: readonly string[], cwd?: string): NonNullable<Options['sandbox']> {
  // Claude Code makes the working directory writable on its own: for an agent whose plan leaves it out (a Scout,
  // critic or Planner in the main checkout, run-agent.ts) it is denied explicitly.
  const readOnlyCwd = cwd !== undefined && !planWritesIn(plan, cwd) ? [path.resolve(cwd)] : [];
  return {
    enabled: true,
    failIfUnavailable: true,
    autoAllowBashIfSandboxed: true,
    allowUnsandboxedCommands: false,
    filesystem: {
      allowWrite: [...plan.writable],
      denyWrite: [...new Set([...plan.readOnlyWithin, ...gitDirectories, ...readOnlyCwd])],
      denyRead: [...plan.unreadable],
      ...(plan.readable && plan.readable.length > 0 ? { allowRead: [...plan.readable] } : {}),
    },
    network: { allowedDomains: [...plan.allowedHosts], strictAllowlist: true },
  };
}

/** Appended to the role prompt when the agent runs sandboxed. */
export function sandboxPromptNote(plan: SandboxPlan, cwd: string): string {
  const network = plan.allowedHosts.length > 0 ? plan.allowedHosts.join(', ') : 'nothing';
  return [
    '## The sandbox you run in',
    // A Scout, critic or Planner in the main checkout: the checkout is read-only to its Bash (run-agent.ts, X30).
    planWritesIn(plan, cwd)
      ? `Your Bash commands (and everything they start) run in an OS sandbox: only your working directory (${cwd}), $HOME and $TMPDIR are writable; the rest of the file system is read-only, other agents' worktrees and credentials are unreadable, and the network reaches only ${network}. Background commands are not available.`
      : `Your Bash commands (and everything they start) run in an OS sandbox: only $HOME and $TMPDIR are writable; the repository (${cwd}) and the rest of the file system are read-only to them, credentials are unreadable, and the network reaches only ${network}. Write the file your task names with the Write or Edit tool. Background commands are not available.`,
    `The repository metadata (.git) is read-only in Bash, so \`git add\` / \`git commit\` fail there: commit with the ${gitCommitToolName} tool (it stages and commits the files you own on your branch, outside the sandbox).`,
  ].join('\n');
}

/** The regular files directly in `directories` (absolute paths). */
function regularFilesIn(directories: readonly string[]): Set<string> {
  const files = new Set<string>();
  for (const directory of directories) {
    try {
      for (const entry of readdirSync(directory, { withFileTypes: true })) if (entry.isFile()) files.add(path.join(directory, entry.name));
    } catch {
      // not there
    }
  }
  return files;
}

/**
 * Claude Code's sandbox protects git files that do not exist yet (`config.worktree`…) by binding
 * them read-only, which creates them, empty, on the host — where the tamper check of the wave would
 * take them for a change of the repository's configuration. The agent cannot have created them (the
 * git directories are read-only to it and the jail refuses them to the file tools), so new empty
 * files there are removed when Claude Code has exited. Returns what was removed.
 */
function removeSandboxPlaceholders(directories: readonly string[], before: ReadonlySet<string>): string[] {
  const removed: string[] = [];
  for (const file of regularFilesIn(directories)) {
    if (before.has(file)) continue;
    try {
      const stat = lstatSync(file);
      if (!stat.isFile() || stat.size !== 0) continue;
      unlinkSync(file);
      removed.push(file);
    } catch {
      // gone already
    }
  }
  return removed;
}

/** The text of a Bash tool response (stdout and stderr) for the sandbox-refusal scan. */
function bashResponseText(response: unknown): string {
  if (typeof response === 'string') return response;
  if (isRecord(response)) {
    const parts = [response.stdout, response.stderr].filter((part): part is string => typeof part === 'string');
    if (parts.length > 0) return parts.join('\n');
  }
  return JSON.stringify(response ?? '');
}

/** Variables copied from request.env (provider credentials and routing, proxies, git identity). */
const passThroughNames: ReadonlySet<string> = new Set([
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'ANTHROPIC_BASE_URL',
  'ANTHROPIC_CUSTOM_HEADERS',
  'ANTHROPIC_MODEL',
  'ANTHROPIC_SMALL_FAST_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL',
  'ANTHROPIC_DEFAULT_SONNET_MODEL',
  'ANTHROPIC_DEFAULT_HAIKU_MODEL',
  'ANTHROPIC_BEDROCK_BASE_URL',
  'ANTHROPIC_VERTEX_BASE_URL',
  'ANTHROPIC_VERTEX_PROJECT_ID',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'CLAUDE_CODE_MAX_RETRIES',
  'CLAUDE_CODE_USE_BEDROCK',
  'CLAUDE_CODE_USE_VERTEX',
  'CLAUDE_CODE_SKIP_BEDROCK_AUTH',
  'CLAUDE_CODE_SKIP_VERTEX_AUTH',
  'API_TIMEOUT_MS',
  'AWS_REGION',
  'AWS_PROFILE',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_BEARER_TOKEN_BEDROCK',
  'CLOUD_ML_REGION',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
  'NODE_EXTRA_CA_CERTS',
  'LANG',
  'LC_ALL',
  'TZ',
  // Git identity/config the runner chose (HOME is replaced, so ~/.gitconfig is not seen).
  // GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE are deliberately NOT passed: they would point git elsewhere.
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_NOSYSTEM',
  'GIT_CONFIG_SYSTEM',
]);

/**
 * The child environment. `options.env` REPLACES Claude Code's environment, so everything it needs
 * is listed here: PATH, an isolated HOME / CLAUDE_CONFIG_DIR / TMPDIR in the scratch directory
 * (otherwise it writes ~/.claude/projects, ~/.claude.json and /tmp/claude-<uid>), no
 * non-essential traffic (update checks, telemetry, title generation), tool limits, provider
 * variables and the POLYWAVE_* variables from request.env.
 */
export function buildClaudeCodeEnv(request: Pick<AgentRunRequest, 'env' | 'scratchDir' | 'limits'>): Record<string, string> {
  const home = path.join(request.scratchDir, 'home');
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.env)) {
    if (value === undefined) continue;
    if (passThroughNames.has(name) || name.startsWith('POLYWAVE_')) env[name] = value;
  }
  Object.assign(env, {
    PATH: request.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    TMPDIR: path.join(request.scratchDir, 'tmp'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_AGENT_SDK_CLIENT_APP: 'polywave',
    // Bash tool limits (Claude Code reads these): the per-call timeout and the output cut.
    BASH_DEFAULT_TIMEOUT_MS: String(request.limits.toolTimeoutMs),
    BASH_MAX_TIMEOUT_MS: String(request.limits.toolTimeoutMs),
    BASH_MAX_OUTPUT_LENGTH: String(request.limits.maxToolOutputBytes),
    // No Bash command outlives its call: a background task would escape the per-call audit (and,
    // sandboxed, keep a process alive next to the file tools).
    CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: '1',
    // A start-up failure (e.g. the sandbox cannot start) ends with a result saying why, not stderr alone.
    CLAUDE_CODE_STARTUP_FAILURE_RESULTS: '1',
    // Claude Code runs git itself, on the host, in the worktree: a git filter started as `python3 -m <tool>` must not
    // import a module the agent left there (outside attack X21-13; polywave's own host git does the same, git/harden.ts).
    PYTHONSAFEPATH: '1',
  });
  return env;
}

/** Creates the claude-code backend. */
export function createClaudeCodeBackend(options: ClaudeCodeBackendOptions = {}): AgentBackend {
  const loadSdk = options.loadSdk ?? (() => import('@anthropic-ai/claude-agent-sdk'));
  return {
    specVersion: agentSpecVersion,
    name: 'claude-code',
    run: (request) => runClaudeCode(request, loadSdk),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The path or command a tool call targets (for denials). */
function targetOf(input: Record<string, unknown>): string | undefined {
  for (const key of ['file_path', 'notebook_path', 'path', 'command', 'pattern']) {
    const value = input[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** Text of a tool_result content (string or blocks). */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : isRecord(part) ? `[${String(part.type)}]` : ''))
    .join('\n');
}

/** One line of an error, without a stack. */
function errorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split('\n').find((part) => part.trim() !== '') ?? text;
  return line.length > 600 ? `${line.slice(0, 600)}…` : line;
}

/** Assistant-message error codes (SDKAssistantMessageError) → failure kind. */
function kindOfAssistantError(code: string | undefined): AgentFailureKind | undefined {
  if (!code) return undefined;
  if (code === 'rate_limit' || code === 'overloaded' || code === 'server_error') return 'transient';
  if (['authentication_failed', 'oauth_org_not_allowed', 'billing_error', 'model_not_found', 'cloud_credential_error', 'account_on_hold', 'verification_required'].includes(code)) return 'config';
  return undefined;
}

function isBinaryProblem(message: string): boolean {
  return /native binary|executable .*(not found|failed to launch)|spawn .*ENOENT/i.test(message);
}

/**
 * The CLAUDE_CODE_SHELL_PREFIX program for polywave-seccomp at `filter`. Claude Code runs every
 * Bash command as `<prefix> '<command>'` INSIDE its sandbox (after sandbox-runtime's own start-up,
 * whose socat relays must stay outside the filter: socat makes a datagram socketpair at start and
 * aborts when refused — which is why the filter cannot simply be put on the Claude Code process),
 * so the prefix execs `filter --no-ipc bash -c <command>`: the command and all it starts inherit the filter — which
 * there also refuses System V IPC and POSIX message queues (Claude Code's bubblewrap shares the host's IPC namespace,
 * outside attack X35-12; polywave's own sandbox gives each command a private one instead).
 * Any other call shape is passed through the filter unchanged.
 */
export function seccompShellPrefixScript(filter: string): string {
  const quoted = `'${filter.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    '# polywave: Claude Code runs each Bash command through this (CLAUDE_CODE_SHELL_PREFIX), inside its sandbox.',
    `if [ "$#" -eq 1 ]; then exec ${quoted} --no-ipc bash -c "$1"; fi`,
    `exec ${quoted} --no-ipc "$@"`,
    '',
  ].join('\n');
}

/**
 * Checks that polywave-seccomp can apply its filter here and run a command (`filter true`, ~1 ms):
 * `undefined` when it can, else why not.
 */
function filterWorks(filter: string): string | undefined {
  // (`true` is found on PATH's absolute entries only: X41-09, as every host program started by name)
  const probe = spawnSync(filter, ['--no-ipc', 'true'], { encoding: 'utf8', timeout: 10_000, env: withAbsolutePath(process.env) });
  if (probe.error) return probe.error.message;
  if (probe.status !== 0) return (probe.stderr.trim().split('\n')[0] ?? '') || `exit ${String(probe.status ?? probe.signal)}`;
  return undefined;
}

const quote = (paths: readonly string[]) => paths.map((file) => `\`${file}\``).join(', ');

async function runClaudeCode(request: AgentRunRequest, loadSdk: () => Promise<ClaudeAgentSdk>): Promise<AgentOutcome> {
  const started = performance.now();
  const denials: ToolDenial[] = [];
  let usage: AgentUsage = emptyUsage();
  let turns = 0;
  let text = '';
  let sessionId: string | undefined;

  const outcome = (status: AgentOutcomeStatus, extra: Partial<AgentOutcome> = {}): AgentOutcome => ({
    status,
    text,
    turns,
    usage,
    ...(sessionId ? { sessionId } : {}),
    durationMs: Math.round(performance.now() - started),
    denials,
    ...extra,
  });
  const abortedStatus = (): AgentOutcomeStatus => {
    const reason: unknown = request.signal.reason;
    return reason instanceof Error && reason.name === 'TimeoutError' ? 'timeout' : 'aborted';
  };
  if (request.signal.aborted) return outcome(abortedStatus());

  let sdk: ClaudeAgentSdk;
  try {
    sdk = await loadSdk();
  } catch {
    return outcome('failed', { failure: { kind: 'config', message: `${sdkMissingMessage}: ${installCommandFor(claudeAgentSdkPackage)}` } });
  }

  const env = buildClaudeCodeEnv(request);
  try {
    await mkdir(env.CLAUDE_CONFIG_DIR!, { recursive: true });
    await mkdir(env.TMPDIR!, { recursive: true });
  } catch (error) {
    return outcome('failed', { failure: { kind: 'config', message: `cannot create the agent's scratch directories in ${request.scratchDir}: ${errorMessage(error)}` } });
  }

  // --- The OS sandbox (Claude Code's own, configured from the plan). --------------------------------
  const plan = request.sandbox;
  let sandboxSettings: Options['sandbox'];
  let filter: string | undefined;
  let prefixDirectory: string | undefined;
  let placeholderDirectories: string[] = [];
  let filesBefore = new Set<string>();
  let viewCheck: StaleViewCheck | undefined;
  /** Why this run's sandbox view went stale (set once; the run then ends as a transient failure). */
  let staleView: string | undefined;
  if (plan) {
    const status = await sandboxStatus({ env: request.env });
    if (!status.available) return outcome('failed', { failure: { kind: 'config', message: `SANDBOX_UNAVAILABLE: ${sandboxUnavailableMessage(status)}` } });
    // The same rule as the tool executor (wrapInSandbox): through the filter whenever it was built.
    const second = secondFilter({ ...process.env, ...request.env });
    filter = second?.kind === 'native' ? second.path : undefined;
    if (second?.kind === 'bpf') {
      // polywave's own sandboxes load the filter as a BPF program; Claude Code's Bash runs in Claude Code's sandbox, which
      // only a prefix program can put under it — without it the keyring and Unix datagram pairs would be open there.
      return outcome('failed', {
        failure: {
          kind: 'config',
          message: `SANDBOX_UNAVAILABLE: the claude-code backend puts Claude Code's Bash under polywave's seccomp filter with dist/native/polywave-seccomp, which was not built here (no C compiler at install?): install gcc or clang and run \`npm rebuild polywave\`, use another backend (ai-sdk, cli:claude), or set ${noDatagramFilterVariable}=1 to run without it (the kernel keyring and Unix datagram socketpairs are then open to Claude Code's Bash)`,
        },
      });
    }
    if (filter === undefined && process.platform === 'linux') {
      request.onEvent({ type: 'agent-log', level: 'warn', message: 'polywave-seccomp is not built here (dist/native/polywave-seccomp; it needs a C compiler at install): Unix datagram socketpairs and the keyring calls are not refused in Claude Code\'s sandbox' });
    }
    const git = createGit(request.cwd, { env: { ...request.env } });
    try {
      const [commonDir, gitDir] = await Promise.all([git.commonDir(), git.gitDir()]);
      sandboxSettings = claudeCodeSandboxSettings(plan, [commonDir], request.cwd);
      // X39-10/11: Claude Code keeps these settings for the whole run; what appears later is checked before each call.
      viewCheck = createStaleViewCheck(plan, request.cwd, { identities: false });
      placeholderDirectories = [commonDir, path.join(commonDir, 'info'), path.join(commonDir, 'objects', 'info'), gitDir];
      filesBefore = regularFilesIn(placeholderDirectories);
    } catch (error) {
      return outcome('failed', { failure: { kind: 'config', message: `cannot find the repository of ${request.cwd} to keep its git directory read-only in the sandbox: ${errorMessage(error)}` } });
    }
    if (filter !== undefined) {
      const broken = filterWorks(filter);
      if (broken !== undefined) return outcome('failed', { failure: { kind: 'config', message: `SANDBOX_UNAVAILABLE: polywave-seccomp (${filter}) cannot apply its filter here: ${broken}; pass --unsafe-no-sandbox to run without the sandbox` } });
      // The prefix program lives outside every path the agent may write (its own directory in the
      // temp directory, which sandboxes see read-only), so no command can change it for the next one.
      try {
        prefixDirectory = await mkdtemp(path.join(os.tmpdir(), 'polywave-seccomp-shell-'));
        const prefix = path.join(prefixDirectory, 'bash-under-seccomp');
        await writeFile(prefix, seccompShellPrefixScript(filter), { mode: 0o555 });
        env.CLAUDE_CODE_SHELL_PREFIX = prefix;
      } catch (error) {
        if (prefixDirectory !== undefined) await rm(prefixDirectory, { recursive: true, force: true });
        return outcome('failed', { failure: { kind: 'config', message: `cannot write the seccomp shell prefix in ${os.tmpdir()}: ${errorMessage(error)}` } });
      }
    }
  } else {
    request.onEvent({ type: 'agent-log', level: 'warn', message: 'claude-code runs WITHOUT the OS sandbox: only the jail hooks confine it' });
  }

  const isWave = request.role === 'wave';
  const addDenial = (toolCallId: string, denial: ToolDenial) => {
    denials.push(denial);
    request.onEvent({ type: 'tool-call-deny', toolCallId, denial });
  };

  /** The view went stale: the run ends (the query is aborted right after the answer that refuses the call). */
  const markStale = (stale: string): void => {
    if (staleView !== undefined) return;
    staleView = stale;
    request.onEvent({ type: 'agent-log', level: 'warn', message: `${staleViewCode}: ${stale}; ending the run so that it is relaunched in a new sandbox` });
    setImmediate(() => abortController.abort(new Error(`${staleViewCode}: ${stale}`)));
  };

  // --- PreToolUse: the jail decides every tool call. ---------------------------------------------
  const preToolUse: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== 'PreToolUse') return {};
    const tool = input.tool_name;
    const toolInput = isRecord(input.tool_input) ? input.tool_input : {};
    const callId = toolUseId ?? input.tool_use_id;
    let decision: JailDecision;
    // X39-10/11: Claude Code's sandbox settings (its deny list) were fixed when it started; a path that appeared since
    // and that they do not hide (a worktree added outside .claude/worktrees/, another run's scratch parent registered)
    // would be readable by this call. Refuse every call from then on and end the run (transient: relaunched in a new
    // sandbox whose plan hides it). Checked here, in polywave's process, before Claude Code runs the call.
    const stale = viewCheck?.check();
    if (stale !== undefined) {
      markStale(stale);
      const reason = `${stale}: this sandbox does not hide it, so no more calls run in it; the run ends and is relaunched in a new sandbox`;
      const target = targetOf(toolInput);
      addDenial(callId, { tool, code: staleViewCode, reason, ...(target !== undefined ? { target } : {}) });
      return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: `[polywave sandbox ${staleViewCode}] ${reason}` } };
    }
    if ((tool === completionToolName && request.reportCompletion) || tool === gitCommitToolName) {
      // Our own in-process tools: the schema-checked, locked report writer; git_commit checks ownership itself.
      decision = { allowed: true };
    } else if (tool === 'Bash' && toolInput.run_in_background === true) {
      decision = { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: 'background commands are disabled: every process a Bash call starts ends with the call (run it in the foreground)' };
    } else if (tool === 'Bash' && plan && toolInput.dangerouslyDisableSandbox === true) {
      decision = { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: 'commands cannot leave the OS sandbox (dangerouslyDisableSandbox is refused)' };
    } else if (isWave && subagentTools.has(tool)) {
      decision = { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: `${tool}: subagents are disabled for wave agents (their tool calls could not be confined to your worktree)` };
    } else {
      try {
        decision = await request.jail.checkToolUse(tool, toolInput);
      } catch (error) {
        // Fail closed: a jail that cannot decide refuses.
        decision = { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: `the jail could not check this call (${errorMessage(error)})` };
      }
    }
    if (decision.allowed) {
      // 'allow', not {}: an empty answer hands the call to Claude Code's own permission rules, which
      // (with no one to ask) refuse e.g. `git add && git commit` that the jail has just allowed.
      return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow' } };
    }
    const target = targetOf(toolInput);
    addDenial(callId, { tool, code: decision.code, reason: decision.reason, ...(target !== undefined ? { target } : {}) });
    return {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'deny',
        permissionDecisionReason: `[polywave jail ${decision.code}] ${decision.reason}`,
      },
    };
  };

  // --- PostToolUse (Bash): audit what the command actually changed. -------------------------------
  const reportedViolations = new Set<string>();
  const postToolUse: HookCallback = async (input, toolUseId) => {
    if (input.hook_event_name !== 'PostToolUse' || input.tool_name !== 'Bash') return {};
    const command = isRecord(input.tool_input) && typeof input.tool_input.command === 'string' ? input.tool_input.command : undefined;
    const contexts: string[] = [];
    if (plan) {
      // What the sandbox contained shows only as a failure in the output: record it as a denial.
      const output = bashResponseText(input.tool_response);
      for (const refusal of sandboxDenialsIn(output, { plan, cwd: request.cwd })) addDenial(toolUseId ?? input.tool_use_id, { tool: 'Bash', code: refusal.code, reason: refusal.reason, ...(command !== undefined ? { target: command } : {}) });
      if (command !== undefined && isGitWriteRefusal(command, output)) contexts.push(`[polywave sandbox] ${gitCommitHint.replace('the git_commit tool', `the ${gitCommitToolName} tool`)}`);
    }
    let fresh: Array<{ code: string; reason: string; path?: string }>;
    try {
      const audit = await request.jail.audit(request.baseCommit ? { baseCommit: request.baseCommit } : {});
      fresh = audit.violations.filter((violation) => {
        const key = `${violation.code}\0${violation.path ?? violation.reason}`;
        if (reportedViolations.has(key)) return false;
        reportedViolations.add(key);
        return true;
      });
    } catch (error) {
      request.onEvent({ type: 'agent-log', level: 'warn', message: `jail audit after Bash failed: ${errorMessage(error)}` });
      fresh = [];
    }
    if (fresh.length === 0) return contexts.length > 0 ? { hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: contexts.join('\n') } } : {};
    for (const violation of fresh) {
      const target = violation.path ?? command;
      addDenial(toolUseId ?? input.tool_use_id, { tool: 'Bash', code: violation.code, reason: violation.reason, ...(target !== undefined ? { target } : {}) });
    }
    const lines = fresh.map((violation) => `- ${violation.code}: ${violation.reason}`);
    return {
      hookSpecificOutput: {
        hookEventName: 'PostToolUse',
        additionalContext: [...contexts, `[polywave jail] That command changed things outside what you may change:\n${lines.join('\n')}\nYou may only modify the files you own, on your branch: these changes fail the wave's ownership check (I1). Do not repeat them, and name them in your completion report's notes.`].join('\n'),
      },
    };
  };

  // --- Stop (E42, wave agents): no finishing with uncommitted owned work or without a report. ------
  const normalize = (entry: string) => entry.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
  const owned = new Set(request.jail.policy.ownedFiles.map(normalize));
  const prefixes = (request.jail.policy.writablePrefixes ?? []).map(normalize);
  const isOwned = (file: string) => owned.has(file) || prefixes.some((prefix) => (prefix.endsWith('/') ? file.startsWith(prefix) : file === prefix));
  let stopBlocks = 0;
  const stop: HookCallback = async (input) => {
    if (input.hook_event_name !== 'Stop' || stopBlocks >= maxStopBlocks) return {};
    const problems: string[] = [];
    try {
      const status = await createGit(request.cwd, { env: { ...request.env } }).status();
      const dirty = [...new Set(status.flatMap((entry) => [entry.path, ...(entry.from ? [entry.from] : [])]).filter(isOwned))];
      if (dirty.length > 0) {
        problems.push(`your owned files have uncommitted changes: ${quote(dirty)}. Commit them on your branch (${plan ? `with the ${gitCommitToolName} tool` : `git add <files> && git commit -m "…", or the ${gitCommitToolName} tool`})`);
      }
    } catch (error) {
      request.onEvent({ type: 'agent-log', level: 'warn', message: `E42 stop check: git status failed: ${errorMessage(error)}` });
    }
    if (request.hasCompletionReport) {
      let reported = true;
      try {
        reported = await request.hasCompletionReport();
      } catch (error) {
        request.onEvent({ type: 'agent-log', level: 'warn', message: `E42 stop check: reading the completion report failed: ${errorMessage(error)}` });
      }
      if (!reported) {
        problems.push(request.reportCompletion
          ? `no completion report is on record: call the ${completionToolName} tool (after committing) with status complete, partial or blocked`
          : 'no completion report is on record');
      }
    }
    if (problems.length === 0) return {};
    stopBlocks++;
    const reason = `[polywave E42] You cannot finish yet — ${problems.join('; and ')}.`;
    request.onEvent({ type: 'agent-log', level: 'info', message: `E42 stop refused (${stopBlocks}/${maxStopBlocks}): ${problems.join('; ')}` });
    return { decision: 'block', reason };
  };

  const hooks: Partial<Record<HookEvent, HookCallbackMatcher[]>> = {
    PreToolUse: [{ hooks: [preToolUse] }],
    PostToolUse: [{ matcher: 'Bash', hooks: [postToolUse] }],
    ...(isWave ? { Stop: [{ hooks: [stop] }] } : {}),
  };

  // --- set_completion and git_commit as in-process MCP tools. ------------------------------------------
  const mcpServers: NonNullable<Options['mcpServers']> = {};
  const serverTools: NonNullable<Parameters<ClaudeAgentSdk['createSdkMcpServer']>[0]['tools']> = [];
  const serverToolNames: string[] = [];
  const reportCompletion = request.reportCompletion;
  if (reportCompletion) {
    const list = z.array(z.string()).optional();
    const setCompletion = sdk.tool(
      'set_completion',
      'Record your completion report (do this last, after committing your work). status: complete | partial | blocked; ' +
        'for partial/blocked give failure_type (transient | fixable | needs_replan | escalate | timeout) and notes. ' +
        'verification: "PASS" or "FAIL (<what failed>)". The answer says whether the report was saved or what to fix.',
      {
        status: z.string().describe('complete | partial | blocked'),
        commit: z.string().optional().describe('SHA of your last commit'),
        worktree: z.string().optional(),
        branch: z.string().optional(),
        files_changed: list,
        files_created: list,
        interface_deviations: z.array(z.record(z.string(), z.unknown())).optional(),
        out_of_scope_deps: list,
        tests_added: list,
        verification: z.string().optional().describe('PASS or FAIL (<reason>)'),
        failure_type: z.string().optional(),
        notes: z.string().optional(),
      },
      async (args) => {
        const report = Object.fromEntries(Object.entries(args).filter(([, value]) => value !== undefined));
        try {
          // Issue 13: commit, branch, worktree and file lists the model left out come from git.
          const branch = request.branch ?? request.jail.policy.branch;
          await fillReportFromGit(report, { cwd: request.cwd, env: request.env, ...(branch !== undefined ? { branch } : {}), ...(request.baseCommit ? { baseCommit: request.baseCommit } : {}) });
          const saved = await reportCompletion(report);
          return saved.ok
            ? { content: [{ type: 'text', text: `completion report saved (status: ${saved.status})` }] }
            : { isError: true, content: [{ type: 'text', text: `completion report NOT saved — ${saved.code}: ${saved.message}` }] };
        } catch (error) {
          return { isError: true, content: [{ type: 'text', text: `completion report NOT saved — ${errorMessage(error)}` }] };
        }
      },
    );
    serverTools.push(setCompletion);
    serverToolNames.push(completionToolName);
  }
  if (request.jail.policy.readOnly !== true) {
    const gitCommit = sdk.tool(
      'git_commit',
      `${gitCommitTool.description} Use it instead of git add/git commit in Bash${plan ? ' (the repository metadata is read-only inside the sandbox)' : ''}.`,
      {
        message: z.string().min(1).describe('The commit message.'),
        paths: z.array(z.string().min(1)).optional().describe('Files to commit (default: every changed file you own).'),
      },
      async (args) => {
        const result = await gitCommitTool.execute(args, {
          jail: request.jail,
          env: request.env,
          signal: request.signal,
          toolTimeoutMs: request.limits.toolTimeoutMs,
          maxToolOutputBytes: request.limits.maxToolOutputBytes,
          ...(request.branch !== undefined ? { branch: request.branch } : {}),
        });
        if (result.denial) addDenial(`git_commit-${denials.length + 1}`, { ...result.denial, tool: gitCommitToolName });
        return { content: [{ type: 'text' as const, text: result.output }], ...(result.isError ? { isError: true } : {}) };
      },
    );
    serverTools.push(gitCommit);
    serverToolNames.push(gitCommitToolName);
  }
  if (serverTools.length > 0) mcpServers[completionServerName] = sdk.createSdkMcpServer({ name: completionServerName, version: '1.0.0', tools: serverTools, alwaysLoad: true });

  // --- Options. ------------------------------------------------------------------------------------
  const abortController = new AbortController();
  const onAbort = () => abortController.abort(request.signal.reason);
  request.signal.addEventListener('abort', onAbort, { once: true });
  const stderrTail: string[] = [];

  const spec = request.model.backend === 'claude-code' ? request.model : undefined;
  const queryOptions: Options = {
    cwd: request.cwd,
    env,
    abortController,
    // Project/user settings (hooks, permissions, CLAUDE.md, MCP servers of the repository) are not
    // loaded: the agent runs with exactly the rules below.
    settingSources: [],
    strictMcpConfig: true,
    permissionMode: 'acceptEdits',
    maxTurns: request.limits.maxTurns,
    ...(spec?.modelId ? { model: spec.modelId } : {}),
    // Appended to Claude Code's own preset rather than replacing it: the preset carries the
    // instructions Claude Code's tools are tuned for (read before edit, how to run Bash, how to
    // commit), which a replacement would lose; the polywave role prompt (protocol, ownership,
    // report) only adds to them. CLAUDE.md and settings are off (settingSources: []), so nothing of
    // the user's own configuration is mixed in.
    systemPrompt: { type: 'preset', preset: 'claude_code', append: plan ? `${request.systemPrompt}\n\n${sandboxPromptNote(plan, request.cwd)}` : request.systemPrompt },
    tools: [...confinedTools],
    ...(isWave ? { disallowedTools: [...subagentTools] } : {}),
    ...(serverTools.length > 0 ? { mcpServers, allowedTools: serverToolNames } : {}),
    ...(sandboxSettings ? { sandbox: sandboxSettings } : {}),
    hooks,
    ...(request.outputSchema ? { outputFormat: { type: 'json_schema', schema: request.outputSchema } } : {}),
    stderr: (data) => {
      for (const line of data.split('\n')) if (line.trim() !== '') stderrTail.push(line.trim());
      if (stderrTail.length > 20) stderrTail.splice(0, stderrTail.length - 20);
    },
  };

  // --- The message stream → events, journal, usage. ------------------------------------------------
  const toolCalls = new Map<string, { tool: string; startedAt: number }>();
  const seenMessageIds = new Set<string>();
  let turnOpen = false;
  let result: SDKResultMessage | undefined;
  let lastAssistantError: { code: string; text: string } | undefined;
  let thrown: unknown;

  const closeTurn = () => {
    if (!turnOpen) return;
    turnOpen = false;
    request.onEvent({ type: 'turn-end', turn: turns, usage: { ...usage } });
  };

  const onAssistant = (message: SDKAssistantMessage) => {
    const blocks = Array.isArray(message.message.content) ? message.message.content : [];
    if (message.error) {
      const errorText = blocks.map((block) => (block.type === 'text' ? block.text : '')).join('');
      lastAssistantError = { code: message.error, text: errorText };
      request.onEvent({ type: 'agent-log', level: 'warn', message: `claude-code: ${errorText || message.error}` });
      return;
    }
    // Claude Code streams one SDK message per content block; blocks of one model call share the id.
    const id = message.message.id;
    if (!seenMessageIds.has(id)) {
      closeTurn();
      seenMessageIds.add(id);
      turns++;
      turnOpen = true;
      const callUsage = message.message.usage;
      usage = {
        inputTokens: usage.inputTokens + (callUsage?.input_tokens ?? 0),
        outputTokens: usage.outputTokens + (callUsage?.output_tokens ?? 0),
        cacheReadTokens: usage.cacheReadTokens + (callUsage?.cache_read_input_tokens ?? 0),
        cacheWriteTokens: usage.cacheWriteTokens + (callUsage?.cache_creation_input_tokens ?? 0),
      };
    }
    for (const block of blocks) {
      if (block.type === 'text' && block.text !== '') {
        request.onEvent({ type: 'agent-text', text: block.text });
      } else if (block.type === 'tool_use') {
        const input = isRecord(block.input) ? block.input : {};
        toolCalls.set(block.id, { tool: block.name, startedAt: performance.now() });
        request.onEvent({ type: 'tool-call-start', toolCallId: block.id, tool: block.name, input });
        request.recorder?.recordToolUse({ toolCallId: block.id, tool: block.name, input });
      }
    }
  };

  const onUser = (message: SDKUserMessage) => {
    const content = message.message.content;
    if (!Array.isArray(content)) return;
    for (const block of content) {
      if (block.type === 'tool_result') {
        closeTurn();
        const call = toolCalls.get(block.tool_use_id);
        toolCalls.delete(block.tool_use_id);
        const tool = call?.tool ?? 'unknown';
        const output = resultText(block.content);
        const isError = block.is_error === true;
        request.onEvent({
          type: 'tool-call-end',
          toolCallId: block.tool_use_id,
          tool,
          isError,
          output,
          durationMs: call ? Math.round(performance.now() - call.startedAt) : 0,
        });
        request.recorder?.recordToolResult({ toolCallId: block.tool_use_id, tool, output, isError });
      } else if (block.type === 'text' && message.isSynthetic && /^Stop hook feedback/.test(block.text)) {
        request.onEvent({ type: 'agent-log', level: 'info', message: block.text });
      }
    }
  };

  const onMessage = (message: SDKMessage) => {
    switch (message.type) {
      case 'system':
        if (message.subtype === 'init') {
          sessionId = message.session_id;
          request.onEvent({ type: 'agent-log', level: 'info', message: `claude-code session ${message.session_id} (model ${message.model}, tools: ${message.tools.join(', ')})` });
        }
        break;
      case 'assistant':
        onAssistant(message);
        break;
      case 'user':
        onUser(message);
        break;
      case 'result':
        closeTurn();
        result = message;
        sessionId = message.session_id;
        break;
      default:
        break;
    }
  };

  // On abort the SDK ends its iterator only once the CLI has exited (~2 s, while it may still be
  // writing its session files in the scratch directory), so the loop races the abort, closes the
  // query, and then waits for the process to be gone — at most abortGraceMs — before returning:
  // the caller may remove the worktree and scratch directory as soon as run() resolves.
  const abortedMarker = Symbol('aborted');
  const abortedPromise = new Promise<typeof abortedMarker>((resolve) => {
    if (abortController.signal.aborted) resolve(abortedMarker);
    else abortController.signal.addEventListener('abort', () => resolve(abortedMarker), { once: true });
  });
  // Between calls too, every staleCheckIntervalMs: a path that appears during a long Bash call ends the run while the
  // call runs (within that interval: a bound, not a guarantee — X39-01).
  const watch = viewCheck
    ? setInterval(() => {
        const stale = viewCheck?.check();
        if (stale !== undefined) markStale(stale);
      }, staleCheckIntervalMs)
    : undefined;
  watch?.unref();
  try {
    const stream = sdk.query({ prompt: request.prompt, options: queryOptions });
    // Reads (and drops) what the stream still yields until it ends (the process is gone then).
    const drain = async (current: IteratorResult<SDKMessage, void>): Promise<void> => {
      while (!current.done) current = await stream.next();
    };
    for (;;) {
      const pending = stream.next();
      const next = await Promise.race([pending, abortedPromise]);
      if (next === abortedMarker) {
        try {
          stream.close();
        } catch {
          // already closed
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          pending.then(drain).catch(() => undefined),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, abortGraceMs);
          }),
        ]);
        clearTimeout(timer);
        break;
      }
      if (next.done) break;
      onMessage(next.value);
    }
  } catch (error) {
    // Pitfall 3: after an error result the iterator THROWS; the result already says why.
    thrown = error;
  } finally {
    if (watch) clearInterval(watch);
    request.signal.removeEventListener('abort', onAbort);
    closeTurn();
    if (prefixDirectory !== undefined) await rm(prefixDirectory, { recursive: true, force: true }).catch(() => undefined);
  }
  if (plan) {
    const removed = removeSandboxPlaceholders(placeholderDirectories, filesBefore);
    if (removed.length > 0) request.onEvent({ type: 'agent-log', level: 'info', message: `removed the empty mount points Claude Code's sandbox left in the git directory: ${removed.join(', ')}` });
  }

  if (result) {
    usage = {
      inputTokens: result.usage.input_tokens ?? 0,
      outputTokens: result.usage.output_tokens ?? 0,
      cacheReadTokens: result.usage.cache_read_input_tokens ?? 0,
      cacheWriteTokens: result.usage.cache_creation_input_tokens ?? 0,
      ...(typeof result.total_cost_usd === 'number' ? { costUsd: result.total_cost_usd } : {}),
    };
    turns = result.num_turns;
    sessionId = result.session_id;
    if (result.subtype === 'success') {
      text = result.result;
      if (result.structured_output !== undefined) text = JSON.stringify(result.structured_output);
    }
  }

  if (request.signal.aborted) return outcome(abortedStatus());
  // Ended by the stale-view check (before a tool call ran with the stale view): a transient failure, relaunched (E19).
  if (staleView !== undefined) return outcome('failed', { failure: { kind: 'transient', message: `${staleViewCode}: ${staleView} — the run was ended before its next tool call; a relaunch gets a sandbox that hides it` } });

  if (result) {
    if (result.subtype === 'success' && !result.is_error) {
      return outcome('finished', result.structured_output !== undefined ? { structured: result.structured_output } : {});
    }
    if (result.subtype === 'error_max_turns') return outcome('max-turns');
    const message = result.subtype === 'success' ? result.result || lastAssistantError?.text || 'the model call failed' : result.errors.join('; ') || result.subtype;
    const startupFailure = result.subtype !== 'success' ? result.startup_failure_reason : undefined;
    if (startupFailure === 'sandbox_required_unavailable') {
      return outcome('failed', { failure: { kind: 'config', message: `SANDBOX_UNAVAILABLE: Claude Code could not start its sandbox here (${message}); install bubblewrap, socat and ripgrep, or pass --unsafe-no-sandbox` } });
    }
    if (startupFailure !== undefined) return outcome('failed', { failure: { kind: 'config', message: `claude-code did not start (${startupFailure}): ${message}` } });
    const status = result.subtype === 'success' ? result.api_error_status : undefined;
    const kind = kindOfAssistantError(lastAssistantError?.code) ?? classifyProviderError(status ? `${status} ${message}` : message);
    const hint = lastAssistantError?.code === 'authentication_failed' ? ` — ${authHint}` : '';
    return outcome('failed', { failure: { kind, message: `claude-code: ${message}${hint}` } });
  }

  const message = thrown === undefined ? 'claude-code ended without a result' : errorMessage(thrown);
  if (isBinaryProblem(message)) {
    return outcome('failed', {
      failure: { kind: 'config', message: `the claude-code backend needs the Claude Code native binary (optional package @anthropic-ai/claude-agent-sdk-<platform>; reinstall without --omit=optional): ${message}` },
    });
  }
  const detail = stderrTail.length > 0 ? ` (stderr: ${stderrTail.slice(-2).join(' | ')})` : '';
  return outcome('failed', { failure: { kind: classifyProviderError(message), message: `claude-code: ${message}${detail}` } });
}
