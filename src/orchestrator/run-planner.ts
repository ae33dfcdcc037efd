/**
 * The Planner role: `polywave plan "<large feature>"` writes `docs/PROGRAM/PROGRAM-<slug>.yaml`
 * (validated with a correction loop like E16, then shown for approval), and `program-replan`
 * (E34) revises an existing PROGRAM after a failed tier: completed tiers and frozen contracts must
 * come back unchanged (P2), otherwise the original is restored. A revised PROGRAM waits in
 * REPLANNING until a human approves it (`update-program-state --state REVIEWED`).
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { addUsage, emptyUsage, type AgentBackend, type AgentUsage } from '../agents/contract.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { renderRolePrompt, type PromptFinding } from '../agents/prompts/index.js';
import type { ExistingImplRef } from '../agents/prompts/planner.js';
import { afterRunChecks, runAgent } from '../agents/run-agent.js';
import { isBlocking, type Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { parseProgram } from '../protocol/parse-program.js';
import { frozenProgramContracts, validateProgram } from '../protocol/program/index.js';
import { slugPattern } from '../protocol/schema/impl-schema.js';
import type { ProgramManifest } from '../protocol/schema/program-schema.js';
import { writeFileAtomic } from '../store/locked-write.js';
import { runGit } from '../git/run-git.js';
import { requireTier } from '../engine/program/program-file.js';
import { clearReplanMarker, markPlanRunning, markReplanRunning, noteReplanLeft, refuseReplanBeside, replanBackupDir } from '../engine/program/replan-marker.js';
import { readTextFile } from '../store/read-text.js';
import { slugOfFeature } from './autopilot.js';
import { ownTools, watchOwnWrites } from './own-writes.js';

interface PlannerRunOptions {
  repoDir: string;
  env: Readonly<Record<string, string | undefined>>;
  model?: string;
  /** Planner backend (tests). */
  backend?: AgentBackend;
  unsafeNoSandbox?: boolean;
  /** Attempts in all (default 3). */
  maxAttempts?: number;
  timeoutMs?: number;
  maxTurns?: number;
  signal?: AbortSignal;
  now?: () => Date;
}

/** Options of {@link runPlanner}. */
export interface RunPlannerOptions extends PlannerRunOptions {
  /** The large feature / project description. */
  description: string;
  /** PROGRAM slug (default: derived from the description). */
  slug?: string;
  /** A requirements document (repository-relative or absolute). */
  requirementsPath?: string;
  /**
   * Takes the run lock of the PROGRAM path the plan writes, for the plan's life (the CLI: the lock program-execute and
   * program-replan hold); throws RUN_IN_PROGRESS when another command holds it. Returns the release.
   */
  lock?: (programPath: string) => () => void;
}

/** The result of a Planner run (printed as JSON). */
export interface PlannerResult {
  program_path: string;
  program_slug: string;
  success: boolean;
  state: string;
  /** `undone`: what a process the Planner ran changed in its doc after its own last write of it, put back (P13-33). */
  attempts: Array<{ attempt: number; agent_status: string; error_count: number; errors: Array<{ code: string; message: string }>; undone?: string }>;
  usage: AgentUsage;
  /** P13-19: a killed plan's partial manifest moved aside before this plan (where to). */
  recovered?: string;
}

/** Options of {@link replanProgram}. */
export interface ReplanProgramOptions extends PlannerRunOptions {
  programPath: string;
  reason: string;
  tier?: number;
}

/** The result of {@link replanProgram} (Go's keys). */
export interface ReplanResult {
  revised_manifest_path: string;
  validation_passed: boolean;
  changes_summary?: string;
  planner_agent_id: string;
  /** Where the manifest before the revision was kept. */
  backup_path?: string;
  errors?: string[];
  /**
   * P15-22: what the re-plan undid that a process its Planner ran (code of the repository) changed in the PROGRAM — the
   * change, and where the changed copy was kept — for the human who approves the revision.
   */
  warnings?: string[];
  usage: AgentUsage;
}

function findingsOf(text: string | undefined): Finding[] {
  if (text === undefined) return [{ code: 'V001_MANIFEST_INVALID', severity: 'error', message: 'the Planner wrote no PROGRAM manifest' } as Finding];
  const parsed = parseProgram(text);
  if (!parsed.manifest) return parsed.findings.filter(isBlocking);
  return [...parsed.findings, ...validateProgram(parsed.manifest as ProgramManifest)].filter(isBlocking);
}

async function existingImpls(repoDir: string): Promise<ExistingImplRef[]> {
  const { readdir } = await import('node:fs/promises');
  const out: ExistingImplRef[] = [];
  for (const directory of ['docs/IMPL', 'docs/IMPL/complete']) {
    const names = await readdir(path.join(repoDir, directory)).catch(() => [] as string[]);
    for (const name of names) {
      const match = /^IMPL-(.+)\.ya?ml$/.exec(name);
      if (!match) continue;
      const file = path.join(repoDir, directory, name);
      const parsed = parseImpl(await readFile(file, 'utf8').catch(() => ''));
      out.push({ slug: match[1]!, path: path.relative(repoDir, file), ...(parsed.manifest?.state ? { state: parsed.manifest.state } : {}), ...(parsed.manifest?.title ? { title: parsed.manifest.title } : {}) });
    }
  }
  return out;
}

/** Runs the Planner with a correction loop until `outputPath` holds a valid PROGRAM manifest. */
async function plannerLoop(options: PlannerRunOptions & { outputPath: string; description: string; replan?: { currentManifest: string; reason: string; failedTier?: number }; requirements?: { path: string; text: string }; onTool?: (phase: 'start' | 'end') => void }): Promise<{ attempts: PlannerResult['attempts']; usage: AgentUsage; valid: boolean; findings: Finding[] }> {
  const repoDir = options.repoDir;
  const relative = path.relative(repoDir, options.outputPath).split(path.sep).join('/');
  const contextPath = path.join(repoDir, 'docs', 'CONTEXT.md');
  const contextMd = existsSync(contextPath) ? await readFile(contextPath, 'utf8').catch(() => undefined) : undefined;
  const spec = resolveModelSpec(options.model, options.env);
  const usage = emptyUsage();
  const attempts: PlannerResult['attempts'] = [];
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const today = (options.now ?? (() => new Date()))().toISOString().slice(0, 10);
  const existing = await existingImpls(repoDir);
  let findings: Finding[] = [];
  await mkdir(path.dirname(options.outputPath), { recursive: true });
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    const prompt = renderRolePrompt('planner', {
      description: options.description,
      repoRoot: repoDir,
      outputPath: relative,
      today,
      ...(contextMd !== undefined ? { contextMd } : {}),
      ...(existing.length > 0 ? { existingImpls: existing } : {}),
      ...(options.requirements ? { requirements: options.requirements.text, requirementsPath: options.requirements.path } : {}),
      ...(options.replan ? { replan: options.replan } : {}),
      ...(findings.length > 0 ? { validationErrors: findings.map((finding): PromptFinding => finding), attempt, maxAttempts } : {}),
    });
    // P13-33/P14-18: a change of the PROGRAM doc by anything but the Planner's own write_file/edit_file is a process's:
    // undone before its next write/edit and at its end.
    const own = watchOwnWrites(options.outputPath, repoDir, { quarantineName: () => `planner-changed-${new Date().toISOString().replace(/[:.]/g, '-')}`, trackFromStart: ownTools(spec.backend) });
    const { outcome } = await runAgent({
      onEvent: (event) => {
        own.onEvent(event);
        // P14-14: what the re-plan has left in the file so far (unknown while a tool call of the Planner runs).
        if (event.type === 'tool-call-start') options.onTool?.('start');
        if (event.type === 'tool-call-end') options.onTool?.('end');
      },
      ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
      agentId: 'planner',
      role: 'planner',
      attempt,
      model: spec,
      systemPrompt: prompt.system,
      prompt: prompt.user,
      cwd: repoDir,
      policy: { root: repoDir, ownedFiles: [], writablePrefixes: [relative] },
      limits: { timeoutMs: options.timeoutMs ?? 10 * 60_000, ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}) },
      env: options.env,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.backend ? { backend: options.backend } : {}),
    });
    addUsage(usage, outcome.usage);
    const putBack = await own.putBack();
    const text = existsSync(options.outputPath) ? await readTextFile(options.outputPath).catch(() => undefined) : undefined;
    findings = findingsOf(text);
    // A Planner that did not finish has revised nothing: for a re-plan the file on disk is still the
    // (valid) original, which must not pass as the Planner's revision.
    if (outcome.status !== 'finished') findings = [{ code: 'N029_AGENT_RUN_FAILED', severity: 'error', message: `the Planner did not finish (${outcome.status})` } as Finding, ...findings];
    // Fail closed (X29-08): something the Planner left in the checkout that could not be moved out or put back.
    const { stayedMessage } = afterRunChecks(outcome.denials, 'the Planner');
    if (stayedMessage) findings = [{ code: 'SANDBOX_LEFTOVER_STAYED', severity: 'error', message: stayedMessage } as Finding, ...findings];
    attempts.push({ attempt, agent_status: outcome.status, error_count: findings.length, errors: findings.map((finding) => ({ code: finding.code, message: finding.message })), ...(putBack ? { undone: putBack } : {}) });
    if (stayedMessage) return { attempts, usage, valid: false, findings };
    if (findings.length === 0) return { attempts, usage, valid: true, findings };
  }
  return { attempts, usage, valid: false, findings };
}

/** `polywave plan "<feature>"`: the Planner writes and validates `docs/PROGRAM/PROGRAM-<slug>.yaml`. */
export async function runPlanner(options: RunPlannerOptions): Promise<PlannerResult> {
  const repoDir = path.resolve(options.repoDir);
  if (!options.description.trim()) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'polywave plan needs a description of the project' });
  const slug = options.slug ?? slugOfFeature(options.description);
  if (!slugPattern.test(slug)) throw new PolywaveError({ code: 'V018_INVALID_SLUG_FORMAT', message: `slug "${slug}" is not kebab-case (a-z, 0-9, single hyphens)` });
  const outputPath = path.join(repoDir, 'docs', 'PROGRAM', `PROGRAM-${slug}.yaml`);
  const isTracked = (): Promise<boolean> => runGit(['ls-files', '--', path.relative(repoDir, outputPath)], { cwd: repoDir, env: options.env }).then((out) => out.trim() !== '', () => true);
  let requirements: { path: string; text: string } | undefined;
  if (options.requirementsPath) {
    const file = path.resolve(repoDir, options.requirementsPath);
    requirements = { path: path.relative(repoDir, file), text: await readTextFile(file) };
  }
  // P15-09: one plan of a PROGRAM at a time, decided by the kernel's run lock before the killed plan's record is read —
  // two plans started at once after a killed one both took its record for dead and raced to move its partial output
  // aside (the loser: INTERNAL ENOENT … rename); now the loser is RUN_IN_PROGRESS (exit 2), nothing changed.
  const releaseLock = options.lock?.(outputPath) ?? (() => undefined);
  try {
    return await planHoldingLock(options, repoDir, slug, outputPath, isTracked, requirements);
  } finally {
    releaseLock();
  }
}

async function planHoldingLock(options: RunPlannerOptions, repoDir: string, slug: string, outputPath: string, isTracked: () => Promise<boolean>, requirements: { path: string; text: string } | undefined): Promise<PlannerResult> {
  // P13-19: a killed plan's partial output (its record says so) is moved aside; a plan of the same PROGRAM still running refuses this one.
  const mark = await markPlanRunning(repoDir, outputPath, isTracked, options.env);
  let loop: Awaited<ReturnType<typeof plannerLoop>>;
  try {
    // P12-42: the empty placeholder a killed `plan` left for its Planner's output (untracked, nothing in it) is not a plan.
    if (existsSync(outputPath) && statSync(outputPath).size === 0 && !(await isTracked())) rmSync(outputPath, { force: true });
    if (existsSync(outputPath)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${path.relative(repoDir, outputPath)} exists already: use program-replan to revise it, or remove it first` });
    loop = await plannerLoop({ ...options, repoDir, outputPath, description: options.description, ...(requirements ? { requirements } : {}) });
  } finally {
    mark.clear();
  }
  // A valid plan waits for the human's approval in VALIDATING (validated by the orchestrator; VALIDATING → REVIEWED is
  // the approval), whatever state the Planner wrote (outside attack P12-19: `state: TIER_EXECUTING` skipped the approval;
  // P12-27: the PLANNING it was meant to write could not be approved — PLANNING → REVIEWED is not a transition).
  if (loop.valid && existsSync(outputPath)) {
    const { setProgramState } = await import('../engine/program/program-edits.js');
    await setProgramState(outputPath, 'VALIDATING', { force: true });
  }
  const text = existsSync(outputPath) ? await readTextFile(outputPath).catch(() => undefined) : undefined;
  const state = text !== undefined ? ((parseProgram(text).manifest as ProgramManifest | null)?.state ?? '') : '';
  return { program_path: outputPath, program_slug: slug, success: loop.valid, state, attempts: loop.attempts, usage: loop.usage, ...(mark.recovered !== undefined ? { recovered: mark.recovered } : {}) };
}

/** The code of the warning a Planner run's undone process change is reported with (P15-22). */
export const plannerDocChanged = 'PLANNER_DOC_CHANGED_BY_PROCESS';

/** A warning of {@link ReplanResult} (`CODE: text`) as a line's `warning[CODE]: text`. */
export function warningLine(warning: string): string {
  const at = warning.indexOf(': ');
  return at < 0 ? `warning: ${warning}` : `warning[${warning.slice(0, at)}]: ${warning.slice(at + 2)}`;
}

/** JSON with sorted keys: the same value whatever order the Planner wrote its keys in. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (item !== null && typeof item === 'object' && !Array.isArray(item) ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([left], [right]) => left.localeCompare(right))) : item));
}

/** PROGRAM states a re-plan may start from (§9.2: BLOCKED → REPLANNING; E34 on a failing tier: TIER_EXECUTING → REPLANNING; a REPLANNING PROGRAM may be revised again). */
export const replannableStates: readonly string[] = ['BLOCKED', 'TIER_EXECUTING', 'REPLANNING'];

/** What a revision must keep: the contracts frozen so far and the complete IMPLs (P2, E34). */
function preserved(manifest: ProgramManifest): { contracts: Map<string, string>; consumersOf: Map<string, string[]>; complete: Map<string, string> } {
  const frozen = frozenProgramContracts(manifest);
  const contracts = new Map<string, string>();
  const consumersOf = new Map<string, string[]>();
  for (const contract of manifest.program_contracts ?? []) {
    // Frozen by the tier statuses, or by the engine's freeze record — which is the evidence the
    // tier gate checks the file against (P2): dropping or editing it is a change of the contract.
    const recorded = (contract.frozen_blob ?? '').trim() !== '' || contract.frozen_at_tier !== undefined;
    if (contract.name && (frozen.has(contract.name) || recorded)) {
      // Every field of it (definition, location, freeze_at, the freeze record…): moving freeze_at to a
      // later tier would report it unfrozen and let a later IMPL own its file (V030). Only the list of
      // consumers may grow: a re-plan may add IMPLs that consume it; the consumers it had stay as they were
      // (outside attack P12-09: a Planner rewrote a consumer's `usage` of a frozen contract unrefused).
      const { consumers, ...fields } = contract as typeof contract & { consumers?: unknown };
      contracts.set(contract.name, stableJson(fields));
      consumersOf.set(contract.name, Array.isArray(consumers) ? consumers.map((consumer) => stableJson(consumer)) : []);
    }
  }
  const complete = new Map<string, string>();
  for (const impl of manifest.impls) if (impl.status === 'complete' && impl.slug) complete.set(impl.slug, JSON.stringify({ tier: impl.tier }));
  return { contracts, consumersOf, complete };
}

/** E34: the Planner revises the PROGRAM after a failure; P2 and completed tiers are enforced. */
export async function replanProgram(options: ReplanProgramOptions): Promise<ReplanResult> {
  const repoDir = path.resolve(options.repoDir);
  const programPath = path.resolve(repoDir, options.programPath);
  if (!options.reason.trim()) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'program-replan needs --reason' });
  const original = await readTextFile(programPath);
  const before = parseProgram(original).manifest as ProgramManifest | null;
  if (!before) throw new PolywaveError({ code: 'V001_MANIFEST_INVALID', message: `${programPath} is not a usable PROGRAM manifest` });
  // Preconditions, before any Planner is launched (nothing changed on a refusal).
  const current = (before.state ?? '').trim();
  if (!replannableStates.includes(current)) {
    throw new PolywaveError({
      code: 'N008_STATE_TRANSITION',
      message: `the PROGRAM is ${current || 'without a state'}${current === 'COMPLETE' || current === 'NOT_SUITABLE' ? ' (terminal)' : ''}: a re-plan (E34) starts from ${replannableStates.join(', ')} — nothing was changed`,
      exitCode: 1,
    });
  }
  if (options.tier !== undefined) requireTier(before, options.tier, programPath);
  const stamp = (options.now ?? (() => new Date()))().toISOString().replace(/[:.]/g, '-');
  // The backup lives in git's own directory (never an untracked file in the work tree).
  const backupDir = (await replanBackupDir(repoDir, options.env)) ?? path.join(os.tmpdir(), 'polywave-program-replan');
  await mkdir(backupDir, { recursive: true });
  refuseReplanBeside(backupDir, programPath);
  const backupPath = path.join(backupDir, `PROGRAM-${before.program_slug ?? 'program'}-${stamp}.yaml`);
  await copyFile(programPath, backupPath);
  // P12-15: killed from here until the revision is judged, the next command on the PROGRAM puts the backup back.
  const marker = markReplanRunning(backupDir, programPath, backupPath);
  try {
    const loop = await plannerLoop({
      ...options,
      repoDir,
      outputPath: programPath,
      description: before.title ?? before.program_slug ?? 'the program',
      replan: { currentManifest: original, reason: options.reason, ...(options.tier !== undefined ? { failedTier: options.tier } : {}) },
      onTool: (phase) => noteReplanLeft(marker, programPath, phase === 'start'),
    });
    const errors = loop.findings.map((finding) => `${finding.code}: ${finding.message}`);
    const revisedText = existsSync(programPath) ? await readTextFile(programPath).catch(() => undefined) : undefined;
    const after = revisedText !== undefined ? (parseProgram(revisedText).manifest as ProgramManifest | null) : null;
    if (after) {
      const kept = preserved(before);
      const now = preserved(after);
      for (const [name, value] of kept.contracts) if (now.contracts.get(name) !== value) errors.push(`P2_FROZEN_CONTRACT_CHANGED: the frozen contract ${name} was changed or removed (its definition, location, freeze_at or freeze record frozen_at_tier/frozen_commit/frozen_blob)`);
      for (const [name, entries] of kept.consumersOf) {
        const revised = now.consumersOf.get(name);
        if (revised !== undefined && entries.some((entry) => !revised.includes(entry))) errors.push(`P2_FROZEN_CONTRACT_CHANGED: a consumer of the frozen contract ${name} was changed or removed (consumers may only be added)`);
      }
      for (const [slug, value] of kept.complete) {
        const revised = after.impls.find((impl) => impl.slug === slug);
        if (!revised || revised.status !== 'complete' || JSON.stringify({ tier: revised.tier }) !== value) errors.push(`E34_COMPLETED_IMPL_CHANGED: the complete IMPL ${slug} was changed or removed`);
      }
      // Outside attack P12-09: E34 revises the failed tier and the ones after it — a tier whose IMPLs are all complete
      // is done (its gate passed, its contracts frozen): no IMPL joins it; and the PROGRAM keeps its name (its file,
      // branches and archive are named by it).
      for (const tier of before.tiers ?? []) {
        const members = before.impls.filter((impl) => impl.tier === tier.number);
        if (members.length === 0 || !members.every((impl) => impl.status === 'complete')) continue;
        const added = after.impls.filter((impl) => impl.tier === tier.number && !members.some((member) => member.slug === impl.slug)).map((impl) => impl.slug);
        if (added.length > 0) errors.push(`E34_COMPLETED_TIER_CHANGED: tier ${tier.number} is complete; ${added.join(', ')} cannot join it (a re-plan revises the failed tier and the ones after it)`);
      }
      // Outside round P15 (P15-02): an IMPL's status is the loop's record of what was done (P4), not the plan's — a
      // Planner that set a never-built IMPL `complete` passed "validation" and the human approved unbuilt work as done
      // (only the loop refused it later, V031). An IMPL the revision adds, or whose status it changes, to `reviewed` or
      // `complete` is checked against its IMPL doc as the loop's E28A checks an imported one (V031/V032, and P1/P2 for
      // its doc); `scouting`/`executing` are the loop's own statuses for work it started, never the Planner's to set.
      errors.push(...(await statusRevisionErrors(repoDir, before, after)));
      // P14-06: a Planner whose edits missed the file (or were all undone) revised nothing: not a revision to approve.
      const comparable = (manifest: ProgramManifest) => JSON.stringify({ ...manifest, state: undefined, updated: undefined });
      if (loop.valid && comparable(after) === comparable(before)) errors.push(`E34_NOTHING_REVISED: the Planner changed nothing in ${path.basename(programPath)} (no revision to approve; the manifest stays as it was)`);
      if ((after.program_slug ?? '') !== (before.program_slug ?? '')) errors.push(`E34_PROGRAM_SLUG_CHANGED: program_slug ${JSON.stringify(before.program_slug ?? '')} was changed to ${JSON.stringify(after.program_slug ?? '')} (the PROGRAM's file, branches and archive are named by it)`);
    }
    const valid = loop.valid && errors.length === 0;
    if (!valid) {
      // Nothing half-revised stays behind: the manifest as it was, in the state it had.
      await writeFileAtomic(programPath, original);
    } else {
      const { setProgramState } = await import('../engine/program/program-edits.js');
      if ((after?.state ?? '') !== 'REPLANNING') await setProgramState(programPath, 'REPLANNING', { force: true });
    }
    const changed = after && !errors.some((error) => error.startsWith('E34_NOTHING_REVISED')) ? summarizeChanges(before, after) : undefined;
    // P15-22: a process's change of the PROGRAM, undone while the Planner ran, was said nowhere (the Scout's is a warning).
    const warnings = loop.attempts.flatMap((attempt) => (attempt.undone ? [`${plannerDocChanged}: attempt ${attempt.attempt}: ${attempt.undone}`] : []));
    return {
      revised_manifest_path: programPath,
      validation_passed: valid,
      ...(changed ? { changes_summary: changed } : {}),
      planner_agent_id: 'planner',
      backup_path: backupPath,
      ...(errors.length > 0 ? { errors } : {}),
      ...(warnings.length > 0 ? { warnings } : {}),
      usage: loop.usage,
    };
  } finally {
    clearReplanMarker(marker);
  }
}

/**
 * P15-02: what a revision's IMPL statuses claim that the repository does not hold. Only the IMPLs the revision adds or
 * whose status it changes: `reviewed`/`complete` are judged by E28A's import checks against their IMPL docs on disk
 * (V031_IMPL_FILE_MISSING, V032_IMPL_STATE_MISMATCH, V029/V030 for that doc — what program-execute would refuse at
 * the tier); `scouting`/`executing` (work the loop started) → E34_IMPL_STATUS_CHANGED.
 */
async function statusRevisionErrors(repoDir: string, before: ProgramManifest, after: ProgramManifest): Promise<string[]> {
  const old = new Map(before.impls.map((impl) => [impl.slug ?? '', impl.status ?? '']));
  const changed = after.impls.filter((impl) => (impl.slug ?? '') !== '' && old.get(impl.slug!) !== (impl.status ?? ''));
  const errors = changed
    .filter((impl) => impl.status === 'scouting' || impl.status === 'executing')
    .map((impl) => `E34_IMPL_STATUS_CHANGED: IMPL ${impl.slug} set to \`${impl.status}\` (was \`${old.get(impl.slug!) ?? 'not in the plan'}\`): \`scouting\`/\`executing\` record work the tier loop started — a re-plan leaves them to it (use \`pending\`)`);
  const claimed = changed.filter((impl) => impl.status === 'reviewed' || impl.status === 'complete');
  if (claimed.length === 0) return errors;
  const { readProgramImplDocs } = await import('../store/program-impl-docs.js');
  const { scopedImportFindings } = await import('./program-execute.js');
  for (const finding of scopedImportFindings(after, await readProgramImplDocs(repoDir, after), claimed)) {
    errors.push(`${finding.code}: ${finding.message}${finding.code === 'V031_IMPL_FILE_MISSING' || finding.code === 'V032_IMPL_STATE_MISMATCH' ? ' — a re-plan may not mark work done (or reviewed) that its IMPL doc does not show; leave it `pending` for the tier loop to scout and run' : ''}`);
  }
  return errors;
}

function summarizeChanges(before: ProgramManifest, after: ProgramManifest): string {
  const slugs = (manifest: ProgramManifest) => new Map(manifest.impls.map((impl) => [impl.slug ?? '', impl]));
  const old = slugs(before);
  const revised = slugs(after);
  const added = [...revised.keys()].filter((slug) => !old.has(slug));
  const removed = [...old.keys()].filter((slug) => !revised.has(slug));
  const moved = [...revised.entries()].filter(([slug, impl]) => old.has(slug) && old.get(slug)!.tier !== impl.tier).map(([slug, impl]) => `${slug} → tier ${impl.tier}`);
  const parts = [added.length > 0 ? `added ${added.join(', ')}` : '', removed.length > 0 ? `removed ${removed.join(', ')}` : '', moved.length > 0 ? `moved ${moved.join(', ')}` : ''].filter(Boolean);
  return parts.join('; ') || 'contracts or descriptions revised';
}
