/**
 * E26 / E47 run-integration-agent: one Integration Agent on the merged result, in the repository
 * root on the current branch (no worktree, E27), exempt from I1 only inside its allowed files.
 *
 * Mode `gaps` (E25/E26): the wave's `integration_reports.wave{N}` gaps of severity error/warning
 * (computed on HEAD when the report is missing, as Go does) plus its `wiring_validation_reports`
 * gaps (E35). None → skipped, no agent. Allowed files = `integration_connectors` ∪ the gaps'
 * suggested callers (`search_results`) ∪ the wiring declarations' `must_be_called_from` ∪ the
 * files of the wave's agents when it is a `type: integration` wave — never a scaffold file or the
 * IMPL. After the agent stops: the jail audit (nothing outside the allowed files changed, HEAD on
 * the branch), the commit check (no allowed file left uncommitted), E25 (and E35) re-run on HEAD
 * to count the gaps that remain — stored back in the manifest and committed — and the manifest's
 * test/lint commands (the merged target passed them before, so it must still pass).
 *
 * Mode `hotfix` (E47): `hotfix.files` (the caller-cascade files of the last finalize-wave) and the
 * build error; allowed = those files; the build/test command must pass afterwards.
 *
 * A failure is non-fatal for the protocol (E26: reported to a human, the next wave may go on):
 * it is `success: false` with `error`, never an exception. Never prints.
 */
import path from 'node:path';
import type { AgentBackend, AgentLimits } from '../agents/contract.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { requireAgentsReady } from '../agents/model-preflight.js';
import { renderRolePrompt } from '../agents/prompts/index.js';
import type { IntegrationGapInput } from '../agents/prompts/integration.js';
import { runAgent } from '../agents/run-agent.js';
import { validateIntegration, validateWiring, type IntegrationReport, type WiringReport } from '../analysis/index.js';
import { PolywaveError } from '../errors/polywave-error.js';
import type { EventBus } from '../engine/events.js';
import type { BudgetTracker } from '../agents/budget.js';
import { budgetSignal, meterAgentEvents } from '../agents/cost-meter.js';
import { journalPaths } from '../engine/journal.js';
import { classifyCallerCascade, verifyBuild, verifyBuildCommands, type VerifyBuildData } from '../engine/verify-build.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { normalizeReportedPath } from '../protocol/conflicts.js';
import { implSlugFromPath } from '../protocol/names.js';
import { scaffoldPath, type ImplManifest } from '../protocol/schema/impl-schema.js';
import { findWave } from '../protocol/waves.js';
import type { YamlEdit } from '../protocol/yaml/index.js';
import { editImpl } from '../store/manifest-file.js';
import { assertGitConfigOutsideWorkingTrees } from '../git/config-origins.js';
import { agentEndEvent, agentEventForwarder, agentRunReport, commitImplChange, ensureCleanRoot, errorGist, firstLines, implRelativePath, readManifestOrThrow, type AgentRunReport } from './run-scaffold.js';
import { assertNotNestedRepository } from '../git/nested-repos.js';

export type IntegrationRunMode = 'gaps' | 'hotfix';

/** E47 input: the caller-cascade files and the build error of the last finalize-wave. */
export interface CascadeHotfix {
  files: string[];
  buildError: string;
  /** The command that failed (default: the manifest's test/lint commands). */
  buildCommand?: string;
}

/** Options of {@link runIntegrationAgent}. */
export interface RunIntegrationOptions {
  /** Cost budgets (issue 14): this agent's model calls are charged to the run. */
  budget?: BudgetTracker;
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** Repository root holding the merged result (default: the repository holding the IMPL). */
  repoDir?: string;
  /**
   * Where the merged result is checked out, and where the agent works, is verified and commits:
   * a PROGRAM tier's IMPL worktree (the checkout of the waves' merge target). Default `repoDir`.
   * When it is another checkout, the refreshed report stays uncommitted in the IMPL (in `repoDir`):
   * the main line does not move while a tier runs.
   */
  workDir?: string;
  /** The wave that merged. */
  wave: number;
  model?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  /** Use this backend instead of the one the model names (tests). */
  backend?: AgentBackend;
  /** Default: `hotfix` when `hotfix` is given, else `gaps`. */
  mode?: IntegrationRunMode;
  hotfix?: CascadeHotfix;
  limits?: Partial<AgentLimits>;
  /** Timeout of each verification command (ms; default 30 min). */
  buildTimeoutMs?: number;
}

/** The run-integration-agent result (Go keys `success, gap_count, agent_launched, build_passed?, error?`, plus ours). */
export interface RunIntegrationResult {
  wave: number;
  mode: IntegrationRunMode;
  impl_path: string;
  slug: string;
  /** True when there was nothing to do (no gaps): no agent ran. */
  skipped: boolean;
  success: boolean;
  /** Go: the number of gaps the agent was launched for. */
  gap_count: number;
  agent_launched: boolean;
  /** The test/lint commands after the agent (absent when none ran). */
  build_passed?: boolean;
  error?: string;
  /** Gaps (E25 error/warning + E35 wiring) before; for `hotfix`, the erroring files. */
  gaps_before: number;
  /** What remains after the agent (E25/E35 re-run on HEAD; for `hotfix`, files still erroring). */
  gaps_after: number;
  remaining_gaps: IntegrationGapInput[];
  /** Files the agent was allowed to write. */
  allowed_files: string[];
  /** Files changed since the start (committed or not), the IMPL excluded. */
  files_changed: string[];
  /** HEAD after the agent's commit(s), when it committed. */
  commit?: string;
  agent?: AgentRunReport;
  /** Jail audit problems (writes outside the allowed files, HEAD moved). */
  violations: Array<{ code: string; reason: string; path?: string }>;
  /** Commit-check problems (allowed files left uncommitted…). */
  problems: string[];
  verify_build?: VerifyBuildData;
  integration_report?: IntegrationReport;
  wiring_report?: WiringReport;
  /** Commit of the refreshed reports in the manifest. */
  impl_commit?: string;
  duration_ms: number;
}

const actionable = (severity: string | undefined) => severity === 'error' || severity === 'warning';

/** E35 wiring gaps in the prompt's gap shape. */
function wiringGapInputs(report: Pick<WiringReport, 'gaps'> | undefined): IntegrationGapInput[] {
  return (report?.gaps ?? []).map((gap) => {
    const declaration = gap.declaration ?? {};
    const caller = declaration.must_be_called_from ?? '';
    return {
      export_name: declaration.symbol ?? '',
      file_path: declaration.defined_in ?? '',
      ...(declaration.agent ? { agent_id: declaration.agent } : {}),
      category: 'function_call' as const,
      severity: 'error' as const,
      reason: gap.reason ?? `declared wiring: ${declaration.symbol ?? '?'} must be called from ${caller}`,
      suggested_fix: `Call ${declaration.symbol ?? '?'} from ${caller}${declaration.integration_pattern ? ` (${declaration.integration_pattern})` : ''}`,
      search_results: caller ? [caller] : [],
    };
  });
}

/** The E25 gaps that launch an integration agent (E26: error or warning). */
function e25Gaps(report: { gaps?: ReadonlyArray<IntegrationGapInput> | undefined } | undefined): IntegrationGapInput[] {
  return (report?.gaps ?? []).filter((gap) => actionable(gap.severity)).map((gap) => ({ ...gap }));
}

/** Files the gaps-mode agent may write (see the module comment). */
export function integrationAllowedFiles(manifest: ImplManifest, wave: number, gaps: readonly IntegrationGapInput[]): string[] {
  const files = new Set<string>();
  for (const connector of manifest.integration_connectors ?? []) if (connector.file) files.add(normalizeReportedPath(connector.file));
  for (const gap of gaps) for (const caller of gap.search_results ?? []) files.add(normalizeReportedPath(caller));
  const waveData = findWave(manifest, wave);
  if (waveData?.type === 'integration') for (const agent of waveData.agents ?? []) for (const file of agent.files ?? []) files.add(normalizeReportedPath(file));
  return [...files].filter((file) => file !== '').sort();
}

async function wiringBefore(manifest: ImplManifest, wave: number, git: Git): Promise<WiringReport | undefined> {
  const stored = manifest.wiring_validation_reports?.[`wave${wave}`];
  if (stored) return stored as WiringReport;
  if (!(manifest.wiring ?? []).some((declaration) => declaration.wave === wave)) return undefined;
  return validateWiring({ manifest, git, ref: 'HEAD', wave });
}

/** E26 / E47: runs the Integration Agent; see the module comment. */
export async function runIntegrationAgent(options: RunIntegrationOptions): Promise<RunIntegrationResult> {
  const started = performance.now();
  const { implPath, env, wave } = options;
  const manifest = await readManifestOrThrow(implPath);
  const slug = implSlugFromPath(implPath, manifest);
  if (!findWave(manifest, wave)) throw new PolywaveError({ code: 'P011_WAVE_NOT_FOUND', message: `wave ${wave} not found in ${path.basename(implPath)}` });
  const mode: IntegrationRunMode = options.mode ?? (options.hotfix ? 'hotfix' : 'gaps');
  if (mode === 'hotfix' && (options.hotfix?.files ?? []).filter((file) => file.trim() !== '').length === 0) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'E47 hotfix mode needs the caller-cascade files (--hotfix-files) and the build error (--build-error-file) of the last finalize-wave' });
  }
  const gitAt = (directory: string) => createGit(directory, { env });
  const repoDir = options.repoDir ?? (await gitAt(path.dirname(implPath)).topLevel());
  await assertNotNestedRepository(repoDir, env); // X13 #1/#2
  const workDir = options.workDir ? path.resolve(options.workDir) : repoDir;
  // Compared resolved: a relative repoDir is the same checkout, not "elsewhere".
  const elsewhere = options.workDir !== undefined && workDir !== path.resolve(repoDir);
  const git = gitAt(workDir);
  // The IMPL's path inside the repository (the same in every checkout of it).
  const implRelative = implRelativePath(implPath, repoDir);
  const result: RunIntegrationResult = {
    wave,
    mode,
    impl_path: implPath,
    slug,
    skipped: false,
    success: false,
    gap_count: 0,
    agent_launched: false,
    gaps_before: 0,
    gaps_after: 0,
    remaining_gaps: [],
    allowed_files: [],
    files_changed: [],
    violations: [],
    problems: [],
    duration_ms: 0,
  };
  const finish = () => {
    if (!result.success && !result.error) {
      const outcome = result.agent && result.agent.outcome !== 'finished' ? `the agent ${result.agent.outcome}${result.agent.failure ? ` (${firstLines(result.agent.failure, 1, 200)})` : ''}` : undefined;
      const first = [...result.violations.map((violation) => violation.reason), ...result.problems][0];
      result.error = [outcome, first].filter(Boolean).join('; ') || 'the integration agent did not finish the job';
    }
    result.duration_ms = Math.round(performance.now() - started);
    return result;
  };

  // 1. What to fix, and where the agent may write.
  const scaffoldFiles = new Set((manifest.scaffolds ?? []).map((scaffold) => normalizeReportedPath(scaffoldPath(scaffold))).filter((file) => file !== ''));
  let gaps: IntegrationGapInput[] = [];
  let wiringDeclared = false;
  if (mode === 'gaps') {
    const stored = manifest.integration_reports?.[`wave${wave}`];
    const report = stored ?? (await validateIntegration({ manifest, wave, git, ref: 'HEAD' }));
    const wiring = await wiringBefore(manifest, wave, git);
    wiringDeclared = wiring !== undefined;
    gaps = [...e25Gaps(report), ...wiringGapInputs(wiring)];
    result.gaps_before = gaps.length;
    if (gaps.length === 0) {
      result.skipped = true;
      result.success = true;
      return finish();
    }
  } else {
    result.gaps_before = new Set(options.hotfix!.files.map(normalizeReportedPath).filter((file) => file !== '')).size;
  }
  const candidates = mode === 'gaps' ? integrationAllowedFiles(manifest, wave, gaps) : [...new Set(options.hotfix!.files.map(normalizeReportedPath))].sort();
  const allowed = candidates.filter((file) => file !== '' && !scaffoldFiles.has(file) && file !== implRelative && !file.split('/').includes('..'));
  result.allowed_files = allowed;
  result.gap_count = result.gaps_before;
  if (allowed.length === 0) {
    result.gaps_after = result.gaps_before;
    result.remaining_gaps = gaps;
    result.error =
      mode === 'gaps'
        ? 'E26: no file the integration agent may edit (integration_connectors is empty and the gaps suggest no caller); wire the gaps by hand or list the caller files in integration_connectors'
        : 'E47: every hotfix file is a scaffold or the IMPL, which the hotfix may not edit';
    return finish();
  }

  // Issue 13 (N4): credentials, the backend's package and the model server before the state commit
  // below (exit 2, nothing changed). A backend given by the caller (tests) needs none.
  if (!options.backend) await requireAgentsReady([{ role: 'the Integration agent', model: options.model }], env);
  // Issue 11 (X10 R1): the agent writes this checkout; no git config file may lie in it (exit 2, nothing changed).
  await assertGitConfigOutsideWorkingTrees(workDir, env);
  // 2. The agent, on the merged result (a clean tree: its bash calls are audited against all of it).
  const clean = await ensureCleanRoot({ git, repoDir: workDir, implPath, writable: new Set(allowed), env, message: `chore: commit Polywave state before the integration agent [Polywave:wave${wave}:integrator]` });
  if (clean.blocking.length > 0) {
    result.gaps_after = result.gaps_before;
    result.remaining_gaps = gaps;
    result.error = `the working tree has uncommitted changes the integration agent may not touch: ${clean.blocking.slice(0, 20).join(', ')}${clean.blocking.length > 20 ? ', …' : ''} — commit or stash them first`;
    return finish();
  }
  const start = await git.headCommit();
  const branch = await git.currentBranch();
  const { testCommand, lintCommand } = verifyBuildCommands(manifest);
  const hotfixCommand = options.hotfix?.buildCommand?.trim();
  const prompt = renderRolePrompt('integration', {
    mode,
    manifest,
    implPath,
    repoRoot: workDir,
    wave,
    ...(branch ? { mergeTarget: branch } : {}),
    allowedFiles: allowed,
    ...(mode === 'gaps' ? { gaps } : { hotfix: { files: allowed, buildError: options.hotfix!.buildError, ...(hotfixCommand || testCommand ? { buildCommand: hotfixCommand || testCommand } : {}) } }),
  });
  const meta = { slug, wave, agent: 'integrator', attempt: 1 };
  const spec = resolveModelSpec(options.model, env);
  result.agent_launched = true;
  options.events?.emit({ v: 1, type: 'agent-launch', ...meta, model: spec.raw, backend: spec.backend });
  // E40: a `cost` event per model call of the Integration agent.
  const metered = meterAgentEvents({ spec, ...(options.backend ? { backend: options.backend.name } : {}), role: 'integration', attempt: 1, labels: { slug, wave, agent: 'integrator' }, ...(options.events ? { emit: (event) => options.events!.emit(event) } : {}), ...(options.budget ? { budget: { tracker: options.budget, scope: { slug, wave, agent: 'integrator' } } } : {}) }, agentEventForwarder(options.events, meta));
  const run = await runAgent({
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    agentId: 'integrator',
    role: 'integration',
    wave,
    attempt: 1,
    model: spec,
    systemPrompt: prompt.system,
    prompt: prompt.user,
    cwd: workDir,
    ...(branch ? { branch } : {}),
    baseCommit: start,
    implPath,
    policy: { root: workDir, ownedFiles: allowed, frozenPaths: [...scaffoldFiles], ...(branch ? { branch } : {}), readablePaths: [implPath] },
    ...(options.limits ? { limits: options.limits } : {}),
    env: { ...env, POLYWAVE_REPO_ROOT: workDir, POLYWAVE_ALLOW_MAIN_COMMIT: '1' },
    ...(budgetSignal(metered, options.signal) ? { signal: budgetSignal(metered, options.signal)! } : {}),
    onEvent: metered.onEvent,
    journal: journalPaths(repoDir, slug, wave, 'integrator'),
    ...(options.backend ? { backend: options.backend } : {}),
  });
  run.outcome.usage = metered.settle(run.outcome);
  // Issue 14: a budget stop (or no money left to start) is what ended this agent.
  const budgetStop = metered.refused ?? metered.breach();
  if (budgetStop) run.outcome.failure = { kind: 'fatal', message: `${budgetStop.message} (the integration agent stopped; raise the budget and re-run)` };
  result.agent = agentRunReport('integrator', run.spec, run.outcome);
  options.events?.emit(agentEndEvent(meta, run.outcome));

  // 3. Jail audit and commit check.
  const audit = await run.jail.audit({ baseCommit: start });
  result.violations = audit.violations.filter((violation) => violation.path === undefined || violation.path !== implRelative).map((violation) => ({ code: violation.code, reason: violation.reason, ...(violation.path ? { path: violation.path } : {}) }));
  result.files_changed = audit.changedFiles.filter((file) => file !== implRelative);
  const head = await git.headCommit();
  if (head !== start) result.commit = head;
  const allowedSet = new Set(allowed);
  const uncommitted = (await git.status()).map((entry) => entry.path).filter((file) => allowedSet.has(file));
  if (uncommitted.length > 0) result.problems.push(`uncommitted changes to ${uncommitted.join(', ')}: the integration agent must commit its edits`);

  // 4. Verification: the build, and (gaps) which gaps remain on HEAD.
  const verifyTest = mode === 'hotfix' && hotfixCommand ? hotfixCommand : testCommand;
  if (verifyTest || lintCommand) {
    const data = await verifyBuild({
      repoDir: workDir,
      testCommand: verifyTest,
      lintCommand,
      env,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.buildTimeoutMs ? { timeoutMs: options.buildTimeoutMs } : {}),
      ...(options.now ? { now: options.now } : {}),
    });
    result.verify_build = data;
    result.build_passed = data.test_passed && data.lint_passed;
    if (!result.build_passed) result.problems.push(`verification failed: ${errorGist(`${data.test_passed ? '' : (data.test_output ?? `\`${data.test_command}\` failed`)}\n${data.lint_passed ? '' : (data.lint_output ?? `\`${data.lint_command}\` failed`)}`, workDir)}`);
  }
  if (mode === 'gaps') {
    const current = await readManifestOrThrow(implPath);
    const after = await validateIntegration({ manifest: current, wave, git, ref: 'HEAD' });
    const wiringAfter = wiringDeclared || (current.wiring ?? []).some((declaration) => declaration.wave === wave) ? await validateWiring({ manifest: current, git, ref: 'HEAD', wave }) : undefined;
    result.integration_report = after;
    if (wiringAfter) result.wiring_report = wiringAfter;
    result.remaining_gaps = [...e25Gaps(after), ...wiringGapInputs(wiringAfter)];
    result.gaps_after = result.remaining_gaps.length;
    if (result.gaps_after > 0) result.problems.push(`${result.gaps_after} of ${result.gaps_before} gap(s) remain: ${result.remaining_gaps.map((gap) => gap.export_name).join(', ')}`);
    await editImpl(implPath, () => {
      const edits: YamlEdit[] = [{ path: ['integration_reports', `wave${wave}`], value: after }];
      if (wiringAfter) edits.push({ path: ['wiring_validation_reports', `wave${wave}`], value: wiringAfter });
      return { edits, outcome: undefined };
    });
    // In a tier the IMPL stays uncommitted in the main checkout, like the rest of the wave's state.
    const implCommit = elsewhere ? undefined : await commitImplChange({ implPath, repoDir, git, env, message: `chore: integration report for wave ${wave} after the integration agent (${result.gaps_after} gap(s) left) [Polywave:wave${wave}:integrator]` });
    if (implCommit) result.impl_commit = implCommit;
  } else {
    if (result.build_passed === undefined) result.problems.push('E47: no test_command/lint_command (or test/lint gate) to confirm the hotfix with');
    const output = `${result.verify_build?.test_output ?? ''}\n${result.verify_build?.lint_output ?? ''}`;
    const still = result.build_passed === true ? [] : classifyCallerCascade({ output, manifest, wave, repoDir: workDir }).errors.map((error) => error.file);
    result.gaps_after = result.build_passed === true ? 0 : new Set(still).size || result.gaps_before;
  }
  result.success = result.violations.length === 0 && result.problems.length === 0 && result.build_passed !== false && result.gaps_after === 0;
  return finish();
}
