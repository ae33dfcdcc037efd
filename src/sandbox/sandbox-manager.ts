/**
 * The one sandbox-runtime session of this process. `initialize` starts the network proxy (on the
 * host; the sandbox reaches it through a socket bridge) with an empty allow-list: per-command
 * allow-lists are registered under an unguessable id for each wrapped command.
 *
 * The session holds a child process (the socket bridge) that keeps Node's event loop alive, so it
 * is leased: every user (a wrapped command until its process exits, an agent run, a gate) holds a
 * lease, and shortly after the last one is released the session is reset and the process can exit.
 */
import type { SandboxManager as Manager } from '@anthropic-ai/sandbox-runtime';

/** How long an unused session stays up (a new lease within it reuses the session). */
const idleResetMs = 250;

let session: Promise<typeof Manager> | undefined;
let generation = 0;
let leases = 0;
let idleTimer: NodeJS.Timeout | undefined;

function startSession(): Promise<typeof Manager> {
  session ??= (async () => {
    const { SandboxManager } = await import('@anthropic-ai/sandbox-runtime');
    await SandboxManager.initialize({ network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowWrite: [], denyWrite: [] } });
    return SandboxManager;
  })();
  const started = session;
  started.catch(() => {
    if (session === started) session = undefined;
  });
  return started;
}

/** A lease on the session: the manager, and `release` (idempotent) when the user is done. */
export interface SandboxLease {
  manager: typeof Manager;
  release(): void;
}

/** Initializes sandbox-runtime when needed (~150 ms once) and leases it. */
export async function leaseSandboxManager(): Promise<SandboxLease> {
  leases += 1;
  if (idleTimer !== undefined) {
    clearTimeout(idleTimer);
    idleTimer = undefined;
  }
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    leases -= 1;
    if (leases > 0) return;
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      if (leases === 0) void resetSandboxManager();
    }, idleResetMs);
    idleTimer.unref();
  };
  try {
    return { manager: await startSession(), release };
  } catch (error) {
    release();
    throw error;
  }
}

/** Changes whenever the session is reset: what was built for an older session (wrappers) is stale. */
export function sandboxSessionGeneration(): number {
  return generation;
}

/** Stops the proxy and the bridge and forgets the session (tests; the idle reset). */
export async function resetSandboxManager(): Promise<void> {
  const current = session;
  session = undefined;
  generation += 1;
  if (!current) return;
  try {
    const manager = await current;
    await manager.reset();
  } catch {
    // never started
  }
}
