import type { Finding } from '../../errors/finding.js';
import type { Locate } from '../parse-impl.js';
import type { ProgramManifest } from '../schema/program-schema.js';
import { runProgramRules } from './program-rules.js';

/** Options of {@link validateProgram}. */
export interface ValidateProgramOptions {
  /** Line/column lookup from `parseProgram`; without it findings carry no positions. */
  locate?: Locate;
  /**
   * The manifest's file name or path. When given, `program_slug` must match
   * `PROGRAM-<slug>.yaml` (V052); when absent that rule is skipped.
   */
  fileName?: string;
}

const noLocation: Locate = () => undefined;

/**
 * Validates a parsed PROGRAM manifest against every rule of program-manifest.txt §15 (Go
 * `ValidateProgram` codes and messages where Go has the rule, reference §7.3; new V051–V056
 * codes for the rules Go lacks). Pure; returns every finding, in rule order then document order,
 * never throws. A manifest is valid when no finding is an error (`isBlocking`).
 */
export function validateProgram(manifest: ProgramManifest, options: ValidateProgramOptions = {}): Finding[] {
  return runProgramRules({ manifest, locate: options.locate ?? noLocation, fileName: options.fileName });
}
