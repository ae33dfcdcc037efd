import type { Finding } from '../errors/finding.js';
import { isBlocking } from '../errors/finding.js';
import {
  completionStatuses,
  failureTypes,
  type CompletionReport,
  type CompletionStatus,
  type ImplManifest,
  type InterfaceDeviation,
} from './schema/impl-schema.js';
import { findAgent, findWave } from './waves.js';

/**
 * Key order of a completion report, as the protocol writes it (message-formats.txt and the Go
 * struct): status, worktree, branch, commit, files_changed, files_created, interface_deviations,
 * out_of_scope_deps, tests_added, verification, failure_type, notes, dedup_stats, repo.
 * `usage` (token/cost figures recorded by our agent runtime) comes last.
 */
export const completionReportKeys = [
  'status',
  'worktree',
  'branch',
  'commit',
  'files_changed',
  'files_created',
  'interface_deviations',
  'out_of_scope_deps',
  'tests_added',
  'verification',
  'failure_type',
  'notes',
  'dedup_stats',
  'repo',
  'usage',
] as const;

/** The commit value I5 reserves for "the agent could not commit". */
export const uncommittedMarker = 'uncommitted';

/** A completion report as written to `completion_reports.{ID}`: every field but `status` optional. */
export interface CompletionReportRecord {
  status: string;
  worktree?: string;
  branch?: string;
  commit?: string;
  files_changed?: string[];
  files_created?: string[];
  interface_deviations?: Array<Partial<InterfaceDeviation>>;
  out_of_scope_deps?: string[];
  tests_added?: string[];
  verification?: string;
  failure_type?: string;
  notes?: string;
  dedup_stats?: { hits?: number; misses?: number; tokens_saved_estimate?: number };
  repo?: string;
  usage?: Record<string, unknown>;
}

/** What an agent (or `set-completion`) supplies; everything optional so the builder can report what is missing. */
export type CompletionReportInput = Partial<
  Omit<CompletionReportRecord, 'files_changed' | 'files_created' | 'out_of_scope_deps' | 'tests_added' | 'interface_deviations'>
> & {
  files_changed?: readonly string[];
  files_created?: readonly string[];
  out_of_scope_deps?: readonly string[];
  tests_added?: readonly string[];
  interface_deviations?: ReadonlyArray<Partial<InterfaceDeviation>>;
};

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

/**
 * Returns a copy of `report` whose keys follow {@link completionReportKeys}, without empty
 * fields (undefined, null, `''`, `[]`) except `status`, which is always kept. Keys outside the
 * protocol list are kept after the known ones, in their original order (validation reports them).
 */
export function orderCompletionReport(report: object): CompletionReportRecord {
  const source = report as Record<string, unknown>;
  const ordered: Record<string, unknown> = { status: source.status ?? '' };
  for (const key of completionReportKeys) {
    if (key === 'status' || isEmpty(source[key])) continue;
    ordered[key] = source[key];
  }
  for (const [key, value] of Object.entries(source)) {
    if ((completionReportKeys as readonly string[]).includes(key) || isEmpty(value)) continue;
    ordered[key] = value;
  }
  return ordered as unknown as CompletionReportRecord;
}

/** Trimmed, non-empty, de-duplicated entries in first-seen order. */
export function dedupePaths(paths: readonly string[] | undefined): string[] {
  const seen = new Set<string>();
  for (const path of paths ?? []) {
    const trimmed = String(path).trim();
    if (trimmed !== '') seen.add(trimmed);
  }
  return [...seen];
}

function trimmed(value: string | undefined): string | undefined {
  const result = value?.trim();
  return result === '' ? undefined : result;
}

function isCompletionStatus(value: string | undefined): value is CompletionStatus {
  return value !== undefined && (completionStatuses as readonly string[]).includes(value);
}

/** True when `commit` names a commit: non-empty and not the I5 `uncommitted` marker. */
export function hasCommit(commit: string | undefined): boolean {
  const value = (commit ?? '').trim();
  return value !== '' && value !== uncommittedMarker;
}

/** Result of {@link buildCompletionReport}. */
export interface BuiltCompletionReport {
  /** True when no finding blocks writing the report. */
  ok: boolean;
  /** The normalized report, keys in protocol order (also returned when `ok` is false). */
  report: CompletionReportRecord;
  findings: Finding[];
}

/**
 * Builds a completion report and applies the builder rules of reference §5.1 / message-formats
 * (all problems are reported, not just the first):
 * - `status` is required (V005) and must be complete | partial | blocked (V036);
 * - I5: `complete` needs a commit (G003), and `commit: uncommitted` is not one (G003);
 * - E19: `partial`/`blocked` need a `failure_type` (V005); `complete` must not have one (V038);
 *   a `failure_type` must be one of the 5 protocol values (V022) — the Go builder's legacy
 *   `unknown` is rejected, as Go's own validator does.
 * Normalization: scalar fields trimmed, empty ones dropped; `files_changed`, `files_created`,
 * `tests_added` and `out_of_scope_deps` de-duplicated preserving order. `options.agentId`
 * prefixes finding fields with `completion_reports.{ID}.`.
 */
export function buildCompletionReport(input: CompletionReportInput, options: { agentId?: string } = {}): BuiltCompletionReport {
  const field = (name: string) => (options.agentId === undefined ? name : `completion_reports.${options.agentId}.${name}`);
  const findings: Finding[] = [];
  const status = trimmed(input.status);
  const failureType = trimmed(input.failure_type);
  const commit = trimmed(input.commit);

  if (status === undefined) {
    findings.push({ code: 'V005_REQUIRED_FIELDS_MISSING', severity: 'error', field: field('status'), message: 'status is required' });
  } else if (!isCompletionStatus(status)) {
    findings.push({
      code: 'V036_INVALID_ENUM',
      severity: 'error',
      field: field('status'),
      message: `status "${status}" is invalid: must be complete, partial, or blocked`,
    });
  }

  if (status === 'complete') {
    // I5: agents commit before reporting.
    if (commit === undefined) {
      findings.push({ code: 'G003_COMMIT_MISSING', severity: 'error', field: field('commit'), message: 'commit is required when status is complete' });
    } else if (commit === uncommittedMarker) {
      findings.push({
        code: 'G003_COMMIT_MISSING',
        severity: 'error',
        field: field('commit'),
        message: 'commit "uncommitted" is not a commit: agents must commit before reporting status complete (I5)',
      });
    }
    if (failureType !== undefined) {
      findings.push({ code: 'V038_CROSS_FIELD', severity: 'error', field: field('failure_type'), message: 'failure_type must not be set when status is complete' });
    }
  }
  if ((status === 'partial' || status === 'blocked') && failureType === undefined) {
    // E19: the orchestrator's decision tree needs the failure type.
    findings.push({
      code: 'V005_REQUIRED_FIELDS_MISSING',
      severity: 'error',
      field: field('failure_type'),
      message: `failure_type is required when status is "${status}"`,
      suggestion: `one of: ${failureTypes.join(', ')}`,
    });
  }
  if (failureType !== undefined && !(failureTypes as readonly string[]).includes(failureType)) {
    findings.push({
      code: 'V022_INVALID_FAILURE_TYPE',
      severity: 'error',
      field: field('failure_type'),
      message: `failure_type "${failureType}" is invalid: must be one of ${failureTypes.join(', ')}`,
    });
  }

  const report = orderCompletionReport({
    ...input,
    status: status ?? '',
    worktree: trimmed(input.worktree),
    branch: trimmed(input.branch),
    commit,
    failure_type: failureType,
    repo: trimmed(input.repo),
    files_changed: dedupePaths(input.files_changed),
    files_created: dedupePaths(input.files_created),
    out_of_scope_deps: dedupePaths(input.out_of_scope_deps),
    tests_added: dedupePaths(input.tests_added),
    interface_deviations: input.interface_deviations === undefined ? undefined : [...input.interface_deviations],
  });
  return { ok: !findings.some(isBlocking), report, findings };
}

/**
 * May a report be stored under `agentId`? (reference §5.2 `SetCompletionReport`): the ID must be
 * non-empty and name an agent of some wave. Findings are `N095_REPORT_SET_FAILED` errors:
 * `agent ID cannot be empty` / `agent not found in manifest: {id}`. `[]` when fine.
 */
export function checkReportTarget(manifest: ImplManifest, agentId: string): Finding[] {
  const id = agentId.trim();
  if (id === '') {
    return [{ code: 'N095_REPORT_SET_FAILED', severity: 'error', field: 'agent', message: 'agent ID cannot be empty' }];
  }
  if (findAgent(manifest, id) === undefined) {
    return [{ code: 'N095_REPORT_SET_FAILED', severity: 'error', field: 'agent', message: `agent not found in manifest: ${id}` }];
  }
  return [];
}

/** Input of {@link applyStatusUpdate} (`update-status --wave --agent --status [--commit]`). */
export interface StatusUpdate {
  wave: number;
  agentId: string;
  status: string;
  commit?: string;
}

/** The `update-status` JSON (Go keys). */
export interface StatusUpdateData {
  wave: number;
  agent: string;
  old_status: string;
  new_status: string;
  updated: boolean;
}

/** Result of {@link applyStatusUpdate}: the report to store under `completion_reports.{agent}`, or why not. */
export type StatusUpdateResult =
  | { ok: true; report: CompletionReportRecord; data: StatusUpdateData }
  | { ok: false; finding: Finding };

/**
 * `update-status` semantics (reference §5.3), pure: the wave must exist and contain the agent
 * (`N015_STATUS_UPDATE_FAILED`: `wave {n} not found in manifest` / `agent {A} not found in wave {n}`);
 * the status must be complete | partial | blocked (V036); setting `complete` needs a commit from
 * `update.commit` or the existing report — `uncommitted` does not count — else
 * `G003_COMMIT_MISSING` on `completion_reports.{A}.commit` (I5). The new report is the existing
 * one (or an empty one) with the new status and commit. Decision: moving to `complete` drops a
 * stale `failure_type`, which the builder rules forbid on complete reports.
 * Nothing is mutated: the caller writes `report` back.
 */
export function applyStatusUpdate(manifest: ImplManifest, update: StatusUpdate): StatusUpdateResult {
  const wave = findWave(manifest, update.wave);
  if (wave === undefined) {
    return { ok: false, finding: { code: 'N015_STATUS_UPDATE_FAILED', severity: 'error', field: 'wave', message: `wave ${update.wave} not found in manifest` } };
  }
  if (!(wave.agents ?? []).some((agent) => agent.id === update.agentId)) {
    return {
      ok: false,
      finding: { code: 'N015_STATUS_UPDATE_FAILED', severity: 'error', field: 'agent', message: `agent ${update.agentId} not found in wave ${update.wave}` },
    };
  }
  const status = update.status.trim();
  if (!isCompletionStatus(status)) {
    return {
      ok: false,
      finding: { code: 'V036_INVALID_ENUM', severity: 'error', field: 'status', message: `status "${status}" is invalid: must be complete, partial, or blocked` },
    };
  }
  const existing: Partial<CompletionReport> = manifest.completion_reports?.[update.agentId] ?? {};
  const commit = trimmed(update.commit) ?? trimmed(existing.commit);
  if (status === 'complete' && !hasCommit(commit)) {
    return {
      ok: false,
      finding: {
        code: 'G003_COMMIT_MISSING',
        severity: 'error',
        field: `completion_reports.${update.agentId}.commit`,
        message: `cannot set agent ${update.agentId} to complete without a commit (commit="${commit ?? ''}") — agents must commit before reporting (I5)`,
        suggestion: 'pass --commit <sha>',
      },
    };
  }
  const next: Record<string, unknown> = { ...existing, status, commit };
  if (status === 'complete') delete next.failure_type;
  return {
    ok: true,
    report: orderCompletionReport(next),
    data: { wave: update.wave, agent: update.agentId, old_status: existing.status ?? '', new_status: status, updated: true },
  };
}

/** The `check-completion` JSON (Go keys). */
export interface CompletionCheck {
  found: boolean;
  agent_id: string;
  status: string;
  has_commit: boolean;
  files_changed: string[];
}

/**
 * `check-completion` (E42 SubagentStop hook): does `agentId` have a report with a status?
 * `found` needs a non-empty status; `has_commit` is false for an empty commit and, unlike Go,
 * also for `uncommitted` (I5: that value flags a missing commit). Not found ⇒ status `''`,
 * `files_changed: []`.
 */
export function checkCompletion(manifest: ImplManifest, agentId: string): CompletionCheck {
  const report = manifest.completion_reports?.[agentId];
  const status = (report?.status ?? '').trim();
  if (report === undefined || status === '') {
    return { found: false, agent_id: agentId, status: '', has_commit: false, files_changed: [] };
  }
  return { found: true, agent_id: agentId, status, has_commit: hasCommit(report.commit), files_changed: [...(report.files_changed ?? [])] };
}
