/**
 * Wraps a shell command so that it runs inside the OS sandbox with a {@link SandboxPlan}: the
 * result is a file, its arguments and the environment to spawn it with (the caller keeps its own
 * process handling: process group, timeout, output cap).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { SandboxPlan } from './sandbox-plan.js';
import { leaseSandboxManager } from './sandbox-manager.js';
import { sandboxStatus } from './sandbox-status.js';
import { sandboxUnavailableError } from './sandbox-unavailable-error.js';

/**
 * sandbox-runtime's own temp directories: it points TMPDIR there and keeps them writable for every
 * command of every sandbox, a channel between agents when the directory exists on the host.
 */
const runtimeSharedTemp = ['/tmp/claude', '/private/tmp/claude'];

/** Single-quotes `value` for bash. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A command ready to spawn inside the sandbox. */
export interface SandboxedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /**
   * Call it when the process has exited (calling it twice is harmless): forgets the command's
   * network allow-list (registered with the host proxy under an unguessable id) and releases the
   * command's lease on the sandbox session — a session nobody leases is stopped shortly after,
   * so that the Node process can exit.
   */
  release(): void;
}

/** Options of {@link wrapInSandbox}. */
export interface WrapInSandboxOptions {
  /** Working directory the caller will spawn the result in. */
  cwd: string;
  /** The environment the command sees (the sandbox adds its proxy variables). */
  env: Record<string, string>;
  signal?: AbortSignal;
}

/**
 * Builds the sandboxed form of `command` (run by bash): writes outside `plan.writable` fail
 * (read-only file system), `plan.readOnlyWithin` stays read-only, `plan.unreadable` cannot be read,
 * the network is a separate namespace whose only way out is the host proxy allowing
 * `plan.allowedHosts`, and the process tree dies with the sandbox (PID namespace).
 * Throws SANDBOX_UNAVAILABLE when the sandbox cannot run here.
 */
export async function wrapInSandbox(plan: SandboxPlan, command: string, options: WrapInSandboxOptions): Promise<SandboxedCommand> {
  const status = await sandboxStatus({ env: options.env });
  if (!status.available) throw sandboxUnavailableError(status);
  const lease = await leaseSandboxManager();
  const manager = lease.manager;
  const commandId = randomBytes(18).toString('base64url');
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    manager.unregisterCommandNetworkLists(commandId);
    lease.release();
  };
  if (plan.allowedHosts.length > 0) manager.registerCommandNetworkLists(commandId, { allowedDomains: [...plan.allowedHosts] });
  // sandbox-runtime sets TMPDIR to its shared /tmp/claude; the plan's private TMPDIR wins.
  const tmpdir = options.env.TMPDIR;
  const inner = tmpdir !== undefined && tmpdir !== '' ? `export TMPDIR=${shellQuote(tmpdir)}; ${command}` : command;
  const sharedTemp = runtimeSharedTemp.filter((entry) => existsSync(entry));
  try {
    const { argv } = await manager.wrapWithSandboxArgv(
      inner,
      'bash',
      {
        filesystem: { allowWrite: [...plan.writable], denyWrite: [...plan.readOnlyWithin, ...sharedTemp], denyRead: [...plan.unreadable] },
        network: { allowedDomains: [], deniedDomains: [] },
      },
      options.signal,
      options.cwd,
      { commandId, commandText: command },
    );
    const [file, ...args] = argv;
    if (file === undefined) throw new Error('sandbox-runtime returned an empty command');
    return { file, args, env: { ...options.env }, release };
  } catch (error) {
    release();
    throw error;
  }
}
