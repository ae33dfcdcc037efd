import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { criticErrorCount, normalizeCriticReview } from '../../orchestrator/run-critic.js';
import { editImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid ${what} JSON: ${error instanceof Error ? error.message : String(error)}` });
  }
}

async function readReviewFile(file: string, io: CommandIo): Promise<Record<string, unknown>> {
  let text: string;
  if (file === '-') text = await io.readStdin();
  else {
    try {
      text = await readFile(path.resolve(io.cwd, file), 'utf8');
    } catch (error) {
      throw new PolywaveError({ code: 'X002_FILE_READ', message: `cannot read --file ${file}: ${error instanceof Error ? error.message : String(error)}` });
    }
  }
  const value = parseJson(text, `--file ${file}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--file ${file} must hold one JSON object {verdict, summary, issue_count, agent_reviews}` });
  return value as Record<string, unknown>;
}

/**
 * `set-critic-review <impl> --verdict PASS|ISSUES [--summary S] [--issue-count N]
 * [--agent-reviews '<json>'] [--file F|-]` — writes `critic_report` (E37) through the locked,
 * format-preserving writer; the critic then commits the manifest (E48). `--agent-reviews` is
 * Go's JSON array of `{agent_id, verdict, issues[]}` or an object keyed by agent ID; `--file`
 * holds the whole review as JSON (flags win over its fields). Every field is checked before
 * anything is written: bad JSON, an unknown verdict or severity → exit 2, manifest untouched.
 * Prints compact `{verdict, issue_count, reviewed_at, saved}` (Go).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const input: Record<string, unknown> = typeof options.file === 'string' && options.file.trim() !== '' ? await readReviewFile(options.file.trim(), io) : {};
  if (typeof options.verdict === 'string') input.verdict = options.verdict;
  if (typeof options.summary === 'string') input.summary = options.summary;
  if (typeof options.issueCount === 'number') input.issue_count = options.issueCount;
  if (typeof options.agentReviews === 'string' && options.agentReviews.trim() !== '') input.agent_reviews = parseJson(options.agentReviews, '--agent-reviews');
  if (input.verdict === undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--verdict is required (PASS or ISSUES)' });
  if (typeof input.verdict !== 'string' || !['PASS', 'ISSUES'].includes(input.verdict.trim().toUpperCase())) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--verdict must be PASS or ISSUES (got ${JSON.stringify(input.verdict)})` });
  }

  const report = normalizeCriticReview(input, { now: io.now(), verdicts: 'keep' });
  const errors = criticErrorCount(report);
  if (report.verdict === 'PASS' && errors > 0) io.stderr(`set-critic-review: warning: verdict PASS but ${errors} error-severity issue(s) — E37 says ISSUES\n`);
  await editImpl(implPath, (parsed) => {
    requireManifest(parsed, implPath);
    return { edits: [{ path: ['critic_report'], value: report }], outcome: undefined };
  });
  printJson(io, { verdict: report.verdict, issue_count: report.issue_count, reviewed_at: report.reviewed_at, saved: true }, { compact: true });
  return 0;
}
