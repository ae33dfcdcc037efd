/**
 * Issue 11, outside attacks X9 #1/#2 and X10 R1/N2a–d: every git command polywave runs outside the
 * sandbox reads git's configuration, and whatever file of it lies in a working tree an agent
 * writes (the main checkout in a solo/integration/scaffold run, its worktree otherwise, or a file
 * merged from an agent's branch) can name programs git then runs as the user: `filter.*.clean`,
 * `diff.*.command`, `gpg.program`, `core.fsmonitor`.
 *
 * Which files apply is decided by git itself, not by reading `.git/config`: one
 * `git config --list --show-origin --show-scope --includes -z` per checkout (with polywave's git
 * environment: GIT_CONFIG_GLOBAL/SYSTEM, HOME, XDG_CONFIG_HOME; `includeIf gitdir:/onbranch:`
 * evaluated as git does for that checkout; nested includes followed). Then:
 * - every `file:` origin is resolved through symlinks (a `.git/shared.cfg -> ../.gitconfig` is the
 *   tree file it points to);
 * - every include directive (`include.path`, `includeIf.<cond>.path`, whatever its condition —
 *   an agent may make it match later) is resolved as git would (relative to the including file,
 *   `~/` from HOME) even when the file does not exist yet: the agent would be the one to write it;
 * - the global and system files git would read (`GIT_CONFIG_GLOBAL`, `~/.gitconfig`,
 *   `$XDG_CONFIG_HOME/git/config`, `GIT_CONFIG_SYSTEM`) likewise, existing or not.
 * A path inside a protected working tree (the main checkout and every linked worktree of the
 * repository) but not inside the common git directory is a finding, with the include chain that
 * leads to it.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, readFileSync, statSync } from 'node:fs';
import { lstat, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { GitError } from './git-error.js';
import { runGit } from './run-git.js';
import { withAbsolutePath } from '../sandbox/search-path.js';

/** The refusal code (exit 1 in a wave step, 2 from a command). */
export const gitConfigInWorkingTreeCode = 'GIT_CONFIG_IN_WORKTREE';

/** One configuration file git reads (or would read, once written) inside a working tree. */
export interface ConfigInTreeFinding {
  /** Absolute path, symlinks resolved. */
  file: string;
  /** How git reaches it: `include.path in /r/.git/config (local)`, `GIT_CONFIG_GLOBAL`, … (outermost last). */
  chain: string[];
}

export interface ConfigOriginsOptions {
  /** The main checkout's top level. */
  root: string;
  /** The repository's common git directory (absolute). */
  commonDir: string;
  /** Other checkouts to list the configuration from (agent worktrees, a target checkout); missing ones are skipped. */
  checkouts?: readonly string[];
  /** The environment polywave's git runs with (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Listings already made in this run, by checkout (finalize checks the main checkout before
   * load-manifest and again with the agent worktrees: git is asked once per checkout). Only for
   * checks a moment apart with nothing but polywave's own steps between them, in one environment.
   */
  listings?: Map<string, Promise<string>>;
}

/** Variables that point git somewhere else than the checkout (createGit drops them too); GIT_CONFIG redirects only `git config`. */
const droppedVariables = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR', 'GIT_INDEX_FILE', 'GIT_PREFIX', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_NAMESPACE', 'GIT_CONFIG'];

/**
 * `candidate` resolved the way the kernel would open it: symlinks followed component by component
 * (also a dangling one, to where it points), `..` taken after the link it follows; a missing part
 * is kept as written.
 */
export async function resolveThroughLinks(candidate: string): Promise<string> {
  const pending = candidate.split('/').filter((part) => part !== '');
  let current = '/';
  let follows = 0;
  let missing = false;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = current === '/' ? `/${part}` : `${current}/${part}`;
    if (missing) {
      current = next;
      continue;
    }
    let isLink: boolean;
    try {
      isLink = (await lstat(next)).isSymbolicLink();
    } catch {
      // Stays: missing (or unreadable: git, as the same user, cannot read past it either) — the rest
      // is kept as written, and that literal path is what is checked against the working trees.
      missing = true;
      current = next;
      continue;
    }
    if (!isLink || follows >= 40) {
      current = next;
      continue;
    }
    follows += 1;
    const target = await readlink(next);
    pending.unshift(...target.split('/').filter((piece) => piece !== ''));
    if (target.startsWith('/')) current = '/';
  }
  return current;
}

/** A catch handler: `value` for ENOENT/ENOTDIR, any other error rethrown. */
function ifMissing<T>(value: T): (error: unknown) => T {
  return (error: unknown) => {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return value;
    throw error;
  };
}

function inside(file: string, directory: string): boolean {
  return file === directory || file.startsWith(directory === '/' ? '/' : `${directory}/`);
}

/** Never fails: a directory that cannot be realpath'd is resolved through its links as far as they exist. */
async function realOrResolved(directory: string): Promise<string> {
  return realpath(directory).catch(() => resolveThroughLinks(path.resolve(directory)));
}

/** The main checkout plus every linked worktree the repository records (`<common>/worktrees/*\/gitdir`). */
async function protectedTrees(options: ConfigOriginsOptions): Promise<string[]> {
  const trees = [options.root, ...(options.checkouts ?? [])];
  const common = path.resolve(options.commonDir);
  if (path.basename(common) === '.git') trees.push(path.dirname(common));
  // No `worktrees/` (or an entry without its `gitdir`, mid-creation): none. Any other error throws —
  // an unprotected worktree is not "no worktree" (fail closed: the caller refuses).
  const names = await readdir(path.join(common, 'worktrees')).catch(ifMissing([] as string[]));
  const recorded = await Promise.all(names.map((name) => readFile(path.join(common, 'worktrees', name, 'gitdir'), 'utf8').catch(ifMissing(''))));
  for (const line of recorded) {
    const gitFile = line.trim();
    if (gitFile !== '' && path.isAbsolute(gitFile)) trees.push(path.dirname(gitFile));
  }
  return [...new Set(await Promise.all(trees.map(realOrResolved)))];
}

interface ConfigEntry {
  scope: string;
  origin: string;
  key: string;
  value: string | undefined;
}

/** Entries of `git config --list --show-scope --show-origin -z`: `scope NUL origin NUL key [LF value] NUL`. */
function parseListing(output: string): ConfigEntry[] {
  const fields = output.split('\0');
  const entries: ConfigEntry[] = [];
  for (let index = 0; index + 2 < fields.length; index += 3) {
    const pair = fields[index + 2]!;
    const newline = pair.indexOf('\n');
    entries.push({ scope: fields[index]!, origin: fields[index + 1]!, key: newline < 0 ? pair : pair.slice(0, newline), value: newline < 0 ? undefined : pair.slice(newline + 1) });
  }
  return entries;
}

function isIncludeDirective(key: string): boolean {
  const lower = key.toLowerCase();
  return lower === 'include.path' || (lower.startsWith('includeif.') && lower.endsWith('.path'));
}

function homeOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const home = env.HOME;
  return home !== undefined && home !== '' ? home : undefined;
}

/** The home directory of user `name` (/etc/passwd, then `getent passwd` for other user databases), or undefined. */
function userHome(name: string): string | undefined {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) return undefined;
  const fromEntry = (line: string | undefined): string | undefined => {
    const fields = (line ?? '').split(':');
    return fields[0] === name && fields[5] ? fields[5] : undefined;
  };
  try {
    const found = fromEntry(readFileSync('/etc/passwd', 'utf8').split('\n').find((line) => line.startsWith(`${name}:`)));
    if (found !== undefined) return found;
  } catch {
    // no /etc/passwd: getent below
  }
  try {
    return fromEntry(execFileSync('getent', ['passwd', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim());
  } catch {
    return undefined;
  }
}

/** git's runtime prefix (`%(prefix)/` in an include path) from its exec path (`<prefix>/libexec/git-core`, `<prefix>/lib/git-core`), or undefined. */
let gitPrefix: string | null | undefined;
function gitInstallPrefix(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (gitPrefix === undefined) {
    try {
      const execPath = execFileSync('git', ['--exec-path'], { encoding: 'utf8', env: withAbsolutePath(env) as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
      gitPrefix = /^(.*)\/(?:libexec|lib)\/git-core\/?$/.exec(execPath)?.[1] ?? null;
    } catch {
      gitPrefix = null; // unknown: the include is an unresolvable target (a finding)
    }
  }
  return gitPrefix === null ? undefined : gitPrefix === '' ? '/' : gitPrefix;
}

/**
 * Where an include directive's value points (git's rules): a path, undefined when git reads no
 * file from it (an empty value), or `{ unresolved }` when it cannot be resolved here (`~user/` of
 * an unknown user, `~/` without HOME, a relative path with no including file, an unknown
 * `%(prefix)`) — a finding (fail closed: a target nobody checked could be in a working tree).
 */
function includeTarget(value: string, includingFile: string | undefined, env: Readonly<Record<string, string | undefined>>): string | { unresolved: string } | undefined {
  if (value === '') return undefined;
  if (value === '~' || value.startsWith('~/')) {
    const home = homeOf(env);
    return home === undefined ? { unresolved: 'no HOME' } : `${home}${value.slice(1)}`;
  }
  if (value.startsWith('~')) {
    // `~user/…`: that user's home, as git's getpwnam (outside attack X13: `~root/…/repo/.gitconfig` went unchecked).
    const slash = value.indexOf('/');
    const user = slash === -1 ? value.slice(1) : value.slice(1, slash);
    const home = userHome(user);
    return home === undefined ? { unresolved: `no home directory found for user ${user}` } : `${home}${slash === -1 ? '' : value.slice(slash)}`;
  }
  if (value.startsWith('%(prefix)/')) {
    const prefix = gitInstallPrefix(env);
    return prefix === undefined ? { unresolved: "git's install prefix is unknown" } : path.join(prefix, value.slice('%(prefix)/'.length));
  }
  if (value.startsWith('/')) return value;
  return includingFile === undefined ? { unresolved: 'relative to a config that is not a file' } : `${path.dirname(includingFile)}/${value}`;
}

/** The global and system files git reads in `env`, whether they exist or not (labelled). */
function defaultConfigFiles(env: Readonly<Record<string, string | undefined>>, cwd: string): Array<{ file: string; label: string }> {
  const files: Array<{ file: string; label: string }> = [];
  const absolute = (file: string) => (file.startsWith('/') ? file : `${cwd}/${file}`);
  if (env.GIT_CONFIG_GLOBAL !== undefined) {
    if (env.GIT_CONFIG_GLOBAL !== '') files.push({ file: absolute(env.GIT_CONFIG_GLOBAL), label: 'GIT_CONFIG_GLOBAL' });
  } else {
    const home = homeOf(env);
    if (home !== undefined) files.push({ file: `${home}/.gitconfig`, label: 'global ~/.gitconfig' });
    const xdg = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : home !== undefined ? `${home}/.config` : undefined;
    if (xdg !== undefined) files.push({ file: `${xdg}/git/config`, label: 'global $XDG_CONFIG_HOME/git/config' });
  }
  const noSystem = env.GIT_CONFIG_NOSYSTEM !== undefined && !/^(0|false|no|off|)$/i.test(env.GIT_CONFIG_NOSYSTEM);
  if (!noSystem && env.GIT_CONFIG_SYSTEM !== undefined && env.GIT_CONFIG_SYSTEM !== '') files.push({ file: absolute(env.GIT_CONFIG_SYSTEM), label: 'GIT_CONFIG_SYSTEM' });
  return files;
}

/**
 * Listings kept across checks, by checkout, common dir and environment, while every file the listing depends
 * on is unchanged ({@link listingStamp}). Each check of a tier listed the main checkout again
 * (8 times per PROGRAM tier).
 */
const listingCache = new Map<string, { stamp: string; output: string }>();

/** Coarse kernel timestamps: a file changed within this long before a listing could change again unseen. */
let settledNs = 1_000_000_000n;

/** Tests only: the settle window (tests change files in the same second and check every change is seen anyway). */
export function setConfigListingSettleNsForTests(ns: bigint): void {
  settledNs = ns;
}

/** lstat and stat identity of `file` (missing: 'none'); undefined when it cannot be read or changed too recently. */
function fileStamp(file: string, now: bigint): string | undefined {
  const one = (follow: boolean): string | undefined => {
    try {
      const stats = follow ? statSync(file, { bigint: true }) : lstatSync(file, { bigint: true });
      // A directory (the checkout's `.git`) by identity: its times move with every index write; its files are stamped one by one.
      if (stats.isDirectory()) return `${stats.dev}:${stats.ino}:${stats.mode}`;
      if (now - stats.mtimeNs < settledNs || now - stats.ctimeNs < settledNs) return undefined;
      return `${stats.dev}:${stats.ino}:${stats.mode}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'none' : undefined;
    }
  };
  const linkStamp = one(false);
  const targetStamp = one(true);
  return linkStamp === undefined || targetStamp === undefined ? undefined : `${file}=${linkStamp}/${targetStamp}`;
}

/** The git directory of the checkout at `cwd` (its `.git` directory, or where its `.git` file points), or undefined. */
function gitDirOf(cwd: string): string | undefined {
  const dotGit = path.join(cwd, '.git');
  try {
    const stats = lstatSync(dotGit);
    if (stats.isDirectory()) return dotGit;
    if (!stats.isFile()) return undefined;
    const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
    return pointer === undefined || pointer === '' ? undefined : path.resolve(cwd, pointer);
  } catch {
    return undefined; // stays: no stamp, git is asked
  }
}

/**
 * A stamp of everything a checkout's listing depends on besides the environment (in the cache
 * key), or undefined (then it is not kept): the checkout's `.git`, its git directory's HEAD (`onbranch:`),
 * `commondir` and `config.worktree`, the common `config`; the system and global files git reads
 * (existing or not); and every file the listing names — each origin and each include target,
 * whatever its condition, existing or not. None of them may have changed in the last second.
 */
function listingStamp(cwd: string, commonDir: string, env: Readonly<Record<string, string | undefined>>, output: string | undefined): string | undefined {
  const now = BigInt(Date.now()) * 1_000_000n;
  const gitDir = gitDirOf(cwd);
  if (gitDir === undefined) return undefined;
  const files = [path.join(cwd, '.git'), path.join(gitDir, 'HEAD'), path.join(gitDir, 'commondir'), path.join(gitDir, 'config.worktree'), path.join(gitDir, 'config'), path.join(path.resolve(commonDir), 'config'), '/etc/gitconfig'];
  const prefix = gitInstallPrefix(env);
  if (prefix !== undefined) files.push(path.join(prefix, 'etc', 'gitconfig'));
  for (const candidate of defaultConfigFiles(env, cwd)) files.push(candidate.file);
  if (output !== undefined) {
    for (const entry of parseListing(output)) {
      const origin = entry.origin.startsWith('file:') ? entry.origin.slice('file:'.length) : undefined;
      const literal = origin === undefined ? undefined : origin.startsWith('/') ? origin : `${cwd}/${origin}`;
      if (literal !== undefined) files.push(literal);
      else if (entry.origin !== 'command line:' && entry.scope !== 'command') return undefined; // blobs, stdin: not kept
      if (!isIncludeDirective(entry.key) || entry.value === undefined) continue;
      const target = includeTarget(entry.value, literal, env);
      if (target === undefined) continue;
      if (typeof target !== 'string') return undefined;
      files.push(target);
    }
  }
  const stamps: string[] = [];
  for (const file of new Set(files)) {
    const stamp = fileStamp(file, now);
    if (stamp === undefined) return undefined;
    stamps.push(stamp);
  }
  return stamps.join('|');
}

/** `git config --list --show-origin --show-scope --includes -z` in `cwd`, from {@link listingCache} while its stamp holds. */
function listConfig(cwd: string, commonDir: string, env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const key = `${cwd}\0${commonDir}\0${environmentKey(env)}`;
  // Checks made while git is listing this checkout (the tier's IMPLs prepare at once) share its answer.
  let listing = listingsInFlight.get(key);
  if (listing === undefined) {
    listing = listConfigOnce(cwd, commonDir, env, key);
    listingsInFlight.set(key, listing);
    const done = () => listingsInFlight.delete(key);
    listing.then(done, done);
  }
  return listing;
}

const listingsInFlight = new Map<string, Promise<string>>();

function environmentKey(env: Readonly<Record<string, string | undefined>>): string {
  return Object.keys(env)
    .sort()
    .map((name) => `${name}=${env[name]}`)
    .join('\0');
}

async function listConfigOnce(cwd: string, commonDir: string, env: Readonly<Record<string, string | undefined>>, key: string): Promise<string> {
  const known = listingCache.get(key);
  if (known !== undefined && listingStamp(cwd, commonDir, env, known.output) === known.stamp) return known.output;
  const started = Date.now();
  const output = await runGit(['config', '--list', '--show-origin', '--show-scope', '--includes', '-z'], { cwd, env });
  // Stamped after git read: a file changed since it read shows a time under a second old (not kept), so the
  // listing is kept only when git answered within half of that.
  const stamp = Date.now() - started > 500 ? undefined : listingStamp(cwd, commonDir, env, output);
  if (stamp !== undefined) {
    listingCache.delete(key);
    listingCache.set(key, { stamp, output });
    if (listingCache.size > 128) listingCache.delete(listingCache.keys().next().value!);
  } else listingCache.delete(key);
  return output;
}

/**
 * The configuration files git reads for the repository at `root` (and in each existing checkout)
 * that lie inside a working tree of the repository, outside its git directory. One git process
 * per checkout. Throws GitError when git cannot read its configuration (polywave's git would fail
 * the same way).
 */
export async function configFilesInWorkingTrees(options: ConfigOriginsOptions): Promise<ConfigInTreeFinding[]> {
  const env: Record<string, string | undefined> = { ...(options.env ?? process.env) };
  for (const name of droppedVariables) delete env[name];
  const root = path.resolve(options.root);
  const [trees, gitDirectory] = await Promise.all([protectedTrees(options), realOrResolved(options.commonDir)]);
  const checkouts = [root];
  for (const checkout of options.checkouts ?? []) {
    const absolute = path.resolve(checkout);
    // a checkout without `.git` is skipped (documented: missing); one that cannot be looked at throws (fail closed)
    if (!checkouts.includes(absolute) && (await lstat(path.join(absolute, '.git')).then(() => true, ifMissing(false)))) checkouts.push(absolute);
  }
  const list = (cwd: string): Promise<string> => {
    let listing = options.listings?.get(cwd);
    if (listing === undefined) {
      listing = listConfig(cwd, options.commonDir, env);
      options.listings?.set(cwd, listing);
      // a failed listing is not remembered: the next check asks git again (and refuses again)
      listing.catch(() => options.listings?.delete(cwd));
    }
    return listing;
  };
  const listings = await Promise.all(checkouts.map((cwd) => list(cwd).then((output) => ({ cwd, entries: parseListing(output) }))));

  // file (resolved) → how git gets there (its first-seen include chain).
  const reached = new Map<string, string[]>();
  const unresolved: ConfigInTreeFinding[] = [];
  const note = (file: string, chain: string[]) => {
    if (!reached.has(file)) reached.set(file, chain);
  };
  for (const candidate of defaultConfigFiles(env, root)) note(await resolveThroughLinks(candidate.file), [candidate.label]);
  for (const { cwd, entries } of listings) {
    const resolvedOrigins = new Map<string, string>();
    const resolveOrigin = async (raw: string): Promise<string> => {
      let resolved = resolvedOrigins.get(raw);
      if (resolved === undefined) {
        resolved = await resolveThroughLinks(raw.startsWith('/') ? raw : `${cwd}/${raw}`);
        resolvedOrigins.set(raw, resolved);
      }
      return resolved;
    };
    for (const entry of entries) {
      const fileOrigin = entry.origin.startsWith('file:') ? entry.origin.slice('file:'.length) : undefined;
      const origin = fileOrigin === undefined ? undefined : await resolveOrigin(fileOrigin);
      if (origin !== undefined) note(origin, [`${entry.scope} config`]);
      if (!isIncludeDirective(entry.key) || entry.value === undefined) continue;
      const literal = fileOrigin === undefined ? undefined : fileOrigin.startsWith('/') ? fileOrigin : `${cwd}/${fileOrigin}`;
      const target = includeTarget(entry.value, literal, env);
      if (target === undefined) continue;
      if (typeof target !== 'string') {
        unresolved.push({ file: entry.value, chain: [`${entry.key} in ${origin ?? entry.origin} (${entry.scope}): cannot be resolved (${target.unresolved})`] });
        continue;
      }
      const resolved = await resolveThroughLinks(target);
      const parent = origin === undefined ? [] : (reached.get(origin) ?? []);
      const lexical = path.resolve(target);
      const through = lexical === resolved ? '' : `, through the symlink ${lexical}`;
      note(resolved, [`${entry.key} in ${origin ?? entry.origin} (${entry.scope})${through}`, ...parent.filter((link) => !link.endsWith(' config'))]);
    }
  }
  const findings: ConfigInTreeFinding[] = [...unresolved];
  for (const [file, chain] of reached) {
    if (inside(file, gitDirectory)) continue;
    if (trees.some((tree) => inside(file, tree))) findings.push({ file, chain });
  }
  return findings;
}

/** `file: via include.path in … ← …` for messages. */
export function describeConfigChains(findings: readonly ConfigInTreeFinding[]): string {
  return findings.map((finding) => `${finding.file}: via ${finding.chain.join(' ← ') || 'git config'}`).join('; ');
}

/** The one-line refusal, naming the files and how git reaches them; `labelled` files carry a repository label. */
export function gitConfigInWorkingTreeMessage(labelled: ReadonlyArray<{ label: string; finding: ConfigInTreeFinding }>): string {
  const files = labelled.map(({ label, finding }) => `${label}${finding.file}`).join(', ');
  const chains = describeConfigChains(labelled.map(({ finding }) => finding));
  return `${gitConfigInWorkingTreeCode}: the repository's git config includes ${files}, inside the working tree agents write (${chains}) — git would run programs named there (filters, diff commands, gpg.program) outside the sandbox. Nothing was written. Move the included file into .git/ or outside the repository (or drop the include / GIT_CONFIG_GLOBAL), then re-run.`;
}

/** A git failure while listing, as a finding-shaped refusal reason (fail closed). */
export function listingFailure(error: unknown): string {
  if (error instanceof GitError) return (error.stderr || error.message).trim().split('\n')[0] ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

/** One repository to check: its main checkout, common git directory and the checkouts to list from. */
export interface GitConfigCheckTarget {
  /** Prefix for messages (`repo-key: `), '' for a single repository. */
  label: string;
  root: string;
  commonDir: string;
  checkouts?: readonly string[];
}

/** What {@link checkGitConfigOrigins} decided: nothing found, or the one-line refusal. */
export type GitConfigCheck = { refused: false; checked: number } | { refused: true; detail: string; files: string[] };

/**
 * The GIT_CONFIG_IN_WORKTREE check for a set of repositories (see the module comment): refused
 * when a config file git reads, or would read once written, lies in a working tree; also when
 * git cannot list its configuration (fail closed: polywave's git would fail too).
 */
export async function checkGitConfigOrigins(targets: readonly GitConfigCheckTarget[], env: Readonly<Record<string, string | undefined>> | undefined, listings?: Map<string, Promise<string>>): Promise<GitConfigCheck> {
  const results = await Promise.all(
    targets.map(async (target) => {
      try {
        return { target, findings: await configFilesInWorkingTrees({ root: target.root, commonDir: target.commonDir, ...(target.checkouts ? { checkouts: target.checkouts } : {}), ...(env ? { env } : {}), ...(listings ? { listings } : {}) }) };
      } catch (error) {
        return { target, failure: listingFailure(error) };
      }
    }),
  );
  const failure = results.find((result) => result.failure !== undefined);
  if (failure?.failure !== undefined) {
    return { refused: true, files: [], detail: `${gitConfigInWorkingTreeCode}: ${failure.target.label}git could not list its configuration in ${failure.target.root} (${failure.failure}), so which files it reads is unknown. Nothing was written. Fix the git configuration, then re-run.` };
  }
  const labelled = results.flatMap((result) => (result.findings ?? []).map((finding) => ({ label: result.target.label, finding })));
  if (labelled.length === 0) return { refused: false, checked: targets.length };
  return { refused: true, detail: gitConfigInWorkingTreeMessage(labelled), files: labelled.map(({ label, finding }) => `${label}${finding.file}`) };
}

/**
 * The common git directory of the checkout at `root`, read from `.git` (no git process); undefined
 * when unclear — the catches below stay because every caller then asks git (`rev-parse
 * --git-common-dir`), which fails loudly. A `commondir` that exists but cannot be read is unclear too.
 */
export async function commonDirOfCheckout(root: string): Promise<string | undefined> {
  const dotGit = path.join(root, '.git');
  const info = await stat(dotGit).catch(() => undefined);
  if (info === undefined) return undefined;
  if (info.isDirectory()) return dotGit;
  const pointer = /^gitdir:\s*(.+)$/m.exec(await readFile(dotGit, 'utf8').catch(() => ''))?.[1]?.trim();
  if (pointer === undefined || pointer === '') return undefined;
  const gitDir = path.resolve(root, pointer);
  let common: string;
  try {
    common = (await readFile(path.join(gitDir, 'commondir'), 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    common = '';
  }
  return common === '' ? gitDir : path.resolve(gitDir, common);
}

/**
 * For the commands whose agent works in a checkout without a prepare step (run-integration,
 * run-scaffold): throws GIT_CONFIG_IN_WORKTREE (exit 2, before anything is written) when a git
 * config file of the repository at `root` lies in a working tree.
 */
export async function assertGitConfigOutsideWorkingTrees(root: string, env: Readonly<Record<string, string | undefined>> | undefined, checkouts: readonly string[] = []): Promise<void> {
  const commonDir = (await commonDirOfCheckout(root)) ?? path.resolve(root, (await runGit(['rev-parse', '--git-common-dir'], { cwd: root, ...(env ? { env } : {}) })).trim());
  const check = await checkGitConfigOrigins([{ label: '', root, commonDir, checkouts }], env);
  if (check.refused) throw new PolywaveError({ code: gitConfigInWorkingTreeCode, message: check.detail.slice(`${gitConfigInWorkingTreeCode}: `.length), exitCode: 2, details: { files: check.files } });
}
