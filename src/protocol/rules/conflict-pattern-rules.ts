import type { Finding } from '../../errors/finding.js';
import { conflictPatterns, type ConflictPattern } from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { goQuote, report } from './rule-helpers.js';

const appendOnly: ReadonlySet<string> = new Set<ConflictPattern>(['test-append', 'registry-append']);

/** Test files of the four code families (E11b pattern 1 is about test files). */
function looksLikeTestFile(file: string): boolean {
  const base = file.slice(file.lastIndexOf('/') + 1);
  return (
    /_test\.go$/.test(base) ||
    /\.(test|spec)\.[cm]?[jt]sx?$/i.test(base) ||
    /^test_.*\.py$/.test(base) ||
    /_test\.py$/.test(base) ||
    /(^|\/)(tests?|__tests__|spec)\//.test(file)
  );
}

/**
 * E11b: the Scout records on each `file_ownership` row of a file that several agents touch
 * which of the four overlap patterns applies (`conflict_pattern`: test-append, registry-append,
 * line-edit, mixed). Checks: the value is one of the four (V036); all rows of one file (per
 * repo) agree (E11B_PATTERN_DISAGREES); `test-append` is on a test file (warning); a pattern on
 * a file only one agent owns classifies nothing (warning). Same-wave sharing stays a V002 error
 * even when append-only — polywave enforces strict I1 — and gets a warning saying so
 * (E11B_RELAXATION_NOT_ENFORCED), so the Scout sequences the agents or gives the file to one.
 */
export const conflictPatternClassification: ImplRule = {
  name: 'conflict-pattern-classification',
  reference: 'E11b',
  codes: ['V036_INVALID_ENUM', 'E11B_PATTERN_DISAGREES', 'E11B_TEST_APPEND_NOT_TEST', 'E11B_NOT_SHARED', 'E11B_RELAXATION_NOT_ENFORCED'],
  check(context) {
    const findings: Finding[] = [];
    const groups = new Map<string, Array<{ index: number; agent: string; wave: number; pattern: string | undefined }>>();
    context.manifest.file_ownership.forEach((row, index) => {
      const key = JSON.stringify([row.repo ?? '', row.file ?? '']);
      groups.set(key, [...(groups.get(key) ?? []), { index, agent: row.agent ?? '', wave: row.wave ?? 0, pattern: row.conflict_pattern }]);
      const pattern = row.conflict_pattern;
      if (pattern !== undefined && !(conflictPatterns as readonly string[]).includes(pattern)) {
        findings.push(
          report(context, {
            code: 'V036_INVALID_ENUM',
            message: `file_ownership[${index}].conflict_pattern has invalid value ${goQuote(pattern)} — must be one of: ${conflictPatterns.join(', ')}`,
            path: ['file_ownership', index, 'conflict_pattern'],
          }),
        );
      }
    });
    for (const [key, rows] of groups) {
      const classified = rows.filter((row) => row.pattern !== undefined);
      if (classified.length === 0) continue;
      const file = (JSON.parse(key) as [string, string])[1];
      const first = classified[0]!;
      const at = ['file_ownership', first.index, 'conflict_pattern'] as const;
      const agents = [...new Set(rows.map((row) => row.agent))];
      if (agents.length < 2) {
        findings.push(report(context, { code: 'E11B_NOT_SHARED', message: `${goQuote(file)} has conflict_pattern ${goQuote(first.pattern!)} but only agent ${agents[0] ?? ''} owns it (E11b classifies files several agents touch)`, path: [...at], severity: 'warning' }));
        continue;
      }
      const patterns = [...new Set(classified.map((row) => row.pattern!))];
      if (patterns.length > 1) {
        findings.push(
          report(context, {
            code: 'E11B_PATTERN_DISAGREES',
            message: `${goQuote(file)}: the rows of agents ${agents.join(', ')} record different conflict patterns (${patterns.join(', ')}); one overlap has one E11b pattern`,
            path: [...at],
            suggestion: 'use mixed when one agent appends and another edits existing lines',
          }),
        );
        continue;
      }
      const pattern = patterns[0]!;
      if (pattern === 'test-append' && !looksLikeTestFile(file)) {
        findings.push(report(context, { code: 'E11B_TEST_APPEND_NOT_TEST', message: `${goQuote(file)} is classified test-append (E11b pattern 1) but is not a test file — registry-append or line-edit?`, path: [...at], severity: 'warning' }));
      }
      const sameWave = rows.some((row, index) => rows.some((other, otherIndex) => otherIndex > index && other.wave === row.wave && other.agent !== row.agent));
      if (sameWave && appendOnly.has(pattern)) {
        findings.push(
          report(context, {
            code: 'E11B_RELAXATION_NOT_ENFORCED',
            message: `${goQuote(file)} is shared ${pattern} within one wave: E11b permits it, but polywave enforces strict I1 (V002) — give the file to one agent or move one agent to a later wave`,
            path: [...at],
            severity: 'warning',
          }),
        );
      }
    }
    return findings;
  },
};
