/**
 * Builds an agent's sandbox plan from the repository itself: the common git dir and every other
 * worktree (`git worktree list`), the main checkout's `.env*` files, and the `sandbox` section of
 * polywave.config.json (network allow-list, extra writable caches).
 */
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { WorktreeEntry } from '../../git/git-port.js';
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

/**
 * The common git directory of a linked worktree, read as git itself finds it (the worktree's `.git` file
 * names its git directory, whose `commondir` names the common one) — no `git rev-parse` per agent (a wave's
 * agents each build a plan; a git process costs the orchestrator a fork). Undefined for anything else (a
 * main checkout, a subdirectory, an unreadable pointer): then git is asked.
 */
export function linkedWorktreeCommonDir(root: string): string | undefined {
  try {
    const dotGit = path.join(root, '.git');
    if (!lstatSync(dotGit).isFile()) return undefined;
    const pointer = /^gitdir: *(.+?)[ \t\r]*$/m.exec(readFileSync(dotGit, 'utf8'));
    if (!pointer) return undefined;
    const gitDir = path.resolve(root, pointer[1]!);
    const common = readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim();
    if (common === '') return undefined;
    return realpathSync(path.resolve(gitDir, common));
  } catch {
    return undefined;
  }
}

/**
 * What `git worktree list` depends on here: the entries of `<common dir>/worktrees/` and the worktree path
 * each one's `gitdir` file names (a worktree added, removed or moved changes it; a timestamp would not do:
 * two adds within one clock tick leave the directory's mtime as it was).
 */
function worktreesStamp(commonDir: string): string {
  const dir = path.join(commonDir, 'worktrees');
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return '';
  }
  return names.map((name) => {
    let pointer = '';
    try {
      pointer = readFileSync(path.join(dir, name, 'gitdir'), 'utf8');
    } catch {
      // none: git lists it as prunable
    }
    return `${name}\0${pointer}`;
  }).join('\0\0');
}
const worktreeListCache = new Map<string, { stamp: string; at: number; list: Promise<WorktreeEntry[]> }>();

/**
 * `git worktree list` of the repository, asked once per change of {@link worktreesStamp}: a wave's agents,
 * which build their plans at the same moment, share one answer (the one being asked, too).
 */
function worktreeListOf(git: ReturnType<typeof createGit>, commonDir: string): Promise<WorktreeEntry[]> {
  const stamp = worktreesStamp(commonDir);
  const cached = worktreeListCache.get(commonDir);
  if (cached && cached.stamp === stamp && Date.now() - cached.at < 10_000) return cached.list;
  const list = git.worktreeList();
  if (worktreeListCache.size > 32) worktreeListCache.clear();
  const entry = { stamp, at: Date.now(), list };
  worktreeListCache.set(commonDir, entry);
  // Kept only when it succeeded and the worktrees did not change while git listed them.
  list.then(
    () => {
      if (worktreesStamp(commonDir) !== stamp && worktreeListCache.get(commonDir) === entry) worktreeListCache.delete(commonDir);
    },
    () => {
      if (worktreeListCache.get(commonDir) === entry) worktreeListCache.delete(commonDir);
    },
  );
  return list;
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
  /** Directories around the root hidden whole but for the root and the git directory (a dispatch worker's `--dir`: see AgentSandboxPlanInput.hiddenAround). */
  hiddenAround?: readonly string[];
}

/** The agent's {@link SandboxPlan}, with the repository facts read from git. */
export async function buildAgentSandboxPlan(input: BuildAgentSandboxPlanInput): Promise<SandboxPlan> {
  const git = createGit(input.root, { env: input.env });
  let gitCommonDir = path.join(input.root, '.git');
  let mainCheckout = input.root;
  let otherWorktrees: string[] = [];
  try {
    gitCommonDir = linkedWorktreeCommonDir(input.root) ?? path.resolve(input.root, await git.commonDir());
    const worktrees = await worktreeListOf(git, gitCommonDir);
    // A bare repository's worktrees (a dispatch worker's clone) have no main checkout: not another job's
    // worktree (whose HEAD is that agent's branch — the sandbox settings would be read from it), the agent's own.
    mainCheckout = worktrees[0]?.bare ? input.root : (worktrees.find((entry) => !entry.bare)?.path ?? path.dirname(gitCommonDir));
    // A prunable entry (its directory is gone) has nothing to hide. A bare repository's own entry is
    // its git directory, not a worktree: hidden, no git command worked in the agent's worktree (a
    // worker's bare clone: X23-07's functional note) — it stays read-only, its config masked, as a `.git` does.
    otherWorktrees = worktrees.filter((entry) => !entry.prunable && !entry.bare && existsSync(entry.path)).map((entry) => entry.path).filter((entry) => entry !== input.root && entry !== mainCheckout);
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
    ...(input.hiddenAround && input.hiddenAround.length > 0 ? { hiddenAround: input.hiddenAround } : {}),
    env: input.env,
  });
}
