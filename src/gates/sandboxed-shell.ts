import { withoutCredentials } from '../sandbox/credential-variables.js';
import { runShellCommand, type ShellCommandOptions, type ShellCommandResult } from './run-command.js';
import { runInGateSandbox } from './run-gate.js';
import { inPlaceOptOut, type CheckoutSet } from './throwaway-checkout.js';

/** Options of {@link runSandboxedShell}: those of `runShellCommand`, plus the sandbox switch. */
export interface SandboxedShellOptions extends ShellCommandOptions {
  /** False: never wrap (`--unsafe-no-sandbox`). Default true: wrap wherever the sandbox can run. */
  sandbox?: boolean;
  /** Throwaway checkouts shared by several commands (see throwaway-checkout.ts); the caller disposes them. */
  checkouts?: CheckoutSet;
}

/** A finished command, and whether it ran in the OS sandbox. */
export interface SandboxedShellResult extends ShellCommandResult {
  sandboxed: boolean;
}

/**
 * Runs a command of the project's own (verify-build's test/lint commands, the scaffold build
 * check) on code agents wrote, the way quality gates run (outside attack X3 #20): inside the OS
 * sandbox with the gate plan (`cwd` and the repository's gate build cache writable, a scratch
 * TMPDIR, `.git` read-only, secrets unreadable, network = the allow-list), and with the
 * environment WITHOUT credentials (model keys, tokens, passwords: `withoutCredentials`) in every
 * case. Sandboxed, it runs in a throwaway checkout of `cwd`'s working tree (throwaway-checkout.ts),
 * so nothing it writes persists in the user's checkout (X3 #18): a checkout that cannot be made
 * is a failed result (GATE_CHECKOUT_UNAVAILABLE), unless POLYWAVE_UNSAFE_GATES_IN_CHECKOUT=1. Where the sandbox cannot run here (or `sandbox: false`), the command runs unsandboxed, as
 * gates do there — still without credentials. A sandbox that is available but cannot start is a
 * failed result (exit -1, `error`), never an unsandboxed run. Never throws.
 */
export async function runSandboxedShell(command: string, options: SandboxedShellOptions): Promise<SandboxedShellResult> {
  const { sandbox, checkouts, ...shell } = options;
  const env = withoutCredentials(options.env ?? process.env);
  // In a throwaway checkout of cwd's working tree: the merged code's writes do not persist (X3 #18).
  const opted = options.env ?? process.env;
  const { cwd, env: _env, ...rest } = shell;
  const sandboxed =
    sandbox === false ? undefined : await runInGateSandbox(command, cwd, { env, throwaway: !inPlaceOptOut(opted), ...(checkouts ? { checkouts } : {}), ...(options.signal ? { signal: options.signal } : {}) }, rest);
  if (sandboxed && 'error' in sandboxed) {
    return { exitCode: -1, signal: null, timedOut: false, canceled: false, durationMs: 0, output: '', outputTruncated: false, error: sandboxed.error, sandboxed: false };
  }
  if (!sandboxed) return { ...(await runShellCommand(command, { ...shell, env })), sandboxed: false };
  return { ...sandboxed.run, sandboxed: true };
}
