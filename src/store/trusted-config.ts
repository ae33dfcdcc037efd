/**
 * Where the settings that decide what polywave runs outside an agent's control come from (issue 11,
 * outside attack X10 N6/N9/R4/R5): `sandbox`, `setup`, `teardown`, `copy`, `worktree_setup`,
 * `agent_clis`, `dispatch`, `repo` and `repos` are read ONLY from the repository root's
 * polywave.config.json as COMMITTED (HEAD, or a pinned commit), never from a nested directory's
 * config (`docs/polywave.config.json`, which an agent may own or write untracked) nor from the
 * working tree. A nested config that sets one of them is ignored with a one-line warning. A
 * repository with no config of its own falls back to one found above it (outside the repository,
 * read as it is, as before; inside an enclosing repository, by the same rule).
 *
 * And the persistent record of a BLOCKED change (X10 N9): when finalize-wave blocks a merged
 * change of those keys (SANDBOX_CONFIG_CHANGED), the config the wave started from — the last one a
 * human accepted — is written to `<git common dir>/polywave/config-block.json`. Until a human
 * accepts the change (`polywave accept-config`, or `finalize-wave --accept-changes`) or reverts it,
 * every later command that uses those keys refuses ({@link assertConfigAccepted}), and the sandbox
 * settings are the narrower of HEAD's and the accepted ones.
 */
import { lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { GitError } from '../git/git-error.js';
import { nestedRepositoryOf } from '../git/nested-repos.js';
import { runGit } from '../git/run-git.js';
import { writeFileAtomic } from './atomic-file.js';
import { locateProjectConfig, parseProjectConfig, projectConfigFileName, securityConfigChanges, type ProjectConfig, type SecurityConfigChanges } from './project-config.js';

/** The code of a refusal because the committed config changes keys a human has not accepted. */
export const configChangedCode = 'SANDBOX_CONFIG_CHANGED';

/** The keys {@link securityConfigChanges} watches: only the repository root's committed config sets them. */
export const watchedConfigKeys = ['sandbox', 'setup', 'teardown', 'copy', 'worktree_setup', 'agent_clis', 'dispatch', 'repo', 'repos'] as const;

/** The git repository of a directory: its work tree root and its common git directory (shared by its worktrees). */
export interface RepositoryPaths {
  toplevel: string;
  commonDir: string;
}

/** The repository `directory` (or its nearest existing parent) is in; undefined outside any work tree. */
export async function repositoryOf(directory: string): Promise<RepositoryPaths | undefined> {
  let cwd = path.resolve(directory);
  while (!isDirectory(cwd)) {
    const parent = path.dirname(cwd);
    if (parent === cwd) return undefined;
    cwd = parent;
  }
  let output: string;
  try {
    const located = await locateRepository(cwd);
    if (located === undefined) return undefined;
    output = located;
  } catch (error) {
    throw new PolywaveError({ code: configRepositoryUnreadableCode, exitCode: 2, message: `git could not read the repository of ${cwd} (${gitMessage(error)}), so which ${projectConfigFileName} to trust is unknown. Nothing was changed. Fix the repository, then re-run`, details: { directory: cwd } });
  }
  const [toplevel, commonDir] = output.trim().split('\n');
  if (!toplevel || !commonDir) return undefined;
  // X13 #2: a repository an agent nested in the checkout (`docs/.git`) is not the one whose
  // committed config is trusted: the enclosing repository is (the commands refuse it as the
  // plan's repository: NESTED_REPOSITORY, git/nested-repos.ts). An outer repository git cannot
  // read throws NESTED_REPOSITORY_UNCHECKED (fail closed, never "not nested").
  const nested = await nestedRepositoryOf(toplevel);
  if (nested !== undefined) return await repositoryOf(nested.outer);
  return { toplevel: realOrSame(toplevel), commonDir: realOrSame(commonDir) };
}

/**
 * git's answers to "which repository is `cwd` in" (`rev-parse --show-toplevel --git-common-dir`),
 * kept per directory with a stamp that changes whenever git's answer could ({@link locationStamp}).
 * Only answers are kept ("not a repository" is one): a failure asks git again next time. ~42 asks per PROGRAM tier, 17 of them
 * in the parent of a repository with no config of its own, answered "not a repository".
 */
const locationCache = new Map<string, { stamp: string; output: Promise<string | undefined> }>();

/** Identity of a file system entry (lstat), or 'none' when missing, or undefined when it cannot be read. */
function entryStamp(file: string, withTimes: boolean): string | undefined {
  try {
    const stats = lstatSync(file, { bigint: true });
    return withTimes ? `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}:${stats.mode}` : `${stats.dev}:${stats.ino}:${stats.mode}`;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'none' : undefined;
  }
}

/** The environment that steers git's discovery (GIT_DIR, GIT_CEILING_DIRECTORIES, …, HOME for the global config). */
function discoveryEnvironment(): string {
  return Object.keys(process.env)
    .filter((name) => name.startsWith('GIT_') || name === 'HOME' || name === 'XDG_CONFIG_HOME')
    .sort()
    .map((name) => `${name}=${process.env[name]}`)
    .join('\0');
}

/**
 * A stamp of everything git's answer for `cwd` depends on, or undefined when it cannot be made
 * safely (then git is asked). Two cases:
 * - `cwd` holds its own `.git`: that entry (a directory by identity and birth time — its mtime
 *   moves with every index write —, a `.git` file by identity, size and times), the repository's
 *   `config` (core.worktree) and a linked worktree's `commondir` and `config.worktree`, and
 *   `cwd`'s own identity;
 * - no `.git` and no `HEAD` (what git needs to take a directory for a git directory) in `cwd` nor
 *   in any directory above it up to `/`: every such directory's identity (a `.git` or `HEAD` made
 *   later there ends the case: git is asked).
 * Anything else (a subdirectory of a work tree, a bare repository) is always asked. Plus the
 * GIT_* environment.
 */
function locationStamp(cwd: string): string | undefined {
  const environment = discoveryEnvironment();
  const own = path.join(cwd, '.git');
  let stats;
  try {
    stats = lstatSync(own, { bigint: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
  }
  if (stats !== undefined) {
    const self = entryStamp(cwd, false);
    if (self === undefined || self === 'none') return undefined;
    if (stats.isDirectory()) {
      if (stats.birthtimeNs <= 0n) return undefined;
      const config = entryStamp(path.join(own, 'config'), true);
      const commondir = entryStamp(path.join(own, 'commondir'), true);
      if (config === undefined || commondir !== 'none') return undefined;
      return `dir:${self}:${stats.dev}:${stats.ino}:${stats.birthtimeNs}:${config}\0${environment}`;
    }
    if (!stats.isFile()) return undefined;
    const pointer = /^gitdir:\s*(.+)$/m.exec(readSafely(own) ?? '')?.[1]?.trim();
    if (pointer === undefined || pointer === '') return undefined;
    const gitDir = path.resolve(cwd, pointer);
    const common = readSafely(path.join(gitDir, 'commondir'))?.trim();
    if (common === undefined || common === '') return undefined;
    const commonDir = path.resolve(gitDir, common);
    const parts = [entryStamp(path.join(gitDir, 'commondir'), true), entryStamp(path.join(gitDir, 'config.worktree'), true), entryStamp(path.join(commonDir, 'config'), true), entryStamp(commonDir, false)];
    if (parts.some((part) => part === undefined)) return undefined;
    return `file:${self}:${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}:${parts.join(':')}\0${environment}`;
  }
  const chain: string[] = [];
  // The real path's parents: git walks up from its real working directory, not through a symlink's parents.
  for (let directory = realOrSame(cwd); ; directory = path.dirname(directory)) {
    const dotGit = entryStamp(path.join(directory, '.git'), false);
    const head = entryStamp(path.join(directory, 'HEAD'), false);
    const self = entryStamp(directory, false);
    if (dotGit !== 'none' || head !== 'none' || self === undefined || self === 'none') return undefined;
    chain.push(`${directory}=${self}`);
    if (path.dirname(directory) === directory) break;
  }
  return `none:${chain.join('|')}\0${environment}`;
}

/**
 * `rev-parse --show-toplevel --git-common-dir` in `cwd` (a directory), undefined when git says it is
 * not in a work tree; from {@link locationCache} when its stamp still holds.
 */
async function locateRepository(cwd: string): Promise<string | undefined> {
  const stamp = locationStamp(cwd);
  const known = locationCache.get(cwd);
  // An answer still being read counts too: callers at the same stamp (the agents of a wave at once) share one git.
  if (stamp !== undefined && known !== undefined && known.stamp === stamp) return known.output;
  const output = (async () => {
    try {
      return await runGit(['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir'], { cwd });
    } catch (error) {
      // Not in a work tree (git says so): no repository, the config above is read as it is. Any other
      // failure (a broken `.git`, dubious ownership) fails closed (the caller refuses) and is not kept.
      if (error instanceof GitError && /not a git repository|must be run in a work tree/i.test(error.stderr)) return undefined;
      throw error;
    }
  })();
  if (stamp === undefined) return output;
  locationCache.delete(cwd);
  locationCache.set(cwd, { stamp, output });
  if (locationCache.size > 256) locationCache.delete(locationCache.keys().next().value!);
  // Kept only when git answered and nothing moved while it looked.
  const forget = () => {
    if (locationCache.get(cwd)?.output === output) locationCache.delete(cwd);
  };
  output.then(() => {
    if (locationStamp(cwd) !== stamp) forget();
  }, forget);
  return output;
}

/** The code of a refusal because git could not read the repository whose committed config is trusted. */
export const configRepositoryUnreadableCode = 'CONFIG_REPOSITORY_UNREADABLE';

function gitMessage(error: unknown): string {
  if (error instanceof GitError && error.stderr.trim() !== '') return error.stderr.trim().split('\n')[0]!;
  return error instanceof Error ? error.message : String(error);
}

/**
 * `file` as committed at `revision` in the repository at `cwd`; undefined only when git says the
 * file is not in that commit (or HEAD is unborn). Any other git failure throws (fail closed: an
 * error is never read as "no config", which would mean the defaults or a config found above).
 */
async function committedFile(cwd: string, revision: string, file: string, commonDir?: string): Promise<string | undefined> {
  // A commit's file never changes (content-addressed): kept by the commit's id, HEAD's read from its ref file.
  const commit = commonDir === undefined ? undefined : /^([0-9a-f]{40}|[0-9a-f]{64})$/.test(revision) ? revision : revision === 'HEAD' ? headCommitOf(cwd, commonDir) : undefined;
  const key = commit !== undefined && commonDir !== undefined && !replaceRefsPossible(commonDir) ? `${commonDir}\0${commit}\0${file}` : undefined;
  const known = key === undefined ? undefined : committedCache.get(key);
  if (known !== undefined) return known;
  const revisionAsked = key !== undefined ? commit! : revision;
  const text = (async () => {
    try {
      return await runGit(['show', `${revisionAsked}:${file}`], { cwd });
    } catch (error) {
      const stderr = error instanceof GitError ? error.stderr : '';
      if (/does not exist in '|exists on disk, but not in '/.test(stderr)) return undefined;
      if (revision === 'HEAD' && key === undefined && /invalid object name 'HEAD'/.test(stderr)) return undefined;
      throw new PolywaveError({ code: configRepositoryUnreadableCode, exitCode: 2, message: `git could not read ${revision}:${file} in ${cwd} (${gitMessage(error)}). Nothing was changed. Fix the repository, then re-run`, details: { directory: cwd, revision } });
    }
  })();
  if (key !== undefined) {
    committedCache.set(key, text);
    if (committedCache.size > 256) committedCache.delete(committedCache.keys().next().value!);
    // A failure is not kept: the next read asks git again.
    text.catch(() => {
      if (committedCache.get(key) === text) committedCache.delete(key);
    });
  }
  return text;
}

/** Committed files already read (or being read), by common dir, commit id and path (undefined: not in that commit). */
const committedCache = new Map<string, Promise<string | undefined>>();

/**
 * The commit HEAD of the checkout at `toplevel` names, read from the files: HEAD a symbolic ref to
 * `refs/heads/…` whose loose ref file holds an object id. Undefined for anything else (detached,
 * packed or missing ref, another ref store, an unusual name): then git is asked for HEAD itself.
 */
function headCommitOf(toplevel: string, commonDir: string): string | undefined {
  const dotGit = path.join(toplevel, '.git');
  let gitDir: string;
  try {
    const stats = lstatSync(dotGit);
    if (stats.isDirectory()) gitDir = dotGit;
    else if (stats.isFile()) {
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
      if (pointer === undefined || pointer === '') return undefined;
      gitDir = path.resolve(toplevel, pointer);
    } else return undefined;
  } catch {
    return undefined; // stays: git is asked (and fails loudly if the repository is broken)
  }
  const ref = /^ref: (refs\/heads\/[A-Za-z0-9._/-]+)\n?$/.exec(readSafely(path.join(gitDir, 'HEAD')) ?? '')?.[1];
  if (ref === undefined || ref.includes('..') || ref.includes('//') || ref.endsWith('/') || ref.endsWith('.lock')) return undefined;
  const refFile = path.join(commonDir, ref);
  if (entryStamp(refFile, false) === undefined || !isPlainFile(refFile)) return undefined; // a symlinked ref: git decides
  return /^([0-9a-f]{40}|[0-9a-f]{64})\n?$/.exec(readSafely(refFile) ?? '')?.[1];
}

/** packed-refs stamps already checked for replace refs. */
const packedRefsChecked = new Map<string, boolean>();

/**
 * Whether `git show <commit>:file` could answer differently for the same commit id: a replace ref
 * (`refs/replace/`, loose or packed) or an environment that redirects them. Then nothing is kept.
 */
function replaceRefsPossible(commonDir: string): boolean {
  if (process.env.GIT_REPLACE_REF_BASE !== undefined) return true;
  if (entryStamp(path.join(commonDir, 'refs', 'replace'), false) !== 'none') return true;
  const packed = path.join(commonDir, 'packed-refs');
  const stamp = entryStamp(packed, true);
  if (stamp === 'none') return false;
  if (stamp === undefined) return true;
  const key = `${packed}\0${stamp}`;
  let has = packedRefsChecked.get(key);
  if (has === undefined) {
    const text = readSafely(packed);
    has = text === undefined || text.includes(' refs/replace/');
    if (entryStamp(packed, true) === stamp) {
      packedRefsChecked.set(key, has);
      if (packedRefsChecked.size > 64) packedRefsChecked.delete(packedRefsChecked.keys().next().value!);
    }
  }
  return has;
}

/** The trusted text of the config that sets the watched keys for a directory. */
export interface TrustedConfigText {
  /** The file whose text is used (the repository root's; outside a repository, the one found upwards); undefined: none. */
  path: string | undefined;
  /** Its text: as committed at the revision inside a repository, as on disk outside; undefined: none (defaults). */
  text: string | undefined;
  /** The repository whose root config this is. */
  repository?: RepositoryPaths;
  /** Nested configs between the start directory and the repository root: never read for the watched keys. */
  ignored: string[];
  /** The start directory's own repository, when the config came from above it (no config of its own). */
  own?: RepositoryPaths;
}

const warned = new Set<string>();

/** A one-line warning on stderr, once per process and text (a nested or uncommitted config is not used). */
function warnOnce(text: string): void {
  if (warned.has(text)) return;
  warned.add(text);
  process.stderr.write(`polywave: warning: ${text}\n`);
}

/**
 * The text of the polywave.config.json that sets the watched keys for `startDir` (see the module
 * comment): the repository root's as committed at `revision` (default HEAD). Throws (exit 2) only
 * when git cannot read the repository (fail closed; see {@link repositoryOf}, {@link committedFile}).
 */
export async function readTrustedConfigText(startDir: string, options: { revision?: string; depth?: number } = {}): Promise<TrustedConfigText> {
  const repository = await repositoryOf(startDir);
  if (repository === undefined) {
    // Outside every repository: a config that cannot be found or read is no config (the defaults,
    // the narrowest settings), as before.
    const located = await locateProjectConfig(startDir).catch(() => undefined);
    if (located === undefined) return { path: undefined, text: undefined, ignored: [] };
    return { path: located, text: await readFile(located, 'utf8').catch(() => undefined), ignored: [] };
  }
  const ignored: string[] = [];
  let directory = realOrSame(path.resolve(startDir));
  while (directory !== repository.toplevel && isInside(repository.toplevel, directory)) {
    const candidate = path.join(directory, projectConfigFileName);
    if (isFile(candidate)) ignored.push(candidate);
    directory = path.dirname(directory);
  }
  for (const file of ignored) {
    const parsed = parseProjectConfig(readSafely(file) ?? '').config;
    const set = watchedConfigKeys.filter((key) => parsed?.[key] !== undefined);
    if (set.length > 0) warnOnce(`${file}: ignored for ${set.join(', ')} — only the repository root's committed ${projectConfigFileName} sets them`);
  }
  const rootFile = path.join(repository.toplevel, projectConfigFileName);
  const revision = options.revision ?? 'HEAD';
  const committed = await committedFile(repository.toplevel, revision, projectConfigFileName, repository.commonDir);
  if (committed !== undefined) return { path: rootFile, text: committed, repository, ignored };
  if (isFile(rootFile)) {
    if (revision === 'HEAD') warnOnce(`${rootFile} is not committed: its sandbox, setup, teardown, agent_clis, dispatch and repos settings are not used until it is`);
    return { path: rootFile, text: undefined, repository, ignored };
  }
  // No config of its own: one above the repository (outside it: as on disk; in an enclosing repository: its root's, committed).
  const parent = path.dirname(repository.toplevel);
  const depth = options.depth ?? 0;
  if (parent === repository.toplevel || depth >= 8) return { path: undefined, text: undefined, repository, ignored };
  const above = await readTrustedConfigText(parent, { depth: depth + 1 });
  return { ...above, repository: above.repository ?? repository, ignored: [...ignored, ...above.ignored], own: repository };
}

/** A trusted config, parsed. */
export interface TrustedConfig {
  path: string | undefined;
  config: ProjectConfig | undefined;
  findings: Finding[];
  repository?: RepositoryPaths;
  /** The accepted config of a blocked change in effect, not HEAD's. */
  blocked?: boolean;
}

/**
 * The parsed trusted config of `startDir` ({@link readTrustedConfigText}) for the readers of the
 * watched keys (sandbox settings, worktree setup and teardown, copies, repositories, dispatch).
 * While a blocked change of the repository's config is in effect ({@link configBlockInEffect}) and
 * no revision is asked for, it is the ACCEPTED config (the blocked wave's base), not HEAD's: a
 * command that did not refuse still never runs with the unaccepted settings.
 */
export async function loadTrustedConfig(startDir: string, options: { revision?: string } = {}): Promise<TrustedConfig> {
  const trusted = await readTrustedConfigText(startDir, options);
  // The block of the repository itself, also when its own config is gone and one above would be read (X25-25).
  const own = options.revision === undefined ? (trusted.own ?? (trusted.path !== undefined && trusted.repository !== undefined && path.dirname(trusted.path) === trusted.repository.toplevel ? trusted.repository : undefined)) : undefined;
  const block = own !== undefined
    ? await configBlockInEffect(own.toplevel) // no catch: an error is not "no block" (fail closed)
    : undefined;
  const text = block ? (block.record.accepted_config ?? undefined) : trusted.text;
  const parsed = text === undefined ? { config: undefined, findings: [] } : parseProjectConfig(text);
  return { path: trusted.path, config: parsed.config, findings: parsed.findings, ...(trusted.repository ? { repository: trusted.repository } : {}), ...(block ? { blocked: true } : {}) };
}

/** The persistent record of a blocked config change (`<git common dir>/polywave/config-block.json`). */
export interface ConfigBlockRecord {
  version: 1;
  /** The IMPL and wave whose merge brought the change. */
  impl: string;
  wave: number;
  /** The wave's base commit: its config is the last accepted one. */
  accepted_commit: string;
  /** The accepted config's text (null: there was none). */
  accepted_config: string | null;
  /** What changed (the finalize-wave detail). */
  changed: string;
  blocked_at: string;
  /**
   * The branch the wave merged into when it is not the one checked out in the repository (a PROGRAM's IMPL branch:
   * P13-03): the change lives there, so that is where it is read and accepted — HEAD's config knows nothing of it.
   */
  target_branch?: string;
}

/** Where a record's change is read: its target branch while that exists, else HEAD. */
async function blockRef(repository: RepositoryPaths, record: ConfigBlockRecord | undefined): Promise<string> {
  if (record?.target_branch === undefined || !/^[A-Za-z0-9._/-]+$/.test(record.target_branch)) return 'HEAD';
  const ref = `refs/heads/${record.target_branch}`;
  const exists = await runGit(['rev-parse', '--verify', '--quiet', ref], { cwd: repository.toplevel }).then(() => true, () => false);
  return exists ? ref : 'HEAD';
}

/** The record's path for a repository. */
export function configBlockPath(repository: RepositoryPaths): string {
  return path.join(repository.commonDir, 'polywave', 'config-block.json');
}

/** The repository's block record, if any (an unreadable record counts as one that accepts nothing: fail closed). */
export async function readConfigBlock(repository: RepositoryPaths): Promise<ConfigBlockRecord | undefined> {
  const file = configBlockPath(repository);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    // Only a missing record is "no block"; one that cannot be read accepts nothing (below).
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    text = '';
  }
  try {
    const data = JSON.parse(text) as Partial<ConfigBlockRecord>;
    if (typeof data.accepted_commit === 'string' && (typeof data.accepted_config === 'string' || data.accepted_config === null)) return data as ConfigBlockRecord;
  } catch {
    // fall through
  }
  return { version: 1, impl: '?', wave: 0, accepted_commit: '', accepted_config: '{}', changed: `unreadable record ${file}`, blocked_at: '' };
}

/**
 * Records a blocked change of `repoRoot`'s config: the config at `acceptedCommit` stays the accepted
 * one. An existing record is kept (its accepted config is older than this wave's base).
 */
export async function recordConfigBlock(repoRoot: string, entry: { impl: string; wave: number; acceptedCommit: string; changed: string; now?: Date; targetBranch?: string }): Promise<string | undefined> {
  const repository = await repositoryOf(repoRoot);
  if (repository === undefined) return undefined;
  if ((await readConfigBlock(repository)) !== undefined) return configBlockPath(repository);
  const accepted = (await committedFile(repository.toplevel, entry.acceptedCommit, projectConfigFileName, repository.commonDir)) ?? null;
  const record: ConfigBlockRecord = {
    version: 1,
    impl: entry.impl,
    wave: entry.wave,
    accepted_commit: entry.acceptedCommit,
    accepted_config: accepted,
    changed: entry.changed,
    blocked_at: (entry.now ?? new Date()).toISOString(),
    ...(entry.targetBranch !== undefined ? { target_branch: entry.targetBranch } : {}),
  };
  const file = configBlockPath(repository);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}

/** Removes the repository's block record (the change was accepted). Returns the removed record. */
export async function clearConfigBlock(repoRoot: string): Promise<ConfigBlockRecord | undefined> {
  const repository = await repositoryOf(repoRoot);
  if (repository === undefined) return undefined;
  const record = await readConfigBlock(repository);
  if (record !== undefined) await rm(configBlockPath(repository), { force: true });
  return record;
}

/** The config a human accepted last with `accept-config` (`<git common dir>/polywave/config-accepted.json`). */
export interface ConfigAcceptance {
  accepted_config: string | null;
  accepted_at: string;
  /** The block it resolved. */
  impl?: string;
  wave?: number;
}

function acceptancePath(repository: RepositoryPaths): string {
  return path.join(repository.commonDir, 'polywave', 'config-accepted.json');
}

/**
 * Accepts HEAD's committed root config of `repoRoot`: removes the block record and remembers the
 * accepted config, so a re-run of the blocked wave's finalize-wave takes it as accepted (no
 * `--accept-changes` needed). Returns the removed record.
 */
export async function acceptHeadConfig(repoRoot: string, now: Date = new Date()): Promise<ConfigBlockRecord | undefined> {
  const repository = await repositoryOf(repoRoot);
  if (repository === undefined) return undefined;
  const record = await readConfigBlock(repository);
  const head = (await committedFile(repository.toplevel, await blockRef(repository, record), projectConfigFileName, repository.commonDir)) ?? null;
  const acceptance: ConfigAcceptance = { accepted_config: head, accepted_at: now.toISOString(), ...(record ? { impl: record.impl, wave: record.wave } : {}) };
  await mkdir(path.dirname(acceptancePath(repository)), { recursive: true });
  await writeFileAtomic(acceptancePath(repository), `${JSON.stringify(acceptance, null, 2)}\n`);
  if (record !== undefined) await rm(configBlockPath(repository), { force: true });
  return record;
}

/**
 * The acceptance when `config` is, in every watched key, the one a human accepted last with
 * `accept-config` for the blocked wave `wave` of `impl` (only that wave's finalize-wave re-runs take it:
 * a later agent restoring an old accepted config is still a change).
 */
export async function acceptedByHuman(repoRoot: string, config: ProjectConfig | undefined, wave: { impl: string; wave: number }): Promise<ConfigAcceptance | undefined> {
  const repository = await repositoryOf(repoRoot);
  if (repository === undefined) return undefined;
  let acceptance: ConfigAcceptance;
  try {
    acceptance = JSON.parse(await readFile(acceptancePath(repository), 'utf8')) as ConfigAcceptance;
  } catch {
    return undefined; // stays: no (readable) acceptance is "not accepted" — the change blocks (fail closed)
  }
  if (typeof acceptance.accepted_config !== 'string' && acceptance.accepted_config !== null) return undefined;
  if (acceptance.impl !== wave.impl || acceptance.wave !== wave.wave) return undefined;
  const accepted = acceptance.accepted_config === null ? undefined : parseProjectConfig(acceptance.accepted_config).config;
  const changes = securityConfigChanges(accepted, config);
  const reverse = securityConfigChanges(config, accepted);
  return changedKeys(changes).length === 0 && changedKeys(reverse).length === 0 ? acceptance : undefined;
}

/** A blocked change still in effect: the record, and what HEAD's config changes against the accepted one. */
export interface ConfigBlockInEffect {
  record: ConfigBlockRecord;
  repository: RepositoryPaths;
  accepted: ProjectConfig | undefined;
  /** HEAD's committed root config (undefined: none). */
  now: ProjectConfig | undefined;
  changes: SecurityConfigChanges;
  keys: string[];
}

/** The human-readable keys of a change. */
export function changedKeys(changes: SecurityConfigChanges): string[] {
  return [...changes.widened.map((entry) => `${entry.key} (+ ${entry.added.join(', ')})`), ...changes.changed];
}

/**
 * The blocked change of `directory`'s repository still in effect: a record exists and HEAD's
 * committed root config differs from the accepted one in a watched key. Undefined when there is no
 * record, or the change was reverted.
 */
export async function configBlockInEffect(directory: string): Promise<ConfigBlockInEffect | undefined> {
  const repository = await repositoryOf(directory);
  if (repository === undefined) return undefined;
  const record = await readConfigBlock(repository);
  if (record === undefined) return undefined;
  const head = await committedFile(repository.toplevel, await blockRef(repository, record), projectConfigFileName, repository.commonDir);
  const accepted = record.accepted_config === null ? undefined : parseProjectConfig(record.accepted_config).config;
  const now = head === undefined ? undefined : parseProjectConfig(head).config;
  const changes = securityConfigChanges(accepted, now);
  // Deleted while a config above the repository would take its place (X25-25): still the blocked change.
  if (head === undefined && record.accepted_config !== null) {
    const above = await readTrustedConfigText(path.dirname(repository.toplevel));
    if (above.path !== undefined) changes.changed.push(`${projectConfigFileName} deleted: ${above.path} (above the repository) would set its settings`);
  }
  const keys = changedKeys(changes);
  if (keys.length === 0) return undefined;
  return { record, repository, accepted, now, changes, keys };
}

/**
 * Refuses (`SANDBOX_CONFIG_CHANGED`, exit 1, nothing done) while a blocked config change of the
 * repository of any of `directories` is in effect, naming the IMPL/wave that brought it and how to
 * accept it.
 */
export async function assertConfigAccepted(directories: readonly string[], command: string): Promise<void> {
  const seen = new Set<string>();
  for (const directory of directories) {
    const block = await configBlockInEffect(directory);
    if (block === undefined || seen.has(block.repository.commonDir)) continue;
    seen.add(block.repository.commonDir);
    throw new PolywaveError({ code: configChangedCode, exitCode: 1, message: configBlockMessage(block, command) });
  }
}

/** The one-line refusal for a blocked change in effect. */
export function configBlockMessage(block: ConfigBlockInEffect, command: string): string {
  const where = block.record.impl === '?' ? block.record.changed : `${path.basename(block.record.impl)} wave ${block.record.wave}`;
  return (
    `${command}: ${path.join(block.repository.toplevel, projectConfigFileName)} at HEAD changes ${block.keys.join('; ')} since ${block.record.accepted_commit.slice(0, 12) || 'the accepted config'}, ` +
    `a change finalize-wave BLOCKED (merged by ${where}) that no one has accepted; nothing was done. Review it, then run: polywave accept-config --repo-dir ${block.repository.toplevel} (or revert it)`
  );
}

// The catches below stay: isDirectory/isFile answer "no" for what cannot be stat'ed (a repository's
// root config is read from git, not the disk; isFile only decides the "not committed" warning and
// the fallback above a repository with no config of its own), readSafely feeds only the warning
// about nested configs, realOrSame keeps a path that cannot be resolved as written.
function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function isPlainFile(file: string): boolean {
  try {
    return lstatSync(file).isFile();
  } catch {
    return false;
  }
}

function readSafely(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function realOrSame(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

