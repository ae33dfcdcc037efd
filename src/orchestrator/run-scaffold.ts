/**
 * E22 run-scaffold: the Scaffold Agent turns the pending `scaffolds` of an IMPL into committed
 * type-only files before wave 1, and the ORCHESTRATOR — not the agent's word — decides each
 * file's status afterwards.
 *
 * 1. Pending scaffolds = every scaffold whose status is not `committed…`. None → nothing runs.
 *    The working tree must be clean apart from Polywave's own files, which are committed first
 *    (the agent's bash calls are audited against the whole tree).
 * 2. The agent (role `scaffold`) works in the repository root on the current branch, jailed to
 *    exactly the scaffold paths (`writablePrefixes`); it creates the files, runs the build check
 *    and commits with `POLYWAVE_ALLOW_MAIN_COMMIT=1` (the E43 guard's sanctioned bypass).
 * 3. After it stops, per file: it exists, is tracked at HEAD with no uncommitted change, and
 *    (normally) a commit since the start touched it → `committed (<short sha>)`; otherwise
 *    `FAILED: <reason>` (the agent's own reason from its `scaffold_results` answer when it gave one).
 *    The jail audit must show nothing outside the scaffold paths changed.
 * 4. The build check runs again here when a command exists (a `build`/`typecheck` gate, else
 *    `test_command`, else the detected toolchain's build/typecheck): a failure marks the files the
 *    output names (all of them when it names none) `FAILED: build check … failed: <first lines>`.
 * 5. The statuses and the state go into the manifest in one locked edit — every scaffold
 *    committed: REVIEWED / SCAFFOLD_PENDING / BLOCKED → WAVE_PENDING (each hop checked against
 *    the state machine), else BLOCKED (E22: halt before any worktree) — and the manifest change
 *    is committed.
 * Never prints; progress goes to `events`.
 */
import path from 'node:path';
import type { AgentBackend, AgentEvent, AgentLimits, AgentOutcome, ToolDenial } from '../agents/contract.js';
import { renderRolePrompt } from '../agents/prompts/index.js';
import { pendingScaffolds } from '../agents/prompts/scaffold.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { requireAgentsReady } from '../agents/model-preflight.js';
import { runAgent } from '../agents/run-agent.js';
import { combineCommands, detectToolchain } from '../analysis/toolchain.js';
import { PolywaveError } from '../errors/polywave-error.js';
import type { EventBus, PolywaveEvent } from '../engine/events.js';
import type { BudgetTracker } from '../agents/budget.js';
import { budgetSignal, meterAgentEvents } from '../agents/cost-meter.js';
import { journalPaths } from '../engine/journal.js';
import { defaultVerifyBuildTimeoutMs } from '../engine/verify-build.js';
import { runSandboxedShell } from '../gates/sandboxed-shell.js';
import { untrustedLogDir } from '../gates/run-gate.js';
import { commitFiles } from '../git/commit-files.js';
import { isManifestScratchPath } from '../store/atomic-file.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { normalizeReportedPath } from '../protocol/conflicts.js';
import { implSlugFromPath } from '../protocol/names.js';
import { scaffoldPath, type ImplManifest } from '../protocol/schema/impl-schema.js';
import { checkTransition } from '../protocol/state-machine.js';
import { parseYamlSafe, toPlain, type YamlEdit } from '../protocol/yaml/index.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';
import { assertGitConfigOutsideWorkingTrees } from '../git/config-origins.js';
import { assertNotNestedRepository } from '../git/nested-repos.js';

/** Options of {@link runScaffold}. */
export interface RunScaffoldOptions {
  /** Cost budgets (issue 14): this agent's model calls are charged to the run. */
  budget?: BudgetTracker;
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** Repository root the scaffolds are created in (default: the repository holding the IMPL). */
  repoDir?: string;
  /** Model string (`--model`); default from the environment (see resolveModelSpec). */
  model?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  /** Use this backend instead of the one the model names (tests). */
  backend?: AgentBackend;
  limits?: Partial<AgentLimits>;
  /** Timeout of the orchestrator's own build check (ms; default 30 min). */
  buildTimeoutMs?: number;
}

/** One scaffold's outcome, as written into the manifest. */
export interface ScaffoldStatusEntry {
  file: string;
  status: string;
}

/** What the agent run looked like (for the JSON result). */
export interface AgentRunReport {
  agent: string;
  model: string;
  backend: string;
  outcome: AgentOutcome['status'];
  failure?: string;
  turns: number;
  usage: AgentOutcome['usage'];
  duration_ms: number;
  denials: ToolDenial[];
}

/** The run-scaffold result (printed as JSON by the CLI). */
export interface RunScaffoldResult {
  impl_path: string;
  slug: string;
  /** Every scaffold of the manifest with its status after the run (pending ones updated). */
  scaffolds: ScaffoldStatusEntry[];
  success: boolean;
  /** IMPL state after the run. */
  state: string;
  agent_launched: boolean;
  agent?: AgentRunReport;
  /** The orchestrator's E22 build check (absent when there was no command or nothing to check). */
  build?: { command: string; passed: boolean; exit_code: number; output?: string; error?: string };
  /** Jail audit problems: files outside the scaffold paths changed, or HEAD left the branch. */
  violations: Array<{ code: string; reason: string; path?: string }>;
  /** Commit of the manifest update (absent when the IMPL is outside the repository or unchanged). */
  impl_commit?: string;
  /** Why nothing ran (a dirty working tree); the manifest is untouched then. */
  error?: string;
  duration_ms: number;
}

/** Reads the IMPL as a usable manifest, or throws its first finding. */
export async function readManifestOrThrow(implPath: string): Promise<ImplManifest> {
  const { parsed } = await loadImpl(implPath);
  if (!parsed.manifest) throw new PolywaveError({ code: parsed.findings[0]?.code ?? 'V001_MANIFEST_INVALID', message: `${implPath}: ${parsed.findings[0]?.message ?? 'not a usable IMPL manifest'}` });
  return parsed.manifest;
}

/** The IMPL path relative to `repoDir` (POSIX), or undefined when it lies outside. */
export function implRelativePath(implPath: string, repoDir: string): string | undefined {
  const relative = path.relative(repoDir, implPath).split(path.sep).join('/');
  return relative === '' || relative.startsWith('../') || path.isAbsolute(relative) ? undefined : relative;
}

/** Commits the IMPL file (only it) when it lies in `repoDir` and has changes; returns the SHA. */
export async function commitImplChange(options: { implPath: string; repoDir: string; git: Git; message: string; env: Readonly<Record<string, string | undefined>> }): Promise<string | undefined> {
  const relative = implRelativePath(options.implPath, options.repoDir);
  if (relative === undefined) return undefined;
  const dirty = (await options.git.status()).some((entry) => entry.path === relative);
  if (!dirty) return undefined;
  return commitFiles({ cwd: options.repoDir, files: [relative], message: options.message, env: options.env });
}

/** Forwards an agent's events to the bus as the run-wave event types (progress, tool calls). */
export function agentEventForwarder(events: EventBus | undefined, meta: { slug: string; wave: number; agent: string; attempt: number }): (event: AgentEvent) => void {
  return (event) => {
    if (!events) return;
    if (event.type === 'turn-end') {
      events.emit({ v: 1, type: 'agent-progress', ...meta, turns: event.turn, input_tokens: event.usage.inputTokens, output_tokens: event.usage.outputTokens, cost_usd: event.usage.costUsd });
    } else if (event.type === 'tool-call-end') {
      events.emit({ v: 1, type: 'agent-tool-call', ...meta, tool: event.tool, is_error: event.isError, duration_ms: event.durationMs });
    } else if (event.type === 'tool-call-deny') {
      events.emit({ v: 1, type: 'agent-tool-call', ...meta, tool: event.denial.tool, is_error: true, denied: `${event.denial.code}: ${event.denial.reason}`, duration_ms: 0 });
    }
  };
}

/** The `agent-end` event of a single-attempt agent run. */
export function agentEndEvent(meta: { slug: string; wave: number; agent: string; attempt: number }, outcome: AgentOutcome): PolywaveEvent {
  return {
    v: 1,
    type: 'agent-end',
    ...meta,
    status: outcome.status,
    turns: outcome.turns,
    input_tokens: outcome.usage.inputTokens,
    output_tokens: outcome.usage.outputTokens,
    cost_usd: outcome.usage.costUsd,
    duration_ms: outcome.durationMs,
    ...(outcome.failure ? { explanation: `${outcome.failure.kind}: ${outcome.failure.message}` } : {}),
  };
}

/** The agent-run summary of an outcome. */
export function agentRunReport(agent: string, spec: { raw: string; backend: string }, outcome: AgentOutcome): AgentRunReport {
  return {
    agent,
    model: spec.raw,
    backend: spec.backend,
    outcome: outcome.status,
    ...(outcome.failure ? { failure: `${outcome.failure.kind}: ${outcome.failure.message}` } : {}),
    turns: outcome.turns,
    usage: outcome.usage,
    duration_ms: outcome.durationMs,
    denials: outcome.denials,
  };
}

/**
 * Before an agent runs in the repository root: its bash calls are audited against the whole
 * working tree, so the tree must hold no change the agent may not make. Polywave's own files (the
 * IMPL, `docs/IMPL/**`, `docs/CONTEXT.md`) are committed (as prepare-wave's `--commit-state`
 * does); `.polywave-state/` is ignored; any other change blocks (returned, nothing committed).
 */
export async function ensureCleanRoot(options: { git: Git; repoDir: string; implPath: string; writable: ReadonlySet<string>; env: Readonly<Record<string, string | undefined>>; message: string }): Promise<{ blocking: string[]; commit?: string }> {
  const implRelative = implRelativePath(options.implPath, options.repoDir);
  const owned = new Set<string>();
  const blocking = new Set<string>();
  for (const entry of await options.git.status()) {
    for (const file of entry.from !== undefined ? [entry.path, entry.from] : [entry.path]) {
      if (file === '.polywave-state' || file.startsWith('.polywave-state/') || options.writable.has(file)) continue;
      if (isManifestScratchPath(file)) continue; // a manifest write's temp file or an old lock file: never committed
      if (file === implRelative || file.startsWith('docs/IMPL/') || file === 'docs/CONTEXT.md') owned.add(file);
      else blocking.add(file);
    }
  }
  if (blocking.size > 0) return { blocking: [...blocking].sort() };
  if (owned.size === 0) return { blocking: [] };
  return { blocking: [], commit: await commitFiles({ cwd: options.repoDir, files: [...owned].sort(), message: options.message, env: options.env }) };
}

/** The first lines of a command's output, on one line (for a manifest status). */
export function firstLines(output: string, lines = 3, maxLength = 300): string {
  const text = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .slice(0, lines)
    .join('; ');
  return text.length > maxLength ? `${text.slice(0, maxLength - 1)}…` : text;
}

/**
 * The gist of a failed command's output on one line: its first two lines, plus the first line
 * that reads like an error message when it comes later (node prints the source line and a caret
 * before `SyntaxError: …`); paths inside `repoDir` are shown relative.
 */
export function errorGist(output: string, repoDir?: string): string {
  const text = repoDir ? output.split(`${repoDir}${path.sep}`).join('') : output;
  const lines = text.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  const picked = lines.slice(0, 2);
  const message = lines.slice(2).find((line) => /\b(?:error|Error|ERROR|failed|FAIL|panic|Traceback)\b|Error:/.test(line));
  if (message !== undefined) picked.push(message);
  return firstLines(picked.join('\n'), 3, 300);
}

/**
 * The E22 build-check command: the manifest's `build` (else `typecheck`) quality gate, else its
 * `test_command`, else the build (else typecheck) command of the toolchains detected in `repoDir`.
 */
export async function scaffoldBuildCommand(manifest: ImplManifest, repoDir: string): Promise<string | undefined> {
  const gates = manifest.quality_gates?.gates ?? [];
  for (const type of ['build', 'typecheck']) {
    const gate = gates.find((candidate) => candidate.type === type && (candidate.command ?? '').trim() !== '' && candidate.fix !== true);
    if (gate) return gate.command!.trim();
  }
  const test = manifest.test_command?.trim();
  if (test && !['none', 'n/a', 'skip'].includes(test.toLowerCase())) return test;
  const toolchains = await detectToolchain(repoDir).catch(() => []);
  const commands = combineCommands(toolchains);
  return commands.build ?? commands.typecheck;
}

/** `file → status` from the agent's `scaffold_results` YAML answer (best effort; {} when absent). */
export function parseScaffoldResults(text: string): Record<string, string> {
  const candidates = [...text.matchAll(/```(?:ya?ml)?[ \t]*\n([\s\S]*?)\n```/g)].map((match) => match[1] ?? '');
  candidates.push(text);
  for (const candidate of candidates) {
    if (!candidate.includes('scaffold_results')) continue;
    const parsed = parseYamlSafe(candidate.slice(candidate.indexOf('scaffold_results')));
    if (!parsed.ok) continue;
    const plain = toPlain(parsed.document) as { scaffold_results?: unknown } | null;
    const list = plain && typeof plain === 'object' ? plain.scaffold_results : undefined;
    if (!Array.isArray(list)) continue;
    const results: Record<string, string> = {};
    for (const item of list) {
      if (item === null || typeof item !== 'object') continue;
      const { file, status } = item as { file?: unknown; status?: unknown };
      if (typeof file === 'string' && typeof status === 'string') results[normalizeReportedPath(file)] = status.trim();
    }
    return results;
  }
  return {};
}

const startableStates = new Set(['REVIEWED', 'SCAFFOLD_PENDING', 'BLOCKED', 'WAVE_PENDING', 'WAVE_VERIFIED']);

/** The state an IMPL moves to after the scaffolds (undefined = unchanged). */
function targetState(current: string, success: boolean): string | undefined {
  if (!success) return current === 'BLOCKED' ? undefined : 'BLOCKED';
  return current === 'REVIEWED' || current === 'SCAFFOLD_PENDING' || current === 'BLOCKED' ? 'WAVE_PENDING' : undefined;
}

/** The state edit for `current → to` through legal hops (REVIEWED/BLOCKED → SCAFFOLD_PENDING → WAVE_PENDING). */
function stateEdit(current: string, to: string | undefined): { edits: YamlEdit[]; state: string } {
  if (to === undefined || current === to || current === '') return { edits: [], state: current };
  const hops = checkTransition(current, to).ok ? [to] : ['SCAFFOLD_PENDING', to];
  let from = current;
  for (const hop of hops) {
    const check = checkTransition(from, hop);
    if (!check.ok) throw new PolywaveError({ code: check.finding.code, message: check.finding.message, exitCode: 1 });
    from = hop;
  }
  return { edits: [{ path: ['state'], value: to }], state: to };
}

/** Per-file verification after the agent stopped: at HEAD, unchanged on disk, and the commit that last touched it. */
async function verifyScaffoldFile(git: Git, file: string, start: string, dirty: ReadonlySet<string>): Promise<{ committed: true; sha: string } | { committed: false; reason: string }> {
  const atHead = await git.run(['cat-file', '-e', `HEAD:${file}`], { allowExitCodes: [1, 128] });
  if (atHead.exitCode !== 0) return { committed: false, reason: dirty.has(file) ? 'the file was created but not committed' : 'the scaffold agent did not create the file' };
  if (dirty.has(file)) return { committed: false, reason: 'the file has uncommitted changes (the committed version is not the one on disk)' };
  // Normally a commit since the start; a file that was already committed (and untouched) counts too.
  const since = (await git.run(['log', '--format=%H', `${start}..HEAD`, '--', file])).stdout.split('\n').filter(Boolean);
  const commit = since[0] ?? (await git.run(['log', '-1', '--format=%H', 'HEAD', '--', file])).stdout.trim();
  if (commit === '') return { committed: false, reason: 'no commit holds the file' };
  return { committed: true, sha: (await git.run(['rev-parse', '--short', commit])).stdout.trim() };
}

/** E22: runs the Scaffold Agent for the pending scaffolds and records what really got committed; see the module comment. */
export async function runScaffold(options: RunScaffoldOptions): Promise<RunScaffoldResult> {
  const started = performance.now();
  const { implPath, env } = options;
  const manifest = await readManifestOrThrow(implPath);
  const slug = implSlugFromPath(implPath, manifest);
  const gitAt = (directory: string) => createGit(directory, { env });
  const repoDir = options.repoDir ?? (await gitAt(path.dirname(implPath)).topLevel());
  await assertNotNestedRepository(repoDir, env); // X13 #1/#2
  const git = gitAt(repoDir);
  const state = (manifest.state ?? '').trim();
  const result: RunScaffoldResult = { impl_path: implPath, slug, scaffolds: [], success: false, state, agent_launched: false, violations: [], duration_ms: 0 };
  const finish = () => {
    result.duration_ms = Math.round(performance.now() - started);
    return result;
  };
  if (state !== '' && !startableStates.has(state)) {
    throw new PolywaveError({ code: 'N008_STATE_TRANSITION', message: `run-scaffold: the IMPL is ${state}; scaffolds are created after review (REVIEWED or SCAFFOLD_PENDING) and before the waves`, exitCode: 1 });
  }

  const all = manifest.scaffolds ?? [];
  const pending = new Set(pendingScaffolds(manifest));
  const entries = all.map((scaffold, index) => ({ index, scaffold, file: normalizeReportedPath(scaffoldPath(scaffold)), pending: pending.has(scaffold) }));
  const statuses = new Map<number, string>();
  const invalid = (file: string) => file === '' || file.split('/').includes('..') || path.isAbsolute(file) || file.startsWith('.git/');
  for (const entry of entries) if (entry.pending && invalid(entry.file)) statuses.set(entry.index, `FAILED: invalid scaffold path ${JSON.stringify(scaffoldPath(entry.scaffold))} (a repository-relative file path is required)`);
  const toCreate = entries.filter((entry) => entry.pending && !statuses.has(entry.index));

  const implRelative = implRelativePath(implPath, repoDir);
  if (toCreate.length > 0) {
    // Issue 13 (N4): credentials, the backend's package and the model server before the state
    // commit below (exit 2, nothing changed). A backend given by the caller (tests) needs none.
    if (!options.backend) await requireAgentsReady([{ role: 'the Scaffold agent', model: options.model }], env);
    // Issue 11 (X10 R1): the agent writes this checkout; no git config file may lie in it (exit 2, nothing changed).
    await assertGitConfigOutsideWorkingTrees(repoDir, env);
    const files = toCreate.map((entry) => entry.file);
    const clean = await ensureCleanRoot({ git, repoDir, implPath, writable: new Set(files), env, message: `chore: commit Polywave state before the scaffold agent for ${slug} [Polywave:scaffold:${slug}]` });
    if (clean.blocking.length > 0) {
      result.error = `the working tree has uncommitted changes the scaffold agent may not touch: ${clean.blocking.slice(0, 20).join(', ')}${clean.blocking.length > 20 ? ', …' : ''} — commit or stash them first (the agent runs in the repository root)`;
      return finish();
    }
    const start = await git.headCommit();
    const branch = await git.currentBranch();
    const buildCommand = await scaffoldBuildCommand(manifest, repoDir);
    const prompt = renderRolePrompt('scaffold', { manifest, implPath, repoRoot: repoDir, scaffolds: toCreate.map((entry) => entry.scaffold), ...(buildCommand ? { buildCommand } : {}) });
    const meta = { slug, wave: 0, agent: 'scaffold', attempt: 1 };
    const spec = resolveModelSpec(options.model, env);
    result.agent_launched = true;
    options.events?.emit({ v: 1, type: 'agent-launch', ...meta, model: spec.raw, backend: spec.backend });
    // E40: a `cost` event per model call of the Scaffold agent.
    const metered = meterAgentEvents({ spec, ...(options.backend ? { backend: options.backend.name } : {}), role: 'scaffold', attempt: 1, labels: { slug, agent: 'scaffold' }, ...(options.events ? { emit: (event) => options.events!.emit(event) } : {}), ...(options.budget ? { budget: { tracker: options.budget, scope: { slug, wave: 0, agent: 'scaffold' } } } : {}) }, agentEventForwarder(options.events, meta));
    const run = await runAgent({
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
      agentId: 'scaffold',
      role: 'scaffold',
      attempt: 1,
      model: spec,
      systemPrompt: prompt.system,
      prompt: prompt.user,
      cwd: repoDir,
      ...(branch ? { branch } : {}),
      baseCommit: start,
      implPath,
      policy: { root: repoDir, ownedFiles: [], writablePrefixes: files, ...(branch ? { branch } : {}), readablePaths: [implPath] },
      ...(options.limits ? { limits: options.limits } : {}),
      env: { ...env, POLYWAVE_REPO_ROOT: repoDir, POLYWAVE_ALLOW_MAIN_COMMIT: '1' },
      ...(budgetSignal(metered, options.signal) ? { signal: budgetSignal(metered, options.signal)! } : {}),
      onEvent: metered.onEvent,
      journal: journalPaths(repoDir, slug, 0, 'scaffold'),
      ...(options.backend ? { backend: options.backend } : {}),
    });
    run.outcome.usage = metered.settle(run.outcome);
    // Issue 14: a budget stop (or no money left to start) is what ended this agent.
    const budgetStop = metered.refused ?? metered.breach();
    if (budgetStop) run.outcome.failure = { kind: 'fatal', message: `${budgetStop.message} (the scaffold agent stopped; raise the budget and re-run)` };
    result.agent = agentRunReport('scaffold', run.spec, run.outcome);
    options.events?.emit(agentEndEvent(meta, run.outcome));

    // The orchestrator's own checks: the jail audit, then each file, then the build.
    const audit = await run.jail.audit({ baseCommit: start });
    result.violations = audit.violations.filter((violation) => violation.path === undefined || violation.path !== implRelative).map((violation) => ({ code: violation.code, reason: violation.reason, ...(violation.path ? { path: violation.path } : {}) }));
    const reported = parseScaffoldResults(run.outcome.text);
    const dirty = new Set((await git.status()).flatMap((entry) => [entry.path, ...(entry.from ? [entry.from] : [])]));
    const agentProblem = run.outcome.status === 'finished' ? '' : ` (agent ${run.outcome.status}${run.outcome.failure ? `: ${firstLines(run.outcome.failure.message, 1, 160)}` : ''})`;
    const committed: typeof toCreate = [];
    for (const entry of toCreate) {
      const check = await verifyScaffoldFile(git, entry.file, start, dirty);
      if (check.committed) {
        statuses.set(entry.index, `committed (${check.sha})`);
        committed.push(entry);
      } else {
        const own = reported[entry.file];
        const agentReason = own && /^FAILED/i.test(own) ? own.replace(/^FAILED:?\s*/i, '') : '';
        statuses.set(entry.index, `FAILED: ${check.reason}${agentReason ? ` — agent: ${firstLines(agentReason, 3, 300)}` : ''}${agentProblem}`);
      }
    }
    if (committed.length > 0 && buildCommand) {
      const stamp = (options.now ?? (() => new Date()))().toISOString().replace(/[-:]/g, '');
      // The scaffold agent's files are agent code: the build runs as a gate does (sandboxed, no credentials; X3 #20).
      const build = await runSandboxedShell(buildCommand, {
        cwd: repoDir,
        timeoutMs: options.buildTimeoutMs ?? defaultVerifyBuildTimeoutMs,
        ...(options.signal ? { signal: options.signal } : {}),
        env,
        logPath: path.join(await untrustedLogDir(repoDir, 'scaffold'), `${stamp}-build.log`),
      });
      const passed = build.exitCode === 0 && !build.timedOut && !build.canceled;
      result.build = { command: buildCommand, passed, exit_code: build.exitCode, ...(build.output !== '' ? { output: build.output } : {}), ...(build.error ? { error: build.error } : {}) };
      if (!passed) {
        const why = errorGist(build.error ? `${build.error}\n${build.output}` : build.output, repoDir) || `exit code ${build.exitCode}`;
        const named = committed.filter((entry) => build.output.includes(entry.file));
        for (const entry of named.length > 0 ? named : committed) statuses.set(entry.index, `FAILED: build check \`${buildCommand}\` failed: ${why}`);
      }
    }
  }

  const allCommitted = entries.every((entry) => /^committed/.test(statuses.get(entry.index) ?? entry.scaffold.status?.trim() ?? ''));
  const success = allCommitted && result.violations.length === 0;
  // One locked edit: the statuses and the state (re-checked against the current file).
  result.state = await editImpl(implPath, (parsed) => {
    const edits: YamlEdit[] = [];
    const scaffoldsNow = parsed.manifest?.scaffolds ?? [];
    for (const [index, status] of statuses) {
      // The list is re-read under the lock: only write where the same scaffold still sits.
      const scaffold = scaffoldsNow[index];
      if (scaffold && scaffoldPath(scaffold) === scaffoldPath(all[index]!)) edits.push({ path: ['scaffolds', index, 'status'], value: status });
    }
    const current = (parsed.manifest?.state ?? '').trim();
    const move = stateEdit(current, targetState(current, success));
    return { edits: [...edits, ...move.edits], outcome: move.state };
  });
  result.scaffolds = entries.map((entry) => ({ file: entry.file || scaffoldPath(entry.scaffold), status: statuses.get(entry.index) ?? entry.scaffold.status ?? 'pending' }));
  result.success = success;
  const impl = await commitImplChange({ implPath, repoDir, git, env, message: `chore: scaffold status for ${slug} (${success ? 'committed' : 'FAILED'}) [Polywave:scaffold:${slug}]` });
  if (impl) result.impl_commit = impl;
  return finish();
}
