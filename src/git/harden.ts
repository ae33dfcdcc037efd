/**
 * Outside attack X8 #2 (issue 11): polywave runs git OUTSIDE the sandbox on trees an agent writes
 * (its worktree, or the main checkout for a solo agent). git executes programs named by files in
 * such a tree: a nested repository's `config` (`core.fsmonitor = <cmd>` in an uninitialised
 * submodule path the agent turned into a repository) runs `<cmd>` on every `git status` that
 * recurses into it, and its filter drivers run when git compares its files.
 *
 * Every git command polywave runs (createGit, runGit) therefore gets:
 * - `-c core.fsmonitor=false -c submodule.recurse=false`: command-line configuration outranks
 *   every config file, and git hands it to the child gits it starts (GIT_CONFIG_PARAMETERS), so a
 *   nested repository's own `core.fsmonitor` never runs;
 * - `status`: `--ignore-submodules=all` (git never enters a submodule's working tree, so neither
 *   its config, its filters nor its hooks are used), unless the caller chose a mode;
 * - `diff` (and `diff-files`, `diff-index`): `--ignore-submodules=dirty` (a moved gitlink still
 *   shows, so ownership checks see it, but git starts no `status` inside the submodule, whose
 *   filter drivers would run), and for `diff` `--no-ext-diff --no-textconv`.
 * The agent cannot write the worktree's own git configuration (`.git` and the common git dir are
 * read-only in its sandbox), so `core.hooksPath`, filters and the like from there are the user's.
 */
import os from 'node:os';
import { withoutCredentials } from '../sandbox/credential-variables.js';
import { absolutePathEntries } from '../sandbox/search-path.js';

/** Configuration laid over every git command polywave runs (after the caller's own `-c`). */
export const hardenedGitConfig: Readonly<Record<string, string>> = Object.freeze({
  'core.fsmonitor': 'false',
  'submodule.recurse': 'false',
  // X30-12: what "unchanged" means to status and diff is the repository's to set (core.trustctime=false, checkStat=minimal,
  // ignoreStat): with them an in-place, same-size rewrite with its old mtime put back was never read. polywave's checks
  // compare with git's full stat data.
  'core.trustctime': 'true',
  'core.checkStat': 'default',
  'core.ignoreStat': 'false',
});

/**
 * No repository hook runs in a git command polywave starts on the host: every one gets `core.hooksPath=/dev/null`
 * (`/dev/null` is not a directory: git finds no hook in it), put AFTER the caller's own `-c` options so that no pin
 * wins over it, and handed by git to the gits it starts (GIT_CONFIG_PARAMETERS). Only the queries that read the
 * setting itself (`config`, `rev-parse --git-path hooks`) see the real one. Hooks run agent-written code on the
 * host in too many ways to tell apart: kept in the tracked tree (`core.hooksPath=.githooks`, husky — X24-01/02, 60
 * runs in one wave, the dispatcher's pre-push with its credentials), a `.git/hooks/<name>` symlinked to a tracked
 * script (X25-03), or one that runs tree content — the pre-commit framework's `.pre-commit-config.yaml`, lefthook's
 * `lefthook.yml`, husky 4's `package.json`, `exec ./scripts/…` (X25-04); and `git add` writes the index
 * (post-index-change, X25-06). The user's hooks still run in the user's own git; the E43 guard that prepare-wave
 * installs is for the agents' git, inside their sandboxes.
 */
const hookQuerySubcommands: ReadonlySet<string> = new Set(['config', 'rev-parse', 'var', 'version', 'help']);

/** The `core.hooksPath` value that disables every hook. */
export const noHooksDirectory = os.devNull;

/** Global options that take a separate value (`-C dir`, `-c key=value`…). */
const globalOptionsWithValue = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env', '--exec-path', '--super-prefix', '--list-cmds', '--attr-source']);

/** The git subcommand of `args` (after the global options), or undefined. */
export function gitSubcommandOf(args: readonly string[]): string | undefined {
  let index = 0;
  while (index < args.length && args[index]!.startsWith('-')) index += globalOptionsWithValue.has(args[index]!) ? 2 : 1;
  return args[index];
}

/** Variables that would point git at another repository: never passed to a git polywave starts. */
export const repositoryLocatingVariables: readonly string[] = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR', 'GIT_INDEX_FILE', 'GIT_PREFIX', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_NAMESPACE'];

/**
 * Variables that change what every pathspec means (git exports them to everything it runs when given
 * `--literal-pathspecs`, `--glob-pathspecs` …): never passed to a git polywave starts, whose pathspecs
 * are written for git's default meaning. Outside attack X43-01: with GIT_LITERAL_PATHSPECS=1 the
 * analysis engine's `git grep … -- '*.ts'` matched no file and check-callers answered "no callers".
 */
export const pathspecVariables: readonly string[] = ['GIT_LITERAL_PATHSPECS', 'GIT_GLOB_PATHSPECS', 'GIT_NOGLOB_PATHSPECS', 'GIT_ICASE_PATHSPECS'];

/**
 * `env` without {@link repositoryLocatingVariables}: for a run bound to one repository (run-scout,
 * run-critic) whose git calls go through `runGit`, which honours them. Outside attack X34-07: exported
 * (as inside another repository's git hook), they moved run-scout's discovery and its commit elsewhere.
 */
export function withoutRepositoryLocating(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !repositoryLocatingVariables.includes(name)));
}

/**
 * The whole environment of one host-side `git <args>` process started outside the Git port (a
 * batch shell, a binary pipe): {@link hostGitEnvironmentFor} (no credentials unless it talks to a
 * remote, the user's HOME, PYTHONSAFEPATH), no repository-locating variables, no prompt, the C
 * locale. Outside attack X23-08: prepare-wave's batched `git worktree add` built its own from the
 * raw environment, so a user's checkout filter running a tracked script an agent had rewritten got
 * `GITHUB_TOKEN` and the model key. Every git polywave starts goes through this or the port.
 */
export function hostGitProcessEnvironment(args: readonly string[], env: Readonly<Record<string, string | undefined>>): Readonly<Record<string, string>> {
  // The same environment object gives the same answer per kind of command (remote or not, hooks
  // query or not): computed once (the credential filter tests each variable's name), frozen, and
  // the same object each time, so the git helper process is not sent it again (spawn-server).
  // process.env itself changes under us: never cached.
  const remote = remoteGitCommand(args);
  const subcommand = gitSubcommandOf(args);
  const hooksOff = subcommand === undefined || !hookQuerySubcommands.has(subcommand);
  const key = `${remote ? 'remote' : 'local'}:${hooksOff ? 'nohooks' : 'query'}`;
  const cacheable = env !== process.env;
  const cached = cacheable ? processEnvironments.get(env)?.get(key) : undefined;
  if (cached) return cached;
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(hostGitEnvironmentFor(args, env))) if (value !== undefined) environment[name] = value;
  for (const name of [...repositoryLocatingVariables, ...pathspecVariables]) delete environment[name];
  environment.GIT_TERMINAL_PROMPT = '0';
  environment.LC_ALL = 'C';
  // No hook (see hookQuerySubcommands) for the gits a batch shell or a pipe starts, whatever their arguments.
  if (hooksOff) {
    const count = Number.parseInt(environment.GIT_CONFIG_COUNT ?? '0', 10);
    const index = Number.isInteger(count) && count >= 0 ? count : 0;
    environment[`GIT_CONFIG_KEY_${index}`] = 'core.hooksPath';
    environment[`GIT_CONFIG_VALUE_${index}`] = noHooksDirectory;
    environment.GIT_CONFIG_COUNT = String(index + 1);
  }
  const frozen = Object.freeze(environment);
  if (cacheable) {
    let byKind = processEnvironments.get(env);
    if (!byKind) processEnvironments.set(env, (byKind = new Map()));
    byKind.set(key, frozen);
  }
  return frozen;
}

/** {@link hostGitProcessEnvironment}'s answers per environment object and kind of command. */
const processEnvironments = new WeakMap<object, Map<string, Readonly<Record<string, string>>>>();

/** Subcommands that talk to a remote (and may need the user's credentials to): the others get none. */
const remoteSubcommands: ReadonlySet<string> = new Set(['push', 'fetch', 'pull', 'clone', 'ls-remote', 'remote', 'submodule', 'archive', 'send-pack', 'fetch-pack', 'lfs', 'credential', 'request-pull', 'bundle']);

/**
 * The environment of a host-side git command: {@link hostGitEnvironment}, and — unless the command talks to a
 * remote — without credential variables (outside attack X22-03: a user's filter that runs code from the
 * working tree, `npx --no-install prettier` against an agent's own `node_modules/.bin`, got the orchestrator's
 * `GITHUB_TOKEN` with everything else; local commands — add, commit, status, diff, merge — need none).
 */
export function hostGitEnvironmentFor(args: readonly string[], env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const host = hostGitEnvironment(env);
  return remoteGitCommand(args) ? host : withoutCredentials(host);
}

/** True when git `args` run a subcommand that talks to a remote ({@link hostGitEnvironmentFor}). */
export function remoteGitCommand(args: readonly string[]): boolean {
  const subcommand = gitSubcommandOf(args);
  return subcommand !== undefined && remoteSubcommands.has(subcommand);
}

/**
 * `args` with the hardening above: `-c` pairs first, then the caller's arguments, with the
 * submodule/diff options inserted right after a `status` or `diff` subcommand.
 */
export function hardenGitArgs(args: readonly string[]): string[] {
  const config = Object.entries(hardenedGitConfig).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  let index = 0;
  while (index < args.length) {
    const arg = args[index]!;
    if (!arg.startsWith('-')) break;
    index += globalOptionsWithValue.has(arg) ? 2 : 1;
  }
  const subcommand = args[index];
  const rest = args.slice(index + 1);
  const explicit = rest.some((arg) => arg === '--ignore-submodules' || arg.startsWith('--ignore-submodules='));
  let extra: string[] = [];
  if (subcommand === 'status' && !explicit) extra = ['--ignore-submodules=all'];
  if ((subcommand === 'diff-files' || subcommand === 'diff-index') && !explicit) extra = ['--ignore-submodules=dirty'];
  if (subcommand === 'diff') {
    extra = [...(explicit ? [] : ['--ignore-submodules=dirty']), ...(rest.includes('--ext-diff') ? [] : ['--no-ext-diff']), ...(rest.includes('--textconv') ? [] : ['--no-textconv'])];
  }
  // Options go before `--end-of-options` / `--`: right after the subcommand.
  if (subcommand === undefined) return [...args];
  const noHooks = hookQuerySubcommands.has(subcommand) ? [] : ['-c', `core.hooksPath=${noHooksDirectory}`];
  return [...args.slice(0, index), ...config, ...noHooks, subcommand, ...extra, ...rest];
}

/**
 * X8 #1: configuration for the commits polywave makes on an agent-written tree outside the
 * sandbox (the git_commit tool, the cli backend's commit after a clean audit, solo agents, the
 * orchestrator's bookkeeping commits): NO hook runs. An in-tree `core.hooksPath` (husky's
 * `.husky/_`, a tracked `.githooks`) and polywave's wrapper that delegates to it name files the
 * agent can write, so a hook there would be the agent's code run as the user. `/dev/null` is not a
 * directory: git finds no hook in it (the tamper pins use the same value).
 */
export const noHooksGitConfig: Readonly<Record<string, string>> = Object.freeze({ 'core.hooksPath': '/dev/null' });

/**
 * The variable an agent's environment carries its orchestrator's HOME in (src/agents/run-agent.ts
 * agentEnvironment). Every git polywave runs OUTSIDE the sandbox with an agent's environment (git_commit,
 * the bash tool's audit, set_completion, the CLI backends' host commits) reads the configuration of
 * that HOME, never the agent's private HOME — which the agent writes: its `.gitconfig`,
 * `.config/git/config` or `.config/git/attributes` could name a filter or `gpg.program` that git would
 * run on the host (issue 11, outside attack X18-08/09/16).
 */
export const hostHomeVariable = 'POLYWAVE_HOST_HOME';

/** `env` for a git run outside the sandbox: HOME back to the orchestrator's when it is an agent's environment. */
export function hostGitEnvironment<T extends Readonly<Record<string, string | undefined>>>(env: T): T {
  const host = env[hostHomeVariable];
  const searchPath = absolutePathEntries(env.PATH);
  // PYTHONSAFEPATH (Python ≥ 3.11): a filter or textconv driver git runs as `python3 -m <tool>` (nbstripout's,
  // installed by `nbstripout --install`) does not put git's working directory — an agent's worktree, where the
  // agent left an ignored `nbstripout.pyc` — first on sys.path (outside attack X21-13: the agent's module ran on
  // the host as the filter, during polywave's own `git add`/`status`).
  return { ...env, ...(host === undefined || host === '' ? {} : { HOME: host }), ...(searchPath === undefined ? {} : { PATH: searchPath }), PYTHONSAFEPATH: '1' } as T;
}

/** See src/sandbox/search-path.ts (X40-02): re-exported for the git port. */
export { absolutePathEntries };
