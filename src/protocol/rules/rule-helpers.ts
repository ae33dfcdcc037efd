import type { Finding, Severity } from '../../errors/finding.js';
import { formatPath } from '../yaml/index.js';
import type { ImplRuleContext } from './rule.js';

/** A path to a field of the manifest, e.g. `['waves', 0, 'agents', 1, 'id']`. */
export type FieldPath = ReadonlyArray<string | number>;

/**
 * Formats a field path the way every finding names fields (`waves[0].agents[1].id`,
 * `completion_reports.A.commit`) — the YAML layer's format, so V013 and rule findings agree.
 */
export const formatFieldPath: (path: FieldPath) => string = formatPath;

/**
 * Position of `path`, or of its nearest ancestor that has one (a missing
 * `file_ownership[2].action` points at the row). parseImpl's locator already falls back this
 * way; this keeps hand-made locators (tests, other callers) just as useful.
 */
export function locateNearest(context: ImplRuleContext, path: FieldPath): { line: number; column: number } | undefined {
  for (let length = path.length; length > 0; length -= 1) {
    const position = context.locate(path.slice(0, length));
    if (position) return position;
  }
  return undefined;
}

/** What a rule says about one problem; `report` turns it into a located {@link Finding}. */
export interface FindingInput {
  code: string;
  message: string;
  /** Defaults to `error`. */
  severity?: Severity;
  /** Path of the offending field; the finding's `field`, `line` and `column` come from it. */
  path?: FieldPath;
  /** Where to point instead of `path` (e.g. the row that triggered a missing section). */
  at?: FieldPath;
  suggestion?: string;
}

/** Builds a finding with `field` and `line`/`column` filled from the context's locator. */
export function report(context: ImplRuleContext, input: FindingInput): Finding {
  const finding: Finding = { code: input.code, message: input.message, severity: input.severity ?? 'error' };
  if (input.path && input.path.length > 0) {
    finding.field = formatFieldPath(input.path);
    const position = locateNearest(context, input.at ?? input.path);
    if (position) {
      finding.line = position.line;
      finding.column = position.column;
    }
  }
  if (input.suggestion !== undefined) finding.suggestion = input.suggestion;
  return finding;
}

/** Plain code-point order (not locale): the same everywhere, like Go's `sort.Strings`. */
export function compareText(left: string, right: string): number {
  if (left === right) return 0;
  return left < right ? -1 : 1;
}

/** Keys of a map field in code-point order; where the Go code iterated a map we sort. */
export function sortedKeys(record: Readonly<Record<string, unknown>> | undefined): string[] {
  return record ? Object.keys(record).sort(compareText) : [];
}

/** Go's `%q` for a string: double-quoted, with Go's escapes for control characters. */
export function goQuote(value: string): string {
  return JSON.stringify(value).replace(/\\u00([0-9a-f]{2})/g, (_match, hex: string) => {
    if (hex === '07') return '\\a';
    if (hex === '0b') return '\\v';
    return `\\x${hex}`;
  });
}

/** Go's `%v` for a string slice: `[A B C]`. */
export function goList(values: readonly string[]): string {
  return `[${values.join(' ')}]`;
}

/** True when a string is absent or only whitespace (Go's `strings.TrimSpace(x) == ""`). */
export function isBlank(value: string | undefined): boolean {
  return value === undefined || value.trim() === '';
}

/** The `Scaffold` ownership row at wave 0 (§10.18): the documented scaffold-file row. */
export function isScaffoldRow(row: { agent?: string; wave?: number }): boolean {
  return row.agent === 'Scaffold' && (row.wave ?? 0) === 0;
}
