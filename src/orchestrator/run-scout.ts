/**
 * `run-scout`: the Scout agent plans a feature into `docs/IMPL/IMPL-<slug>.yaml`, with the E16
 * correction loop, the E37 critic gate and one commit of the manifest.
 *
 * 1. Slug and path (`docs/IMPL/IMPL-<slug>.yaml`); an IMPL already past SCOUT_PENDING is refused.
 * 2. Inputs: docs/CONTEXT.md (E17), H2 toolchain commands (extract-commands), the PROGRAM's
 *    contracts (E31, `--program`).
 * 3. Attempt N: the Scout runs jailed at the repository root, writable only its own IMPL doc (I6, X26-05);
 *    then the manifest is parsed and validated (every IMPL rule, with the repository for file
 *    facts). Blocking findings go back to attempt N+1 in the prompt's correction section, each
 *    with code, field and line (E16). After `maxAttempts` (3) failed attempts: BLOCKED (written
 *    into the manifest when it parses; an unparseable file is left for the human).
 * 4. Valid: NOT_SUITABLE verdict → state NOT_SUITABLE. Otherwise state SCOUT_VALIDATING, the critic
 *    when E37 requires one (and `critic` is not false), then REVIEWED when the gate passes
 *    (E37: an ISSUES verdict does not enter REVIEWED).
 * 5. One commit of the manifest alone (with POLYWAVE_ALLOW_MAIN_COMMIT=1), so prepare-wave finds a
 *    clean tree. A BLOCKED manifest is not committed.
 *
 * Progress: `step-end` events (command `run-scout`, steps `automation`, `scout-attempt-N`,
 * `validate-attempt-N`, `state`, `critic`, `commit`) and the agent events of the Scout
 * (`agent-launch`, `agent-tool-call`, `agent-progress`, `agent-end`, wave 0, agent `scout`).
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { extractCommands, type CommandSet } from '../analysis/extract-commands.js';
import { addUsage, emptyUsage, type AgentBackend, type AgentEvent, type AgentOutcome, type AgentUsage } from '../agents/contract.js';
import { budgetExceededCode, type BudgetTracker } from '../agents/budget.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { renderRolePrompt, type PromptFinding } from '../agents/prompts/index.js';
import type { ScoutProgramContext, ScoutProgramContract } from '../agents/prompts/scout.js';
import { afterRunChecks, planCopyRefusedCode, runAgent } from '../agents/run-agent.js';
import type { EventBus } from '../engine/events.js';
import { createCostMeter } from '../agents/cost-meter.js';
import { activityEvent } from '../protocol/e40.js';
import type { StepResult, StepStatus } from '../engine/step.js';
import { isBlocking, type Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { runGit } from '../git/run-git.js';
import { withoutRepositoryLocating } from '../git/harden.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { parseProgram } from '../protocol/parse-program.js';
import { resolveFreezeAt, tierOfImpl } from '../protocol/program/index.js';
import { slugPattern, type ImplManifest } from '../protocol/schema/impl-schema.js';
import type { ProgramManifest } from '../protocol/schema/program-schema.js';
import { e37Required } from '../protocol/waves.js';
import { validateImpl } from '../protocol/validate-impl.js';
import { editImpl, loadManifest } from '../store/manifest-file.js';
import { readTextFile } from '../store/read-text.js';
import { repoFileFacts } from '../store/repo-facts.js';
import { commitManifest, runCritic, type RunCriticResult } from './run-critic.js';
import { commitText } from '../git/commit-files.js';
import { moveToQuarantine } from '../git/quarantine-move.js';
import { ownTools, watchOwnWrites } from './own-writes.js';
import { writeFileAtomic } from '../store/atomic-file.js';
import { postScoutChecks, preScoutAnalysis, scoutCheckCodes } from './scout-analysis.js';
import { finishRefresh, refreshFeature, refreshSnapshot, type BriefRefreshRecord } from './brief-refresh.js';

/** Options of {@link runScout}. */
export interface RunScoutOptions {
  /** Cost budgets (issue 14): the Scout's model calls are charged to the run (wave 0, agent `scout`). */
  budget?: BudgetTracker;
  /**
   * The Scout's toolbox (issue 15): H1a/H3 results in the prompt, E45/E46/E35 checks of the
   * written plan in the correction loop. Default on; false skips both (`--no-scout-tools`).
   */
  scoutTools?: boolean;
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  /** The feature description (or requirements text). */
  feature: string;
  /** Repository root the Scout plans in. */
  repoDir: string;
  /** Scout model string; default from the environment (POLYWAVE_MODEL, API keys, claude-code). */
  model?: string;
  /** Critic model (default: `model`). */
  criticModel?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  /** PROGRAM manifest this IMPL belongs to (E31: its contracts go into the prompt). */
  program?: string;
  /**
   * Files others write while this Scout runs (relative to the repository): the tier's other Scouts' IMPL docs, the
   * PROGRAM manifest the orchestrator updates. Not the Scout's to write, and never taken for its leftovers.
   */
  concurrentPaths?: readonly string[];
  /** Run the E37 critic when the threshold is met (default true; `--no-critic` → false). */
  critic?: boolean;
  /** E16 attempts in total (default 3). */
  maxAttempts?: number;
  /** Scout backend (tests); passed to runAgent. */
  backend?: AgentBackend;
  /** Critic backend (tests); default `backend`. */
  criticBackend?: AgentBackend;
  /** Slug instead of the one derived from the feature. */
  slug?: string;
  /** Explicit manifest path (`--impl-output-path`); must lie inside `repoDir`. */
  implPath?: string;
  /** E37 auto mode: an ISSUES verdict with warnings only passes. */
  auto?: boolean;
  /** Wall-clock limit per Scout attempt (ms; default 10 minutes, as Go's run-scout). */
  timeoutMs?: number;
  /** Wall-clock limit of the critic (ms; default 20 minutes). */
  criticTimeoutMs?: number;
  maxTurns?: number;
  /** E28A `--refresh-brief`: refresh the agents' tasks of an existing reviewed IMPL, keeping ownership and waves (see brief-refresh.ts). */
  refreshBrief?: boolean;
}

/** A validation finding as recorded per attempt. */
export interface ScoutFindingRecord {
  code: string;
  severity: Finding['severity'];
  field?: string;
  line?: number;
  column?: number;
  message: string;
}

/** One Scout launch and the validation of what it wrote. */
export interface ScoutAttemptRecord {
  attempt: number;
  /** `valid`, `invalid` (blocking findings), `missing` (no manifest written). */
  outcome: 'valid' | 'invalid' | 'missing';
  agent: { status: AgentOutcome['status']; turns: number; failure?: string };
  error_count: number;
  /** Blocking findings (error, fatal), fed back to the next attempt. */
  errors: ScoutFindingRecord[];
  warning_count: number;
  usage: AgentUsage;
  duration_ms: number;
}

/** The run-scout result (printed as JSON by the CLI). */
export interface RunScoutResult {
  impl_path: string;
  slug: string;
  /** The manifest's state at the end (BLOCKED also when the file was too broken to write it into). */
  state: string;
  verdict?: string;
  attempts: ScoutAttemptRecord[];
  critic?: { verdict?: string; issue_count: number; error_count: number; gate_passes: boolean; summary?: string; error?: { code: string; message: string } };
  /** NOT_SUITABLE: the Scout's suitability assessment (and reasoning). */
  not_suitable_reasons?: string[];
  committed: boolean;
  commit_sha?: string;
  /** Why the run did not end REVIEWED (BLOCKED, agent failure, critic gate). */
  error?: { code: string; message: string };
  usage: AgentUsage;
  duration_ms: number;
  steps: StepResult[];
  /** `--refresh-brief`: which tasks changed, and whether the IMPL was restored. */
  brief_refresh?: BriefRefreshRecord;
  /** True when the IMPL ended REVIEWED (ready for prepare-wave). */
  success: boolean;
}

/** Kebab-case slug of a feature description, at most `maxLength` characters (cut at a word boundary when one is near). */
export function deriveSlug(feature: string, maxLength = 40): string {
  const words = feature
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (words.length <= maxLength) return words === '' ? 'feature' : words;
  const cut = words.slice(0, maxLength);
  const boundary = cut.lastIndexOf('-');
  const slug = (words[maxLength] === '-' ? cut : boundary >= maxLength / 2 ? cut.slice(0, boundary) : cut).replace(/-+$/g, '');
  return slug === '' ? 'feature' : slug;
}


function findingRecord(finding: Finding): ScoutFindingRecord {
  return {
    code: finding.code,
    severity: finding.severity,
    ...(finding.field !== undefined ? { field: finding.field } : {}),
    ...(finding.line !== undefined ? { line: finding.line } : {}),
    ...(finding.column !== undefined ? { column: finding.column } : {}),
    message: finding.message,
  };
}

/** The H2 commands as the Scout reads them (only the commands found). */
export function formatCommandSet(set: CommandSet): string {
  const lines = [
    ['toolchain', set.toolchain],
    ['build', set.build],
    ['test', set.test.full],
    ['test (focused, pattern)', set.test.focusedPattern],
    ['lint (check)', set.lint.check],
    ['lint (fix)', set.lint.fix],
    ['format (check)', set.format.check],
    ['format (fix)', set.format.fix],
    ['detected from', set.detectionSources.join(', ')],
  ];
  return lines
    .filter(([, value]) => value !== undefined && value.trim() !== '')
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}


/** What the Scout left at the IMPL path, validated (parse findings + every IMPL rule). */
interface ScoutOutput {
  exists: boolean;
  findings: Finding[];
  manifest: ImplManifest | null;
}

async function inspectScoutOutput(implPath: string, relativePath: string, repoDir: string, notes?: string[]): Promise<ScoutOutput> {
  if (!existsSync(implPath)) {
    return { exists: false, manifest: null, findings: [{ code: 'N005_IMPL_NOT_FOUND', severity: 'fatal', field: relativePath, message: `no manifest was written at ${relativePath}: write the IMPL manifest to exactly this path` }] };
  }
  let text: string;
  try {
    text = await readTextFile(implPath);
  } catch (error) {
    const code = PolywaveError.isInstance(error) ? error.code : 'X002_FILE_READ';
    return { exists: true, manifest: null, findings: [{ code, severity: 'fatal', message: error instanceof Error ? error.message : String(error) }] };
  }
  const parsed = parseImpl(text);
  const findings: Finding[] = [...parsed.findings];
  if (parsed.manifest) findings.push(...validateImpl({ manifest: parsed.manifest, locate: parsed.locate, ...repoFileFacts(repoDir) }));
  // Issue 15: the Scout's own tools check the plan (E45 shared types, E46 test cascade, E35 wiring).
  if (parsed.manifest && notes) {
    const checked = await postScoutChecks({ manifest: parsed.manifest, repoDir });
    findings.push(...checked.findings);
    notes.push(...checked.notes);
  }
  return { exists: true, findings, manifest: parsed.manifest };
}

/** The PROGRAM context of the Scout prompt (E31): frozen contracts (P2) and the ones this IMPL touches. */
async function programContext(programPath: string, slug: string): Promise<ScoutProgramContext> {
  if (!existsSync(programPath)) throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `PROGRAM manifest not found: ${programPath}` });
  const { parsed } = await loadManifest(programPath, parseProgram);
  const program = parsed.manifest as ProgramManifest | null;
  if (!program) {
    const first = parsed.findings.find(isBlocking);
    throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: `${programPath}: ${first?.message ?? 'PROGRAM manifest is not usable'}` });
  }
  const tier = tierOfImpl(program, slug);
  const frozen: ScoutProgramContract[] = [];
  const open: ScoutProgramContract[] = [];
  const known = program.impls.some((impl) => impl.slug === slug);
  for (const contract of program.program_contracts ?? []) {
    const view: ScoutProgramContract = {
      ...(contract.name !== undefined ? { name: contract.name } : {}),
      ...(contract.description !== undefined ? { description: contract.description } : {}),
      ...(contract.definition !== undefined ? { definition: contract.definition } : {}),
      ...(contract.location !== undefined ? { location: contract.location } : {}),
      ...(contract.freeze_at !== undefined ? { freeze_at: contract.freeze_at } : {}),
    };
    const point = resolveFreezeAt(program, contract.freeze_at);
    // A contract freezes when its tier completes; tiers run in order, so for an IMPL of a later tier it is frozen.
    if (point.kind === 'tier' && tier !== undefined && point.tier < tier) frozen.push(view);
    else if (!known || (contract.consumers ?? []).some((consumer) => consumer.impl === slug) || (contract.freeze_at ?? '').includes(slug)) open.push(view);
  }
  return {
    programPath,
    ...(program.program_slug ? { programSlug: program.program_slug } : {}),
    ...(known ? { implSlug: slug } : {}),
    ...(tier !== undefined ? { tier } : {}),
    frozenContracts: frozen,
    contracts: open,
  };
}

/** States from which a Scout may (re)write the manifest. */
function mayRescout(manifest: ImplManifest): boolean {
  const state = (manifest.state ?? '').trim();
  if (state === '' || state === 'SCOUT_PENDING' || state === 'INTERVIEWING') return true;
  // A Scout that ended BLOCKED (E16) can run again; a BLOCKED wave cannot be re-planned over.
  const executed = Object.keys(manifest.completion_reports ?? {}).length > 0 || !!manifest.worktrees_created_at || !!manifest.merge_state || (manifest.waves ?? []).some((wave) => !!wave.base_commit);
  return state === 'BLOCKED' && !executed;
}

/**
 * True when the IMPL at `relative` is not in HEAD: a Scout interrupted between its validation and
 * its commit (the state SCOUT_VALIDATING is written first) left its own, never reviewed output.
 */
async function uncommitted(repoDir: string, relative: string, env: Readonly<Record<string, string | undefined>>): Promise<boolean> {
  try {
    return (await runGit(['ls-tree', '--name-only', 'HEAD', '--', relative], { cwd: repoDir, env })).trim() === '';
  } catch {
    return false;
  }
}

async function refuseExisting(implPath: string, repoDir: string, relative: string, env: Readonly<Record<string, string | undefined>>): Promise<void> {
  if (!existsSync(implPath)) return;
  let text: string;
  try {
    text = await readTextFile(implPath);
  } catch (error) {
    throw new PolywaveError({ code: 'N019_SCOUT_INVALID_OPTS', message: `${implPath} exists and cannot be read (${error instanceof Error ? error.message : String(error)}); fix or remove it first` });
  }
  // An empty file not in HEAD is the placeholder a Scout's run makes for its own output (src/agents/run-agent.ts) and
  // removes when nothing was written — unless the run was killed (outside attack P12-05: every re-run of a PROGRAM
  // killed during scouting stopped BLOCKED on it): nothing of anyone's is in it, so it goes, and the Scout runs again.
  if (text.trim() === '' && (await uncommitted(repoDir, relative, env))) {
    await rm(implPath, { force: true });
    return;
  }
  const parsed = parseImpl(text);
  if (!parsed.manifest) {
    throw new PolywaveError({ code: 'N019_SCOUT_INVALID_OPTS', message: `${implPath} exists and is not a usable manifest (${parsed.findings.find(isBlocking)?.message ?? 'unreadable'}); fix it (polywave validate) or remove it before scouting again` });
  }
  // A SCOUT_VALIDATING doc that was never committed is an interrupted Scout's (killed during its
  // critic or before its commit): running the Scout again is the resume (program-execute does so).
  // A committed one ended at the E37 critic gate and is the human's to correct (run-critic).
  const interrupted = (parsed.manifest.state ?? '').trim() === 'SCOUT_VALIDATING' && (await uncommitted(repoDir, relative, env));
  if (!interrupted && !mayRescout(parsed.manifest)) {
    throw new PolywaveError({
      code: 'N019_SCOUT_INVALID_OPTS',
      message: `${implPath} already exists in state ${parsed.manifest.state}: the Scout only (re)writes an IMPL in SCOUT_PENDING (or BLOCKED before any wave ran); use another --slug or amend-impl`,
    });
  }
}

async function setState(implPath: string, state: string): Promise<void> {
  await editImpl(implPath, () => ({ edits: [{ path: ['state'], value: state }], outcome: undefined }));
}

/**
 * Runs the Scout with the E16 correction loop, the E37 critic gate and one commit (see the module
 * comment). Bad input (no repository, a bad slug, an IMPL past SCOUT_PENDING, an unreadable
 * PROGRAM) throws a coded error (exit 2); everything that happens to the agents is in the result.
 */
export async function runScout(given: RunScoutOptions): Promise<RunScoutResult> {
  // Never where GIT_DIR / GIT_WORK_TREE point: the run is bound to --repo-dir (outside attack X34-07).
  const options: RunScoutOptions = { ...given, env: withoutRepositoryLocating(given.env) };
  const started = performance.now();
  const feature = options.feature.trim();
  if (feature === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'the feature description is empty' });
  const resolvedRepo = path.resolve(options.repoDir);
  if (!existsSync(resolvedRepo) || !statSync(resolvedRepo).isDirectory()) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${resolvedRepo} is not a directory` });
  let repoDir: string;
  try {
    // The top of the work tree, from a subdirectory too (outside attack X33-05/10: the plan went to <subdir>/docs/IMPL
    // while its commit named the top-level path); a linked worktree's own top.
    repoDir = realpathSync((await runGit(['rev-parse', '--show-toplevel'], { cwd: realpathSync(resolvedRepo), env: options.env })).trim());
  } catch {
    throw new PolywaveError({ code: 'G000_NOT_A_REPOSITORY', message: `${realpathSync(resolvedRepo)} is not a git repository (the IMPL manifest is committed there)` });
  }

  let implPath: string;
  let slug: string;
  if (options.implPath) {
    implPath = path.resolve(repoDir, options.implPath);
    slug = options.slug ?? /IMPL-([^/\\]+?)\.ya?ml$/.exec(implPath)?.[1] ?? deriveSlug(feature);
  } else {
    slug = options.slug ?? deriveSlug(feature);
    implPath = path.join(repoDir, 'docs', 'IMPL', `IMPL-${slug}.yaml`);
  }
  if (!slugPattern.test(slug)) throw new PolywaveError({ code: 'V018_INVALID_SLUG_FORMAT', message: `slug "${slug}" is not kebab-case (a-z, 0-9, single hyphens)` });
  const relativeImpl = path.relative(repoDir, implPath).split(path.sep).join('/');
  if (relativeImpl.startsWith('../') || path.isAbsolute(relativeImpl)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `the IMPL path ${implPath} is outside the repository ${repoDir}` });
  const refresh = options.refreshBrief ? await refreshSnapshot(implPath) : undefined;
  if (!refresh) await refuseExisting(implPath, repoDir, relativeImpl, options.env);
  const program = options.program ? await programContext(path.resolve(repoDir, options.program), slug) : undefined;
  await mkdir(path.dirname(implPath), { recursive: true });

  const events = options.events;
  const steps: StepResult[] = [];
  const record = (step: string, status: StepStatus, detail: string, stepStarted: number, data?: unknown) => {
    const result: StepResult = { step, status, detail, ...(data === undefined ? {} : { data }), duration_ms: Math.round(performance.now() - stepStarted) };
    steps.push(result);
    events?.emit({ v: 1, type: 'step-end', command: 'run-scout', slug, step: result });
  };
  const usage = emptyUsage();

  // E17 project memory and the H2 toolchain helper (best-effort: a failure is logged, never blocks).
  const automationStarted = performance.now();
  const contextPath = path.join(repoDir, 'docs', 'CONTEXT.md');
  const contextMd = existsSync(contextPath) ? await readFile(contextPath, 'utf8').catch(() => undefined) : undefined;
  let toolchainCommands: string | undefined;
  let automationNote = 'no toolchain detected';
  try {
    const set = await extractCommands(repoDir, { platform: process.platform });
    if (set) {
      toolchainCommands = formatCommandSet(set);
      automationNote = `toolchain ${set.toolchain || '(from CI)'} from ${set.detectionSources.join(', ') || 'defaults'}`;
    }
  } catch (error) {
    automationNote = `extract-commands failed: ${error instanceof Error ? error.message : String(error)}`;
  }
  // H1a / H3 before the model runs (issue 15): their results fill the prompt's input slots.
  const pre = options.scoutTools === false ? undefined : await preScoutAnalysis({ feature, repoDir, ...(options.env ? { env: options.env } : {}) });
  if (pre && pre.notes.length > 0) automationNote += `; ${pre.notes.join('; ')}`;
  record('automation', 'success', `${contextMd !== undefined ? 'docs/CONTEXT.md read (E17)' : 'no docs/CONTEXT.md'}; ${automationNote}${program ? `; PROGRAM ${program.programSlug ?? program.programPath} (${program.frozenContracts?.length ?? 0} frozen contract(s))` : ''}`, automationStarted);

  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 3));
  const attempts: ScoutAttemptRecord[] = [];
  const spec = resolveModelSpec(options.model, options.env);
  // Its own IMPL doc only (X26-05: writable on all of docs/IMPL/, a steered Scout planted queue items, other IMPLs'
  // plans and archive entries beside its plan — what V058/V059 refuse to wave agents — and the daemon ran them).
  const owned = [relativeImpl];
  let previousErrors: Finding[] = [];
  let output: ScoutOutput | undefined;
  let stopped: { code: string; message: string } | undefined;

  const scoutStarted = performance.now();
  events?.emit(activityEvent('scout_launch', { slug, ...(program?.programSlug ? { program: program.programSlug } : {}), details: `model ${spec.raw}` }));
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    const prompt = renderRolePrompt('scout', {
      feature: refresh ? refreshFeature(feature, relativeImpl) : feature,
      repoRoot: repoDir,
      implPath: relativeImpl,
      featureSlug: slug,
      ...(contextMd !== undefined ? { contextMd } : {}),
      ...(toolchainCommands ? { toolchainCommands } : {}),
      ...(pre?.dependencyAnalysis ? { dependencyAnalysis: pre.dependencyAnalysis } : {}),
      ...(pre?.suitabilityScan ? { suitabilityScan: pre.suitabilityScan } : {}),
      ...(program ? { program } : {}),
      ...(previousErrors.length > 0 ? { validationErrors: previousErrors.map((finding): PromptFinding => finding) } : {}),
      attempt,
      maxAttempts,
    });
    // Issue 14: the Scout is part of the run, so its model calls count against the run's budget.
    const noMoney = options.budget?.checkLaunch({ slug, wave: 0, agent: 'scout' });
    if (noMoney) {
      stopped = { code: budgetExceededCode, message: `${noMoney.message}; Scout attempt ${attempt} not started (raise the budget and re-run)` };
      break;
    }
    const budgetStop = new AbortController();
    const account = options.budget?.startAgent({ slug, wave: 0, agent: 'scout' }, (breach) => budgetStop.abort(Object.assign(new Error(breach.message), { name: 'BudgetExceeded' })));
    const attemptStarted = performance.now();
    events?.emit({ v: 1, type: 'agent-launch', slug, wave: 0, agent: 'scout', attempt, model: spec.raw, backend: options.backend?.name ?? spec.backend });
    // E40: one `cost` event per model call of the Scout.
    const meter = createCostMeter({ spec, ...(options.backend ? { backend: options.backend.name } : {}), role: 'scout', attempt, labels: { slug, agent: 'scout', ...(program?.programSlug ? { program: program.programSlug } : {}) }, ...(events ? { emit: (event) => events.emit(event) } : {}), ...(account ? { onCost: (usd: number) => account.charge(usd) } : {}) });
    // P13-33/P14-01: a change of the doc by anything but the Scout's own write_file/edit_file is a process's, undone
    // before its next write/edit and at its end (src/orchestrator/own-writes.ts).
    const own = watchOwnWrites(implPath, repoDir, { quarantineName: () => `scout-${slug}-changed-${new Date().toISOString().replace(/[:.]/g, '-')}`, trackFromStart: ownTools(spec.backend) });
    const onEvent = (event: AgentEvent) => {
      own.onEvent(event);
      if (event.type === 'turn-end') meter.observe(event.turn, event.usage);
      if (event.type === 'tool-call-end') events?.emit({ v: 1, type: 'agent-tool-call', slug, wave: 0, agent: 'scout', attempt, tool: event.tool, is_error: event.isError, duration_ms: event.durationMs });
      else if (event.type === 'tool-call-deny') events?.emit({ v: 1, type: 'agent-tool-call', slug, wave: 0, agent: 'scout', attempt, tool: event.denial.tool, is_error: true, denied: event.denial.code, duration_ms: 0 });
      else if (event.type === 'turn-end') events?.emit({ v: 1, type: 'agent-progress', slug, wave: 0, agent: 'scout', attempt, turns: event.turn, input_tokens: event.usage.inputTokens, output_tokens: event.usage.outputTokens, cost_usd: event.usage.costUsd });
    };
    const { outcome: ran } = await runAgent({
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
      agentId: 'scout',
      role: 'scout',
      attempt,
      model: spec,
      systemPrompt: prompt.system,
      prompt: prompt.user,
      cwd: repoDir,
      implPath,
      policy: { root: repoDir, ownedFiles: owned, ...(options.concurrentPaths && options.concurrentPaths.length > 0 ? { orchestratorPaths: [...options.concurrentPaths] } : {}) },
      limits: { timeoutMs: options.timeoutMs ?? 10 * 60_000, ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}) },
      env: options.env,
      onEvent,
      ...(account ? { signal: options.signal ? AbortSignal.any([options.signal, budgetStop.signal]) : budgetStop.signal } : options.signal ? { signal: options.signal } : {}),
      ...(options.backend ? { backend: options.backend } : {}),
    }).finally(() => account?.end());
    // The Scout's cost IS the sum of its `cost` events.
    const outcome = { ...ran, usage: meter.settle(ran.usage, ran.turns) };
    addUsage(usage, outcome.usage);
    events?.emit({
      v: 1,
      type: 'agent-end',
      slug,
      wave: 0,
      agent: 'scout',
      attempt,
      status: outcome.status,
      turns: outcome.turns,
      input_tokens: outcome.usage.inputTokens,
      output_tokens: outcome.usage.outputTokens,
      cost_usd: outcome.usage.costUsd,
      duration_ms: outcome.durationMs,
      ...(outcome.failure ? { explanation: outcome.failure.message } : {}),
    });
    // What the sandbox and the after-run checks undid (a file outside its doc moved out or put back, a planted
    // repository): said here too, not only in the journal (attack report X28: run-scout printed none of it).
    const checks = afterRunChecks(outcome.denials, 'the Scout', ' outside its IMPL doc');
    // A cli Scout's plan copy that was not put in place (a link, not a regular file): nothing was undone, its plan is not there.
    const refusedCopies = outcome.denials.filter((denial) => denial.code === planCopyRefusedCode);
    if (refusedCopies.length > 0) record(`scout-plan-copy-${attempt}`, 'failed', `the Scout's plan was not put in place: ${refusedCopies.map((denial) => `${denial.code}: ${denial.reason}`).join('; ')}`, attemptStarted);
    if (checks.summary) record(`scout-sandbox-${attempt}`, checks.stayedMessage ? 'failed' : 'warning', checks.summary, attemptStarted);
    // Fail closed (X29-05): something the Scout left in the checkout is still there; no plan of this run goes on.
    if (checks.stayedMessage) {
      stopped = { code: 'SANDBOX_LEFTOVER_STAYED', message: `${checks.stayedMessage}, then run the Scout again` };
      break;
    }
    const agentFailure = outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}` : undefined;
    record(`scout-attempt-${attempt}`, outcome.status === 'finished' ? 'success' : 'failed', `${outcome.status} after ${outcome.turns} turn(s)${agentFailure ? ` — ${agentFailure}` : ''}`, attemptStarted, { status: outcome.status, turns: outcome.turns });

    const putBack = await own.putBack();
    if (putBack) record(`scout-doc-${attempt}`, 'warning', putBack, attemptStarted);
    const validateStarted = performance.now();
    const checkNotes: string[] = [];
    output = await inspectScoutOutput(implPath, relativeImpl, repoDir, options.scoutTools === false ? undefined : checkNotes);
    let blocking = output.findings.filter(isBlocking);
    if (!output.exists && agentFailure) blocking = blocking.map((finding) => ({ ...finding, message: `${finding.message} (the Scout run ended ${outcome.status}: ${outcome.failure?.message ?? ''})` }));
    const warnings = output.findings.length - blocking.length;
    const verdictOutcome: ScoutAttemptRecord['outcome'] = !output.exists ? 'missing' : blocking.length > 0 ? 'invalid' : 'valid';
    attempts.push({
      attempt,
      outcome: verdictOutcome,
      agent: { status: outcome.status, turns: outcome.turns, ...(agentFailure ? { failure: agentFailure } : {}) },
      error_count: blocking.length,
      errors: blocking.map(findingRecord),
      warning_count: warnings,
      usage: outcome.usage,
      duration_ms: Math.round(performance.now() - attemptStarted),
    });
    record(
      `validate-attempt-${attempt}`,
      verdictOutcome === 'valid' ? 'success' : 'failed',
      (verdictOutcome === 'valid' ? `valid${warnings > 0 ? ` (${warnings} warning(s))` : ''}` : verdictOutcome === 'missing' ? `no manifest at ${relativeImpl}` : `${blocking.length} error(s): ${[...new Set(blocking.map((finding) => finding.code))].join(', ')}`) + (checkNotes.length > 0 ? `; ${checkNotes.join('; ')}` : ''),
      validateStarted,
      { error_count: blocking.length, warning_count: warnings },
    );
    if (verdictOutcome === 'valid') break;
    // The advisory E35 wiring findings go back with the errors (the Scout decides on them).
    previousErrors = [...blocking, ...output.findings.filter((finding) => finding.code === scoutCheckCodes.undeclaredWiring)];
    // P14-23: what was undone goes back to the Scout too (a doc written by bash is taken away: write it with write_file).
    if (putBack) previousErrors = [{ code: 'SCOUT_DOC_PUT_BACK', severity: 'error', message: putBack } as Finding, ...previousErrors];

    if (account?.breach) {
      stopped = { code: budgetExceededCode, message: `${account.breach.message}; the Scout was stopped in attempt ${attempt} (raise the budget and re-run)` };
      break;
    }

    // Nothing a correction prompt can fix: an abort, or a setup problem (missing key or binary).
    if (outcome.status === 'aborted' || options.signal?.aborted) {
      stopped = { code: 'N020_SCOUT_RUN_FAILED', message: `the Scout run was aborted (attempt ${attempt})` };
      break;
    }
    if (outcome.failure?.kind === 'config') {
      stopped = { code: 'N020_SCOUT_RUN_FAILED', message: `the Scout cannot run: ${outcome.failure.message}` };
      break;
    }
  }

  const lastAttempt = attempts.at(-1);
  events?.emit(
    activityEvent('scout_complete', {
      slug,
      ...(program?.programSlug ? { program: program.programSlug } : {}),
      details: `${lastAttempt?.outcome ?? 'missing'} after ${attempts.length} attempt(s)${stopped ? `: ${stopped.code} ${stopped.message}` : ''}`,
      duration_ms: Math.round(performance.now() - scoutStarted),
    }),
  );

  const finish = (partial: Omit<RunScoutResult, 'impl_path' | 'slug' | 'attempts' | 'usage' | 'duration_ms' | 'steps'>): RunScoutResult => ({
    impl_path: implPath,
    slug,
    ...partial,
    attempts,
    usage,
    duration_ms: Math.round(performance.now() - started),
    steps,
  });

  const last = attempts.at(-1);
  if (refresh) {
    const refreshed = await finishRefresh({ implPath, slug, snapshot: refresh, valid: last?.outcome === 'valid', ...(stopped ? { failure: stopped } : {}), record: (step, status, detail) => record(step, status, detail, performance.now()), commit: (message) => commitManifest(repoDir, implPath, message, options.env) });
    return finish({ ...(refresh.manifest.verdict ? { verdict: refresh.manifest.verdict } : {}), ...refreshed });
  }
  if (stopped && last?.outcome !== 'valid') {
    // An abort or a setup problem is not a Scout failure: the state is left as it is.
    const state = (output?.manifest?.state ?? '').trim() || 'SCOUT_PENDING';
    record('state', 'skipped', `stopped before a valid manifest; state left ${state}`, performance.now());
    return finish({ state, ...(output?.manifest?.verdict ? { verdict: output.manifest.verdict } : {}), committed: false, error: stopped, success: false });
  }
  if (!output || last?.outcome !== 'valid') {
    // E16: retry limit reached → BLOCKED; the manifest stays for the human.
    const stateStarted = performance.now();
    let written = false;
    if (output?.exists && output.manifest) {
      try {
        await setState(implPath, 'BLOCKED');
        written = true;
      } catch {
        written = false;
      }
    }
    const detail = written ? 'BLOCKED written into the manifest' : output?.exists ? 'BLOCKED — the manifest does not parse, left as written for the human' : 'BLOCKED — no manifest was written';
    record('state', 'failed', detail, stateStarted, { state: 'BLOCKED', written });
    const errorList = (last?.errors ?? []).map((finding) => `[${finding.code}]${finding.field ? ` ${finding.field}` : ''}${finding.line !== undefined ? ` (line ${finding.line})` : ''}: ${finding.message}`);
    const error = {
      code: 'N056_SCOUT_CORRECTION_EXHAUSTED',
      message: `E16: the manifest is still invalid after ${attempts.length} attempt(s): ${errorList.join('; ') || 'no manifest'}${written ? '' : ` (state not written: ${output?.exists ? 'the file does not parse' : 'no file'})`}`,
    };
    return finish({ state: 'BLOCKED', ...(output?.manifest?.verdict ? { verdict: output.manifest.verdict } : {}), committed: false, error, success: false });
  }

  const manifest = output.manifest!;
  const verdict = manifest.verdict;
  let state: string;
  let criticSummary: RunScoutResult['critic'];
  let error: RunScoutResult['error'];
  let notSuitable: string[] | undefined;
  let criticRan = false;

  const stateStarted = performance.now();
  if (verdict === 'NOT_SUITABLE') {
    state = 'NOT_SUITABLE';
    await setState(implPath, state);
    notSuitable = [manifest.suitability_assessment, manifest.suitability_reasoning].filter((value): value is string => typeof value === 'string' && value.trim() !== '').map((value) => value.trim());
    record('state', 'warning', 'verdict NOT_SUITABLE → state NOT_SUITABLE', stateStarted, { state });
  } else {
    await setState(implPath, 'SCOUT_VALIDATING');
    record('state', 'success', 'valid → SCOUT_VALIDATING', stateStarted, { state: 'SCOUT_VALIDATING' });
    state = 'SCOUT_VALIDATING';

    const required = e37Required(manifest);
    const criticStarted = performance.now();
    let gatePasses = true;
    if (!required) record('critic', 'skipped', 'E37 threshold not met (wave 1 has fewer than 3 agents, one repository)', criticStarted);
    else if (options.critic === false) record('critic', 'skipped', 'E37 threshold met but the critic is disabled (--no-critic)', criticStarted);
    else {
      const criticBackend = options.criticBackend ?? options.backend;
      let critic: RunCriticResult;
      try {
        critic = await runCritic({
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
          implPath,
          repoDir,
          env: options.env,
          commit: false,
          ...((options.criticModel ?? options.model) ? { model: options.criticModel ?? options.model } : {}),
          ...(options.now ? { now: options.now } : {}),
          ...(criticBackend ? { backend: criticBackend } : {}),
          ...(events ? { events } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.budget ? { budget: options.budget } : {}),
          ...(options.auto !== undefined ? { auto: options.auto } : {}),
          ...(options.criticTimeoutMs !== undefined ? { timeoutMs: options.criticTimeoutMs } : {}),
          ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
        });
      } catch (caught) {
        const code = PolywaveError.isInstance(caught) ? caught.code : 'N029_AGENT_RUN_FAILED';
        const message = caught instanceof Error ? caught.message : String(caught);
        critic = { impl_path: implPath, slug, issue_count: 0, error_count: 0, gate_passes: false, committed: false, error: { code, message }, agent: { status: 'failed', turns: 0 }, usage: emptyUsage(), duration_ms: 0, steps: [], success: false };
      }
      addUsage(usage, critic.usage);
      criticRan = critic.verdict !== undefined;
      gatePasses = critic.gate_passes;
      criticSummary = {
        ...(critic.verdict ? { verdict: critic.verdict } : {}),
        issue_count: critic.issue_count,
        error_count: critic.error_count,
        gate_passes: critic.gate_passes,
        ...(critic.summary ? { summary: critic.summary } : {}),
        ...(critic.error ? { error: critic.error } : {}),
      };
      if (critic.error && !critic.verdict) {
        error = critic.error;
        record('critic', 'failed', `the critic produced no review: ${critic.error.message}`, criticStarted);
      } else if (!gatePasses) {
        error = { code: 'P009_CRITIC_GATE_FAILED', message: `E37 critic gate: verdict ${critic.verdict} with ${critic.error_count} error(s) in ${critic.issue_count} issue(s) — correct the IMPL and run run-critic again` };
        record('critic', 'failed', `verdict ${critic.verdict}: ${critic.issue_count} issue(s), ${critic.error_count} error(s) — gate blocks`, criticStarted);
      } else {
        record('critic', 'success', `verdict ${critic.verdict}: ${critic.issue_count} issue(s)`, criticStarted);
      }
    }
    if (gatePasses && !error) {
      const reviewedStarted = performance.now();
      await setState(implPath, 'REVIEWED');
      state = 'REVIEWED';
      record('state', 'success', 'SCOUT_VALIDATING → REVIEWED', reviewedStarted, { state });
    }
  }

  // One commit of the manifest alone, so prepare-wave finds a clean tree. Only the plan that was validated: another
  // process in this checkout (a concurrent tier Scout's bash: outside attack X28-12) may have rewritten the doc since —
  // a changed plan is never committed as reviewed, and the commit is checked to hold the validated plan.
  const commitStarted = performance.now();
  let commitSha: string | undefined;
  const planOf = (value: unknown): string => {
    const { state: _state, critic_report: _critic, ...plan } = (value ?? {}) as Record<string, unknown>;
    return JSON.stringify(plan);
  };
  const validatedPlan = planOf(manifest);
  const foreignChange = async (text: () => Promise<string>): Promise<boolean> => {
    try {
      const parsed = parseImpl(await text());
      return parsed.manifest === null || planOf(parsed.manifest) !== validatedPlan;
    } catch {
      return true;
    }
  };
  // The text checked here is the text committed (X29-01: a check of the file, then `git add` of the file, left a window).
  const checkedText = await readFile(implPath, 'utf8');
  if (await foreignChange(async () => checkedText)) {
    const message = `${relativeImpl} changed after it was validated (not by this Scout run: another process in the checkout wrote it); not committed — look at it, then run the Scout again`;
    record('commit', 'failed', message, commitStarted);
    return finish({ state, ...(verdict ? { verdict } : {}), ...(criticSummary ? { critic: criticSummary } : {}), committed: false, error: { code: 'SCOUT_IMPL_CHANGED', message }, success: false });
  }
  try {
    const markers = `[Polywave:scout:${slug}]${criticRan ? ` [Polywave:critic:${slug}]` : ''}`;
    const relativePosix = relativeImpl.split(path.sep).join('/');
    commitSha = await commitText({ cwd: repoDir, file: relativePosix, text: checkedText, message: `chore: scout IMPL for ${slug} (${state}${criticSummary?.verdict ? `, critic ${criticSummary.verdict}` : ''}) ${markers}`, env: options.env });
    // Should the file have changed since it was read (another process), the committed text goes back in its place.
    if ((await readFile(implPath, 'utf8').catch(() => undefined)) !== checkedText) {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const kept = await moveToQuarantine(implPath, path.join(repoDir, '.git', 'polywave', 'quarantine', `scout-${slug}-${stamp}`, relativePosix)).catch(() => undefined);
      await writeFileAtomic(implPath, checkedText);
      record('commit', 'warning', `${relativeImpl} was changed by another process after it was checked: the checked plan was committed and put back${kept ? `; the changed copy is in ${kept}` : ''}`, commitStarted);
    }
    record('commit', 'success', commitSha ? `committed ${relativeImpl} (${commitSha.slice(0, 12)})` : 'manifest unchanged, nothing to commit', commitStarted);
    if (commitSha && (await foreignChange(() => runGit(['show', `${commitSha}:${relativeImpl.split(path.sep).join('/')}`], { cwd: repoDir, env: options.env })))) {
      error ??= { code: 'SCOUT_IMPL_CHANGED', message: `${relativeImpl} as committed (${commitSha.slice(0, 12)}) is not the plan that was validated: another process in the checkout wrote it while it was being committed — look at it, then run the Scout again` };
    }
  } catch (caught) {
    const message = caught instanceof Error ? caught.message : String(caught);
    record('commit', 'failed', message, commitStarted);
    error ??= { code: 'G000_GIT_FAILED', message: `committing ${relativeImpl} failed: ${message}` };
  }

  if (state === 'NOT_SUITABLE') error ??= { code: 'NOT_SUITABLE', message: 'the Scout found the feature NOT_SUITABLE for parallel agents (see not_suitable_reasons)' };
  return finish({
    state,
    ...(verdict ? { verdict } : {}),
    ...(criticSummary ? { critic: criticSummary } : {}),
    ...(notSuitable ? { not_suitable_reasons: notSuitable } : {}),
    committed: commitSha !== undefined,
    ...(commitSha ? { commit_sha: commitSha } : {}),
    ...(error ? { error } : {}),
    success: state === 'REVIEWED' && !error,
  });
}

