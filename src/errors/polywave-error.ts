import type { Finding } from './finding.js';

/** Exit code the CLI uses for an error: 1 = the answer is "no", 2 = bad input or fatal. */
export type ExitCode = 1 | 2;

export interface PolywaveErrorOptions {
  code: string;
  message: string;
  exitCode?: ExitCode;
  findings?: Finding[];
  cause?: unknown;
  /** Extra structured data (shown in JSON error output). */
  details?: Record<string, unknown>;
}

/**
 * The one error family of polywave. Every error a user can cause carries a stable `code`
 * (e.g. `V046_PARSE_ERROR`, `N005_IMPL_NOT_FOUND`) and the exit code the CLI must use.
 * The CLI prints `error[<code>]: <message>` on one line and never a stack trace for these.
 */
export class PolywaveError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  readonly findings: Finding[];
  readonly details: Record<string, unknown>;

  constructor(options: PolywaveErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PolywaveError';
    this.code = options.code;
    this.exitCode = options.exitCode ?? 2;
    this.findings = options.findings ?? [];
    this.details = options.details ?? {};
  }

  /** True when `value` is a PolywaveError (also across module copies). */
  static isInstance(value: unknown): value is PolywaveError {
    return value instanceof Error && (value as { name?: string }).name === 'PolywaveError' && typeof (value as { code?: unknown }).code === 'string';
  }
}
