/**
 * `run-review` (Go `pkg/codereview`): an LLM code review of the latest commit's diff, scored per
 * dimension. The diff is `git diff HEAD~1..HEAD` (else `git show HEAD`), at most 50 000 bytes. The
 * reviewer runs read-only (the critic's jail: nothing may be written) and answers with a
 * structured verdict: code_quality, naming_clarity, complexity, pattern_adherence and security,
 * each 0–100 with a short rationale, the overall score and a summary; `passed = overall >= threshold`.
 * Unlike Go (a direct Anthropic call that needs ANTHROPIC_API_KEY), it runs on any backend.
 */
import { z } from 'zod';
import { emptyUsage, type AgentBackend, type AgentUsage } from '../agents/contract.js';
import { runAgent } from '../agents/run-agent.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { runGit } from '../git/run-git.js';

export const reviewDimensions = ['code_quality', 'naming_clarity', 'complexity', 'pattern_adherence', 'security'] as const;
export const maxReviewDiffBytes = 50_000;

const score = z.number().min(0).max(100);
const dimension = z.object({ score, rationale: z.string().trim().min(1) });
const reviewSchema = z.object({
  code_quality: dimension,
  naming_clarity: dimension,
  complexity: dimension,
  pattern_adherence: dimension,
  security: dimension,
  overall: score,
  summary: z.string().trim().min(1),
});

/** Options of {@link runReview}. */
export interface RunReviewOptions {
  repoDir: string;
  model?: string;
  /** Pass mark of the overall score (default 70). */
  threshold?: number;
  env: Readonly<Record<string, string | undefined>>;
  backend?: AgentBackend;
  signal?: AbortSignal;
  timeoutMs?: number;
  unsafeNoSandbox?: boolean;
}

/** The run-review JSON. */
export interface RunReviewResult {
  passed: boolean;
  overall?: number;
  threshold: number;
  dimensions?: Record<string, { score: number; rationale: string }>;
  summary?: string;
  /** The commit reviewed (HEAD). */
  commit: string;
  diff_bytes: number;
  truncated: boolean;
  usage: AgentUsage;
  error?: { code: string; message: string };
}

async function latestDiff(repoDir: string, env: RunReviewOptions['env']): Promise<string> {
  try {
    return await runGit(['diff', 'HEAD~1..HEAD'], { cwd: repoDir, env });
  } catch {
    return runGit(['show', '--format=', 'HEAD'], { cwd: repoDir, env });
  }
}

const systemPrompt = `You are a code reviewer. You review one git diff for quality; you change nothing.
Score each dimension from 0 to 100 with a one- or two-sentence rationale: code_quality, naming_clarity, complexity (100 = simple), pattern_adherence (fits the surrounding code), security.
Then give overall (a weighted average) and a summary of one to three sentences.
Answer only with the structured result: {code_quality: {score, rationale}, naming_clarity: {…}, complexity: {…}, pattern_adherence: {…}, security: {…}, overall, summary}.`;

/** Runs the review (see the module comment). Not a repository, or no commit: exit 2. */
export async function runReview(options: RunReviewOptions): Promise<RunReviewResult> {
  const threshold = options.threshold ?? 70;
  let commit: string;
  try {
    commit = (await runGit(['rev-parse', 'HEAD'], { cwd: options.repoDir, env: options.env })).trim();
  } catch {
    throw new PolywaveError({ code: 'G000_NOT_A_REPOSITORY', message: `${options.repoDir} is not a git repository with a commit to review` });
  }
  const full = await latestDiff(options.repoDir, options.env);
  const bytes = Buffer.byteLength(full, 'utf8');
  const truncated = bytes > maxReviewDiffBytes;
  const diff = truncated ? Buffer.from(full, 'utf8').subarray(0, maxReviewDiffBytes).toString('utf8') : full;
  const base = { threshold, commit, diff_bytes: bytes, truncated };
  if (diff.trim() === '') return { ...base, passed: true, summary: 'empty diff: nothing to review', usage: emptyUsage() };
  const { outcome } = await runAgent({
    ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    agentId: 'reviewer',
    role: 'critic',
    model: options.model,
    systemPrompt,
    prompt: `Review this diff of commit ${commit}${truncated ? ` (truncated to ${maxReviewDiffBytes} bytes)` : ''}:\n\n\`\`\`diff\n${diff}\n\`\`\`\n`,
    cwd: options.repoDir,
    policy: { root: options.repoDir, ownedFiles: [], readOnly: true },
    limits: { timeoutMs: options.timeoutMs ?? 5 * 60_000 },
    env: options.env,
    outputSchema: z.toJSONSchema(reviewSchema) as Record<string, unknown>,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.backend ? { backend: options.backend } : {}),
  });
  const usage = outcome.usage ?? emptyUsage();
  const parsed = reviewSchema.safeParse(outcome.structured);
  if (!parsed.success) {
    const why = outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}` : `no valid review (${parsed.error.issues[0]?.path.join('.') ?? ''}: ${parsed.error.issues[0]?.message ?? 'missing'})`;
    return { ...base, passed: false, usage, error: { code: 'N029_AGENT_RUN_FAILED', message: `the reviewer produced no review: ${why}` } };
  }
  const review = parsed.data;
  const dimensions = Object.fromEntries(reviewDimensions.map((name) => [name, review[name]]));
  return { ...base, passed: review.overall >= threshold, overall: review.overall, dimensions, summary: review.summary, usage };
}
