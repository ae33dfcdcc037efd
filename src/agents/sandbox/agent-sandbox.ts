/**
 * Builds an agent's sandbox plan from the repository itself: the common git dir and every other
 * worktree (`git worktree list`), the main checkout's `.env*` files, and the `sandbox` section of
 * polywave.config.json (network allow-list, extra writable caches).
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { agentSandboxPlan, type SandboxPlan, type SandboxSettings } from '../../sandbox/sandbox-plan.js';
import { readSandboxSettings } from '../../sandbox/sandbox-settings.js';

/** `.env`, `.env.local`, … directly in `directory` (secrets by convention). */
async function envFilesOf(directory: string): Promise<string[]> {
  try {
    return (await readdir(directory)).filter((name) => name === '.env' || name.startsWith('.env.')).map((name) => path.join(directory, name));
  } catch {
    return [];
  }
}

/** Input of {@link buildAgentSandboxPlan}. */
export interface BuildAgentSandboxPlanInput {
  /** The agent's root (realpath). */
  root: string;
  home: string;
  tmp: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Files inside root that stay read-only (the IMPL manifest of a solo agent). */
  readOnly?: readonly string[];
  /** Settings to use instead of polywave.config.json's. */
  settings?: SandboxSettings;
  /** The user's home (default: os.homedir()). */
  userHome?: string;
  /** Hide the main checkout's untracked secret-named files even when the root IS the checkout (the Scout and critic read code, never `.env`). */
  hideCheckoutSecrets?: boolean;
}

/** The agent's {@link SandboxPlan}, with the repository facts read from git. */
export async function buildAgentSandboxPlan(input: BuildAgentSandboxPlanInput): Promise<SandboxPlan> {
  const git = createGit(input.root, { env: input.env });
  let gitCommonDir = path.join(input.root, '.git');
  let mainCheckout = input.root;
  let otherWorktrees: string[] = [];
  try {
    gitCommonDir = path.resolve(input.root, await git.commonDir());
    const worktrees = await git.worktreeList();
    mainCheckout = worktrees.find((entry) => !entry.bare)?.path ?? path.dirname(gitCommonDir);
    // A prunable entry (its directory is gone) has nothing to hide.
    otherWorktrees = worktrees.filter((entry) => !entry.prunable && existsSync(entry.path)).map((entry) => entry.path).filter((entry) => entry !== input.root && entry !== mainCheckout);
  } catch {
    // not a git repository: only the root itself (its .git read-only if it appears)
  }
  const settings = input.settings ?? (await readSandboxSettings(mainCheckout));
  return agentSandboxPlan({
    root: input.root,
    home: input.home,
    tmp: input.tmp,
    gitCommonDir,
    otherWorktrees,
    config: settings,
    mainCheckout,
    mainCheckoutEnvFiles: await envFilesOf(mainCheckout),
    ...(input.readOnly ? { readOnly: input.readOnly } : {}),
    ...(input.userHome ? { userHome: input.userHome } : {}),
    ...(input.hideCheckoutSecrets ? { hideCheckoutSecrets: true } : {}),
    env: input.env,
  });
}
