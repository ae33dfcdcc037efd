/**
 * Issue 13 item 3: what a fresh agent worktree needs before its gates can run — dependencies,
 * ports, env files. Per repository, polywave.config.json may give a `setup` (and `teardown`)
 * command and a `copy` list; without a `setup`, built-in defaults share the main checkout's
 * installed dependencies (node_modules, .venv) and write a go.work for multi-module Go
 * repositories. Runs once per NEW worktree (a reused one only when its last setup did not finish),
 * bounded in parallel, with a timeout; prepare-wave's `--no-workspace-setup` turns it all off.
 * See docs/worktree-setup.md for the trade-offs.
 */
import { constants as fsConstants } from 'node:fs';
import { copyFile, lstat, mkdir, readFile, readdir, realpath, stat, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import { repositoryLocatingVariables } from '../../git/harden.js';
import { runShellCommand, type ShellCommandResult } from '../../gates/run-command.js';
import { runInGateSandbox, type GateSandboxRun } from '../../gates/run-gate.js';
import { withoutCredentials } from '../../sandbox/credential-variables.js';
import {
  configuredWorktreeSetup,
  configuredWorktreeSetupSettings,
  type ProjectConfig,
  type SetupCommand,
  type WorktreeSetupConfig,
  type WorktreeSetupEntry,
} from '../../store/project-config.js';
import { loadTrustedConfig } from '../../store/trusted-config.js';
import type { StepDefinition } from '../step.js';
import { errorText, listForDetail, manifestOf, type PrepareContext } from './context.js';
import { mapBounded } from './parallel.js';
import { describeFindings, diffFingerprints } from '../tamper-check.js';
import { fingerprintPath, fingerprintTree, type PathFingerprint } from '../tamper-record.js';
import { writeTextAtomic } from './write-text.js';

/** Codes of this module (no Go equivalent: the Go tool runs no per-worktree setup). */
export const worktreeSetupCodes = {
  /** A setup command (or a default install) failed, timed out or could not start. */
  failed: 'WORKTREE_SETUP_FAILED',
  /** A `copy` entry names something outside the repository (absolute, `..`, a symlink out). */
  copyRefused: 'WORKTREE_SETUP_COPY_REFUSED',
  /** polywave.config.json is unreadable or its setup keys have the wrong shape. */
  configInvalid: 'N014_CONFIG_INVALID',
  /** A setup changed the repository's git configuration or hooks (outside attack X21-10). */
  tampered: 'WORKTREE_SETUP_TAMPERED',
} as const;

/** The per-worktree record, in the worktree's own git directory (outside the agent's reach). */
const recordName = 'polywave-setup.json';
const logName = 'polywave-setup.log';

/** Lockfiles in the order a package manager is chosen. */
const lockfiles: ReadonlyArray<readonly [file: string, manager: 'npm' | 'pnpm' | 'yarn' | 'bun']> = [
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['bun.lock', 'bun'],
  ['bun.lockb', 'bun'],
];

/** Variables that would point git (inside a setup script) at another repository. */

const excludeBegin = '# >>> polywave worktree setup (shared dependencies, copied files; managed) >>>';
const excludeEnd = '# <<< polywave worktree setup <<<';

/** A worktree-setup failure with its code (thrown inside one agent's setup, reported per agent). */
class WorktreeSetupError extends Error {
  readonly code: string;
  readonly details: Partial<AgentSetupOutcome>;
  constructor(code: string, message: string, details: Partial<AgentSetupOutcome> = {}) {
    super(message);
    this.name = 'WorktreeSetupError';
    this.code = code;
    this.details = details;
  }
}

/** The env a setup/teardown command sees besides the caller's. */
export interface WorktreeSetupEnv {
  POLYWAVE_WORKTREE: string;
  POLYWAVE_ROOT: string;
  POLYWAVE_AGENT: string;
  POLYWAVE_SLUG: string;
  POLYWAVE_WAVE: string;
  POLYWAVE_PORT: string;
  POLYWAVE_BRANCH: string;
}

/** What {@link setupWorktree} did for one agent. */
export interface AgentSetupOutcome {
  agent: string;
  worktree: string;
  port: number;
  ok: boolean;
  /** One line per thing done (`copied .env`, `node_modules → main checkout (lockfile identical)`, `setup: npm run prep (exit 0, 1.2 s)`). */
  actions: string[];
  /** Root-relative paths the setup created that git must not see (excluded unless already ignored). */
  created: string[];
  duration_ms: number;
  code?: string;
  error?: string;
  command?: string;
  exit_code?: number;
  timed_out?: boolean;
  /** The last lines of the failing command's output. */
  output_tail?: string;
  log_path?: string;
}

/** The per-worktree record (status `pending` while a setup runs or after it was killed). */
interface SetupRecord {
  v: 1;
  status: 'pending' | 'done' | 'failed';
  agent: string;
  slug: string;
  wave: number;
  port: number;
  branch: string;
  root: string;
  updated_at: string;
  /** A22-23: not set up here — the agent runs as a job on a worker, which sets up its own worktree; a local setup runs only before local pre-merge gates. */
  deferred?: true;
}

/** Options of {@link setupWorktree}. */
export interface SetupWorktreeOptions {
  worktree: string;
  /** The repository's main checkout (shared dependencies come from here). */
  root: string;
  /** The worktree's own git directory (`<common>/worktrees/<name>`): record and log go there. */
  gitDir: string;
  agent: string;
  slug: string;
  wave: number;
  branch: string;
  port: number;
  entry: WorktreeSetupEntry;
  settings: WorktreeSetupConfig;
  /** Write a go.work for multi-module Go repositories (prepare-wave `--no-gowork` turns it off). */
  goWork: boolean;
  env: Readonly<Record<string, string | undefined>>;
  /** Git in the worktree. */
  git: Git;
  /** Git in the main checkout (matches `copy` globs against its untracked files). */
  rootGit: Git;
  /** The tracked package.json/go.mod files, shared by the worktrees created from one base (default: asked in this worktree). */
  tracked?: ReturnType<typeof trackedManifests>;
  now: () => Date;
  signal?: AbortSignal;
}

/** `POLYWAVE_*` variables of one agent's setup/teardown. */
export function setupEnvironment(options: { worktree: string; root: string; agent: string; slug: string; wave: number; port: number; branch: string }): WorktreeSetupEnv {
  return {
    POLYWAVE_WORKTREE: options.worktree,
    POLYWAVE_ROOT: options.root,
    POLYWAVE_AGENT: options.agent,
    POLYWAVE_SLUG: options.slug,
    POLYWAVE_WAVE: String(options.wave),
    POLYWAVE_PORT: String(options.port),
    POLYWAVE_BRANCH: options.branch,
  };
}

/** Single-quotes `value` for bash (argv commands never go through word splitting or expansion). */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A configured command as the text `bash -c` runs: a string as written, an argv quoted word by word. */
export function commandText(command: SetupCommand): string {
  return typeof command === 'string' ? command : `exec ${command.map(shellQuote).join(' ')}`;
}

function describeCommand(command: SetupCommand): string {
  return typeof command === 'string' ? command : JSON.stringify(command);
}

function tailOf(output: string, lines = 20): string {
  return output.replace(/\s+$/, '').split('\n').slice(-lines).join('\n');
}

function lastLine(output: string): string {
  const line = output.replace(/\s+$/, '').split('\n').pop() ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

async function exists(target: string): Promise<boolean> {
  return lstat(target).then(
    () => true,
    () => false,
  );
}

async function isDirectory(target: string): Promise<boolean> {
  return stat(target).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
}

/**
 * Runs a setup/teardown command in `cwd`: own process group, timeout, output kept in `logPath`.
 * `sandboxed` (the repository's configured `setup` and `teardown`, issue 11): the command is the
 * project's own code — and a teardown runs after the agent, on a worktree the agent wrote (a script it
 * changed) — so it runs like a quality gate: in the OS sandbox with the gate plan, `cwd` (the worktree)
 * writable in place (no throwaway checkout: what it installs there is the point), a scratch TMPDIR and
 * the repository's gate build cache, `.git` read-only, secrets unreadable, network = the committed
 * `sandbox.network.allow`, and never with credentials (model keys, tokens) in its environment. Where the
 * sandbox is unavailable it runs unsandboxed, as gates do there, still without credentials; a sandbox
 * that cannot start is a failed run (exit -1), never an unsandboxed one. Polywave's own default install
 * (`npm ci` … for a changed lockfile or a workspaces repository) runs the same way (outside attack X21-10: it
 * ran on the host, and a `postinstall` an agent of an earlier wave added to package.json read ~/.ssh and
 * planted a git hook), with `allowHosts` (the package manager's public registry) allowed too.
 */
async function runCommand(command: SetupCommand, options: { cwd: string; env: Record<string, string>; timeoutMs: number; logPath: string; signal?: AbortSignal; sandboxed?: boolean; allowHosts?: readonly string[]; hiddenAround?: readonly string[] }): Promise<ShellCommandResult> {
  const text = commandText(command);
  let env = options.env;
  const shell = {
    timeoutMs: options.timeoutMs,
    logPath: options.logPath,
    outputLimits: { headLines: 20, tailLines: 60, maxBytes: 16 * 1024 },
    ...(options.signal ? { signal: options.signal } : {}),
  };
  let sandboxed: GateSandboxRun | undefined;
  if (options.sandboxed === true) {
    env = {};
    for (const [name, value] of Object.entries(withoutCredentials(options.env))) if (value !== undefined) env[name] = value;
    const ran = await runInGateSandbox(text, options.cwd, { env, throwaway: false, ...(options.allowHosts ? { allowHosts: options.allowHosts } : {}), ...(options.hiddenAround ? { hiddenAround: options.hiddenAround } : {}), ...(options.signal ? { signal: options.signal } : {}) }, shell);
    if (ran && 'error' in ran) {
      await writeFile(options.logPath, `${ran.error}\n`).catch(() => undefined);
      return { exitCode: -1, signal: null, timedOut: false, canceled: false, durationMs: 0, output: ran.error, outputTruncated: false, error: ran.error };
    }
    sandboxed = ran;
  }
  const result: ShellCommandResult = sandboxed ? sandboxed.run : await runShellCommand(text, { ...shell, cwd: options.cwd, env });
  if (!result.outputTruncated) await writeFile(options.logPath, result.output).catch(() => undefined);
  return result;
}

function commandEnvironment(base: Readonly<Record<string, string | undefined>>, extra: WorktreeSetupEnv): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) if (value !== undefined) environment[name] = value;
  for (const name of repositoryLocatingVariables) delete environment[name];
  return { ...environment, ...extra };
}

/** Throws the coded failure of a command that did not exit 0. */
function failedCommand(label: string, command: SetupCommand, result: ShellCommandResult, logPath: string): never {
  const why = result.timedOut ? 'timed out' : result.error && result.exitCode === -1 ? result.error : `exited ${result.exitCode}`;
  const tail = tailOf(result.output);
  throw new WorktreeSetupError(worktreeSetupCodes.failed, `${label} \`${describeCommand(command)}\` ${why} after ${(result.durationMs / 1000).toFixed(1)} s${tail ? ` — ${lastLine(tail)}` : ''}`, {
    command: describeCommand(command),
    exit_code: result.exitCode,
    timed_out: result.timedOut,
    output_tail: tail,
    log_path: logPath,
  });
}

/**
 * A `copy` entry checked as written: relative, no `..` segment, no NUL. Refused entries throw
 * WORKTREE_SETUP_COPY_REFUSED (the config names something outside the repository).
 */
export function checkCopyPattern(pattern: string): void {
  const refuse = (why: string): never => {
    throw new WorktreeSetupError(worktreeSetupCodes.copyRefused, `copy entry ${JSON.stringify(pattern)} refused: ${why}`);
  };
  if (pattern.includes('\0')) refuse('it contains a NUL byte');
  if (path.isAbsolute(pattern) || /^[A-Za-z]:[\\/]/.test(pattern) || pattern.startsWith('~')) refuse('an absolute path (entries are relative to the repository root)');
  if (pattern.split(/[\\/]+/).includes('..')) refuse('it leaves the repository (`..`)');
  if (pattern.split(/[\\/]+/).includes('.git')) refuse('git metadata is never copied');
  if (['.', ''].includes(path.normalize(pattern.trim()).replace(/[\\/]+$/, ''))) refuse('that is the whole repository (name the untracked files)');
}

/**
 * Copies the `copy` entries (paths or globs, relative to the repository root) from the main
 * checkout into the worktree. Each source must really be inside the main checkout (a symlink —
 * or a symlinked parent — pointing out is refused), each destination must stay inside the worktree
 * (a committed symlinked directory pointing out is refused), and nothing that exists in the
 * worktree is overwritten (tracked files win; O_EXCL also refuses a planted symlink).
 */
async function copyEntries(options: SetupWorktreeOptions, actions: string[], created: string[]): Promise<void> {
  if (options.entry.copy.length === 0) return;
  const rootReal = await realpath(options.root);
  const worktreeReal = await realpath(options.worktree);
  for (const pattern of options.entry.copy) checkCopyPattern(pattern);
  const refuse = (entry: string, why: string): never => {
    throw new WorktreeSetupError(worktreeSetupCodes.copyRefused, `copy entry ${JSON.stringify(entry)} refused: ${why}`);
  };
  for (const pattern of options.entry.copy) {
    // A literal path is looked at as written (so a symlinked parent is seen and refused); a glob
    // is matched by git against the main checkout's untracked files (git never follows a symlink).
    const matches = /[*?[\]]/.test(pattern)
      ? (await options.rootGit.run(['ls-files', '-z', '--others', '-x', 'node_modules', '-x', '/.claude/worktrees/', '--', `:(glob)${pattern}`])).stdout.split('\0').filter((file) => file !== '')
      : (await exists(path.join(options.root, pattern)))
        ? [path.normalize(pattern)]
        : [];
    if (matches.length === 0) {
      actions.push(`copy ${pattern}: nothing to copy in the main checkout`);
      continue;
    }
    for (const match of matches.sort()) {
      const relative = match.replace(/\/+$/, '');
      const source = path.join(options.root, relative);
      const sourceReal = await realpath(source).catch(() => undefined);
      if (sourceReal === undefined || !isInside(sourceReal, rootReal)) refuse(relative, `it resolves outside the main checkout${sourceReal ? ` (${sourceReal})` : ''}`);
      const sourceStats = await lstat(source);
      if (sourceStats.isSymbolicLink()) refuse(relative, 'it is a symlink (only regular files are copied)');
      const files = sourceStats.isDirectory() ? await regularFilesUnder(source, relative, refuse) : sourceStats.isFile() ? [relative] : refuse(relative, 'not a regular file or directory');
      for (const file of files) {
        const destination = path.join(options.worktree, file);
        // The destination's directory must be the worktree's own (a committed symlinked directory could point anywhere).
        await mkdirInside(path.dirname(destination), worktreeReal, (why) => refuse(file, why));
        try {
          await copyFile(path.join(options.root, file), destination, fsConstants.COPYFILE_EXCL);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
            actions.push(`copy ${file}: already in the worktree (kept)`);
            continue;
          }
          throw error;
        }
        created.push(file.split(path.sep).join('/'));
        actions.push(`copied ${file}`);
      }
    }
  }
}

/** Regular files under a directory being copied; a symlink inside is refused; nested repositories and worktrees are left out. */
async function regularFilesUnder(directory: string, relative: string, refuse: (entry: string, why: string) => never): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(directory, { withFileTypes: true });
  if (entries.some((entry) => entry.name === '.git')) return found;
  for (const entry of entries) {
    const child = path.join(relative, entry.name);
    if (entry.name === '.git' || entry.name === 'node_modules') continue;
    if (entry.isSymbolicLink()) refuse(child, 'it is a symlink (only regular files are copied)');
    if (entry.isDirectory()) found.push(...(await regularFilesUnder(path.join(directory, entry.name), child, refuse)));
    else if (entry.isFile()) found.push(child);
  }
  return found;
}

/** mkdir -p, then proves the directory is really inside `worktreeReal`. */
async function mkdirInside(directory: string, worktreeReal: string, refuse: (why: string) => never): Promise<void> {
  // Check the existing part first: mkdir through a symlinked parent would create directories outside.
  let probe = directory;
  while (!(await exists(probe))) probe = path.dirname(probe);
  const probeReal = await realpath(probe);
  if (!isInside(probeReal, worktreeReal)) refuse(`its directory resolves outside the worktree (${probeReal})`);
  await mkdir(directory, { recursive: true });
  const real = await realpath(directory);
  if (!isInside(real, worktreeReal)) refuse(`its directory resolves outside the worktree (${real})`);
}

/**
 * The tracked package.json and go.mod files of the worktree (one `git ls-files`, asked at most
 * once per worktree and only when a default needs it).
 */
function trackedManifests(git: Git): () => Promise<{ packageDirectories: string[]; goModules: string[] }> {
  let pending: Promise<{ packageDirectories: string[]; goModules: string[] }> | undefined;
  return () =>
    (pending ??= git.run(['ls-files', '-z', '--', 'package.json', ':(glob)**/package.json', 'go.mod', ':(glob)**/go.mod']).then(({ stdout }) => {
      const files = stdout.split('\0').filter((file) => file !== '' && !file.split('/').includes('node_modules'));
      const directoryOf = (file: string): string => (path.posix.dirname(file) === '.' ? '' : path.posix.dirname(file));
      return {
        // Root-relative directories of the package.json files (`''` = the root), at most 200.
        packageDirectories: [...new Set(files.filter((file) => path.posix.basename(file) === 'package.json').map(directoryOf))].sort().slice(0, 200),
        goModules: files.filter((file) => path.posix.basename(file) === 'go.mod' && !file.split('/').includes('vendor') && !file.split('/').includes('testdata')).sort(),
      };
    }));
}

/** The install command of a package manager, preferring what its cache already has. */
function installCommand(manager: 'npm' | 'pnpm' | 'yarn' | 'bun', berry: boolean): string[] {
  switch (manager) {
    case 'npm':
      return ['npm', 'ci', '--prefer-offline', '--no-audit', '--no-fund'];
    case 'pnpm':
      return ['pnpm', 'install', '--frozen-lockfile', '--prefer-offline'];
    case 'yarn':
      return berry ? ['yarn', 'install', '--immutable'] : ['yarn', 'install', '--frozen-lockfile', '--prefer-offline'];
    case 'bun':
      return ['bun', 'install', '--frozen-lockfile'];
  }
}

/**
 * Node default: with the same lockfile as the main checkout (and no workspaces), each
 * `node_modules` of the main checkout is symlinked into the worktree — no install, read-only for
 * a sandboxed agent (the link points outside its writable worktree). A different lockfile, or
 * workspaces (whose links would point at the main checkout's sources), run the package manager's
 * frozen install with `--prefer-offline` instead.
 */
async function nodeDefaults(options: SetupWorktreeOptions, tracked: ReturnType<typeof trackedManifests>, run: RunLabelled, actions: string[], created: string[]): Promise<void> {
  if (!(await exists(path.join(options.worktree, 'package.json')))) return;
  let lock: readonly [string, 'npm' | 'pnpm' | 'yarn' | 'bun'] | undefined;
  for (const candidate of lockfiles) {
    if (await exists(path.join(options.worktree, candidate[0]))) {
      lock = candidate;
      break;
    }
  }
  if (lock === undefined) {
    actions.push('node: package.json without a lockfile — dependencies not shared (configure a setup)');
    return;
  }
  if (await exists(path.join(options.worktree, 'node_modules'))) {
    actions.push('node: the worktree already has node_modules');
    return;
  }
  if (!(await isDirectory(path.join(options.root, 'node_modules')))) {
    actions.push(`node: no node_modules in the main checkout — install there once (${lock[1]} install) to share it with the agents`);
    return;
  }
  const [ours, theirs] = await Promise.all([readFile(path.join(options.worktree, lock[0])), readFile(path.join(options.root, lock[0])).catch(() => undefined)]);
  let manifest: { workspaces?: unknown } = {};
  try {
    manifest = JSON.parse(await readFile(path.join(options.worktree, 'package.json'), 'utf8')) as { workspaces?: unknown };
  } catch {
    // Not ours to judge: the gates will say what is wrong with it.
  }
  const workspaces = manifest.workspaces !== undefined || (await exists(path.join(options.worktree, 'pnpm-workspace.yaml')));
  const same = theirs !== undefined && ours.equals(theirs);
  if (!same || workspaces) {
    const command = installCommand(lock[1], await exists(path.join(options.worktree, '.yarnrc.yml')));
    // In the sandbox (X21-10); HUSKY=0: a `prepare` that installs git hooks would write the repository's
    // config, which no sandbox may (polywave's commits run no hook; the main checkout's hooks run through the guard).
    const result = await run(`node: ${!same ? `${lock[0]} differs from the main checkout's` : 'workspaces'} —`, command, { allowHosts: defaultInstallHosts[lock[1]], env: { HUSKY: '0' } });
    actions.push(`node: ${command.join(' ')} (${!same ? `${lock[0]} differs from the main checkout's` : 'workspaces link to their own sources'}; ${(result.durationMs / 1000).toFixed(1)} s)`);
    created.push('node_modules');
    return;
  }
  const linked: string[] = [];
  for (const directory of (await tracked()).packageDirectories) {
    const source = path.join(options.root, directory, 'node_modules');
    const link = path.join(options.worktree, directory, 'node_modules');
    if (!(await isDirectory(source)) || (await exists(link)) || !(await isDirectory(path.dirname(link)))) continue;
    await symlink(source, link, 'dir');
    const relative = directory === '' ? 'node_modules' : `${directory}/node_modules`;
    linked.push(relative);
    created.push(relative);
  }
  actions.push(`node: ${listForDetail(linked, 5)} → main checkout's (${lock[0]} identical; no install)`);
}

/** Go default (`--no-gowork` turns it off): a go.work using every module of a multi-module repository. */
async function goDefaults(options: SetupWorktreeOptions, tracked: ReturnType<typeof trackedManifests>, actions: string[], created: string[]): Promise<void> {
  if (!options.goWork) return;
  const modules = (await tracked()).goModules;
  if (modules.length < 2 || (await exists(path.join(options.worktree, 'go.work')))) return;
  let version = '1.18';
  const newer = (left: string, right: string): boolean => {
    const a = left.split('.').map(Number);
    const b = right.split('.').map(Number);
    for (let index = 0; index < Math.max(a.length, b.length); index += 1) if ((a[index] ?? 0) !== (b[index] ?? 0)) return (a[index] ?? 0) > (b[index] ?? 0);
    return false;
  };
  const directories: string[] = [];
  for (const module of modules) {
    const text = await readFile(path.join(options.worktree, module), 'utf8').catch(() => '');
    const declared = /^go\s+(\d+\.\d+(?:\.\d+)?)\s*$/m.exec(text)?.[1];
    if (declared && newer(declared, version)) version = declared;
    const directory = path.posix.dirname(module);
    directories.push(directory === '.' ? '.' : `./${directory}`);
  }
  await writeFile(path.join(options.worktree, 'go.work'), `go ${version}\n\nuse (\n${directories.map((directory) => `\t${directory}\n`).join('')})\n`, { flag: 'wx' });
  created.push('go.work', 'go.work.sum');
  actions.push(`go: go.work with ${directories.length} modules`);
}

/** Python default: the main checkout's `.venv` shared through a symlink (read-only for a sandboxed agent). */
async function pythonDefaults(options: SetupWorktreeOptions, actions: string[], created: string[]): Promise<void> {
  const markers = ['pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt'];
  if (!(await Promise.all(markers.map((marker) => exists(path.join(options.worktree, marker))))).some(Boolean)) return;
  const venv = path.join(options.root, '.venv');
  if (!(await exists(path.join(venv, 'pyvenv.cfg'))) || (await exists(path.join(options.worktree, '.venv')))) return;
  await symlink(venv, path.join(options.worktree, '.venv'), 'dir');
  created.push('.venv');
  actions.push(".venv → main checkout's (an editable install in it still imports the main checkout's sources)");
}

/** What of a git directory no worktree setup may change: its configuration files, `info/attributes` and its hooks. */
async function gitControlsOf(commonDir: string): Promise<Record<string, PathFingerprint>> {
  const controls: Record<string, PathFingerprint> = {};
  for (const name of ['config', 'config.worktree', 'info/attributes']) controls[name] = await fingerprintPath(path.join(commonDir, name));
  for (const [name, fingerprint] of Object.entries(await fingerprintTree(path.join(commonDir, 'hooks')).catch(() => ({})))) controls[`hooks/${name}`] = fingerprint;
  return controls;
}

type RunLabelled = (label: string, command: SetupCommand, how?: { allowHosts?: readonly string[]; env?: Record<string, string> }) => Promise<ShellCommandResult>;

/**
 * The public registries a default install may reach from its sandbox (besides the committed
 * `sandbox.network.allow`, where a private registry belongs): its packages come from there when the
 * repository's gate build cache (the sandbox's package cache) does not hold them yet.
 */
const defaultInstallHosts: Readonly<Record<'npm' | 'pnpm' | 'yarn' | 'bun', readonly string[]>> = {
  npm: ['registry.npmjs.org'],
  pnpm: ['registry.npmjs.org'],
  yarn: ['registry.yarnpkg.com', 'registry.npmjs.org', 'repo.yarnpkg.com'],
  bun: ['registry.npmjs.org'],
};

/** The worktree's own git directory from its `.git` file, proven to lie under `<commonDir>/worktrees`. */
export async function worktreeGitDir(worktree: string, commonDir: string): Promise<string | undefined> {
  const text = await readFile(path.join(worktree, '.git'), 'utf8').catch(() => undefined);
  const match = text === undefined ? null : /^gitdir:\s*(.+?)\s*$/m.exec(text);
  if (!match) return undefined;
  const gitDir = path.resolve(worktree, match[1]!);
  const real = await realpath(gitDir).catch(() => undefined);
  const commonReal = await realpath(commonDir).catch(() => commonDir);
  return real !== undefined && isInside(real, path.join(commonReal, 'worktrees')) && real !== path.join(commonReal, 'worktrees') ? real : undefined;
}

async function readRecord(gitDir: string): Promise<SetupRecord | undefined> {
  try {
    const value = JSON.parse(await readFile(path.join(gitDir, recordName), 'utf8')) as Partial<SetupRecord>;
    if (value.v !== 1 || typeof value.status !== 'string' || typeof value.port !== 'number' || !Number.isInteger(value.port)) return undefined;
    return value as SetupRecord;
  } catch {
    return undefined;
  }
}

async function writeRecord(options: SetupWorktreeOptions, status: SetupRecord['status'], deferred = false): Promise<void> {
  const record: SetupRecord = { v: 1, status, agent: options.agent, slug: options.slug, wave: options.wave, port: options.port, branch: options.branch, root: options.root, updated_at: options.now().toISOString(), ...(deferred ? { deferred: true as const } : {}) };
  await writeTextAtomic(path.join(options.gitDir, recordName), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * One agent's setup: copies, then the configured `setup` command or the built-in defaults. The
 * record in the worktree's git directory says `pending` while it runs and `done`/`failed` after;
 * never throws — a failure comes back with its code, the command and the output's tail.
 */
export async function setupWorktree(options: SetupWorktreeOptions): Promise<AgentSetupOutcome> {
  const started = performance.now();
  const actions: string[] = [];
  const created: string[] = [];
  const outcome = (extra: Partial<AgentSetupOutcome>): AgentSetupOutcome => ({
    agent: options.agent,
    worktree: options.worktree,
    port: options.port,
    ok: true,
    actions,
    created,
    duration_ms: Math.round(performance.now() - started),
    ...extra,
  });
  const logPath = path.join(options.gitDir, logName);
  const env = commandEnvironment(options.env, setupEnvironment(options));
  const timeoutMs = options.settings.timeoutSeconds * 1000;
  const run: RunLabelled = async (label, command, how = {}) => {
    // Every command runs sandboxed: the configured `setup` and the defaults' install alike (X21-10).
    const result = await runCommand(command, { cwd: options.worktree, env: { ...env, ...how.env }, timeoutMs, logPath, sandboxed: true, ...(how.allowHosts ? { allowHosts: how.allowHosts } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    if (result.exitCode !== 0 || result.timedOut || result.canceled) failedCommand(label, command, result, logPath);
    return result;
  };
  try {
    await writeRecord(options, 'pending');
    await copyEntries(options, actions, created);
    if (options.entry.setup !== undefined && options.entry.setup !== false) {
      const result = await run('setup', options.entry.setup);
      actions.push(`setup ${describeCommand(options.entry.setup)} (exit 0, ${(result.durationMs / 1000).toFixed(1)} s)`);
    } else if (options.entry.setup === undefined && options.settings.defaults) {
      const tracked = options.tracked ?? trackedManifests(options.git);
      await nodeDefaults(options, tracked, run, actions, created);
      await goDefaults(options, tracked, actions, created);
      await pythonDefaults(options, actions, created);
    }
    await writeRecord(options, 'done');
    return outcome({});
  } catch (error) {
    await writeRecord(options, 'failed').catch(() => undefined);
    if (error instanceof WorktreeSetupError) return outcome({ ok: false, code: error.code, error: error.message, ...error.details });
    return outcome({ ok: false, code: worktreeSetupCodes.failed, error: errorText(error) });
  }
}

/** Escapes a path for a gitignore line (root-anchored, literal). */
function ignoreLine(file: string): string {
  return `/${file.replace(/[\\*?[\]!#]/g, (character) => `\\${character}`).replace(/ $/, '\\ ')}`;
}

/**
 * Keeps what the setups created out of git's sight: the paths the worktree's own ignore rules do
 * not already cover go into a marked block of the common `info/exclude` (git has no per-worktree
 * exclude file). A `node_modules/` rule in .gitignore does not match a symlink, hence the check.
 */
async function excludeCreated(commonDir: string, worktreeGit: Git, created: readonly string[]): Promise<string[]> {
  if (created.length === 0) return [];
  const checked = await worktreeGit.run(['check-ignore', '-z', '--stdin'], { input: `${created.join('\0')}\0`, allowExitCodes: [1] });
  const ignored = new Set(checked.stdout.split('\0').filter((item) => item !== ''));
  const missing = created.filter((file) => !ignored.has(file));
  if (missing.length === 0) return [];
  const filePath = path.join(commonDir, 'info', 'exclude');
  const current = await readFile(filePath, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const begin = current.indexOf(excludeBegin);
  const end = begin < 0 ? -1 : current.indexOf(excludeEnd, begin);
  const existing = begin >= 0 && end >= 0 ? current.slice(begin + excludeBegin.length, end).split('\n').filter((line) => line.trim() !== '') : [];
  const lines = [...new Set([...existing, ...missing.map(ignoreLine)])].sort();
  const block = `${excludeBegin}\n${lines.join('\n')}\n${excludeEnd}\n`;
  let next: string;
  if (begin >= 0 && end >= 0) {
    let stop = end + excludeEnd.length;
    if (current[stop] === '\n') stop += 1;
    next = `${current.slice(0, begin)}${block}${current.slice(stop)}`;
  } else next = `${current}${current === '' || current.endsWith('\n') ? '' : '\n'}${block}`;
  if (next !== current) await writeTextAtomic(filePath, next);
  return missing;
}

/**
 * True when a worktree created from the base needs nothing: no `setup` command, `copy` or
 * `teardown`, and none of the defaults applies to its tree (asked once per repository: the
 * worktrees created from one base have the same files).
 */
async function nothingToDo(entry: WorktreeSetupEntry, settings: WorktreeSetupConfig, worktree: string, tracked: ReturnType<typeof trackedManifests>, goWork: boolean): Promise<boolean> {
  if ((entry.setup !== undefined && entry.setup !== false) || entry.copy.length > 0 || entry.teardown !== undefined) return false;
  if (entry.setup === false || !settings.defaults) return true;
  const markers = ['package.json', 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt'];
  if ((await Promise.all(markers.map((marker) => exists(path.join(worktree, marker))))).some(Boolean)) return false;
  return !goWork || (await tracked()).goModules.length < 2;
}

/**
 * The config every repository of the run reads: the primary checkout's root polywave.config.json as
 * committed (or one above the repository) — never the working tree's or a nested one (X10 N6:
 * setup/teardown/copy run outside the agents' control; store/trusted-config.ts).
 */
async function loadConfig(root: string): Promise<{ config: ProjectConfig | undefined; configDir: string; problems: string[] }> {
  const loaded = await loadTrustedConfig(root);
  const located = loaded.path;
  if (located === undefined) return { config: undefined, configDir: root, problems: [] };
  const relevant = loaded.findings.filter((finding) => finding.severity === 'fatal' || (finding.severity === 'error' && /(^|\.)(setup|teardown|copy|worktree_setup)(\b|\[|$)/.test(finding.field ?? '')));
  return { config: loaded.config, configDir: path.dirname(located), problems: relevant.map((finding) => `${located}: ${finding.message}`) };
}

/**
 * Issue 13: runs each new worktree's setup (copies, `setup` or the defaults) after the worktrees
 * exist and before the wave is armed. A failure fails the step (WORKTREE_SETUP_FAILED or
 * WORKTREE_SETUP_COPY_REFUSED, with the agent's output tail): the worktree stays for inspection,
 * the wave is not activated, and the next prepare-wave runs the setup of that worktree again.
 */
export const worktreeSetupStep: StepDefinition<PrepareContext> = {
  name: 'workspace_setup',
  async run(context) {
    if (context.readOnly) return { status: 'skipped', detail: 'worktree setup runs in prepare-wave, not in pre-wave-validate' };
    if (context.options.workspaceSetup === false) return { status: 'skipped', detail: '--no-workspace-setup: no copies, no setup commands, no shared dependencies' };
    const { config, configDir, problems } = await loadConfig(context.primary.root);
    if (problems.length > 0) {
      return { status: 'failed', detail: `${worktreeSetupCodes.configInvalid}: ${problems.join('; ')}`, data: { code: worktreeSetupCodes.configInvalid, problems } };
    }
    const settings = configuredWorktreeSetupSettings(config);
    const ensured = new Map(context.ensured.map((worktree) => [worktree.agent, worktree]));
    const commonDirs = new Map<string, string>();
    // Worktrees created from the base have the same tree: one `git ls-files` per repository serves them all.
    const sharedTracked = new Map<string, ReturnType<typeof trackedManifests>>();
    const jobs: SetupWorktreeOptions[] = [];
    const skipped: string[] = [];
    // The port follows the agent's place in the manifest's wave (prepare-agent sets up one agent, with that agent's port).
    const waveAgents = (manifestOf(context).waves?.find((wave) => wave.number === context.wave)?.agents ?? []).map((agent) => agent.id);
    // Per repository: what to do, and whether the worktrees created from the base have nothing to do
    // at all (no command, copy or teardown configured and no default applies to their tree).
    const plans = new Map<string, { entry: WorktreeSetupEntry; idle?: Promise<boolean> }>();
    let idleCount = 0;
    for (const [position, target] of context.targets.entries()) {
      const index = waveAgents.includes(target.agent) ? waveAgents.indexOf(target.agent) : position;
      const worktree = ensured.get(target.agent);
      if (worktree === undefined) continue;
      const repo = target.repoContext;
      if (!plans.has(repo.root)) plans.set(repo.root, { entry: configuredWorktreeSetup(config, { configDir, repoRoot: repo.root, primary: repo.primary }) });
      const plan = plans.get(repo.root)!;
      const entry = plan.entry;
      if (worktree.action === 'created') {
        if (!sharedTracked.has(repo.root)) sharedTracked.set(repo.root, trackedManifests(context.rawGitAt(target.path)));
        plan.idle ??= nothingToDo(entry, settings, target.path, sharedTracked.get(repo.root)!, context.options.goWork !== false);
        if (await plan.idle) {
          idleCount += 1;
          continue;
        }
      }
      if (!commonDirs.has(repo.root)) commonDirs.set(repo.root, path.resolve(repo.root, await repo.git.commonDir()));
      const gitDir = await worktreeGitDir(target.path, commonDirs.get(repo.root)!);
      if (gitDir === undefined) {
        skipped.push(`${target.agent} (no worktree git directory)`);
        continue;
      }
      if (worktree.action === 'reused') {
        // E9 re-entry: a worktree that was set up keeps its state; one whose setup failed or was killed runs again.
        const record = await readRecord(gitDir);
        if (record === undefined || record.status === 'done') continue;
      }
      if (worktree.action === 'created' && !sharedTracked.has(repo.root)) sharedTracked.set(repo.root, trackedManifests(context.rawGitAt(target.path)));
      const port = settings.basePort + (context.options.portOffset ?? 0) + index;
      if (port > 65_535) {
        const detail = `${worktreeSetupCodes.failed}: agent ${target.agent} would get POLYWAVE_PORT ${port}, above 65535 (base_port ${settings.basePort}${context.options.portOffset ? ` + ${context.options.portOffset} for this IMPL's place in its tier` : ''} + ${index}) — lower worktree_setup.base_port in polywave.config.json`;
        return { status: 'failed', detail, data: { code: worktreeSetupCodes.failed } };
      }
      jobs.push({
        worktree: target.path,
        root: repo.root,
        gitDir,
        agent: target.agent,
        slug: context.slug,
        wave: context.wave,
        branch: target.branch,
        port,
        entry,
        settings,
        goWork: context.options.goWork !== false,
        env: context.options.env ?? process.env,
        git: context.rawGitAt(target.path),
        rootGit: context.rawGitAt(repo.root),
        ...(worktree.action === 'created' ? { tracked: sharedTracked.get(repo.root)! } : {}),
        now: context.now,
        ...(context.options.signal ? { signal: context.options.signal } : {}),
      });
    }
    if (jobs.length === 0) {
      const why = idleCount > 0 ? `nothing to set up in ${idleCount} new worktree(s): no setup, copy or teardown configured, no Node/Go/Python default applies` : 'no new worktree to set up';
      return { status: 'skipped', detail: `${why}${skipped.length > 0 ? ` (${skipped.join(', ')})` : ''}` };
    }
    // A22-23/A22-18: the agents run as jobs on workers, each of which sets up its own job worktree: nothing runs here (it
    // cost this machine what scale-out offloads, failed a setup that works only on the labelled workers, and its output,
    // untracked here, blocked the fast-forward to the job's commit). The record (pending, deferred) keeps the agent's
    // port for its job; local pre-merge gates set the worktree up once the job's commits are in it.
    if (context.options.setupOnWorkers) {
      for (const job of jobs) await writeRecord(job, 'pending', true);
      return { status: 'success', detail: `${jobs.length} worktree(s) not set up here: their agents run as jobs on workers, which set them up (ports ${jobs.map((job) => `${job.agent}=${job.port}`).join(', ')}); local pre-merge gates set a worktree up after its job's commits`, data: { deferred: jobs.map((job) => ({ agent: job.agent, port: job.port })), base_port: settings.basePort } };
    }
    const limit = settings.concurrency ?? Math.max(1, Math.min(4, availableParallelism()));
    // The repositories' git controls as they were before any setup ran (outside attack X21-10: an install's
    // lifecycle script planted a hook, which the tamper record, made after this step, then took as the baseline).
    const guarded = [...new Set([...commonDirs.values()])];
    const before = await Promise.all(guarded.map((commonDir) => gitControlsOf(commonDir)));
    const settled = await mapBounded(jobs, limit, (job) => setupWorktree(job), context.options.signal);
    const changed = (await Promise.all(guarded.map(async (commonDir, index) => diffFingerprints(commonDir, before[index]!, await gitControlsOf(commonDir))))).flat();
    if (changed.length > 0) {
      const detail = `${worktreeSetupCodes.tampered}: the worktree setup changed the repository's git configuration or hooks, which no setup may: ${describeFindings(changed, 5)} — review them (a lifecycle script of the repository, or your configured setup) before the wave runs; nothing was armed`;
      return { status: 'failed', detail, data: { code: worktreeSetupCodes.tampered, changes: changed } };
    }
    const outcomes = settled.map((item, index): AgentSetupOutcome =>
      item.status === 'fulfilled' ? item.value : { agent: jobs[index]!.agent, worktree: jobs[index]!.worktree, port: jobs[index]!.port, ok: false, actions: [], created: [], duration_ms: 0, code: worktreeSetupCodes.failed, error: errorText(item.reason) },
    );
    const excluded: string[] = [];
    for (const [root, commonDir] of commonDirs) {
      const created = outcomes.filter((outcome, index) => jobs[index]!.root === root && outcome.created.length > 0);
      if (created.length === 0) continue;
      // One write per repository: the worktrees of a wave share their ignore rules (same base).
      const first = jobs.find((job) => job.worktree === created[0]!.worktree)!;
      const all = [...new Set(created.flatMap((outcome) => outcome.created))];
      try {
        excluded.push(...(await excludeCreated(commonDir, first.git, all)));
      } catch (error) {
        for (const outcome of created) Object.assign(outcome, { ok: false, code: worktreeSetupCodes.failed, error: `could not exclude ${all.join(', ')} from git: ${errorText(error)}` });
      }
    }
    const failures = outcomes.filter((outcome) => !outcome.ok);
    const data = { agents: outcomes, ...(excluded.length > 0 ? { excluded } : {}), base_port: settings.basePort, ...(context.options.portOffset ? { port_offset: context.options.portOffset } : {}), concurrency: limit };
    if (failures.length > 0) {
      const code = failures.some((failure) => failure.code === worktreeSetupCodes.copyRefused) ? worktreeSetupCodes.copyRefused : worktreeSetupCodes.failed;
      return {
        status: 'failed',
        detail: `${code}: ${failures.map((failure) => `agent ${failure.agent}: ${failure.error ?? 'failed'}`).join('; ')} (worktree kept for inspection; the next prepare-wave runs its setup again)`,
        data: { code, ...data },
      };
    }
    const summary = [...new Set(outcomes.flatMap((outcome) => outcome.actions.map((action) => action.replace(/ \(exit 0, [\d.]+ s\)$/, ''))))];
    return { status: 'success', detail: `${outcomes.length} worktree(s) set up (ports ${outcomes.map((outcome) => `${outcome.agent}=${outcome.port}`).join(', ')}): ${listForDetail(summary, 6) || 'nothing to do'}`, data };
  },
};

/**
 * A22-23/A22-18: the setup prepare-wave deferred for a dispatched agent's local worktree (its record `pending`,
 * `deferred`), run now that the job's commits are in it — before local pre-merge gates, which may need its output.
 * Undefined when the worktree's setup was not deferred (set up already, or nothing to do). Never throws.
 */
export async function setupDeferredWorktree(options: { primaryRoot: string; repoRoot: string; worktree: string; rootGit: Git; git: Git; env: Readonly<Record<string, string | undefined>>; now: () => Date; signal?: AbortSignal }): Promise<AgentSetupOutcome | undefined> {
  try {
    const commonDir = path.resolve(options.repoRoot, await options.rootGit.commonDir());
    const gitDir = await worktreeGitDir(options.worktree, commonDir);
    const record = gitDir === undefined ? undefined : await readRecord(gitDir);
    if (gitDir === undefined || record === undefined || record.deferred !== true || record.status !== 'pending') return undefined;
    const { config, configDir, problems } = await loadConfig(options.primaryRoot);
    if (problems.length > 0) return { agent: record.agent, worktree: options.worktree, port: record.port, ok: false, actions: [], created: [], duration_ms: 0, code: worktreeSetupCodes.configInvalid, error: problems.join('; ') };
    const job: SetupWorktreeOptions = {
      worktree: options.worktree,
      root: options.repoRoot,
      gitDir,
      agent: record.agent,
      slug: record.slug,
      wave: record.wave,
      branch: record.branch,
      port: record.port,
      entry: configuredWorktreeSetup(config, { configDir, repoRoot: options.repoRoot, primary: path.resolve(options.primaryRoot) === path.resolve(options.repoRoot) }),
      settings: configuredWorktreeSetupSettings(config),
      goWork: true,
      env: options.env,
      git: options.git,
      rootGit: options.rootGit,
      now: options.now,
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const before = await gitControlsOf(commonDir);
    const clean = (await options.git.run(['status', '--porcelain', '--untracked-files=no'])).stdout.trim() === '';
    const outcome = await setupWorktree(job);
    const changed = diffFingerprints(commonDir, before, await gitControlsOf(commonDir));
    if (changed.length > 0) return { ...outcome, ok: false, code: worktreeSetupCodes.tampered, error: `the worktree setup changed the repository's git configuration or hooks, which no setup may: ${describeFindings(changed, 5)}` };
    if (outcome.ok) await excludeCreated(commonDir, job.git, outcome.created);
    // It ran after the agent (in-process: before): a tracked file it rewrote (codegen the agent then committed) goes
    // back to the job's commit, which is what the gates test.
    if (outcome.ok && clean) await options.git.run(['checkout', '-q', '--', '.']);
    return outcome;
  } catch (error) {
    return { agent: '', worktree: options.worktree, port: 0, ok: false, actions: [], created: [], duration_ms: 0, code: worktreeSetupCodes.failed, error: errorText(error) };
  }
}

/**
 * Teardown before a worktree is removed (cleanup, finalize-wave): the repository's configured
 * `teardown`, run in the worktree with the env its setup had (same `POLYWAVE_PORT`), only in
 * worktrees whose setup ran. Best effort: never throws, returns one line for the cleanup report.
 * Undefined when no teardown is configured.
 */
export async function createTeardownHook(options: {
  /** The repository's main checkout. */
  root: string;
  /** Git of that checkout (for its common directory). */
  git: Git;
  /** The primary repository's main checkout (where polywave.config.json is looked for); default `root`. */
  primaryRoot?: string;
  env?: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
}): Promise<((worktree: string, agent: string) => Promise<string | undefined>) | undefined> {
  let loaded;
  try {
    loaded = await loadConfig(options.primaryRoot ?? options.root);
  } catch {
    return undefined;
  }
  const entry = configuredWorktreeSetup(loaded.config, { configDir: loaded.configDir, repoRoot: options.root, primary: (options.primaryRoot ?? options.root) === options.root });
  const teardown = entry.teardown;
  if (teardown === undefined) return undefined;
  const settings = configuredWorktreeSetupSettings(loaded.config);
  const commonDir = path.resolve(options.root, await options.git.commonDir());
  return async (worktree, agent) => {
    try {
      const gitDir = await worktreeGitDir(worktree, commonDir);
      const record = gitDir === undefined ? undefined : await readRecord(gitDir);
      // (A22-23: nor where the setup was deferred to a worker and never ran here)
      if (gitDir === undefined || record === undefined || (record.deferred === true && record.status === 'pending')) return undefined;
      const env = commandEnvironment(options.env ?? process.env, setupEnvironment({ worktree, root: options.root, agent, slug: record.slug, wave: record.wave, port: record.port, branch: record.branch }));
      const result = await runCommand(teardown, { cwd: worktree, env, timeoutMs: settings.timeoutSeconds * 1000, logPath: path.join(gitDir, 'polywave-teardown.log'), sandboxed: true, ...(options.signal ? { signal: options.signal } : {}) });
      if (result.exitCode === 0 && !result.timedOut) return `teardown ok (${(result.durationMs / 1000).toFixed(1)} s)`;
      const why = result.timedOut ? 'timed out' : result.error && result.exitCode === -1 ? result.error : `exit ${result.exitCode}`;
      return `teardown failed (${why}): ${lastLine(result.output)}`;
    } catch (error) {
      return `teardown failed: ${errorText(error)}`;
    }
  };
}

/**
 * Issue 17 (outside round A20-26): the worktree setup of a dispatched agent, as its job carries it — the repository's
 * committed `setup` (or `false`), its `copy` entries (names only: they are untracked files of the orchestrator's
 * checkout, often secrets, and never travel through Redis), whether the built-in defaults apply, `POLYWAVE_PORT` and
 * the timeout. Never a path on the orchestrator's disk.
 */
export interface JobWorktreeSetup {
  setup?: SetupCommand | false;
  copy: string[];
  defaults: boolean;
  go_work: boolean;
  port: number;
  timeout_seconds: number;
}

/**
 * What a worker must do to the job worktree of an agent of `repoRoot` (the primary checkout's committed config, as
 * prepare-wave reads it): `localWorktree`'s setup record (prepare-wave's) gives the agent's port.
 */
export async function jobWorktreeSetup(options: { primaryRoot: string; repoRoot: string; localWorktree?: string; git?: Git }): Promise<JobWorktreeSetup> {
  const { config, configDir } = await loadConfig(options.primaryRoot);
  const entry = configuredWorktreeSetup(config, { configDir, repoRoot: options.repoRoot, primary: path.resolve(options.primaryRoot) === path.resolve(options.repoRoot) });
  const settings = configuredWorktreeSetupSettings(config);
  let port = settings.basePort;
  if (options.localWorktree && options.git) {
    const commonDir = path.resolve(options.repoRoot, await options.git.commonDir().catch(() => '.git'));
    const gitDir = await worktreeGitDir(options.localWorktree, commonDir);
    const record = gitDir === undefined ? undefined : await readRecord(gitDir);
    if (record) port = record.port;
  }
  return { ...(entry.setup !== undefined ? { setup: entry.setup } : {}), copy: entry.copy, defaults: settings.defaults, go_work: true, port, timeout_seconds: settings.timeoutSeconds };
}

/**
 * A20-26: a worker's counterpart of prepare-wave's setup for one job worktree (a worktree of its bare clone at the
 * base): the configured `setup` command, sandboxed as on the orchestrator; else the defaults a worker can apply —
 * Node with a lockfile: the frozen install (`npm ci --prefer-offline` …) in the sandbox (no main checkout to share
 * `node_modules` from), a go.work for multi-module Go repositories. `copy` entries are not applied (never sent), nor
 * is a `.venv` shared (none here): each says so in the actions. What it creates is kept out of git's sight (the
 * clone's `info/exclude`); a setup that changes the clone's git configuration or hooks fails (X21-10). Never throws.
 */
export async function setupJobWorktree(options: { worktree: string; commonDir: string; agent: string; slug: string; wave: number; branch: string; setup: JobWorktreeSetup; env: Readonly<Record<string, string | undefined>>; git: Git; signal?: AbortSignal; /** Directories around the worktree its sandbox hides whole (the worker's --dir: other jobs' checkouts). */ hiddenAround?: readonly string[]; /** Where its log goes (A22-21: not in the clone, which every later job's agent reads). */ logDir: string }): Promise<AgentSetupOutcome> {
  const started = performance.now();
  const actions: string[] = [];
  const created: string[] = [];
  const job = options.setup;
  const outcome = (extra: Partial<AgentSetupOutcome>): AgentSetupOutcome => ({ agent: options.agent, worktree: options.worktree, port: job.port, ok: true, actions, created, duration_ms: Math.round(performance.now() - started), ...extra });
  const logPath = path.join(options.logDir, `${path.basename(options.worktree)}.log`);
  const env = commandEnvironment(options.env, setupEnvironment({ worktree: options.worktree, root: options.worktree, agent: options.agent, slug: options.slug, wave: options.wave, port: job.port, branch: options.branch }));
  const run: RunLabelled = async (label, command, how = {}) => {
    const result = await runCommand(command, { cwd: options.worktree, env: { ...env, ...how.env }, timeoutMs: job.timeout_seconds * 1000, logPath, sandboxed: true, ...(how.allowHosts ? { allowHosts: how.allowHosts } : {}), ...(options.hiddenAround ? { hiddenAround: options.hiddenAround } : {}), ...(options.signal ? { signal: options.signal } : {}) });
    if (result.exitCode !== 0 || result.timedOut || result.canceled) failedCommand(label, command, result, logPath);
    return result;
  };
  try {
    await mkdir(path.dirname(logPath), { recursive: true });
    const before = await gitControlsOf(options.commonDir);
    for (const pattern of job.copy) actions.push(`copy ${pattern}: not applied on a worker (an untracked file of the orchestrator's checkout; never sent)`);
    if (job.setup !== undefined && job.setup !== false) {
      const result = await run('setup', job.setup);
      actions.push(`setup ${describeCommand(job.setup)} (exit 0, ${(result.durationMs / 1000).toFixed(1)} s)`);
    } else if (job.setup === undefined && job.defaults) {
      const tracked = trackedManifests(options.git);
      if (await exists(path.join(options.worktree, 'package.json'))) {
        const lock = (await Promise.all(lockfiles.map(async (candidate) => ((await exists(path.join(options.worktree, candidate[0]))) ? candidate : undefined)))).find((candidate) => candidate !== undefined);
        if (lock === undefined) actions.push('node: package.json without a lockfile — no dependencies installed on the worker (configure a setup)');
        else if (await exists(path.join(options.worktree, 'node_modules'))) actions.push('node: the worktree already has node_modules');
        else {
          const command = installCommand(lock[1], await exists(path.join(options.worktree, '.yarnrc.yml')));
          const result = await run(`node: ${lock[0]} —`, command, { allowHosts: defaultInstallHosts[lock[1]], env: { HUSKY: '0' } });
          actions.push(`node: ${command.join(' ')} (no main checkout on a worker to share node_modules from; ${(result.durationMs / 1000).toFixed(1)} s)`);
          created.push('node_modules');
        }
      }
      await goDefaults({ worktree: options.worktree, goWork: job.go_work } as SetupWorktreeOptions, tracked, actions, created);
      const markers = ['pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt'];
      if ((await Promise.all(markers.map((marker) => exists(path.join(options.worktree, marker))))).some(Boolean)) actions.push('python: no .venv shared on a worker (configure a setup)');
    }
    const changed = diffFingerprints(options.commonDir, before, await gitControlsOf(options.commonDir));
    if (changed.length > 0) throw new WorktreeSetupError(worktreeSetupCodes.tampered, `the worktree setup changed the clone's git configuration or hooks, which no setup may: ${describeFindings(changed, 5)}`);
    await excludeCreated(options.commonDir, options.git, created);
    return outcome({});
  } catch (error) {
    if (error instanceof WorktreeSetupError) return outcome({ ok: false, code: error.code, error: error.message, ...error.details });
    return outcome({ ok: false, code: worktreeSetupCodes.failed, error: errorText(error) });
  }
}
