/**
 * The narrow, typed git port the engine uses (DESIGN §5: one failure policy — every failure
 * throws GitError with args, exit code and stderr; nothing returns `false` for "failed").
 * Questions whose answer is yes/no (is-ancestor, branch exists, check-ignore) return booleans;
 * those are answers, not failures.
 *
 * Implementation: src/git/git-cli.ts (`createGit(repoDir)`), over the git CLI (>= 2.38 for
 * `merge-tree --write-tree`). Every method takes paths relative to the repository unless noted.
 */
export interface WorktreeEntry {
  /** Absolute path of the worktree. */
  path: string;
  /** HEAD commit (40 hex) or '' for an unborn branch. */
  head: string;
  /** Short branch name (`polywave/x/wave1-agent-A`) or undefined when detached. */
  branch?: string;
  bare: boolean;
  detached: boolean;
  locked: boolean;
  /** Why it is locked (`git worktree lock --reason`; git's own `initializing` while a `worktree add` runs, left by a killed add). */
  lockReason?: string;
  prunable: boolean;
}

export interface StatusEntry {
  /** Two-letter porcelain v1 code, e.g. ' M', '??', 'A '. */
  code: string;
  path: string;
  /** Original path for renames. */
  from?: string;
}

export interface MergeTreeResult {
  /** True when the merge would be clean. */
  clean: boolean;
  /** Tree id written by `merge-tree --write-tree` (also on conflict). */
  tree: string;
  /** Paths with conflicts (empty when clean). */
  conflictedPaths: string[];
  /** git's informational messages (CONFLICT lines). */
  messages: string[];
}

export interface CommitOptions {
  message: string;
  /** Extra environment (e.g. POLYWAVE_ALLOW_MAIN_COMMIT=1, author/committer dates). */
  env?: Record<string, string>;
  /** Commit only these paths (`git commit -- paths`). */
  paths?: string[];
  allowEmpty?: boolean;
  /** Skip hooks (`--no-verify`) — only for the orchestrator's own bookkeeping commits. */
  noVerify?: boolean;
}

export interface Git {
  /** The directory commands run in. */
  readonly cwd: string;
  /** Raw access for the rare command without a typed method; throws GitError on failure. */
  run(
    args: readonly string[],
    options?: {
      env?: Record<string, string>;
      input?: string;
      signal?: AbortSignal;
      allowExitCodes?: number[];
      /**
       * Each piece of stdout as git writes it (the result still carries all of it): a caller can start on
       * the first lines of a long answer (also through the spawn helper: its pieces are forwarded as they come).
       */
      onStdout?: (chunk: string) => void;
    },
  ): Promise<{ stdout: string; stderr: string; exitCode: number }>;
  /**
   * The same repository and environment, with `config()` laid over every command as
   * `git -c key=value` (read before each command; on top of this instance's own overrides).
   * Used to pin `core.hooksPath` so that only verified hooks run.
   */
  withConfig(config: () => Readonly<Record<string, string>>): Git;

  version(): Promise<{ major: number; minor: number; patch: number; text: string }>;
  /** Throws G000_GIT_TOO_OLD (exit 2) when git < 2.38; cached per process. */
  assertVersion(): Promise<void>;

  isRepository(): Promise<boolean>;
  topLevel(): Promise<string>;
  gitDir(): Promise<string>;
  commonDir(): Promise<string>;
  revParse(ref: string): Promise<string>;
  /** Resolves a ref to a commit, or undefined when it does not exist (an answer, not a failure). */
  tryRevParse(ref: string): Promise<string | undefined>;
  headCommit(): Promise<string>;
  /** Current branch short name, or undefined when detached. */
  currentBranch(): Promise<string | undefined>;

  /** `status --porcelain=v1 -z --untracked-files=all`; ignored files are never listed. */
  status(): Promise<StatusEntry[]>;
  /** Paths (of those given) that .gitignore rules ignore (`check-ignore --stdin -z`). */
  checkIgnore(paths: readonly string[]): Promise<string[]>;

  worktreeList(): Promise<WorktreeEntry[]>;
  worktreeAdd(options: { path: string; branch: string; base: string; createBranch: boolean }): Promise<void>;
  /** Removes a worktree. Without `force`, git refuses when it has changes (GitError). */
  worktreeRemove(path: string, options?: { force?: boolean }): Promise<void>;
  worktreePrune(): Promise<void>;

  branchExists(branch: string): Promise<boolean>;
  createBranch(branch: string, base: string): Promise<void>;
  /** `branch -d`: git refuses an unmerged branch (GitError). There is deliberately no -D here. */
  deleteMergedBranch(branch: string): Promise<void>;
  listBranches(pattern?: string): Promise<Array<{ name: string; commit: string }>>;

  isAncestor(ancestor: string, descendant: string): Promise<boolean>;
  mergeBase(left: string, right: string): Promise<string | undefined>;
  revListCount(range: string): Promise<number>;
  diffNameOnly(range: string, options?: { paths?: string[] }): Promise<string[]>;
  diffNameStatus(range: string): Promise<Array<{ status: string; path: string; from?: string }>>;
  /** `merge-tree --write-tree` (no working tree touched). */
  mergeTree(base: string | undefined, ours: string, theirs: string): Promise<MergeTreeResult>;
  /** `merge --no-ff --no-edit -m msg branch`; on conflict runs `merge --abort` and throws GitError code G002_MERGE_CONFLICT with the conflicted paths in details. */
  mergeNoFf(branch: string, options: { message: string; env?: Record<string, string> }): Promise<string>;
  mergeAbort(): Promise<void>;
  /** `git show <ref>:<path>`; undefined when the path does not exist at ref. */
  showFile(ref: string, path: string): Promise<string | undefined>;

  add(paths: readonly string[], options?: { force?: boolean }): Promise<void>;
  /** Commits and returns the new commit SHA. */
  commit(options: CommitOptions): Promise<string>;
  checkout(ref: string): Promise<void>;

  /** Effective hooks directory (core.hooksPath honoured, relative to the worktree root when relative). */
  hooksPath(): Promise<string>;
  configGet(key: string): Promise<string | undefined>;
  configSet(key: string, value: string, options?: { worktree?: boolean }): Promise<void>;
}
