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
import { readFileSync, realpathSync, statSync } from 'node:fs';
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
    output = await runGit(['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir'], { cwd });
  } catch (error) {
    // Not in a work tree (git says so): no repository, the config above is read as it is. Any other
    // failure (a broken `.git`, dubious ownership) fails closed: which committed config to trust is unknown.
    if (error instanceof GitError && /not a git repository|must be run in a work tree/i.test(error.stderr)) return undefined;
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
async function committedFile(cwd: string, revision: string, file: string): Promise<string | undefined> {
  try {
    return await runGit(['show', `${revision}:${file}`], { cwd });
  } catch (error) {
    const stderr = error instanceof GitError ? error.stderr : '';
    if (/does not exist in '|exists on disk, but not in '/.test(stderr)) return undefined;
    if (revision === 'HEAD' && /invalid object name 'HEAD'/.test(stderr)) return undefined;
    throw new PolywaveError({ code: configRepositoryUnreadableCode, exitCode: 2, message: `git could not read ${revision}:${file} in ${cwd} (${gitMessage(error)}). Nothing was changed. Fix the repository, then re-run`, details: { directory: cwd, revision } });
  }
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
  const committed = await committedFile(repository.toplevel, revision, projectConfigFileName);
  if (committed !== undefined) return { path: rootFile, text: committed, repository, ignored };
  if (isFile(rootFile)) {
    if (revision === 'HEAD') warnOnce(`${rootFile} is not committed: its sandbox, setup, teardown, dispatch and repos settings are not used until it is`);
    return { path: rootFile, text: undefined, repository, ignored };
  }
  // No config of its own: one above the repository (outside it: as on disk; in an enclosing repository: its root's, committed).
  const parent = path.dirname(repository.toplevel);
  const depth = options.depth ?? 0;
  if (parent === repository.toplevel || depth >= 8) return { path: undefined, text: undefined, repository, ignored };
  const above = await readTrustedConfigText(parent, { depth: depth + 1 });
  return { ...above, repository: above.repository ?? repository, ignored: [...ignored, ...above.ignored] };
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
  const block = options.revision === undefined && trusted.repository !== undefined && trusted.path !== undefined && path.dirname(trusted.path) === trusted.repository.toplevel
    ? await configBlockInEffect(trusted.repository.toplevel) // no catch: an error is not "no block" (fail closed)
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
export async function recordConfigBlock(repoRoot: string, entry: { impl: string; wave: number; acceptedCommit: string; changed: string; now?: Date }): Promise<string | undefined> {
  const repository = await repositoryOf(repoRoot);
  if (repository === undefined) return undefined;
  if ((await readConfigBlock(repository)) !== undefined) return configBlockPath(repository);
  const accepted = (await committedFile(repository.toplevel, entry.acceptedCommit, projectConfigFileName)) ?? null;
  const record: ConfigBlockRecord = {
    version: 1,
    impl: entry.impl,
    wave: entry.wave,
    accepted_commit: entry.acceptedCommit,
    accepted_config: accepted,
    changed: entry.changed,
    blocked_at: (entry.now ?? new Date()).toISOString(),
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
  const head = (await committedFile(repository.toplevel, 'HEAD', projectConfigFileName)) ?? null;
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
  const head = await committedFile(repository.toplevel, 'HEAD', projectConfigFileName);
  const accepted = record.accepted_config === null ? undefined : parseProjectConfig(record.accepted_config).config;
  const now = head === undefined ? undefined : parseProjectConfig(head).config;
  const changes = securityConfigChanges(accepted, now);
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

