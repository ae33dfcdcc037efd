/**
 * The `script` backend: a deterministic agent that replays a script (tests, the demo, CI). Every
 * file, bash, commit and report step goes through the REAL agent tools (`runToolCall`), so the
 * jail applies and the journal and events are exactly those of a model-driven agent.
 *
 * Where the script is: `ModelSpec.scriptPath` (`script:path/to/script.yaml`), else the
 * `POLYWAVE_SCRIPT` variable of the agent's environment. A relative path is resolved against
 * `POLYWAVE_REPO_ROOT` (agent environment) when set, else against the agent's working directory.
 *
 * Format (YAML or JSON; parsed with the project's safe YAML parser and validated — a problem ends
 * the run as failed, kind `config`, naming the file and the field):
 *
 * ```yaml
 * version: 1
 * agents:            # keyed by agent id ('A', 'B2') or role name ('scout', 'critic'…)
 *   A:
 *     attempts:      # optional: the steps for a given attempt number replace `steps`
 *       1:
 *         - fail: { kind: transient, message: "429 overloaded" }
 *     steps:
 *       - text: "reading the brief"                         # agent text (the last one is the outcome text)
 *       - read: README.md                                   # read_file
 *       - write: { path: src/a.ts, content: "export const a = 1;\n" }   # write_file
 *       - edit: { path: src/a.ts, old: "1", new: "2" }      # edit_file (`old` must occur exactly once)
 *       - bash: "node -e \"process.exit(0)\""               # bash (checked by the jail)
 *       - sleep_ms: 2000                                    # honours abort/timeout
 *       - sleep_until_ms: 2000                              # until 2 s after the run started
 *       - commit: "feat(A): implement a"                    # git_commit (all changes)
 *       - report: { status: complete, verification: "PASS", notes: "…" }
 *       - final: { any: json }                              # structured output (outcome.structured)
 *       - expect_prompt: "Session Context"                  # fails the run unless the prompt contains the text
 *       - tool: { name: grep, input: { pattern: "a" } }     # any agent tool with raw input
 *       - fail: { kind: fatal|transient|config, message: "…" }   # ends the run as failed
 * ```
 *
 * A top-level `steps:` (and `attempts:`) without `agents:` applies to every agent; with both, an
 * agent without an entry under `agents:` uses the top-level steps. Agents are looked up by
 * `<id>@wave<N>` first (an agent that runs in several waves, like the integration agent), then
 * by agent id, then by role. With several IMPLs in one script (a PROGRAM), `<id>@<impl slug>` (and
 * `<id>@<impl slug>@wave<N>`) come first: `scout@billing` is the Scout of IMPL-billing.
 *
 * - Each step is one turn (a `turn-end` event with zero usage); more steps than
 *   `limits.maxTurns` end the run as `max-turns`.
 * - A step the jail denies (or that fails) does not stop the script — the denial is recorded in
 *   the outcome — unless the step carries `expect: ok` (then the run fails, kind `fatal`).
 *   `expect: error` is the opposite: the step must be refused or fail.
 * - `report` fills what it leaves out from git: `commit` ← `git rev-parse HEAD`, `branch` ← the
 *   current branch, `worktree` ← the working directory, and, when the run has a base commit,
 *   `files_created` / `files_changed` ← `git diff --name-status <base>..HEAD` (A → created, anything
 *   else → changed). The report goes through the `set_completion` tool, so it is schema-checked by
 *   `reportCompletion` exactly like a model's.
 * - `sleep_ms` and every step honour `request.signal`: abort → `aborted` (`timeout` when the
 *   abort reason is a TimeoutError).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { formatPath, parseYamlSafe, toPlain } from '../../protocol/yaml/index.js';
import {
  abortOutcomeStatus,
  agentSpecVersion,
  emptyUsage,
  type AgentBackend,
  type AgentEvent,
  type AgentFailureKind,
  type AgentOutcome,
  type AgentOutcomeStatus,
  type AgentRunRequest,
  type ToolDenial,
} from '../contract.js';
import { staleViewCode } from '../sandbox/appeared-since-start.js';
import { createAgentTools, runToolCall, toolRunContext } from '../tools/index.js';
import { reportGitFacts, type ReportGitFacts } from '../tools/report-tools.js';
import type { AgentTool, AgentToolName, ToolContext, ToolResult } from '../tools/types.js';

/** The largest script file read (it is a test fixture, not a data set). */
const maxScriptBytes = 4 * 1024 * 1024;

const toolNames = ['read_file', 'write_file', 'edit_file', 'list_dir', 'glob', 'grep', 'bash', 'git_commit', 'set_completion'] as const satisfies readonly AgentToolName[];

const failureSchema = z.strictObject({ kind: z.enum(['transient', 'fatal', 'config']), message: z.string().min(1) });

/** The value schema of each step kind. */
const stepValueSchemas = {
  text: z.string(),
  read: z.string().min(1),
  write: z.strictObject({ path: z.string().min(1), content: z.string() }),
  edit: z.strictObject({ path: z.string().min(1), old: z.string().min(1), new: z.string() }),
  bash: z.string().min(1),
  sleep_ms: z.number().int().min(0).max(24 * 60 * 60 * 1000),
  sleep_until_ms: z.number().int().min(0).max(24 * 60 * 60 * 1000),
  commit: z.string().min(1),
  report: z.looseObject({ status: z.string().min(1) }),
  final: z.unknown().refine((value) => value !== undefined, 'a value is required'),
  expect_prompt: z.string().min(1),
  tool: z.strictObject({ name: z.enum(toolNames), input: z.record(z.string(), z.unknown()).optional() }),
  fail: failureSchema,
} as const;

type StepKind = keyof typeof stepValueSchemas;
const stepKinds = Object.keys(stepValueSchemas) as StepKind[];

/** One validated step. */
export type ScriptStep = {
  [K in StepKind]: { kind: K; value: z.infer<(typeof stepValueSchemas)[K]>; expect?: 'ok' | 'error' };
}[StepKind];

/** A steps list with optional per-attempt replacements. */
export interface ScriptStepPlan {
  steps?: ScriptStep[];
  attempts?: Record<string, ScriptStep[]>;
}

/** A validated script. */
export interface AgentScript {
  version: 1;
  agents?: Record<string, ScriptStepPlan>;
  steps?: ScriptStep[];
  attempts?: Record<string, ScriptStep[]>;
}

class ScriptError extends Error {}

function zodProblem(error: z.ZodError, prefix: ReadonlyArray<string | number>): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid value';
  const at = [...prefix, ...issue.path.map((segment) => (typeof segment === 'number' ? segment : String(segment)))];
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) {
    return `${formatPath([...at, issue.keys[0]!])}: unknown field${issue.keys.length > 1 ? ` (also ${issue.keys.slice(1).join(', ')})` : ''}`;
  }
  const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  return `${formatPath(at) || '(top level)'}: ${message}`;
}

const planShape = {
  steps: z.array(z.unknown()).optional(),
  attempts: z.record(z.string().regex(/^[1-9][0-9]*$/, 'attempt keys are attempt numbers (1, 2, …)'), z.array(z.unknown())).optional(),
};
const topSchema = z.strictObject({
  version: z.union([z.literal(1), z.literal('1')], { error: 'version must be 1' }),
  agents: z.record(z.string().min(1), z.strictObject(planShape).nullable()).optional(),
  ...planShape,
});

function parseSteps(raw: readonly unknown[], at: ReadonlyArray<string | number>): ScriptStep[] {
  return raw.map((value, index) => {
    const where = [...at, index];
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new ScriptError(`${formatPath(where)}: a step must be a mapping with one of ${stepKinds.join(', ')}`);
    }
    const record = value as Record<string, unknown>;
    const kinds = Object.keys(record).filter((key) => key !== 'expect');
    const unknown = kinds.filter((key) => !(stepKinds as string[]).includes(key));
    if (unknown.length > 0) throw new ScriptError(`${formatPath([...where, unknown[0]!])}: unknown step kind (use one of ${stepKinds.join(', ')})`);
    if (kinds.length !== 1) {
      throw new ScriptError(`${formatPath(where)}: a step has exactly one of ${stepKinds.join(', ')}${kinds.length > 1 ? ` (found ${kinds.join(', ')})` : ''}`);
    }
    const kind = kinds[0] as StepKind;
    const parsed = stepValueSchemas[kind].safeParse(record[kind]);
    if (!parsed.success) throw new ScriptError(zodProblem(parsed.error, [...where, kind]));
    let expect: 'ok' | 'error' | undefined;
    if (record.expect !== undefined) {
      if (record.expect !== 'ok' && record.expect !== 'error') throw new ScriptError(`${formatPath([...where, 'expect'])}: must be "ok" or "error"`);
      expect = record.expect;
    }
    return { kind, value: parsed.data, ...(expect ? { expect } : {}) } as ScriptStep;
  });
}

function parsePlan(raw: { steps?: unknown[]; attempts?: Record<string, unknown[]> }, at: ReadonlyArray<string | number>): ScriptStepPlan {
  const plan: ScriptStepPlan = {};
  if (raw.steps) plan.steps = parseSteps(raw.steps, [...at, 'steps']);
  if (raw.attempts) {
    plan.attempts = {};
    for (const [attempt, steps] of Object.entries(raw.attempts)) plan.attempts[String(Number(attempt))] = parseSteps(steps, [...at, 'attempts', attempt]);
  }
  return plan;
}

/**
 * Parses and validates script text (YAML or JSON). Throws an Error whose message names the
 * field (`agents.A.steps[2].write.path: …`).
 */
export function parseAgentScript(text: string): AgentScript {
  // A wave's script agents read the same script (one file, every agent's steps): parsed once per
  // text (bench:parallel's 16 agents spent ~0.5 s of the orchestrator's thread parsing it 16 times);
  // each caller gets its own copy.
  const known = parsedScripts.get(text);
  if (known) return structuredClone(known);
  const script = parseAgentScriptText(text);
  if (parsedScripts.size >= 8) parsedScripts.delete(parsedScripts.keys().next().value!);
  parsedScripts.set(text, script);
  return structuredClone(script);
}

/** {@link parseAgentScript}'s last answers by text (failures are not kept: they are cheap to repeat and rare). */
const parsedScripts = new Map<string, AgentScript>();

function parseAgentScriptText(text: string): AgentScript {
  const parsed = parseYamlSafe(text, { maxBytes: maxScriptBytes });
  if (!parsed.ok) throw new ScriptError(parsed.findings[0]?.message ?? 'not valid YAML or JSON');
  const blocking = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
  if (blocking) throw new ScriptError(`${blocking.field ? `${blocking.field}: ` : ''}${blocking.message}`);
  const plain = toPlain(parsed.document);
  const top = topSchema.safeParse(plain);
  if (!top.success) throw new ScriptError(zodProblem(top.error, []));
  if (top.data.agents === undefined && top.data.steps === undefined && top.data.attempts === undefined) {
    throw new ScriptError('agents: a script needs `agents:` (steps per agent) or top-level `steps:`');
  }
  const script: AgentScript = { version: 1, ...parsePlan(top.data, []) };
  if (top.data.agents) {
    script.agents = {};
    for (const [agent, plan] of Object.entries(top.data.agents)) script.agents[agent] = parsePlan(plan ?? {}, ['agents', agent]);
  }
  return script;
}

/** The steps an agent runs on an attempt, or undefined when the script has none for it. */
export function selectSteps(script: AgentScript, agentId: string, role: string, attempt: number, wave?: number, implSlug?: string): ScriptStep[] | undefined {
  const plans: ScriptStepPlan[] = [];
  const entry = (key: string | undefined) => (key !== undefined && script.agents && Object.hasOwn(script.agents, key) ? script.agents[key] : undefined);
  const bySlug = implSlug === undefined ? undefined : (entry(wave === undefined ? undefined : `${agentId}@${implSlug}@wave${wave}`) ?? entry(`${agentId}@${implSlug}`));
  const byWave = bySlug ?? entry(wave === undefined ? undefined : `${agentId}@wave${wave}`);
  const byId = byWave ?? entry(agentId);
  const byRole = script.agents && Object.hasOwn(script.agents, role) ? script.agents[role] : undefined;
  if (byId) plans.push(byId);
  else if (byRole) plans.push(byRole);
  else if (script.steps || script.attempts) plans.push(script);
  const plan = plans[0];
  if (!plan) return undefined;
  return plan.attempts?.[String(attempt)] ?? plan.steps ?? [];
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}


/** Waits `ms`; resolves false when `signal` aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Fills the report fields the script left out from git (see the format above). */
async function fillReport(report: Record<string, unknown>, request: AgentRunRequest, facts: ReportGitFacts): Promise<Record<string, unknown>> {
  const filled: Record<string, unknown> = { ...report };
  const missing = (key: string) => filled[key] === undefined || filled[key] === null || filled[key] === '';
  if (missing('commit') || missing('branch')) {
    // HEAD and the branch in one git process.
    const { head, branch } = await facts.headAndBranch();
    if (missing('commit') && head) filled.commit = head;
    if (missing('branch') && branch) filled.branch = branch;
  }
  if (missing('worktree')) filled.worktree = request.cwd;
  if (request.baseCommit && (missing('files_changed') || missing('files_created'))) {
    const entries = await facts.diffFromBase(request.baseCommit);
    if (entries) {
      const created = entries.filter((entry) => entry.status.startsWith('A')).map((entry) => entry.path);
      const changed = entries.filter((entry) => !entry.status.startsWith('A')).map((entry) => entry.path);
      if (missing('files_created')) filled.files_created = created;
      if (missing('files_changed')) filled.files_changed = changed;
    }
  }
  return filled;
}

/** The tool call a step makes, or undefined for steps that are not tool calls. */
async function toolCallOf(step: ScriptStep, request: AgentRunRequest, context: ToolContext): Promise<{ tool: AgentToolName; input: Record<string, unknown>; reportFacts?: ReportGitFacts } | undefined> {
  switch (step.kind) {
    case 'read':
      return { tool: 'read_file', input: { path: step.value } };
    case 'write':
      return { tool: 'write_file', input: { path: step.value.path, content: step.value.content } };
    case 'edit':
      return { tool: 'edit_file', input: { path: step.value.path, old_string: step.value.old, new_string: step.value.new } };
    case 'bash':
      return { tool: 'bash', input: { command: step.value } };
    case 'commit':
      return { tool: 'git_commit', input: { message: step.value } };
    case 'report': {
      // Read from git once, as set_completion would (its checkout and environment), and handed to
      // it: the report is checked against the same answers it was filled from.
      const reportFacts = reportGitFacts({ cwd: context.jail.root, env: context.env });
      return { tool: 'set_completion', input: await fillReport(step.value, request, reportFacts), reportFacts };
    }
    case 'tool':
      return { tool: step.value.name, input: step.value.input ?? {} };
    default:
      return undefined;
  }
}

/** Creates the `script` backend. */
export function createScriptBackend(): AgentBackend {
  return {
    specVersion: agentSpecVersion,
    name: 'script',
    run: (request) => runScript(request),
  };
}

async function runScript(request: AgentRunRequest): Promise<AgentOutcome> {
  const started = Date.now();
  const denials: ToolDenial[] = [];
  let turns = 0;
  let text = '';
  let structured: unknown;
  let hasStructured = false;
  const outcome = (status: AgentOutcomeStatus, failure?: { kind: AgentFailureKind; message: string }): AgentOutcome => ({
    status,
    ...(failure ? { failure } : {}),
    text,
    ...(hasStructured ? { structured } : {}),
    turns,
    usage: emptyUsage(),
    durationMs: Date.now() - started,
    denials,
  });
  const emit = (event: AgentEvent) => {
    try {
      request.onEvent(event);
    } catch {
      // a listener's failure must not break the run
    }
  };

  if (request.model.backend !== 'script') return outcome('failed', { kind: 'config', message: `the script backend cannot run model "${request.model.raw}" (backend ${request.model.backend})` });
  const configured = request.model.scriptPath ?? request.env.POLYWAVE_SCRIPT;
  if (!configured || configured.trim() === '') {
    return outcome('failed', { kind: 'config', message: 'no agent script: use model "script:<path>" or set POLYWAVE_SCRIPT' });
  }
  const scriptPath = path.resolve(request.env.POLYWAVE_REPO_ROOT || request.cwd, configured.trim());

  let script: AgentScript;
  try {
    const buffer = await readFile(scriptPath);
    if (buffer.byteLength > maxScriptBytes) throw new ScriptError(`larger than ${maxScriptBytes} bytes`);
    script = parseAgentScript(buffer.toString('utf8'));
  } catch (error) {
    const why = error instanceof ScriptError ? error.message : `cannot be read: ${errorMessage(error)}`;
    return outcome('failed', { kind: 'config', message: `agent script ${scriptPath}: ${why}` });
  }
  const implSlug = request.implPath ? /IMPL-([^/\\]+?)\.ya?ml$/.exec(request.implPath)?.[1] : undefined;
  const steps = selectSteps(script, request.agentId, request.role, request.attempt, request.wave, implSlug);
  if (!steps) {
    return outcome('failed', { kind: 'config', message: `agent script ${scriptPath}: agents: no entry for agent "${request.agentId}" (role ${request.role}) and no top-level steps` });
  }

  const tools = new Map<string, AgentTool>(createAgentTools().map((tool) => [tool.name, tool]));
  const { context, observer } = toolRunContext(request, emit, denials);

  for (const [index, step] of steps.entries()) {
    if (request.signal.aborted) return outcome(abortOutcomeStatus(request.signal));
    if (turns >= request.limits.maxTurns) {
      emit({ type: 'agent-log', level: 'warn', message: `script stopped after ${turns} turns (limit ${request.limits.maxTurns}); ${steps.length - index} step(s) left` });
      return outcome('max-turns');
    }
    turns += 1;
    const label = `step ${index + 1} (${step.kind})`;
    const endTurn = () => emit({ type: 'turn-end', turn: turns, usage: emptyUsage() });

    switch (step.kind) {
      case 'text':
        text = step.value;
        emit({ type: 'agent-text', text: step.value });
        endTurn();
        continue;
      case 'sleep_ms':
      case 'sleep_until_ms': {
        // sleep_until_ms: until that many ms after the run started (a fixed-length agent, whatever its tool calls cost).
        const wait = step.kind === 'sleep_ms' ? step.value : Math.max(0, step.value - (Date.now() - started));
        const completed = await sleep(wait, request.signal);
        endTurn();
        if (!completed) return outcome(abortOutcomeStatus(request.signal));
        continue;
      }
      case 'expect_prompt':
        // The orchestrator's prompt must carry this text (e.g. the recovered journal context on a relaunch).
        endTurn();
        if (!`${request.systemPrompt}\n${request.prompt}`.includes(step.value)) {
          return outcome('failed', { kind: 'fatal', message: `script ${label}: the prompt does not contain ${JSON.stringify(step.value)}` });
        }
        continue;
      case 'final':
        structured = step.value;
        hasStructured = true;
        text = JSON.stringify(step.value);
        endTurn();
        continue;
      case 'fail':
        emit({ type: 'agent-log', level: 'warn', message: `script ${label}: ${step.value.message}` });
        endTurn();
        return outcome('failed', { kind: step.value.kind, message: step.value.message });
      default:
        break;
    }

    let call: { tool: AgentToolName; input: Record<string, unknown>; reportFacts?: ReportGitFacts } | undefined;
    try {
      call = await toolCallOf(step, request, context);
    } catch (error) {
      endTurn();
      return outcome('failed', { kind: 'fatal', message: `script ${label}: ${errorMessage(error)}` });
    }
    if (!call) {
      endTurn();
      continue;
    }
    const tool = tools.get(call.tool);
    let result: ToolResult;
    if (!tool) {
      result = { output: `unknown tool ${call.tool}`, isError: true };
    } else {
      result = await runToolCall(tool, call.input, call.reportFacts ? { ...context, reportFacts: call.reportFacts } : context, observer, `script-${request.attempt}-${index + 1}`);
    }
    endTurn();
    if (request.signal.aborted) return outcome(abortOutcomeStatus(request.signal));
    // X39-01: the sandbox's view went stale during a command (killed, output withheld): the run ends, to be relaunched
    const staleView = request.toolExecutor?.staleView;
    if (staleView !== undefined) {
      emit({ type: 'agent-log', level: 'warn', message: `${staleViewCode}: ${staleView}; ending the run so that it is relaunched in a new sandbox` });
      return outcome('failed', { kind: 'transient', message: `${staleViewCode}: ${staleView} — the command was killed during the call; a relaunch gets a sandbox that hides it` });
    }
    if (step.expect === 'ok' && result.isError) {
      return outcome('failed', { kind: 'fatal', message: `script ${label} was expected to succeed: ${result.denial ? `${result.denial.code}: ${result.denial.reason}` : result.output.slice(0, 2_000)}` });
    }
    if (step.expect === 'error' && !result.isError) {
      return outcome('failed', { kind: 'fatal', message: `script ${label} was expected to be refused or fail, but it succeeded` });
    }
  }
  return outcome('finished');
}
