import { PolywaveError } from '../errors/polywave-error.js';
import { buildCompletionReport, type CompletionReportInput, type CompletionReportRecord } from '../protocol/completion-report.js';
import { agentIdPattern } from '../protocol/schema/impl-schema.js';
import type { ImplParseResult } from '../protocol/parse-impl.js';
import type { BatchedImplEditor } from './batched-edit.js';
import { submitImplRequest, type SubmitOptions } from './manifest-inbox.js';
import { planCompletionReport } from './manifest-requests.js';

/** Options of {@link saveCompletionReport}. */
export interface SaveCompletionReportOptions extends SubmitOptions {
  /** This process's batched editor of the manifest (run-wave: agents finishing together share one write). */
  editor?: BatchedImplEditor;
}

/**
 * Writes `completion_reports.{agentId}` through the locked, format-preserving writer (I4, I5,
 * E14) — the one path for `polywave set-completion`, the agents' `set_completion` tool and the
 * script backend, so any number of agents can report at once without losing one another's
 * reports: group-committed across processes through the manifest's inbox (manifest-inbox.ts), or
 * through this process's batched editor. Throws a coded PolywaveError (exit 2) for an invalid
 * report or an unknown agent; the manifest is then left as it was.
 */
export async function saveCompletionReport(implPath: string, agentId: string, input: Record<string, unknown>, options: SaveCompletionReportOptions = {}): Promise<CompletionReportRecord> {
  const report = buildValidReport(agentId, input);
  const request = { agentId, report };
  if (options.editor) await options.editor.submit((parsed: ImplParseResult) => planCompletionReport(parsed, request, implPath));
  else {
    const { editor: _editor, ...submitOptions } = options;
    await submitImplRequest(implPath, 'completion-report', request, submitOptions);
  }
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
