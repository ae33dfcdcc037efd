import { execFile } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { GitError } from './git-error.js';
import { absolutePathEntries, hardenGitArgs, hostGitEnvironment, pathspecVariables, remoteGitCommand, repositoryLocatingVariables } from './harden.js';
import { withoutCredentials } from '../sandbox/credential-variables.js';
import { distrustSearchRoot } from '../sandbox/search-path.js';
import { clearDeadHalfWrittenWorktree, indexLockRetryDelaysMs, retriableIndexLockFailure } from './index-lock-retry.js';
import { execFileOffloaded, gitSpawnsOffloaded, type OffloadedError } from './spawn-server.js';
import type { CommitOptions, Git, MergeTreeResult, StatusEntry, WorktreeEntry } from './git-port.js';

/** The oldest git polywave supports: `merge-tree --write-tree` arrived in 2.38. */
const minimumVersion = { major: 2, minor: 38 } as const;

/**
 * Variables that point git at a particular repository or index. A Git instance is bound to its
 * `cwd`; inheriting these (e.g. when polywave or its tests run inside a git hook) would silently
 * redirect every command to another repository.
 */

/** Fixed identity and dates for the throw-away commits of the merge-tree fallback: same input, same ids. */
const scratchCommitEnvironment = {
  GIT_AUTHOR_NAME: 'polywave',
  GIT_AUTHOR_EMAIL: 'polywave@localhost',
  GIT_AUTHOR_DATE: '@0 +0000',
  GIT_COMMITTER_NAME: 'polywave',
  GIT_COMMITTER_EMAIL: 'polywave@localhost',
  GIT_COMMITTER_DATE: '@0 +0000',
};

export interface GitVersion {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

export interface CreateGitOptions {
  /**
   * The environment git runs with (the CLI reads it once and passes it down). Defaults to
   * `process.env`. It REPLACES the process environment — pass `{...process.env, X: 'y'}` to add
   * to it. Undefined values are dropped; GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and friends are
   * always removed (the instance is bound to `cwd`); GIT_TERMINAL_PROMPT=0 and LC_ALL=C are
   * always set. Per-call `env` options are laid over this.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Configuration every command of this instance runs with, as `git -c key=value` (highest
   * precedence: over the repository's own config files). Read before each command, so a caller
   * can pin values it learns later (e.g. `core.hooksPath` once the recorded hooks are verified).
   */
  config?: GitConfigSource;
}

/** Configuration laid over every command of a Git instance (see {@link CreateGitOptions.config}). */
export type GitConfigSource = () => Readonly<Record<string, string>>;

interface ExecOptions {
  env?: Readonly<Record<string, string>>;
  input?: string;
  signal?: AbortSignal;
  /** Exit codes (besides 0) that are answers rather than failures. */
  allowExitCodes?: readonly number[];
  /** Error code for a failure (default G000_GIT_FAILED). */
  code?: string;
  /** Each piece of stdout as it arrives (Git.run). */
  onStdout?: (chunk: string) => void;
}

interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

interface RepositoryLayout {
  topLevel: string;
  gitDir: string;
  commonDir: string;
}

/**
 * Repository layouts (top level, git dir, common dir) already read in this process, per directory
 * holding a `.git` entry (and the port's pinned config), with that entry's stamp: a `.git` file
 * (a linked worktree: `gitdir: …`) by inode, size, mtime and ctime; a `.git` directory by inode
 * and birth time (its mtime moves with every index write, its identity does not). A directory
 * without its own `.git` (a subdirectory) is always asked: what git finds there depends on the
 * parents. program-execute made ~25 fresh ports of the same 9 directories per tier, each asking.
 */
const layoutCache = new Map<string, { stamp: string; layout: RepositoryLayout }>();

function dotGitStamp(directory: string): string | undefined {
  try {
    const stats = lstatSync(path.join(directory, '.git'), { bigint: true });
    if (stats.isFile()) return `file:${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
    if (stats.isDirectory() && stats.birthtimeNs > 0n) return `dir:${stats.dev}:${stats.ino}:${stats.birthtimeNs}`;
    return undefined;
  } catch {
    return undefined;
  }
}

function rememberLayout(key: string, stamp: string, layout: RepositoryLayout): void {
  layoutCache.delete(key);
  layoutCache.set(key, { stamp, layout });
  if (layoutCache.size > 512) layoutCache.delete(layoutCache.keys().next().value!);
}

/** Parsed `git --version`, once per process and PATH (a different PATH may find another git). */
const versionCache = new Map<string, Promise<GitVersion>>();

/**
 * Creates the git port for the repository (or worktree) at `cwd`, over the git CLI (execFile,
 * no shell). Every failure throws GitError (args, exit code, stderr, cwd); answers such as
 * "not an ancestor" or "no such branch" are return values. Paths given to methods are relative to
 * the worktree's top level and taken literally (no pathspec globbing).
 *
 * Codes: G001_WORKTREE_CREATE_FAILED, G002_MERGE_CONFLICT (exit 1), G004_BRANCH_EXISTS,
 * G008_WORKTREE_REMOVE_FAILED, G000_GIT_FAILED (default), G000_NOT_A_REPOSITORY,
 * G000_GIT_MISSING, G000_GIT_TOO_OLD (all exit 2 unless noted).
 */
export function createGit(cwd: string, options: CreateGitOptions = {}): Git {
  // X43-03/10/11/14/21: the repository this git runs in is distrusted for PATH lookups before its first command — from
  // whatever entry point (`--repo-dir`, run-scaffold, serve, the resident server) and before anything else ran there.
  distrustSearchRoot(cwd);
  const baseEnvironment = buildEnvironment(options.env ?? process.env);
  let localEnvironment: Record<string, string> | undefined;
  let layout: Promise<RepositoryLayout> | undefined;

  async function exec(args: readonly string[], execOptions: ExecOptions = {}): Promise<ExecResult> {
    // No repository hook runs: hardenGitArgs gives every command core.hooksPath=/dev/null (X24-01, X25-03/04/06).
    // Another git process held this checkout's index.lock: git gives up at once, so wait and retry
    // (also when the caller allowed exit 128).
    for (let attempt = 0; ; attempt += 1) {
      const delay = indexLockRetryDelaysMs[attempt];
      try {
        const result = await execOnce(args, execOptions);
        if (delay === undefined || execOptions.signal?.aborted || !retriableIndexLockFailure(args, result.exitCode, result.stderr)) return result;
        // A killed `git worktree add`'s entry never gets written: removed, and the command re-run at once.
        if (clearDeadHalfWrittenWorktree(result.stderr, cwd)) continue;
      } catch (error) {
        if (delay === undefined || execOptions.signal?.aborted || !(error instanceof GitError) || !retriableIndexLockFailure(args, error.gitExitCode, error.stderr)) throw error;
        if (clearDeadHalfWrittenWorktree(error.stderr, cwd)) continue;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  function execOnce(args: readonly string[], execOptions: ExecOptions = {}): Promise<ExecResult> {
    // (no credential variables for a command that does not talk to a remote: X22-03, harden.ts hostGitEnvironmentFor)
    const remote = remoteGitCommand(args);
    const base = remote ? baseEnvironment : (localEnvironment ??= withoutCredentials(baseEnvironment));
    // (a per-call PATH keeps only its absolute entries too: X40-02, harden.ts absolutePathEntries)
    const environment = execOptions.env ? { ...base, ...(remote ? execOptions.env : withoutCredentials(execOptions.env)), ...(execOptions.env.PATH === undefined ? {} : { PATH: absolutePathEntries(execOptions.env.PATH) ?? '' }), GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' } : base;
    const pinned = options.config ? configArguments(options.config()) : [];
    // X8 #2: no fsmonitor, no submodule recursion, no external diff (harden.ts), over any pin.
    const argv = hardenGitArgs([...pinned, ...args]);
    return new Promise((resolve, reject) => {
      const settle = (error: OffloadedError | null, stdout: string, stderr: string) => {
        if (!error) {
          resolve({ stdout, stderr, exitCode: 0 });
          return;
        }
        const failure = error as NodeJS.ErrnoException & { code?: string | number; signal?: NodeJS.Signals | null };
        if (failure.name === 'AbortError') {
          reject(failure);
          return;
        }
        if (failure.code === 'ENOENT' || failure.code === 'ENOTDIR') {
          // execFile reports a missing cwd the same way as a missing binary.
          reject(existsSync(cwd) ? gitMissingError(failure) : notARepositoryError(args, cwd, `directory does not exist: ${cwd}`));
          return;
        }
        const exitCode = typeof failure.code === 'number' ? failure.code : null;
        if (exitCode === 128 && /not a git repository/i.test(stderr)) {
          reject(notARepositoryError(args, cwd, stderr));
          return;
        }
        if (exitCode !== null && execOptions.allowExitCodes?.includes(exitCode)) {
          resolve({ stdout, stderr, exitCode });
          return;
        }
        const signalNote = failure.signal ? `\n(killed by ${failure.signal})` : '';
        reject(createGitError({ args, exitCode, stderr: `${stderr}${signalNote}`, cwd, code: execOptions.code }));
      };
      const maxBuffer = 512 * 1024 * 1024;
      if (gitSpawnsOffloaded()) {
        // A long-running orchestrator: started by the helper process (spawn-server.ts), same result.
        execFileOffloaded('git', argv, { cwd, env: environment, maxBuffer, input: execOptions.input ?? '', ...(execOptions.signal ? { signal: execOptions.signal } : {}), ...(execOptions.onStdout ? { onStdout: execOptions.onStdout } : {}) }, settle);
        return;
      }
      const child = execFile('git', argv, { cwd, env: environment, encoding: 'utf8', maxBuffer, ...(execOptions.signal ? { signal: execOptions.signal } : {}) }, (error, stdout, stderr) => settle(error, stdout, stderr));
      if (execOptions.onStdout) child.stdout?.on('data', execOptions.onStdout);
      // Closed at once without input, so a command that reads stdin never waits. git may exit
      // before reading it all (EPIPE): the exit code tells that story, not the pipe.
      child.stdin?.on('error', () => {});
      child.stdin?.end(execOptions.input ?? '');
    });
  }

  async function stdoutOf(args: readonly string[], execOptions?: ExecOptions): Promise<string> {
    return (await exec(args, execOptions)).stdout;
  }

  function readLayout(): Promise<RepositoryLayout> {
    layout ??= (async () => {
      // Another port of this process may have asked already (a fresh port per step or agent).
      const key = `${cwd}\0${options.config ? configArguments(options.config()).join('\0') : ''}`;
      const stamp = dotGitStamp(cwd);
      const known = layoutCache.get(key);
      if (stamp !== undefined && known !== undefined && known.stamp === stamp) return known.layout;
      const args = ['rev-parse', '--path-format=absolute', '--show-toplevel', '--absolute-git-dir', '--git-common-dir'];
      const lines = withoutTrailingNewline(await stdoutOf(args)).split('\n');
      if (lines.length === 3) {
        const found = { topLevel: lines[0]!, gitDir: lines[1]!, commonDir: lines[2]! };
        if (stamp !== undefined && dotGitStamp(cwd) === stamp) rememberLayout(key, stamp, found);
        return found;
      }
      // A path containing a newline: ask one question at a time.
      const [topLevel, gitDir, commonDir] = await Promise.all([
        stdoutOf(['rev-parse', '--show-toplevel']),
        stdoutOf(['rev-parse', '--absolute-git-dir']),
        stdoutOf(['rev-parse', '--path-format=absolute', '--git-common-dir']),
      ]);
      return { topLevel: withoutTrailingNewline(topLevel), gitDir: withoutTrailingNewline(gitDir), commonDir: withoutTrailingNewline(commonDir) };
    })();
    // Cache only success: a directory may become a repository later.
    layout.catch(() => {
      layout = undefined;
    });
    return layout;
  }

  async function tryRevParse(ref: string): Promise<string | undefined> {
    const result = await exec(['rev-parse', '--verify', '--quiet', '--end-of-options', commitSpec(checkRef(ref))], { allowExitCodes: [1, 128] });
    if (result.exitCode !== 0) return undefined;
    return result.stdout.trim();
  }

  async function revParse(ref: string): Promise<string> {
    return (await stdoutOf(['rev-parse', '--verify', '--end-of-options', commitSpec(checkRef(ref))])).trim();
  }

  async function version(): Promise<GitVersion> {
    const key = baseEnvironment.PATH ?? '';
    let cached = versionCache.get(key);
    if (!cached) {
      cached = stdoutOf(['--version']).then((text) => parseVersion(text));
      versionCache.set(key, cached);
      cached.catch(() => versionCache.delete(key));
    }
    return cached;
  }

  async function diffNameOnlyZ(args: readonly string[]): Promise<string[]> {
    return splitNul(await stdoutOf(args));
  }

  const git: Git = {
    cwd,

    async run(args, runOptions = {}) {
      return exec(args, runOptions);
    },

    withConfig(source) {
      const outer = options.config;
      return createGit(cwd, { ...options, config: outer ? () => ({ ...outer(), ...source() }) : source });
    },

    version,

    async assertVersion() {
      const found = await version();
      if (found.major < minimumVersion.major || (found.major === minimumVersion.major && found.minor < minimumVersion.minor)) {
        throw new PolywaveError({
          code: 'G000_GIT_TOO_OLD',
          message: `polywave needs git >= ${minimumVersion.major}.${minimumVersion.minor} (merge-tree --write-tree); found ${found.major}.${found.minor}.${found.patch}`,
          exitCode: 2,
          details: { found: found.text, required: `${minimumVersion.major}.${minimumVersion.minor}` },
        });
      }
    },

    async isRepository() {
      try {
        await exec(['rev-parse', '--git-dir']);
        return true;
      } catch (error) {
        if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') return false;
        throw error;
      }
    },

    async topLevel() {
      return (await readLayout()).topLevel;
    },

    async gitDir() {
      return (await readLayout()).gitDir;
    },

    async commonDir() {
      return (await readLayout()).commonDir;
    },

    revParse,
    tryRevParse,

    headCommit() {
      return revParse('HEAD');
    },

    async currentBranch() {
      // `branch --show-current` prints the unborn branch too, and nothing when detached.
      const name = (await stdoutOf(['branch', '--show-current'])).trim();
      return name === '' ? undefined : name;
    },

    async status() {
      // --no-optional-locks: status must not take index.lock while other commands run.
      const output = await stdoutOf(['--no-optional-locks', 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignored=no']);
      return parseStatus(output);
    },

    async checkIgnore(paths) {
      if (paths.length === 0) return [];
      // Exit 1 = none of them is ignored: an answer.
      const result = await exec(['check-ignore', '--stdin', '-z'], { input: `${paths.join('\0')}\0`, allowExitCodes: [1] });
      return splitNul(result.stdout);
    },

    async worktreeList() {
      return parseWorktreeList(await stdoutOf(['worktree', 'list', '--porcelain', '-z']));
    },

    async worktreeAdd(addOptions) {
      const args = addOptions.createBranch
        ? ['worktree', 'add', '--quiet', '-b', checkRef(addOptions.branch), '--', addOptions.path, checkRef(addOptions.base)]
        : ['worktree', 'add', '--quiet', '--', addOptions.path, checkRef(addOptions.branch)];
      try {
        await exec(args, { code: 'G001_WORKTREE_CREATE_FAILED' });
      } catch (error) {
        if (error instanceof GitError && /already exists/.test(error.stderr) && /branch named/.test(error.stderr)) {
          throw createGitError({ args, exitCode: error.gitExitCode, stderr: error.stderr, cwd, code: 'G004_BRANCH_EXISTS' });
        }
        throw error;
      }
    },

    async worktreeRemove(worktreePath, removeOptions = {}) {
      await exec(['worktree', 'remove', ...(removeOptions.force ? ['--force'] : []), '--', worktreePath], { code: 'G008_WORKTREE_REMOVE_FAILED' });
    },

    async worktreePrune() {
      await exec(['worktree', 'prune']);
    },

    async branchExists(branch) {
      const result = await exec(['rev-parse', '--verify', '--quiet', '--end-of-options', `refs/heads/${checkRef(branch)}`], { allowExitCodes: [1] });
      return result.exitCode === 0;
    },

    async createBranch(branch, base) {
      const args = ['branch', '--end-of-options', checkRef(branch), checkRef(base)];
      try {
        await exec(args);
      } catch (error) {
        if (error instanceof GitError && /already exists/.test(error.stderr)) {
          throw createGitError({ args, exitCode: error.gitExitCode, stderr: error.stderr, cwd, code: 'G004_BRANCH_EXISTS' });
        }
        throw error;
      }
    },

    async deleteMergedBranch(branch) {
      // Never -D: git refuses to delete a branch that is not merged (DESIGN §4, never lose work).
      await exec(['branch', '-d', '--end-of-options', checkRef(branch)]);
    },

    async listBranches(pattern) {
      const args = ['for-each-ref', '--format=%(refname)%00%(objectname)', pattern === undefined ? 'refs/heads/' : `refs/heads/${pattern}`];
      const output = await stdoutOf(args);
      return output
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          const [refname = '', commit = ''] = line.split('\0');
          return { name: refname.slice('refs/heads/'.length), commit };
        });
    },

    async isAncestor(ancestor, descendant) {
      const result = await exec(['merge-base', '--is-ancestor', '--end-of-options', checkRef(ancestor), checkRef(descendant)], { allowExitCodes: [1] });
      return result.exitCode === 0;
    },

    async mergeBase(left, right) {
      // Exit 1 = no common ancestor.
      const result = await exec(['merge-base', '--end-of-options', checkRef(left), checkRef(right)], { allowExitCodes: [1] });
      const base = result.stdout.trim();
      return result.exitCode === 0 && base !== '' ? base : undefined;
    },

    async revListCount(range) {
      return Number.parseInt((await stdoutOf(['rev-list', '--count', '--end-of-options', checkRef(range)])).trim(), 10);
    },

    async diffNameOnly(range, diffOptions = {}) {
      // --no-renames: a rename lists both the old and the new path (ownership checks need both).
      const paths = diffOptions.paths ?? [];
      return diffNameOnlyZ(['--literal-pathspecs', 'diff', '--name-only', '-z', '--no-renames', '--no-ext-diff', '--end-of-options', checkRef(range), ...(paths.length > 0 ? ['--', ...paths] : [])]);
    },

    async diffNameStatus(range) {
      const output = await stdoutOf(['diff', '--name-status', '-z', '--find-renames', '--no-ext-diff', '--end-of-options', checkRef(range)]);
      return parseNameStatus(output);
    },

    async mergeTree(base, ours, theirs) {
      let left = checkRef(ours);
      let right = checkRef(theirs);
      const args = ['merge-tree', '--write-tree', '--name-only', '-z'];
      if (base !== undefined) {
        const found = await version();
        if (found.major > 2 || found.minor >= 40) {
          args.push(`--merge-base=${checkRef(base)}`);
        } else {
          // git < 2.40 has no --merge-base: merge two scratch commits whose only parent is `base`,
          // so that `base` is their merge base. Unreferenced objects; gc removes them.
          const scratchCommit = async (side: string) =>
            (await stdoutOf(['commit-tree', `${side}^{tree}`, '-p', checkRef(base), '-m', 'polywave merge-tree side'], { env: scratchCommitEnvironment })).trim();
          [left, right] = await Promise.all([scratchCommit(left), scratchCommit(right)]);
        }
      }
      const result = await exec([...args, '--end-of-options', left, right], { allowExitCodes: [1] });
      return parseMergeTree(result.stdout, result.exitCode === 0);
    },

    async mergeNoFf(branch, mergeOptions) {
      const args = ['merge', '--no-ff', '--no-edit', '-m', mergeOptions.message, '--end-of-options', checkRef(branch)];
      const execOptions: ExecOptions = mergeOptions.env ? { env: mergeOptions.env } : {};
      const result = await exec(args, { ...execOptions, allowExitCodes: [1, 2, 128] });
      if (result.exitCode === 0) return revParse('HEAD');
      // The merge failed. Never leave the target half-merged: abort whatever is in progress.
      const [conflictedPaths, mergeHead] = await Promise.all([
        diffNameOnlyZ(['diff', '--name-only', '-z', '--diff-filter=U']),
        tryRevParse('MERGE_HEAD'),
      ]);
      if (mergeHead !== undefined) await exec(['merge', '--abort']);
      const output = `${result.stderr}${result.stdout}`;
      if (conflictedPaths.length === 0) throw createGitError({ args, exitCode: result.exitCode, stderr: output, cwd });
      throw createGitError({
        args,
        exitCode: result.exitCode,
        stderr: output,
        cwd,
        code: 'G002_MERGE_CONFLICT',
        exitCodeOverride: 1,
        message: `merging ${branch} conflicts in ${conflictedPaths.length} path(s): ${conflictedPaths.join(', ')} (merge aborted)`,
        details: { branch, conflicted_paths: conflictedPaths, messages: conflictLines(result.stdout) },
      });
    },

    async mergeAbort() {
      await exec(['merge', '--abort']);
    },

    async showFile(ref, filePath) {
      const result = await exec(['cat-file', 'blob', `${checkRef(ref)}:${filePath}`], { allowExitCodes: [128] });
      if (result.exitCode === 0) return result.stdout;
      // One spawn on both paths: git's message tells a missing path from a missing ref.
      if (/^fatal: path '.*' (does not exist in|exists on disk, but not in) '/s.test(result.stderr)) return undefined;
      throw createGitError({ args: ['cat-file', 'blob', `${ref}:${filePath}`], exitCode: result.exitCode, stderr: result.stderr, cwd });
    },

    async add(paths, addOptions = {}) {
      if (paths.length === 0) return;
      // Paths go through stdin: no argv length limit, any byte but NUL allowed.
      await exec(['--literal-pathspecs', 'add', ...(addOptions.force ? ['--force'] : []), '--pathspec-from-file=-', '--pathspec-file-nul'], { input: nulList(paths) });
    },

    async commit(commitOptions: CommitOptions) {
      const args = ['--literal-pathspecs', 'commit', '--quiet', '-m', commitOptions.message];
      if (commitOptions.allowEmpty) args.push('--allow-empty');
      if (commitOptions.noVerify) args.push('--no-verify');
      const paths = commitOptions.paths ?? [];
      if (paths.length > 0) args.push('--pathspec-from-file=-', '--pathspec-file-nul');
      await exec(args, { ...(commitOptions.env ? { env: commitOptions.env } : {}), ...(paths.length > 0 ? { input: nulList(paths) } : {}) });
      return revParse('HEAD');
    },

    async checkout(ref) {
      // The trailing `--` makes `ref` a revision even when a file of that name exists.
      await exec(['checkout', '--quiet', checkRef(ref), '--']);
    },

    async hooksPath() {
      const configured = (await exec(['config', '--type=path', '--get', 'core.hooksPath'], { allowExitCodes: [1] })).stdout.trim();
      if (configured === '') return path.join((await readLayout()).commonDir, 'hooks');
      // git runs hooks from the worktree's top level, so a relative hooksPath is relative to it.
      return path.isAbsolute(configured) ? configured : path.resolve((await readLayout()).topLevel, configured);
    },

    async configGet(key) {
      const result = await exec(['config', '--get', '--end-of-options', key], { allowExitCodes: [1] });
      return result.exitCode === 0 ? withoutTrailingNewline(result.stdout) : undefined;
    },

    async configSet(key, value, setOptions = {}) {
      const args = ['config', ...(setOptions.worktree ? ['--worktree'] : []), '--end-of-options', key, value];
      try {
        await exec(args);
      } catch (error) {
        // Per-worktree config needs extensions.worktreeConfig once there are linked worktrees.
        if (!setOptions.worktree || !(error instanceof GitError) || !/worktreeConfig/.test(error.stderr)) throw error;
        await exec(['config', 'extensions.worktreeConfig', 'true']);
        await exec(args);
      }
    },
  };
  return git;
}

function buildEnvironment(source: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(hostGitEnvironment(source))) {
    if (value !== undefined) environment[name] = value;
  }
  for (const name of [...repositoryLocatingVariables, ...pathspecVariables]) delete environment[name];
  environment.GIT_TERMINAL_PROMPT = '0';
  environment.LC_ALL = 'C';
  return environment;
}

/** `-c key=value` pairs, in key order (a key never holds '=' or starts with '-'). */
function configArguments(config: Readonly<Record<string, string>>): string[] {
  const pairs: string[] = [];
  for (const key of Object.keys(config).sort()) {
    if (key === '' || key.includes('=') || key.startsWith('-')) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid git configuration key ${JSON.stringify(key)}`, exitCode: 2 });
    }
    pairs.push('-c', `${key}=${config[key]!}`);
  }
  return pairs;
}

/** Refs and ranges never start with '-' (git would read them as options). */
function checkRef(ref: string): string {
  if (ref === '' || ref.startsWith('-')) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid git revision ${JSON.stringify(ref)}`, exitCode: 2 });
  }
  return ref;
}

/** Peel to a commit unless the caller named a specific object (`ref:path`, `ref^{tree}`). */
function commitSpec(ref: string): string {
  return ref.includes(':') || ref.includes('^{') ? ref : `${ref}^{commit}`;
}

function createGitError(options: {
  args: readonly string[];
  exitCode: number | null;
  stderr: string;
  cwd: string;
  code?: string | undefined;
  message?: string;
  exitCodeOverride?: 1 | 2;
  details?: Record<string, unknown>;
}): GitError {
  const error = new GitError({ args: options.args, exitCode: options.exitCode, stderr: options.stderr, cwd: options.cwd, ...(options.code ? { code: options.code } : {}) });
  if (options.message !== undefined) error.message = options.message;
  if (options.exitCodeOverride !== undefined) (error as { exitCode: 1 | 2 }).exitCode = options.exitCodeOverride;
  if (options.details) Object.assign(error.details, options.details);
  return error;
}

function notARepositoryError(args: readonly string[], cwd: string, stderr: string): GitError {
  return createGitError({ args, exitCode: 128, stderr, cwd, code: 'G000_NOT_A_REPOSITORY', message: `not a git repository: ${cwd} (nor any of its parent directories)` });
}

function gitMissingError(cause: unknown): PolywaveError {
  return new PolywaveError({ code: 'G000_GIT_MISSING', message: 'git is not installed or not on PATH (polywave needs git >= 2.38)', exitCode: 2, cause });
}

function parseVersion(text: string): GitVersion {
  const match = /git version (\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) {
    throw new PolywaveError({ code: 'G000_GIT_FAILED', message: `cannot read the git version from ${JSON.stringify(text.trim())}`, exitCode: 2 });
  }
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3] ?? 0), text: text.trim() };
}

function withoutTrailingNewline(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

function splitNul(output: string): string[] {
  return output.split('\0').filter((part) => part !== '');
}

function nulList(paths: readonly string[]): string {
  return `${paths.join('\0')}\0`;
}

function conflictLines(output: string): string[] {
  return output.split('\n').filter((line) => line.startsWith('CONFLICT'));
}

/** `status --porcelain=v1 -z`: `XY path\0`, renames and copies followed by `from\0`. */
function parseStatus(output: string): StatusEntry[] {
  const fields = output.split('\0');
  const entries: StatusEntry[] = [];
  for (let index = 0; index < fields.length; index++) {
    const field = fields[index]!;
    if (field.length < 4) continue;
    const code = field.slice(0, 2);
    const entry: StatusEntry = { code, path: field.slice(3) };
    if (code.includes('R') || code.includes('C')) {
      entry.from = fields[index + 1] ?? '';
      index++;
    }
    entries.push(entry);
  }
  return entries;
}

/** `worktree list --porcelain -z`: attributes separated by NUL, records by an empty attribute. */
function parseWorktreeList(output: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | undefined;
  for (const field of output.split('\0')) {
    if (field === '') {
      if (current) entries.push(current);
      current = undefined;
      continue;
    }
    const space = field.indexOf(' ');
    const label = space === -1 ? field : field.slice(0, space);
    const value = space === -1 ? '' : field.slice(space + 1);
    if (label === 'worktree') {
      if (current) entries.push(current);
      current = { path: value, head: '', bare: false, detached: false, locked: false, prunable: false };
      continue;
    }
    if (!current) continue;
    if (label === 'HEAD') current.head = /^0+$/.test(value) ? '' : value;
    else if (label === 'branch') current.branch = value.startsWith('refs/heads/') ? value.slice('refs/heads/'.length) : value;
    else if (label === 'bare') current.bare = true;
    else if (label === 'detached') current.detached = true;
    else if (label === 'locked') {
      current.locked = true;
      if (value !== '') current.lockReason = value;
    } else if (label === 'prunable') current.prunable = true;
  }
  if (current) entries.push(current);
  return entries;
}

/** `diff --name-status -z`: `S\0path\0`, renames/copies `R100\0from\0to\0`. */
function parseNameStatus(output: string): Array<{ status: string; path: string; from?: string }> {
  const fields = output.split('\0');
  const entries: Array<{ status: string; path: string; from?: string }> = [];
  let index = 0;
  while (index < fields.length) {
    const status = fields[index++]!;
    if (status === '') continue;
    if (status.startsWith('R') || status.startsWith('C')) {
      const from = fields[index++] ?? '';
      entries.push({ status, path: fields[index++] ?? '', from });
    } else {
      entries.push({ status, path: fields[index++] ?? '' });
    }
  }
  return entries;
}

/**
 * `merge-tree --write-tree --name-only -z`: `tree\0`, then on conflict the conflicted paths
 * (`path\0` each), an empty field, and messages `count\0path…\0type\0message\0`.
 */
function parseMergeTree(output: string, clean: boolean): MergeTreeResult {
  const fields = output.split('\0');
  const tree = fields[0] ?? '';
  if (clean) return { clean: true, tree, conflictedPaths: [], messages: [] };
  const conflictedPaths: string[] = [];
  let index = 1;
  while (index < fields.length && fields[index] !== '') {
    const conflicted = fields[index++]!;
    if (!conflictedPaths.includes(conflicted)) conflictedPaths.push(conflicted);
  }
  index++;
  const messages: string[] = [];
  while (index < fields.length) {
    const count = Number.parseInt(fields[index] ?? '', 10);
    if (!Number.isFinite(count)) break;
    index += 1 + count + 1; // count, the paths, the conflict type
    const message = fields[index++];
    if (message !== undefined) messages.push(withoutTrailingNewline(message));
  }
  return { clean: false, tree, conflictedPaths, messages };
}
