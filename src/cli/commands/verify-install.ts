import { stat } from 'node:fs/promises';
import path from 'node:path';
import { sandboxStatus, type SandboxStatus } from '../../sandbox/index.js';
import { sandboxUnavailableMessage } from '../../sandbox/sandbox-unavailable-error.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { GitError } from '../../git/git-error.js';
import { runGit } from '../../git/run-git.js';
import { configuredRepos, locateProjectConfig, readProjectConfig, type ProjectConfig } from '../../store/project-config.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/** Status of one check; `skip` (as in Go) when a check cannot run because an earlier one failed. */
export type CheckStatus = 'pass' | 'fail' | 'warn' | 'skip';

/**
 * One check. `message` and `detail` carry the same text: `detail` is the key the Go tool prints,
 * `message` the documented one (reference/engine-cli.md §1.2).
 */
export interface InstallCheck {
  name: string;
  status: CheckStatus;
  message: string;
  detail: string;
}

/** The JSON `verify-install` prints. */
export interface InstallReport {
  checks: InstallCheck[];
  verdict: 'PASS' | 'PARTIAL' | 'FAIL';
  summary: string;
  /**
   * The OS sandbox for agents (issue 11): available, mechanism (bubblewrap, seatbelt, none), the
   * missing Debian packages and one line of detail. Reported beside the Go checks (it does not
   * change the verdict: script agents and the demo run without it, model-backed agents refuse).
   */
  sandbox?: SandboxStatus;
}

/** Minimum versions (DESIGN §2: git ≥ 2.38 for `merge-tree --write-tree`, Node ≥ 20.19). */
export const minimumGitVersion = [2, 38] as const;
export const minimumNodeVersion = [20, 19] as const;

/** Options of {@link runInstallChecks}; everything from the outside world is passed in. */
export interface InstallCheckOptions {
  repoDir: string;
  /** `process.versions.node`. */
  nodeVersion: string;
  /** For `~/` in configured repo paths. */
  homeDir?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

function check(name: string, status: CheckStatus, message: string): InstallCheck {
  return { name, status, message, detail: message };
}

function parseVersion(text: string): [number, number, number] | undefined {
  const match = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : undefined;
}

function atLeast(version: readonly number[], minimum: readonly number[]): boolean {
  for (let index = 0; index < minimum.length; index += 1) {
    const left = version[index] ?? 0;
    const right = minimum[index] ?? 0;
    if (left !== right) return left > right;
  }
  return true;
}

async function gitOutput(args: string[], cwd: string, env: InstallCheckOptions['env']): Promise<string | undefined> {
  try {
    return (await runGit(args, { cwd, ...(env ? { env } : {}) })).trim();
  } catch (error) {
    if (error instanceof GitError || PolywaveError.isInstance(error)) return undefined;
    throw error;
  }
}

async function isDirectory(directory: string): Promise<boolean> {
  try {
    return (await stat(directory)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Runs the environment checks, in order: git_version (≥ 2.38), node_version (≥ 20.19),
 * git_repository (repoDir inside a work tree), config_file (polywave.config.json found walking
 * up ≤ 10 levels, valid JSON with the right shape), configured_repos (each path exists and is a
 * git repository), state_ignored (`.polywave-state/` git-ignored; warn otherwise).
 * Verdict: FAIL if any check fails, PARTIAL if any warns, else PASS.
 */
export async function runInstallChecks(options: InstallCheckOptions): Promise<InstallReport> {
  const { repoDir, env } = options;
  const checks: InstallCheck[] = [];

  const gitVersionText = await gitOutput(['--version'], repoDir, env);
  const gitVersion = gitVersionText === undefined ? undefined : parseVersion(gitVersionText);
  const gitMinimum = minimumGitVersion.join('.');
  if (gitVersionText === undefined) checks.push(check('git_version', 'fail', 'git not found on PATH'));
  else if (!gitVersion) checks.push(check('git_version', 'warn', `could not parse the version from: ${gitVersionText}`));
  else if (atLeast(gitVersion, minimumGitVersion)) checks.push(check('git_version', 'pass', `${gitVersion.join('.')} >= ${gitMinimum}`));
  else checks.push(check('git_version', 'fail', `${gitVersion.join('.')} < ${gitMinimum} (merge-tree --write-tree is required)`));

  const nodeVersion = parseVersion(options.nodeVersion);
  const nodeMinimum = minimumNodeVersion.join('.');
  if (nodeVersion && atLeast(nodeVersion, minimumNodeVersion)) checks.push(check('node_version', 'pass', `${options.nodeVersion} >= ${nodeMinimum}`));
  else checks.push(check('node_version', 'fail', `${options.nodeVersion} < ${nodeMinimum}`));

  const topLevel = gitVersionText === undefined ? undefined : await gitOutput(['rev-parse', '--show-toplevel'], repoDir, env);
  if (gitVersionText === undefined) checks.push(check('git_repository', 'skip', 'skipped: git not available'));
  else if (topLevel) checks.push(check('git_repository', 'pass', `inside the git repository ${topLevel}`));
  else checks.push(check('git_repository', 'fail', `${repoDir} is not inside a git work tree`));

  const configPath = await locateProjectConfig(repoDir);
  let config: ProjectConfig | undefined;
  if (!configPath) {
    checks.push(check('config_file', 'fail', `polywave.config.json not found in ${repoDir} or its parents (run: polywave init)`));
  } else {
    try {
      const loaded = await readProjectConfig(configPath);
      const blocking = loaded.findings.filter((finding) => finding.severity === 'error' || finding.severity === 'fatal');
      if (!loaded.config || blocking.length > 0) {
        const reasons = blocking.slice(0, 3).map((finding) => finding.message).join('; ');
        checks.push(check('config_file', 'fail', `${configPath} is invalid: ${reasons}${blocking.length > 3 ? `; and ${blocking.length - 3} more` : ''}`));
      } else {
        config = loaded.config;
        const warning = loaded.findings[0];
        checks.push(check('config_file', warning ? 'warn' : 'pass', warning ? `${configPath}: ${warning.message}` : `found at ${configPath}`));
      }
    } catch (error) {
      checks.push(check('config_file', 'fail', error instanceof Error ? error.message : String(error)));
    }
  }

  if (!config || !configPath) {
    checks.push(check('configured_repos', 'skip', 'skipped: no usable polywave.config.json'));
  } else {
    const repos = configuredRepos(config, path.dirname(configPath), options.homeDir);
    if (repos.length === 0) checks.push(check('configured_repos', 'warn', 'no repos configured in polywave.config.json'));
    else {
      const problems: string[] = [];
      for (const repo of repos) {
        if (!(await isDirectory(repo.path))) problems.push(`${repo.name} (${repo.configuredPath}): does not exist`);
        else if (gitVersionText !== undefined && (await gitOutput(['rev-parse', '--git-dir'], repo.path, env)) === undefined) {
          problems.push(`${repo.name} (${repo.configuredPath}): not a git repository`);
        }
      }
      if (problems.length === 0) checks.push(check('configured_repos', 'pass', `all ${repos.length} repos exist and are git repositories`));
      else checks.push(check('configured_repos', 'fail', `${problems.length}/${repos.length} repos unusable: ${problems.join('; ')}`));
    }
  }

  if (!topLevel) checks.push(check('state_ignored', 'skip', 'skipped: not inside a git repository'));
  else {
    // git answers for a file inside the directory; exit 1 = not ignored.
    const ignored = await gitOutput(['check-ignore', '-q', '.polywave-state/gate-cache.json'], topLevel, env);
    // Ignoring does not untrack: runtime state committed before (an old bug committed the gate cache) stays tracked.
    const tracked = (await gitOutput(['ls-files', '--', '.polywave-state'], topLevel, env))?.split('\n').filter((line) => line !== '') ?? [];
    if (tracked.length > 0) {
      const shown = tracked.slice(0, 3).join(', ') + (tracked.length > 3 ? `, and ${tracked.length - 3} more` : '');
      checks.push(check('state_ignored', 'warn', `runtime state is tracked by git (${shown}): ignoring it does not untrack it; run: git rm -r --cached .polywave-state && git commit -m "stop tracking polywave runtime state"`));
    } else if (ignored !== undefined) checks.push(check('state_ignored', 'pass', '.polywave-state/ is git-ignored'));
    else checks.push(check('state_ignored', 'warn', '.polywave-state/ is not git-ignored: runtime state would show up as untracked changes (run: polywave init, or add .polywave-state/ to .gitignore)'));
  }

  return { checks, ...verdictOf(checks), sandbox: await sandboxStatus(env ? { env } : {}) };
}

/** The verdict and the Go-style summary (`5 passed, 1 warning, 1 skipped`). */
export function verdictOf(checks: readonly InstallCheck[]): Pick<InstallReport, 'verdict' | 'summary'> {
  const count = (status: CheckStatus): number => checks.filter((entry) => entry.status === status).length;
  const passed = count('pass');
  const failed = count('fail');
  const warned = count('warn');
  const skipped = count('skip');
  const parts: string[] = [];
  if (passed > 0) parts.push(`${passed} passed`);
  if (failed > 0) parts.push(`${failed} failed`);
  if (warned > 0) parts.push(`${warned} warning`);
  if (skipped > 0) parts.push(`${skipped} skipped`);
  return { verdict: failed > 0 ? 'FAIL' : warned > 0 ? 'PARTIAL' : 'PASS', summary: parts.join(', ') };
}

const icons: Record<CheckStatus, string> = { pass: '[OK]', fail: '[FAIL]', warn: '[WARN]', skip: '[SKIP]' };

/** The `--human` rendering (the Go tool's layout). */
export function formatInstallReport(report: InstallReport): string {
  const lines = report.checks.map((entry) => `  ${icons[entry.status]} ${entry.name}: ${entry.message}`);
  const sandbox = report.sandbox;
  const sandboxLine = sandbox === undefined ? '' : sandbox.available ? `\nSandbox: available (${sandbox.mechanism}): ${sandbox.detail}\n` : `\nSandbox: UNAVAILABLE — ${sandboxUnavailableMessage(sandbox)}\n`;
  return `${lines.join('\n')}\n\nVerdict: ${report.verdict}\n${report.summary}\n${sandboxLine}`;
}

/**
 * `verify-install [--human] [--strict] [--repo-dir DIR]` — prints
 * `{checks[{name, status, message, detail}], verdict, summary}` (or the human layout with
 * `--human`). Exit 0 whatever the verdict, as the Go tool does; with `--strict` exit 1 on FAIL.
 * Exit 2 when DIR does not exist.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const repoDir = path.resolve(io.cwd, typeof options.repoDir === 'string' && options.repoDir !== '' ? options.repoDir : '.');
  if (!(await isDirectory(repoDir))) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${repoDir} is not a directory` });
  }
  const homeDir = io.env.HOME ?? io.env.USERPROFILE;
  const report = await runInstallChecks({ repoDir, nodeVersion: process.versions.node, ...(homeDir ? { homeDir } : {}), env: io.env });
  if (options.human) io.stdout(formatInstallReport(report));
  else printJson(io, report);
  return options.strict && report.verdict === 'FAIL' ? 1 : 0;
}
