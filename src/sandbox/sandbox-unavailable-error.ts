/**
 * SANDBOX_UNAVAILABLE: a model-backed agent was asked to run but the OS sandbox cannot start here.
 */
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import type { SandboxStatus } from './sandbox-status.js';

/** The Debian/Ubuntu install line for the sandbox's Linux dependencies. */
export const sandboxInstallHint = 'apt-get install bubblewrap socat ripgrep';

/** The one-line message for an unavailable sandbox: what is missing and how to install it. */
export function sandboxUnavailableMessage(status: SandboxStatus): string {
  const install =
    status.missing.length > 0
      ? `install ${status.missing.join(', ')} (Debian/Ubuntu: apt-get install ${status.missing.join(' ')})`
      : `on Linux install the sandbox's packages (Debian/Ubuntu: ${sandboxInstallHint})`;
  return `the OS sandbox for agents is unavailable (${status.detail}); ${install}, or pass --unsafe-no-sandbox to run agents with the static checks only`;
}

/** Thrown (exit 2) when a model-backed agent would run without the sandbox and the caller did not opt out. */
export function sandboxUnavailableError(status: SandboxStatus): PolywaveError {
  return new PolywaveError({
    code: codes.sandboxUnavailable,
    message: sandboxUnavailableMessage(status),
    exitCode: 2,
    details: { mechanism: status.mechanism, missing: status.missing, detail: status.detail },
  });
}
