/**
 * The worktree jail (fails closed): every path a tool touches is resolved with realpath against
 * the agent's root (symlinks, `..`, absolute paths, `~`, env-var paths) and writes are allowed
 * only to owned files; bash commands are checked before they run and audited after.
 */

/** What an agent may touch. Paths are repository-relative POSIX paths. */
export interface JailPolicy {
  /** The agent's worktree (or repository root for solo/integration agents). Resolved with realpath by createJail. */
  root: string;
  /** Files the agent may create, modify or delete (I1 ownership, exact paths). */
  ownedFiles: readonly string[];
  /** Extra writable locations: a directory prefix ending in `/`, or an exact file (role paths, I6; e.g. scout → `docs/IMPL/`). */
  writablePrefixes?: readonly string[];
  /** Frozen paths (I2: scaffolds, contract files once worktrees exist); never writable even if owned. */
  frozenPaths?: readonly string[];
  /** No writes at all (critic, planner…); reads and confined bash remain. */
  readOnly?: boolean;
  /** The branch HEAD must stay on; commits anywhere else are refused (wave agents). */
  branch?: string;
  /** Absolute paths outside root that may be read (e.g. the IMPL manifest in the main checkout). Never writable. */
  readablePaths?: readonly string[];
  /**
   * Repository-relative files the orchestrator itself writes while the agent runs (the IMPL
   * manifest when a solo or integration agent works in the main checkout): never the agent's
   * change, so the audit ignores them; the agent still may not write them.
   */
  orchestratorPaths?: readonly string[];
}

/** Stable jail denial codes. */
export type JailCode =
  | 'JAIL_OUTSIDE_ROOT' // path resolves outside the root (.., absolute, symlink, ~, $VAR)
  | 'JAIL_NOT_OWNED' // write to a file the agent does not own (I1)
  | 'JAIL_FROZEN' // write to a frozen path (I2)
  | 'JAIL_READ_ONLY' // any write by a read-only role
  | 'JAIL_GIT_INTERNALS' // .git/ (or the .git file of a worktree)
  | 'JAIL_BASH_ESCAPE' // bash leaves the root (cd /, cd .., absolute or $VAR paths outside)
  | 'JAIL_BASH_FORBIDDEN_GIT' // git stash/checkout/switch/push/rebase/merge/reset --hard/worktree/-C/--git-dir/branch moves
  | 'JAIL_BASH_UNSAFE' // constructs the checker cannot prove safe (eval, sudo, backticks with paths…) — fail closed
  | 'JAIL_BRANCH_MOVED' // audit: HEAD left the agent branch or commits landed elsewhere
  | 'JAIL_UNOWNED_CHANGE'; // audit: a file outside ownership changed on disk (after bash or at stop)

/** A refusal names `target` (the root-relative path it refused to write) when it knows it: a bash redirection included (outside attack X6, N9). */
export type JailDecision = { allowed: true } | { allowed: false; code: JailCode; reason: string; target?: string };

/** A resolved path inside the root. */
export interface JailedPath {
  /** Absolute path (symlinks of existing ancestors resolved). */
  absolute: string;
  /** Repository-relative POSIX path ('' for the root itself). */
  relative: string;
}

export type PathDecision = ({ allowed: true } & JailedPath) | { allowed: false; code: JailCode; reason: string; target?: string };

/** Result of an after-the-fact audit of the root (after a bash call, at stop, or for CLI agents). */
export interface JailAudit {
  ok: boolean;
  /** Each violation, with its path when there is one. */
  violations: Array<{ code: JailCode; reason: string; path?: string }>;
  /** Repository-relative files changed relative to `baseCommit` (committed + uncommitted + untracked). */
  changedFiles: string[];
  /** The uncommitted part (staged, unstaged, untracked), same filtering. */
  uncommittedFiles: string[];
  /** HEAD when the audit ran (undefined on an unborn branch or when git failed). */
  head?: string;
}

export interface Jail {
  readonly policy: Readonly<JailPolicy>;
  /** realpath of policy.root. */
  readonly root: string;
  /** A path a tool wants to read (relative to root, or absolute). */
  checkRead(requestedPath: string): Promise<PathDecision>;
  /** A path a tool wants to create, modify or delete. */
  checkWrite(requestedPath: string): Promise<PathDecision>;
  /** A shell command, before it runs (static check, fails closed; the bash parser loads on the first call). */
  checkBash(command: string): Promise<JailDecision>;
  /**
   * A Claude Code tool call (PreToolUse): Write/Edit/MultiEdit/NotebookEdit (file_path / notebook_path),
   * Read/Glob/Grep/LS (file_path / path), Bash (command); Task/Agent (subagents) denied for wave agents;
   * unknown tools that carry a path are checked as writes (fail closed).
   */
  checkToolUse(tool: string, input: Record<string, unknown>): Promise<JailDecision>;
  /**
   * Audits the root with git: changed files vs `baseCommit` (committed, staged, unstaged, untracked,
   * ignoring the agent files prepare-wave writes and `.polywave-state/`) must be owned/writable,
   * and HEAD must still be on `policy.branch`.
   */
  audit(options?: { baseCommit?: string }): Promise<JailAudit>;
}
