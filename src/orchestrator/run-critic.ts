/**
 * E37 critic gate: runs the Critic agent read-only on an IMPL manifest, takes its review as a
 * structured final answer (the backend's `final_answer` tool / structured output), checks it,
 * stores it as `critic_report` through the locked, format-preserving writer and commits the
 * manifest alone (E48: `chore: critic report for <slug> [Polywave:critic:<slug>]`).
 *
 * The review shape is shared with `set-critic-review` (the path a Critic launched by Claude Code
 * takes): {@link normalizeCriticReview} checks and normalizes both.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { emptyUsage, type AgentBackend, type AgentUsage } from '../agents/contract.js';
import { renderRolePrompt } from '../agents/prompts/index.js';
import { afterRunChecks, runAgent } from '../agents/run-agent.js';
import type { EventBus } from '../engine/events.js';
import type { BudgetTracker } from '../agents/budget.js';
import { budgetSignal, meterAgentEvents } from '../agents/cost-meter.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import type { StepResult, StepStatus } from '../engine/step.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { commitFiles } from '../git/commit-files.js';
import { runGit } from '../git/run-git.js';
import { withoutRepositoryLocating } from '../git/harden.js';
import { implSlugFromPath } from '../protocol/names.js';
import type { CriticReport, ImplManifest } from '../protocol/schema/impl-schema.js';
import { criticGatePasses, repoKey } from '../protocol/waves.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';

/** The stored severities (the manifest schema knows error and warning). */
export type CriticSeverity = 'error' | 'warning';

/** One issue as stored in `critic_report.agent_reviews.<id>.issues`. */
export interface CriticIssueRecord {
  check: string;
  severity: CriticSeverity;
  description: string;
  file?: string;
  symbol?: string;
}

/** One agent's review as stored. */
export interface AgentReviewRecord {
  agent_id: string;
  verdict: 'PASS' | 'ISSUES';
  issues?: CriticIssueRecord[];
}

/** `critic_report` as written (Go `CriticData` key order). */
export interface CriticReportRecord {
  verdict: 'PASS' | 'ISSUES';
  agent_reviews: Record<string, AgentReviewRecord>;
  summary: string;
  reviewed_at: string;
  issue_count: number;
}

const text = z.string().trim();
const optionalText = z
  .union([z.string(), z.null()])
  .optional()
  .transform((value) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined));

const issueInput = z.object({
  check: optionalText,
  severity: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['error', 'warning', 'info'], { error: 'severity must be error, warning or info' })),
  description: text.min(1, 'description must not be empty'),
  file: optionalText,
  symbol: optionalText,
});

const verdictInput = z
  .string()
  .trim()
  .toUpperCase()
  .pipe(z.enum(['PASS', 'ISSUES'], { error: 'verdict must be PASS or ISSUES' }));

const agentReviewInput = z.object({
  agent_id: optionalText,
  verdict: verdictInput.optional(),
  issues: z.union([z.array(issueInput), z.null()]).optional(),
});

/** `agent_reviews`: an object keyed by agent ID (the manifest's shape) or an array of reviews with `agent_id` (Go's `--agent-reviews`). */
const agentReviewsInput = z.union([z.record(z.string(), agentReviewInput), z.array(agentReviewInput)]);

const reviewInput = z.object({
  verdict: verdictInput.optional(),
  summary: z.union([z.string(), z.null()]).optional(),
  issue_count: z.union([z.number().int().min(0), z.null()]).optional(),
  agent_reviews: z.union([agentReviewsInput, z.null()]).optional(),
});

/** Options of {@link normalizeCriticReview}. */
export interface NormalizeCriticReviewOptions {
  /** `reviewed_at` (RFC 3339, UTC, seconds). */
  now: Date;
  /**
   * `derive` (the model path): the verdicts and `issue_count` follow from the issues (E37: PASS
   * unless an error-severity issue exists), whatever the model claimed. `keep` (set-critic-review,
   * as Go): the given verdict and count are stored; missing ones are derived.
   */
  verdicts: 'derive' | 'keep';
}

/** RFC 3339 in UTC with whole seconds, as Go's `time.RFC3339`. */
export function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function zodMessage(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join('.') : 'review'}: ${issue.message}`)
    .join('; ');
}

/**
 * Checks a review (the critic's final answer, or `set-critic-review` input) and normalizes it to
 * the stored `critic_report`. Throws `X001_INVALID_INPUT` (exit 2) naming the first problems.
 * `info` issues are stored as warnings (the manifest schema has no `info`), marked `(info)`.
 */
export function normalizeCriticReview(value: unknown, options: NormalizeCriticReviewOptions): CriticReportRecord {
  const parsed = reviewInput.safeParse(value);
  if (!parsed.success) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid critic review: ${zodMessage(parsed.error)}` });
  const input = parsed.data;
  const entries: Array<[string, z.output<typeof agentReviewInput>]> = Array.isArray(input.agent_reviews)
    ? input.agent_reviews.map((review, index) => {
        if (!review.agent_id) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid critic review: agent_reviews[${index}] has no agent_id` });
        return [review.agent_id, review];
      })
    : Object.entries(input.agent_reviews ?? {});

  const agentReviews: Record<string, AgentReviewRecord> = {};
  let issueTotal = 0;
  let errorTotal = 0;
  for (const [key, review] of entries) {
    const agentId = key.trim();
    if (agentId === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'invalid critic review: an agent review has an empty agent ID' });
    if (agentReviews[agentId]) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid critic review: agent ${agentId} is reviewed twice` });
    const issues: CriticIssueRecord[] = (review.issues ?? []).map((issue) => ({
      check: issue.check ?? 'unspecified',
      severity: issue.severity === 'error' ? 'error' : 'warning',
      description: issue.severity === 'info' ? `(info) ${issue.description}` : issue.description,
      ...(issue.file ? { file: issue.file } : {}),
      ...(issue.symbol ? { symbol: issue.symbol } : {}),
    }));
    const errors = issues.filter((issue) => issue.severity === 'error').length;
    issueTotal += issues.length;
    errorTotal += errors;
    const derived = errors > 0 ? 'ISSUES' : 'PASS';
    agentReviews[agentId] = {
      agent_id: agentId,
      verdict: options.verdicts === 'keep' ? (review.verdict ?? derived) : derived,
      ...(issues.length > 0 ? { issues } : {}),
    };
  }
  const derivedVerdict = errorTotal > 0 ? 'ISSUES' : 'PASS';
  const keep = options.verdicts === 'keep';
  return {
    verdict: keep ? (input.verdict ?? derivedVerdict) : derivedVerdict,
    agent_reviews: agentReviews,
    summary: (input.summary ?? '').trim(),
    reviewed_at: rfc3339(options.now),
    issue_count: keep ? (input.issue_count ?? issueTotal) : issueTotal,
  };
}

/** Number of error-severity issues in a stored report. */
export function criticErrorCount(report: { agent_reviews?: Record<string, { issues?: ReadonlyArray<{ severity?: string | undefined }> | undefined }> | undefined }): number {
  return Object.values(report.agent_reviews ?? {}).reduce((sum, review) => sum + (review.issues ?? []).filter((issue) => issue.severity === 'error').length, 0);
}

const issueJsonSchema = {
  type: 'object',
  properties: {
    check: { type: 'string', description: 'the E37 check: file_existence, symbol_accuracy, pattern_accuracy, interface_consistency, import_chains, side_effect_completeness, complexity_balance, caller_exhaustiveness, i1_disjoint_ownership (or a project-specific check)' },
    severity: { type: 'string', enum: ['error', 'warning', 'info'] },
    description: { type: 'string', description: 'what is wrong, the evidence as path:line, and the fix' },
    file: { type: 'string' },
    symbol: { type: 'string' },
  },
  required: ['check', 'severity', 'description'],
} as const;

/** JSON Schema of the critic's structured final answer (the review the orchestrator stores). */
export const criticReportJsonSchema: Record<string, unknown> = {
  type: 'object',
  properties: {
    verdict: { type: 'string', enum: ['PASS', 'ISSUES'], description: 'PASS unless some agent has an error-severity issue' },
    summary: { type: 'string', description: '2-5 sentences: what you checked and what must change' },
    issue_count: { type: 'integer', minimum: 0, description: 'all issues, warnings included' },
    agent_reviews: {
      type: 'object',
      description: 'one entry per agent of every wave, keyed by agent ID',
      additionalProperties: {
        type: 'object',
        properties: {
          agent_id: { type: 'string' },
          verdict: { type: 'string', enum: ['PASS', 'ISSUES'] },
          issues: { type: 'array', items: issueJsonSchema },
        },
        required: ['issues'],
      },
    },
  },
  required: ['verdict', 'summary', 'agent_reviews'],
};

/** Repository roots the critic reviews: `repoDir`, else the manifest's repositories, else the root holding docs/IMPL/. */
export function criticRepoRoots(implPath: string, manifest: ImplManifest, repoDir?: string): { primary: string; roots: string | Record<string, string> } {
  const inferred = inferRepoRoot(implPath);
  const primary = repoDir ?? inferred ?? path.dirname(implPath);
  const declared = [manifest.repository, ...(manifest.repositories ?? [])].filter((entry): entry is string => typeof entry === 'string' && entry.trim() !== '');
  const absolute = [...new Set(declared.filter((entry) => path.isAbsolute(entry) && existsSync(entry)))];
  if (absolute.length < 2) return { primary, roots: primary };
  const roots: Record<string, string> = {};
  for (const root of [primary, ...absolute]) {
    const key = repoKey(root);
    if (!(key in roots) && !Object.values(roots).includes(root)) roots[key] = root;
  }
  return { primary, roots: Object.keys(roots).length > 1 ? roots : primary };
}

/** `<root>/docs/IMPL/IMPL-x.yaml` (or `<root>/docs/IMPL/complete/…`) → `<root>`. */
export function inferRepoRoot(implPath: string): string | undefined {
  let directory = path.dirname(path.resolve(implPath));
  for (let level = 0; level < 3; level += 1) {
    if (path.basename(directory) === 'docs') return path.dirname(directory);
    directory = path.dirname(directory);
  }
  return undefined;
}

function requireFile(implPath: string): void {
  if (!existsSync(implPath) || !statSync(implPath).isFile()) throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `IMPL manifest not found: ${implPath}` });
}

async function loadManifestOrThrow(implPath: string): Promise<ImplManifest> {
  requireFile(implPath);
  const { parsed } = await loadImpl(implPath);
  if (!parsed.manifest) {
    const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
    throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: `${implPath}: ${first?.message ?? 'manifest is not usable'}`, findings: parsed.findings });
  }
  return parsed.manifest;
}

/**
 * The critic prompt for `run-critic --backend agent-tool`: system and task text in one document,
 * reporting through `polywave set-critic-review` and a commit of its own (E48), because Claude
 * Code skills launch the agent themselves.
 */
export async function renderCriticForAgentTool(implPath: string, repoDir?: string, options: { cliCommand?: string } = {}): Promise<string> {
  const absolute = path.resolve(implPath);
  const manifest = await loadManifestOrThrow(absolute);
  const { roots } = criticRepoRoots(absolute, manifest, repoDir);
  const prompt = renderRolePrompt('critic', { manifest, implPath: absolute, repoRoots: roots, reportVia: 'cli', ...(options.cliCommand ? { cliCommand: options.cliCommand } : {}) });
  return `${prompt.system.replace(/\n+$/, '')}\n\n${prompt.user}`;
}

/** Options of {@link runCritic}. */
export interface RunCriticOptions {
  /** Cost budgets (issue 14): this agent's model calls are charged to the run. */
  budget?: BudgetTracker;
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  implPath: string;
  /** Primary repository root (default: the root holding docs/IMPL/). */
  repoDir?: string;
  /** Model string (`anthropic:…`, `claude-code:…`, `script:…`); default from the environment. */
  model?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  /** Use this backend instead of the one the model names (tests). */
  backend?: AgentBackend;
  events?: EventBus;
  signal?: AbortSignal;
  /** E37 gate in auto mode: ISSUES with warnings only passes. */
  auto?: boolean;
  /** Commit the manifest after writing the report (E48; default true). run-scout commits once itself. */
  commit?: boolean;
  /** Wall-clock limit of the critic agent (ms; Go default 20 minutes). */
  timeoutMs?: number;
  maxTurns?: number;
  /** Command name on the step events (default `run-critic`). */
  command?: string;
}

/** What {@link runCritic} returns (the `run-critic` JSON). */
export interface RunCriticResult {
  impl_path: string;
  slug: string;
  /** Set when the critic produced a review. */
  verdict?: 'PASS' | 'ISSUES';
  issue_count: number;
  error_count: number;
  summary?: string;
  reviewed_at?: string;
  /** E37 gate on the stored report (criticGatePasses). */
  gate_passes: boolean;
  committed: boolean;
  commit_sha?: string;
  /** Why there is no review (agent failure, no structured answer, invalid review). */
  error?: { code: string; message: string };
  agent: { status: string; turns: number; failure?: string };
  usage: AgentUsage;
  duration_ms: number;
  steps: StepResult[];
  success: boolean;
}

/** Commits `file` alone when git sees a change in it; returns the new SHA (undefined when clean). */
export async function commitManifest(repoDir: string, file: string, message: string, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  const relative = path.relative(repoDir, file) || file;
  // --no-optional-locks: parallel Scouts of a PROGRAM tier commit in this checkout, and a status
  // refreshing the index would hold index.lock while another one's `git add` needs it.
  const status = await runGit(['--no-optional-locks', 'status', '--porcelain', '--untracked-files=all', '--', relative], { cwd: repoDir, env });
  if (status.trim() === '') return undefined;
  return commitFiles({ cwd: repoDir, files: [relative], message, env });
}

/**
 * Runs the critic (E37) read-only on `implPath`, stores its review as `critic_report`
 * (`reviewed_at` from `now`), commits the manifest (E48) and reports the gate. Never throws for
 * an agent failure (that is `success: false` with `error`); throws a coded error for bad input
 * (missing or unreadable manifest).
 */
export async function runCritic(given: RunCriticOptions): Promise<RunCriticResult> {
  // Bound to the manifest's repository, never where GIT_DIR / GIT_WORK_TREE point (X34-07).
  const options: RunCriticOptions = { ...given, env: withoutRepositoryLocating(given.env) };
  const started = performance.now();
  const implPath = path.resolve(options.implPath);
  const manifest = await loadManifestOrThrow(implPath);
  const slug = implSlugFromPath(implPath, manifest);
  const now = options.now ?? (() => new Date());
  const command = options.command ?? 'run-critic';
  const { primary, roots } = criticRepoRoots(implPath, manifest, options.repoDir);
  const steps: StepResult[] = [];
  const record = (step: string, status: StepStatus, detail: string, stepStarted: number, data?: unknown) => {
    const result: StepResult = { step, status, detail, ...(data === undefined ? {} : { data }), duration_ms: Math.round(performance.now() - stepStarted) };
    steps.push(result);
    options.events?.emit({ v: 1, type: 'step-end', command, slug, step: result });
  };

  const prompt = renderRolePrompt('critic', { manifest, implPath, repoRoots: roots, reportVia: 'structured' });
  const extraRoots = typeof roots === 'string' ? [] : Object.values(roots).filter((root) => root !== primary);
  const insideRoot = implPath === primary || implPath.startsWith(`${primary}${path.sep}`);
  const agentStarted = performance.now();
  // E40: a `cost` event per model call of the Critic.
  const criticSpec = resolveModelSpec(options.model, options.env);
  const metered = meterAgentEvents({ spec: criticSpec, ...(options.backend ? { backend: options.backend.name } : {}), role: 'critic', attempt: 1, labels: { slug, agent: 'critic' }, ...(options.events ? { emit: (event) => options.events!.emit(event) } : {}), ...(options.budget ? { budget: { tracker: options.budget, scope: { slug, wave: 0, agent: 'critic' } } } : {}) });
  const { outcome } = await runAgent({
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    agentId: 'critic',
    role: 'critic',
    model: options.model,
    systemPrompt: prompt.system,
    prompt: prompt.user,
    cwd: primary,
    implPath,
    policy: { root: primary, ownedFiles: [], readOnly: true, readablePaths: [...extraRoots, ...(insideRoot ? [] : [implPath])] },
    limits: { timeoutMs: options.timeoutMs ?? 20 * 60_000, ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}) },
    env: options.env,
    outputSchema: criticReportJsonSchema,
    onEvent: metered.onEvent,
    ...(budgetSignal(metered, options.signal) ? { signal: budgetSignal(metered, options.signal)! } : {}),
    ...(options.backend ? { backend: options.backend } : {}),
  });
  outcome.usage = metered.settle(outcome);
  // Issue 14: a budget stop (or no money left to start) is what ended this agent.
  const budgetStop = metered.refused ?? metered.breach();
  if (budgetStop) outcome.failure = { kind: 'fatal', message: `${budgetStop.message} (the critic stopped; raise the budget and re-run)` };
  const base = {
    impl_path: implPath,
    slug,
    agent: { status: outcome.status, turns: outcome.turns, ...(outcome.failure ? { failure: outcome.failure.message } : {}) },
    usage: outcome.usage ?? emptyUsage(),
  };
  const fail = (code: string, message: string): RunCriticResult => ({
    ...base,
    issue_count: 0,
    error_count: 0,
    gate_passes: false,
    committed: false,
    error: { code, message },
    duration_ms: Math.round(performance.now() - started),
    steps,
    success: false,
  });

  // X30-10: what the critic changed in the checkout and the after-run checks undid is said; what they could NOT undo fails
  // the review closed, as for the Scout and the Planner (a sandboxed critic has the checkout read-only: nothing to undo).
  const checks = afterRunChecks(outcome.denials, 'the critic');
  if (checks.summary) record('critic-sandbox', checks.stayedMessage ? 'failed' : 'warning', checks.summary, agentStarted);
  if (checks.stayedMessage) return fail('SANDBOX_LEFTOVER_STAYED', `${checks.stayedMessage}, then run the review again`);

  if (outcome.structured === undefined) {
    const why = outcome.failure?.message ?? (outcome.status === 'finished' ? 'the critic finished without a structured review (final_answer)' : `the critic ended with status ${outcome.status}`);
    record('critic-agent', 'failed', why, agentStarted, { status: outcome.status, turns: outcome.turns });
    return fail('N029_AGENT_RUN_FAILED', `critic agent: ${why}`);
  }
  record('critic-agent', 'success', `${outcome.status} after ${outcome.turns} turn(s)`, agentStarted, { status: outcome.status, turns: outcome.turns });

  const reportStarted = performance.now();
  let report: CriticReportRecord;
  try {
    report = normalizeCriticReview(outcome.structured, { now: now(), verdicts: 'derive' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    record('critic-report', 'failed', message, reportStarted);
    return fail(PolywaveError.isInstance(error) ? error.code : 'X001_INVALID_INPUT', message);
  }
  const stored = await editImpl(implPath, (parsed) => {
    if (!parsed.manifest) throw new PolywaveError({ code: 'V001_MANIFEST_INVALID', message: `${implPath}: manifest is not usable` });
    // The stored report as the model reads it back (every optional field present, as zod outputs it).
    const asModel: CriticReport = {
      verdict: report.verdict,
      summary: report.summary,
      reviewed_at: report.reviewed_at,
      issue_count: report.issue_count,
      agent_reviews: Object.fromEntries(
        Object.entries(report.agent_reviews).map(([id, review]) => [
          id,
          { agent_id: review.agent_id, verdict: review.verdict, issues: (review.issues ?? []).map((issue) => ({ check: issue.check, severity: issue.severity, description: issue.description, file: issue.file, symbol: issue.symbol })) },
        ]),
      ),
    };
    const after: ImplManifest = { ...parsed.manifest, critic_report: asModel };
    return { edits: [{ path: ['critic_report'], value: report }], outcome: after };
  });
  const errorCount = criticErrorCount(report);
  const gatePasses = criticGatePasses(stored, { auto: options.auto === true });
  record('critic-report', report.verdict === 'PASS' ? 'success' : 'warning', `verdict ${report.verdict}: ${report.issue_count} issue(s), ${errorCount} error(s)`, reportStarted, { verdict: report.verdict, issue_count: report.issue_count });

  let commitSha: string | undefined;
  if (options.commit !== false) {
    const commitStarted = performance.now();
    try {
      commitSha = await commitManifest(primary, implPath, `chore: critic report for ${slug} [Polywave:critic:${slug}]`, options.env);
      record('commit', 'success', commitSha ? `committed ${commitSha.slice(0, 12)}` : 'manifest unchanged, nothing to commit', commitStarted);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      record('commit', 'failed', message, commitStarted);
      return { ...fail('G000_GIT_FAILED', `E48: committing the critic report failed: ${message}`), verdict: report.verdict, issue_count: report.issue_count, error_count: errorCount, summary: report.summary, reviewed_at: report.reviewed_at, gate_passes: gatePasses };
    }
  }
  return {
    ...base,
    verdict: report.verdict,
    issue_count: report.issue_count,
    error_count: errorCount,
    summary: report.summary,
    reviewed_at: report.reviewed_at,
    gate_passes: gatePasses,
    committed: commitSha !== undefined,
    ...(commitSha ? { commit_sha: commitSha } : {}),
    duration_ms: Math.round(performance.now() - started),
    steps,
    success: gatePasses,
  };
}
