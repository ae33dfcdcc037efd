/**
 * The `agent_clis` command templates of polywave.config.json, for the `cli:<name>` models (outside
 * attack X19: the setting was documented and watched, but nothing read it). A template is a command
 * the orchestrator starts, so it is read exactly like the other watched keys (store/trusted-config.ts):
 * from the repository root's config as COMMITTED — never from the working tree (an agent can write
 * the checkout), never from a nested directory's config — and, while a blocked config change is in
 * effect, from the accepted config; while a wave is finalized, from its base commit (the pins of
 * sandbox/sandbox-settings.ts), as the sandbox settings are.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import { pinnedCommitsOf } from '../sandbox/sandbox-settings.js';
import { configCodes, configuredAgentClis, type AgentCliTemplate } from '../store/project-config.js';
import { loadTrustedConfig, type TrustedConfig } from '../store/trusted-config.js';

/**
 * The `agent_clis` templates for an agent working in `directory` (a worktree or the main checkout):
 * those of its repository's main checkout's committed root config (see the module comment); {} when
 * there is none. Throws `N014_CONFIG_INVALID` (exit 2, one line naming the config and every problem)
 * when that config is not JSON or its `agent_clis` has a problem — no template of it is used half-checked —
 * and the trusted config's own refusals (git cannot read the repository: fail closed).
 */
export async function readAgentCliTemplates(directory: string, env: Readonly<Record<string, string | undefined>>): Promise<Record<string, AgentCliTemplate>> {
  const checkout = await mainCheckoutOf(directory, env);
  const pinned = pinnedCommitsOf(checkout);
  if (pinned.length === 0) return templatesOf(await loadTrustedConfig(checkout));
  // A wave being finalized: its base commits' templates, only those every one of them defines alike.
  const all = await Promise.all(pinned.map(async (commit) => templatesOf(await loadTrustedConfig(checkout, { revision: commit }))));
  const same = (left: AgentCliTemplate | undefined, right: AgentCliTemplate | undefined): boolean => left !== undefined && JSON.stringify(left) === JSON.stringify(right);
  return Object.fromEntries(Object.entries(all[0]!).filter(([name, template]) => all.every((templates) => same(templates[name], template))));
}

function templatesOf(loaded: TrustedConfig): Record<string, AgentCliTemplate> {
  const problems = loaded.findings.filter((finding) => finding.severity === 'fatal' || (finding.severity === 'error' && (finding.field === 'agent_clis' || finding.field?.startsWith('agent_clis.'))));
  if (problems.length > 0) {
    throw new PolywaveError({
      code: configCodes.invalid,
      exitCode: 2,
      message: `${loaded.path ?? 'polywave.config.json'}: ${problems.map((finding) => finding.message).join('; ')} — the cli:<name> models need a valid agent_clis (docs/agent-clis.md); nothing was started`,
      findings: problems,
    });
  }
  return configuredAgentClis(loaded.config);
}

/** The main checkout of the repository `directory` is in (a linked worktree's main one); `directory` itself when git cannot tell. */
async function mainCheckoutOf(directory: string, env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const git = createGit(directory, { env });
  try {
    const commonDir = path.resolve(directory, await git.commonDir());
    // The first entry is the main worktree; a bare repository has none (its agents' own checkouts are read then).
    const main = (await git.worktreeList())[0];
    if (main !== undefined && !main.bare && existsSync(main.path)) return main.path;
    return path.basename(commonDir) === '.git' && existsSync(path.dirname(commonDir)) ? path.dirname(commonDir) : directory;
  } catch {
    // Not a repository (or git cannot read it): the trusted-config reader decides (it fails closed on a broken repository).
    return directory;
  }
}
