import { PolywaveError } from '../errors/polywave-error.js';
import { applyStatusUpdate, checkReportTarget, type CompletionReportRecord, type StatusUpdateData } from '../protocol/completion-report.js';
import type { ImplParseResult } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import type { YamlEdit } from '../protocol/yaml/index.js';

/**
 * The edits other processes may queue in an IMPL's group-commit inbox (manifest-inbox.ts), as
 * data: a request is plain JSON, and whichever process holds the lock plans it against the
 * manifest as it is then — exactly as the requesting process would have.
 */

/** `completion_reports.{agentId} = report` (set-completion, the agents' set_completion tool). */
export interface CompletionReportRequest {
  agentId: string;
  report: CompletionReportRecord;
}

/** `update-status --wave --agent --status [--commit]` (E7). */
export interface StatusUpdateRequest {
  wave: number;
  agentId: string;
  status: string;
  commit?: string;
}

/** A kind of request: what it touches and how it becomes edits. */
export interface ImplRequestKind<Request, Outcome> {
  /** The manifest keys the plan reads and writes (requests with disjoint keys are planned together). */
  keys(request: Request): string[];
  plan(parsed: ImplParseResult, request: Request, implPath: string): { edits: YamlEdit[]; outcome: Outcome };
}

function usableManifest(parsed: ImplParseResult, implPath: string): ImplManifest {
  if (parsed.manifest) return parsed.manifest;
  const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
  const where = first?.line ? `${implPath}:${first.line}${first.column ? `:${first.column}` : ''}` : implPath;
  throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: first ? `${where}: ${first.message}` : `${implPath}: manifest is not usable`, findings: parsed.findings });
}

/** I4/E14: store a (validated) completion report; refused for an agent the manifest does not have. */
export function planCompletionReport(parsed: ImplParseResult, request: CompletionReportRequest, implPath: string): { edits: YamlEdit[]; outcome: null } {
  const manifest = usableManifest(parsed, implPath);
  const problems = checkReportTarget(manifest, request.agentId);
  if (problems.length > 0) throw new PolywaveError({ code: problems[0]!.code, message: problems[0]!.message });
  return { edits: [{ path: ['completion_reports', request.agentId], value: request.report }], outcome: null };
}

/**
 * E7 update-status: field-level edits keep every other field of an existing report (and its
 * comments) as written; a missing report is created. `G003_COMMIT_MISSING` exits 1, other refusals 2.
 */
export function planStatusUpdate(parsed: ImplParseResult, request: StatusUpdateRequest, implPath: string): { edits: YamlEdit[]; outcome: StatusUpdateData } {
  const manifest = usableManifest(parsed, implPath);
  const result = applyStatusUpdate(manifest, { wave: request.wave, agentId: request.agentId, status: request.status, ...(request.commit !== undefined ? { commit: request.commit } : {}) });
  if (!result.ok) throw new PolywaveError({ code: result.finding.code, message: result.finding.message, exitCode: result.finding.code === 'G003_COMMIT_MISSING' ? 1 : 2 });
  const existing = manifest.completion_reports?.[request.agentId];
  const edits: YamlEdit[] = existing
    ? [
        { path: ['completion_reports', request.agentId, 'status'], value: result.report.status },
        ...(result.report.commit && result.report.commit !== existing.commit ? [{ path: ['completion_reports', request.agentId, 'commit'], value: result.report.commit }] : []),
        ...(result.report.status === 'complete' && existing.failure_type !== undefined ? [{ path: ['completion_reports', request.agentId, 'failure_type'], delete: true as const }] : []),
      ]
    : [{ path: ['completion_reports', request.agentId], value: result.report }];
  return { edits, outcome: result.data };
}

const reportKeys = (request: { agentId: string }): string[] => [`completion_reports.${request.agentId}`];

/** Every request kind, by the name stored in an inbox entry. */
export const implRequestKinds = {
  'completion-report': { keys: reportKeys, plan: planCompletionReport } satisfies ImplRequestKind<CompletionReportRequest, null>,
  'status-update': { keys: reportKeys, plan: planStatusUpdate } satisfies ImplRequestKind<StatusUpdateRequest, StatusUpdateData>,
};

/** The name of a request kind. */
export type ImplRequestKindName = keyof typeof implRequestKinds;

/** The request type of a kind. */
export type RequestOf<Kind extends ImplRequestKindName> = Parameters<(typeof implRequestKinds)[Kind]['plan']>[1];

/** The outcome type of a kind. */
export type OutcomeOf<Kind extends ImplRequestKindName> = ReturnType<(typeof implRequestKinds)[Kind]['plan']>['outcome'];
