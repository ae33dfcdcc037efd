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
  // Issue 11: the repository changed since prepare-wave recorded it (finalize-wave refuses, exit 1)
  tamperDetected: 'TAMPER_DETECTED',
  // Issue 13: prepare-wave/run-wave on a wave that is already merged and verified (exit 1, nothing changed; --rerun overrides)
  waveAlreadyVerified: 'WAVE_ALREADY_VERIFIED',
} as const;
