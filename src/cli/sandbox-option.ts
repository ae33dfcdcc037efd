/**
 * `--unsafe-no-sandbox` (issue 11), shared by the commands that launch agents: true when given,
 * after one loud warning line on stderr.
 */
import type { CommandIo } from './io.js';

export function unsafeNoSandboxFrom(options: Record<string, unknown>, io: CommandIo): boolean {
  if (options.unsafeNoSandbox !== true) return false;
  io.stderr(
    'polywave: WARNING: --unsafe-no-sandbox: agents run WITHOUT the OS sandbox (on a worker, quality gates too) — only the static checks confine agents; anything an agent or gate runs (computed paths, scripts, background jobs) can write outside its worktree, read your secrets and use the network\n',
  );
  return true;
}
