/** Severity of a finding, as in the protocol texts and the Go result model. */
export type Severity = 'fatal' | 'error' | 'warning' | 'info';

/**
 * One problem found in an input (a manifest, a report, a command's arguments).
 * This is also the JSON shape printed by `validate` and friends.
 */
export interface Finding {
  code: string;
  message: string;
  severity: Severity;
  /** Dotted/bracketed path of the offending field, e.g. `waves[0].agents[1].id`. */
  field?: string;
  /** 1-based line in the source text, when known. */
  line?: number;
  /** 1-based column in the source text, when known. */
  column?: number;
  file?: string;
  suggestion?: string;
}

/** True for findings that make an input invalid (error or fatal). */
export function isBlocking(finding: Finding): boolean {
  return finding.severity === 'error' || finding.severity === 'fatal';
}

const severityRank: Record<Severity, number> = { fatal: 0, error: 1, warning: 2, info: 3 };

/**
 * Deterministic order for findings: by line (unknown lines last), then code, field, message.
 * Rules themselves emit in a stable order; this is used where findings of several sources merge.
 */
export function compareFindings(left: Finding, right: Finding): number {
  const leftLine = left.line ?? Number.MAX_SAFE_INTEGER;
  const rightLine = right.line ?? Number.MAX_SAFE_INTEGER;
  if (leftLine !== rightLine) return leftLine - rightLine;
  if (left.severity !== right.severity) return severityRank[left.severity] - severityRank[right.severity];
  return (
    left.code.localeCompare(right.code) ||
    (left.field ?? '').localeCompare(right.field ?? '') ||
    left.message.localeCompare(right.message)
  );
}
