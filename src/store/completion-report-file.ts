import { PolywaveError } from '../errors/polywave-error.js';
import { buildCompletionReport, checkReportTarget, type CompletionReportInput, type CompletionReportRecord } from '../protocol/completion-report.js';
import { agentIdPattern } from '../protocol/schema/impl-schema.js';
import type { ImplParseResult } from '../protocol/parse-impl.js';
import type { BatchedImplEditor } from './batched-edit.js';
import { describeFinding, editImpl } from './manifest-file.js';

/**
 * Writes `completion_reports.{agentId}` through the locked, format-preserving writer (I4, I5,
 * E14) — the one path for `polywave set-completion`, the agents' `set_completion` tool and the
 * script backend, so any number of agents can report at once without losing one another's
 * reports. Throws a coded PolywaveError (exit 2) for an invalid report or an unknown agent;
 * the manifest is then left as it was.
 */
export async function saveCompletionReport(implPath: string, agentId: string, input: Record<string, unknown>, options: { editor?: BatchedImplEditor } = {}): Promise<CompletionReportRecord> {
  const report = buildValidReport(agentId, input);
  const plan = (parsed: ImplParseResult) => {
    const manifest = parsed.manifest;
    if (!manifest) {
      const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
      throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: first ? describeFinding(implPath, first) : `${implPath}: manifest is not usable`, findings: parsed.findings });
    }
    const problems = checkReportTarget(manifest, agentId);
    if (problems.length > 0) throw new PolywaveError({ code: problems[0]!.code, message: problems[0]!.message });
    return { edits: [{ path: ['completion_reports', agentId], value: report }], outcome: undefined };
  };
  if (options.editor) await options.editor.submit(plan);
  else await editImpl(implPath, plan);
  return report;
}

/** Validates a report (I4/I5/E14 builder rules); throws a coded error naming every blocking problem. */
function buildValidReport(agentId: string, input: Record<string, unknown>): CompletionReportRecord {
  if (!agentIdPattern.test(agentId)) {
    throw new PolywaveError({ code: 'V009_INVALID_AGENT_ID', message: `agent ID "${agentId}" does not match protocol pattern ^[A-Z][2-9]?$` });
  }
  const built = buildCompletionReport(input as CompletionReportInput, { agentId });
  const blocking = built.findings.filter((finding) => finding.severity === 'error' || finding.severity === 'fatal');
  if (!built.ok || blocking.length > 0) {
    const first = blocking[0] ?? built.findings[0];
    throw new PolywaveError({
      code: first?.code ?? 'X001_INVALID_INPUT',
      message: blocking.length > 1 ? `${first?.message} (and ${blocking.length - 1} more: ${blocking.slice(1).map((finding) => finding.message).join('; ')})` : (first?.message ?? 'invalid report'),
      findings: built.findings,
    });
  }
  return built.report;
}
