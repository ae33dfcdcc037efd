/**
 * What one sandboxed process may touch (DESIGN §3.1): the plan is data, built once per agent
 * (or per gate) and handed to {@link wrapInSandbox} for every command. Paths are absolute.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { foreignScratchDirs } from './scratch-dirs.js';

/** The boundary the OS enforces for one agent or gate. */
export interface SandboxPlan {
  /** Directories (or files) the process may write: the worktree, a private HOME and TMPDIR, caches. */
  writable: string[];
  /** Paths inside a writable one that stay read-only (the worktree's `.git` file, a main checkout's `.git` directory). */
  readOnlyWithin: string[];
  /** Paths that cannot be read at all (other worktrees, secrets). */
  unreadable: string[];
  /** Hosts the process may reach through the sandbox's proxy (`registry.npmjs.org`, `*.example.com`); empty = no network. */
  allowedHosts: string[];
}

/** The `sandbox` section of polywave.config.json (see store/project-config.ts). */
export interface SandboxSettings {
  network?: { allow?: readonly string[] };
  /** Extra writable directories (shared caches such as `~/.npm`), `~/` expanded with the user's home. */
  writable?: readonly string[];
}

/** Files of the user's home an agent must never read (credentials of git hosts, clouds, registries). */
export const homeSecrets: readonly string[] = Object.freeze([
  '.ssh',
  '.aws',
  '.config/gcloud',
  '.azure',
  '.docker',
  '.kube',
  '.gnupg',
  '.netrc',
  '.git-credentials',
  '.npmrc',
  '.pypirc',
  '.config/gh',
  '.config/hub',
  '.claude',
  '.claude.json',
  '.codex',
  // More credential stores (outside attack X4 read each of these from agent bash and gates)
  '.config/git/credentials',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.pgpass',
  '.my.cnf',
  '.vault-token',
  '.terraform.d/credentials.tfrc.json',
  '.cache/huggingface/token',
  '.huggingface/token',
  '.yarnrc.yml',
  '.gem/credentials',
  '.m2/settings.xml',
  '.gradle/gradle.properties',
  '.composer/auth.json',
  '.config/composer/auth.json',
  '.config/op',
  '.password-store',
  '.local/share/keyrings',
  // shell and client histories (commands typed with tokens in them)
  '.bash_history',
  '.zsh_history',
  '.python_history',
  '.psql_history',
  '.mysql_history',
  '.node_repl_history',
  '.local/share/fish/fish_history',
  // sandbox-runtime makes this writable for every command unless a read rule names it
  '.npm/_logs',
]);

function expandHome(entry: string, userHome: string): string {
  if (entry === '~') return userHome;
  if (entry.startsWith('~/')) return path.join(userHome, entry.slice(2));
  return path.resolve(entry);
}

function unique(paths: Iterable<string>): string[] {
  return [...new Set(paths)];
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * The directories of polywave's per-user Unix sockets — the resident server's (src/cli/resident-server.ts:
 * `$XDG_RUNTIME_DIR/polywave/`, else `<tmp>/polywave-<uid>/`). That server runs outside every sandbox with
 * its caller's cwd and environment, so an agent or a gate must not even see its socket: unreadable in
 * both plans (defence in depth beside sandbox-runtime's seccomp filter, which refuses socket(AF_UNIX);
 * outside attack, 2026-12-02). A POLYWAVE_RESIDENT_SOCKET elsewhere is the user's choice and not hidden.
 */
export function residentSocketDirs(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  const tmp = (env.TMPDIR || env.TMP || env.TEMP || '/tmp').replace(/(.)\/+$/, '$1');
  return unique([path.join(tmp, `polywave-${uid}`), path.join('/tmp', `polywave-${uid}`), ...(env.XDG_RUNTIME_DIR ? [path.join(env.XDG_RUNTIME_DIR, 'polywave')] : [])]);
}

/** Input of {@link agentSandboxPlan}. */
export interface AgentSandboxPlanInput {
  /** The agent's working directory (its worktree, or the main checkout for solo/integration agents). */
  root: string;
  /** The agent's private HOME (language caches live under it). */
  home: string;
  /** The agent's private TMPDIR. */
  tmp: string;
  /** The repository's common git directory (`git rev-parse --git-common-dir`, absolute). */
  gitCommonDir: string;
  /** Every other linked worktree of the repository (not the main checkout, not `root`). */
  otherWorktrees: readonly string[];
  /** `sandbox` of polywave.config.json. */
  config?: SandboxSettings;
  /** The user's real home, for the secrets list (default: os.homedir()). */
  userHome?: string;
  /** The main checkout (default: the parent of `gitCommonDir`); its `.env*` files are unreadable. */
  mainCheckout?: string;
  /** `.env*` file names of the main checkout, already listed by the caller (absolute or relative to it). */
  mainCheckoutEnvFiles?: readonly string[];
  /** Extra paths inside `root` that stay read-only (e.g. the IMPL manifest when root is the main checkout). */
  readOnly?: readonly string[];
  /** The orchestrator's environment: its TMPDIR / XDG_RUNTIME_DIR place the resident socket (hidden; so is this process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Scratch directories of other agents and gates, unreadable (default: {@link foreignScratchDirs}, the
   * scratch parent and older versions' scratch directories); the agent's own HOME/TMPDIR inside them stay
   * readable and writable (bound back over the denied parent).
   */
  scratchDirs?: readonly string[];
}

/** Denied scratch paths, except one that is or contains a path the plan writes as its working directory. */
function scratchDenials(scratchDirs: readonly string[], root: string): string[] {
  return scratchDirs.map((entry) => path.resolve(entry)).filter((entry) => !isInside(root, entry));
}

/**
 * The plan for an agent: writable = its root + private HOME + TMPDIR (+ `sandbox.writable`);
 * read-only within: `<root>/.git` (and the common git dir when it lies inside root, i.e. an agent
 * working in the main checkout); unreadable: every other worktree, the user's credentials, the
 * main checkout's `.env*` files (unless they are the agent's own root) and the scratch directories of
 * other agents and gates, present and future (outside attack #12); network: `sandbox.network.allow`.
 */
export function agentSandboxPlan(input: AgentSandboxPlanInput): SandboxPlan {
  const userHome = input.userHome ?? os.homedir();
  const root = path.resolve(input.root);
  const mainCheckout = path.resolve(input.mainCheckout ?? path.dirname(input.gitCommonDir));
  const writable = unique([root, path.resolve(input.home), path.resolve(input.tmp), ...(input.config?.writable ?? []).map((entry) => expandHome(entry, userHome))]);
  const readOnlyWithin = unique([
    path.join(root, '.git'),
    ...(writable.some((entry) => isInside(path.resolve(input.gitCommonDir), entry)) ? [path.resolve(input.gitCommonDir)] : []),
    ...(input.readOnly ?? []).map((entry) => path.resolve(root, entry)),
  ]);
  const envFiles = root === mainCheckout ? [] : (input.mainCheckoutEnvFiles ?? []).map((entry) => path.resolve(mainCheckout, entry));
  const unreadable = unique([
    ...input.otherWorktrees.map((entry) => path.resolve(entry)).filter((entry) => entry !== root && !isInside(root, entry)),
    ...homeSecrets.map((entry) => path.join(userHome, entry)),
    ...envFiles,
    ...scratchDenials(input.scratchDirs ?? foreignScratchDirs(input.env), root),
    ...residentSocketDirs(),
    ...(input.env ? residentSocketDirs(input.env) : []),
  ]);
  return { writable, readOnlyWithin, unreadable, allowedHosts: unique(input.config?.network?.allow ?? []) };
}

/** Input of {@link gatePlan}. */
export interface GatePlanInput {
  /** The directory the gate runs in (a worktree or the main checkout). */
  directory: string;
  /** A private TMPDIR for the gate. */
  tmp: string;
  /** The repository's common git directory, read-only when it lies inside `directory`. */
  gitCommonDir?: string;
  /**
   * Build caches the gate may write: the repository's gate build cache (src/gates/build-cache.ts),
   * never the user's own caches, which run outside any sandbox later (outside attack #13). Default: none.
   */
  caches?: readonly string[];
  config?: SandboxSettings;
  userHome?: string;
  /** The environment the gate runs with: its TMPDIR / XDG_RUNTIME_DIR place the resident socket (hidden; so is this process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Scratch directories of agents and other gates, unreadable (default: {@link foreignScratchDirs}). */
  scratchDirs?: readonly string[];
  /**
   * `directory` is one of polywave's own scratch directories (a throwaway checkout, src/gates/
   * throwaway-checkout.ts): every scratch directory stays unreadable, the one containing `directory`
   * included — `directory` itself is bound back writable over it, as the gate's TMPDIR is.
   */
  directoryIsScratch?: boolean;
}

/**
 * The user's own build caches (npm, pnpm, yarn, Go, Cargo, pip, the XDG cache…). Gates used to write
 * them; they are read-only in a gate's sandbox now, because what a gate writes there runs later outside
 * any sandbox (corepack's shims, `npx`, Go's build cache, a cargo build script…).
 */
export function defaultBuildCaches(userHome: string = os.homedir()): string[] {
  return ['.npm', '.cache', '.cargo/registry', '.cargo/git', 'go/pkg/mod', '.local/share/pnpm', '.yarn', '.bun/install/cache', '.gradle/caches', '.m2/repository'].map((entry) =>
    path.join(userHome, entry),
  );
}

/**
 * `<directory>/polywave.config.json` when it exists: the sandbox settings every later gate and agent
 * of the repository is planned with (outside attack X4: merged test code run by verify-build, and a
 * solo-wave agent, wrote `sandbox.writable: ["~"]` there for the next run). Read-only while it
 * exists; a missing one is not held (a placeholder would sit in the checkout while the command runs).
 */
export function configFilesOf(directory: string): string[] {
  const file = path.join(directory, 'polywave.config.json');
  return existsSync(file) ? [file] : [];
}

/**
 * The plan for a quality gate: its directory, TMPDIR and `caches` (the repository's gate build cache)
 * writable, `<dir>/.git` (and the common git dir inside it) read-only, secrets and the scratch
 * directories of agents and other gates unreadable, network = `sandbox.network.allow`.
 */
export function gatePlan(input: GatePlanInput): SandboxPlan {
  const userHome = input.userHome ?? os.homedir();
  const directory = path.resolve(input.directory);
  const writable = unique([directory, path.resolve(input.tmp), ...(input.caches ?? []).map((entry) => path.resolve(entry)), ...(input.config?.writable ?? []).map((entry) => expandHome(entry, userHome))]);
  const gitCommonDir = input.gitCommonDir !== undefined ? path.resolve(input.gitCommonDir) : undefined;
  const readOnlyWithin = unique([
    path.join(directory, '.git'),
    ...(gitCommonDir !== undefined && isInside(gitCommonDir, directory) ? [gitCommonDir] : []),
    ...configFilesOf(directory),
  ]);
  const unreadable = unique([
    ...homeSecrets.map((entry) => path.join(userHome, entry)),
    ...(input.directoryIsScratch === true ? (input.scratchDirs ?? foreignScratchDirs(input.env)).map((entry) => path.resolve(entry)) : scratchDenials(input.scratchDirs ?? foreignScratchDirs(input.env), directory)),
    ...residentSocketDirs(),
    ...(input.env ? residentSocketDirs(input.env) : []),
  ]);
  return { writable, readOnlyWithin, unreadable, allowedHosts: unique(input.config?.network?.allow ?? []) };
}
