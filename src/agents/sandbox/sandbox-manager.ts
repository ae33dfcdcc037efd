/**
 * The one sandbox-runtime session of this process. `initialize` starts the network proxy (on the
 * host; the sandbox reaches it through a socket) with an empty allow-list: per-command allow-lists
 * are registered under an unguessable id for each wrapped command.
 */
import type { SandboxManager as Manager } from '@anthropic-ai/sandbox-runtime';

let session: Promise<typeof Manager> | undefined;

/** Initializes sandbox-runtime once per process (~150 ms) and returns its manager. */
export function ensureSandboxManager(): Promise<typeof Manager> {
  session ??= (async () => {
    const { SandboxManager } = await import('@anthropic-ai/sandbox-runtime');
    await SandboxManager.initialize({ network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowWrite: [], denyWrite: [] } });
    return SandboxManager;
  })();
  session.catch(() => {
    session = undefined;
  });
  return session;
}

/** Stops the proxy and forgets the session (tests, end of a CLI command). */
export async function resetSandboxManager(): Promise<void> {
  const current = session;
  session = undefined;
  if (!current) return;
  try {
    const manager = await current;
    await manager.reset();
  } catch {
    // never started
  }
}
