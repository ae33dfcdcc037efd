/**
 * Stable error codes. Where a protocol text names a code we use that name; otherwise the Go
 * `polywave-tools` registry code so tools that know Go codes keep working (DESIGN §4).
 * Codes are plain strings in findings; this table documents the ones we emit.
 */
export const codes = {
  // Input / file errors (exit 2)
  fileNotFound: 'N005_IMPL_NOT_FOUND',
  fileUnreadable: 'X002_FILE_READ',
  notAFile: 'X002_FILE_READ',
  fileTooLarge: 'RESOURCE_EXHAUSTION',
  binaryInput: 'V046_PARSE_ERROR',
  invalidEncoding: 'V046_PARSE_ERROR',
  parseError: 'V046_PARSE_ERROR',
  nestingTooDeep: 'RESOURCE_EXHAUSTION',
  aliasBomb: 'RESOURCE_EXHAUSTION',
  invalidInput: 'X001_INVALID_INPUT',
  manifestInvalid: 'V001_MANIFEST_INVALID',
  lockTimeout: 'N094_MANIFEST_SAVE_FAILED',
  saveFailed: 'N094_MANIFEST_SAVE_FAILED',
  /** The OS sandbox for agents cannot start (bubblewrap/socat/ripgrep missing, unsupported OS). */
  sandboxUnavailable: 'SANDBOX_UNAVAILABLE',
  // Validation
  duplicateKey: 'E16_DUPLICATE_KEY',
  unknownKey: 'V013_UNKNOWN_KEY',
  invalidType: 'V036_INVALID_TYPE',
  /** MR02: a gate without `repo:` in a multi-repo IMPL (Go renamed MR02_UNSCOPED_GATE to V040; issue 13). */
  unscopedGate: 'V040_UNSCOPED_GATE',
  // MR01: mixed repo tags in file_ownership (Go's code since its rename; MR01_INCONSISTENT_REPO is the old name)
  inconsistentRepo: 'V020_INCONSISTENT_REPO',
  // Issue 11: the repository changed since prepare-wave recorded it (finalize-wave refuses, exit 1)
  tamperDetected: 'TAMPER_DETECTED',
  // Issue 13: prepare-wave/run-wave on a wave that is already merged and verified (exit 1, nothing changed; --rerun overrides)
  waveAlreadyVerified: 'WAVE_ALREADY_VERIFIED',
  // Issue 13 (F1): every agent of the wave reported complete but its commits are not in the target (never finalized); prepare-wave/close-impl refuse, exit 1
  waveNotMerged: 'WAVE_NOT_MERGED',
} as const;

/**
 * Old code names we no longer emit, and the code each became. Wherever a code is read (a list of
 * codes to suppress or expect, a script matching on a code), the old name must keep working:
 * compare through {@link canonicalCode}.
 */
export const legacyCodeAliases: Readonly<Record<string, string>> = Object.freeze({
  MR02_UNSCOPED_GATE: codes.unscopedGate,
  MR01_INCONSISTENT_REPO: codes.inconsistentRepo,
});

/** The code emitted today for `code` (an old name → its new one; anything else unchanged). */
export function canonicalCode(code: string): string {
  const trimmed = code.trim();
  return Object.hasOwn(legacyCodeAliases, trimmed) ? legacyCodeAliases[trimmed]! : trimmed;
}

/** True when `code` names the same finding as `wanted` (either may be an old name). */
export function sameCode(code: string, wanted: string): boolean {
  return canonicalCode(code) === canonicalCode(wanted);
}
