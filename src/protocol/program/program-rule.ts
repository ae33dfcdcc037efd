import type { Finding, Severity } from '../../errors/finding.js';
import type { Locate } from '../parse-impl.js';
import type { ProgramManifest } from '../schema/program-schema.js';

/** What a PROGRAM validation rule sees. Everything is in memory: rules never touch the disk. */
export interface ProgramRuleContext {
  manifest: ProgramManifest;
  /** Line/column of a field path in the source text (undefined when unknown). */
  locate: Locate;
  /** Base name (or path) of the manifest file; enables the slug ↔ file name rule (V052). */
  fileName?: string;
}

/**
 * One named PROGRAM rule. `check` returns every finding (never throws, never stops early).
 * `reference` names the protocol text it implements (`§15.3`, `P1`, …) so `grep` finds it.
 */
export interface ProgramRule {
  name: string;
  reference: string;
  codes: readonly string[];
  check(context: ProgramRuleContext): Finding[];
}

/** A path to a field of the manifest, e.g. `['impls', 0, 'depends_on', 1]`. */
export type ProgramFieldPath = ReadonlyArray<string | number>;

/** Formats a field path the way findings print it: `impls[0].depends_on[1]`. */
export function formatProgramPath(path: ProgramFieldPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text === '' ? segment : `.${segment}`;
  }
  return text;
}

/** Position of `path`, or of its nearest ancestor present in the source (a missing key points at its row). */
export function locateNearestPath(locate: Locate, path: ProgramFieldPath): { line: number; column: number } | undefined {
  for (let length = path.length; length > 0; length -= 1) {
    const position = locate(path.slice(0, length));
    if (position) return position;
  }
  return undefined;
}

/** Builds a finding for a field path, with `field`, `line` and `column` filled from `locate`. */
export function programFinding(
  locate: Locate,
  code: string,
  message: string,
  path: ProgramFieldPath,
  severity: Severity = 'error',
  suggestion?: string,
): Finding {
  const finding: Finding = { code, message, severity };
  if (path.length > 0) {
    finding.field = formatProgramPath(path);
    const position = locateNearestPath(locate, path);
    if (position) {
      finding.line = position.line;
      finding.column = position.column;
    }
  }
  if (suggestion !== undefined) finding.suggestion = suggestion;
  return finding;
}
