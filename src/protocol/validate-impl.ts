import { isBlocking, type Finding } from '../errors/finding.js';
import { implRules } from './rules/index.js';
import type { ImplRule, ImplRuleContext } from './rules/rule.js';

/**
 * Runs every IMPL rule (E16 and the invariants) on a parsed manifest and returns all
 * findings: rule order first, then the order each rule emitted them. Pure — facts about a
 * repository come in through `context.fileExists` / `context.countLines`. A rule that throws
 * (a bug, never bad input) becomes a fatal finding instead of a stack trace.
 */
export function validateImpl(context: ImplRuleContext, rules: readonly ImplRule[] = implRules): Finding[] {
  const findings: Finding[] = [];
  for (const rule of rules) {
    try {
      findings.push(...rule.check(context));
    } catch (error) {
      findings.push({
        code: 'V001_MANIFEST_INVALID',
        message: `rule ${rule.name} (${rule.reference}) failed: ${error instanceof Error ? error.message : String(error)}`,
        severity: 'fatal',
      });
    }
  }
  return findings;
}

/** The `validate` JSON data: Go's `FullValidateData` keys (without `fixed`). */
export interface FindingSummary {
  /** No error or fatal findings. */
  valid: boolean;
  error_count: number;
  /** Findings of severity error or fatal. */
  errors: Finding[];
  warning_count: number;
  /** Findings of severity warning or info. */
  warnings: Finding[];
}

/** Splits findings into blocking errors (error, fatal) and advisory warnings (warning, info). */
export function summarizeFindings(findings: readonly Finding[]): FindingSummary {
  const errors = findings.filter(isBlocking);
  const warnings = findings.filter((finding) => !isBlocking(finding));
  return { valid: errors.length === 0, error_count: errors.length, errors, warning_count: warnings.length, warnings };
}
