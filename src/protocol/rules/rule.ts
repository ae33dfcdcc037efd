import type { Finding } from '../../errors/finding.js';
import type { ImplManifest } from '../schema/impl-schema.js';
import type { Locate } from '../parse-impl.js';

/**
 * What an IMPL validation rule sees. Everything is in memory: rules never touch the disk.
 * Facts about the repository (does a file exist, how many lines) are passed in by the caller.
 */
export interface ImplRuleContext {
  manifest: ImplManifest;
  /** Line/column of a field path in the source text (undefined when unknown). */
  locate: Locate;
  /**
   * Present only when validating against a repository (`validate --repo-dir`): tells whether a
   * repo-relative path exists. `repo` is the ownership row's `repo` (multi-repo IMPLs).
   */
  fileExists?: (path: string, repo?: string) => boolean;
  /** Present with a repository: number of lines of a repo-relative file (undefined if unreadable). */
  countLines?: (path: string, repo?: string) => number | undefined;
  /** Restrict per-wave checks (e.g. the V048 LOC budget) to one wave. */
  wave?: number;
}

/**
 * One named protocol rule. `check` returns every finding (never throws, never stops early).
 * `reference` names the protocol rule it implements (E16, I1, MR01…) so `grep` finds it.
 */
export interface ImplRule {
  name: string;
  reference: string;
  codes: readonly string[];
  check(context: ImplRuleContext): Finding[];
}
