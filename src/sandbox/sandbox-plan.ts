/**
 * What one sandboxed process may touch (DESIGN §3.1): the plan is data, built once per agent
 * (or per gate) and handed to {@link wrapInSandbox} for every command. Paths are absolute.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PolywaveError } from '../errors/polywave-error.js';
import { privateUserDir } from './private-dir.js';
import { isCredentialVariable, withoutCredentials } from './credential-variables.js';
import { foreignScratchDirs, registeredWorkerDirs } from './scratch-dirs.js';
import { mountAliases } from './mount-table.js';
import { withAbsolutePath } from './search-path.js';

/** The boundary the OS enforces for one agent or gate. */
export interface SandboxPlan {
  /** Directories (or files) the process may write: the worktree, a private HOME and TMPDIR, caches. */
  writable: string[];
  /** Paths inside a writable one that stay read-only (the worktree's `.git` file, a main checkout's `.git` directory). */
  readOnlyWithin: string[];
  /** Paths that cannot be read at all (other worktrees, secrets, the user's home). */
  unreadable: string[];
  /**
   * Paths inside an unreadable one that are readable again, read-only: the tool roots of the user's
   * home a build needs (see {@link homeView}). An unreadable path inside one of them stays unreadable.
   */
  readable?: string[];
  /** Hosts the process may reach through the sandbox's proxy (`registry.npmjs.org`, `*.example.com`); empty = no network. */
  allowedHosts: string[];
  /**
   * Unreadable directories whose empty view is read-only as well (the main checkout seen from a worktree:
   * a write there fails with EROFS instead of vanishing into the view, so an agent that wrote to the
   * checkout's path learns it at once rather than losing the work).
   */
  emptyReadOnly?: string[];
  /**
   * Files the sandbox sees with their credential values replaced (capture group 1 of `extract`, a regular
   * expression applied to the whole file): the repository's `.git/config` when a remote URL carries a
   * password or token, or an `http.extraHeader` carries an authorization (CI checkouts write one).
   */
  maskedFiles?: Array<{ path: string; extract: string }>;
  /**
   * Files the sandbox sees as another file (bound read-only over them, after every other mount): the masked
   * copy polywave made of a git config file sandbox-runtime cannot mask (not UTF-8 text: outside attack X21-04).
   * Each `path` is in `unreadable` too, so a platform without the bind keeps it hidden.
   */
  boundCopies?: Array<{ path: string; source: string }>;
  /**
   * Files the sandbox shows as they were when it started and whose replacement it would not see (outside attack X43-18):
   * the repository's git configuration files, masked or not — git writes one by renaming a new file over it, and the
   * mask (a bind of the file as it was) no longer covers the path, so a credential set meanwhile (`git remote set-url`)
   * was read in clear. Watched like the hidden paths: one replaced, or absent and there now, means a new sandbox.
   */
  watchedFiles?: string[];
  /**
   * Directories where the plan hid entries BY NAME from a listing taken when it was made (outside attack X43-15/16): the
   * git directory — what is not git's own at its top, in its `info/` and in each submodule's git directory
   * ({@link gitDirectoryForeignEntries}) — and the main checkout's dependency directories bound back into a sandbox
   * working elsewhere — the secret-named files at their top ({@link dependencyDirectoryPrivates}). A file made there
   * later (`.git/.git-credentials`, `node_modules/.env.production`) was readable: the appeared-since-start check lists
   * them again ({@link relistedPrivates}) and a new one means a new sandbox, as for a parent's `.env` (X42-03).
   */
  relisted?: { gitDir?: string; dependencyDirs?: string[] };
}

/** The `sandbox` section of polywave.config.json (see store/project-config.ts). */
export interface SandboxSettings {
  network?: { allow?: readonly string[] };
  /** Extra writable directories (shared caches such as `~/.npm`), `~/` expanded with the user's home. */
  writable?: readonly string[];
  /** Extra readable (read-only) directories or files of the user's home (`~/.config/mytool`), `~/` expanded. */
  readable?: readonly string[];
}

/**
 * Files of the user's home an agent must never read (credentials of git hosts, clouds, registries).
 * The home is hidden whole where it can be ({@link homeView}); this list still applies inside the
 * tool roots bound back (`.cargo/credentials.toml`) and where the home cannot be hidden.
 */
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

/** `sandbox.readable` as absolute paths: `~/` in the home, a relative entry in the main checkout (it puts an ignored path of the checkout back). */
function configReadable(config: SandboxSettings | undefined, userHome: string, mainCheckout: string): string[] {
  return (config?.readable ?? []).map((entry) => (entry === '~' || entry.startsWith('~/') || path.isAbsolute(entry) ? expandHome(entry, userHome) : path.resolve(mainCheckout, entry)));
}

function unique(paths: Iterable<string>): string[] {
  return [...new Set(paths)];
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Whether `plan` lets its sandbox write `directory` (it, or a directory above it, is writable). */
export function planWritesIn(plan: Pick<SandboxPlan, 'writable'>, directory: string): boolean {
  return plan.writable.some((entry) => isInside(path.resolve(directory), path.resolve(entry)));
}

/**
 * Tool and cache directories of the user's home that builds read (issue 11, outside attack X10 N1b:
 * the home behind a deny-list still showed 28 credential stores `homeSecrets` did not name — glab,
 * doctl, fly, pulumi, rclone, podman, browser cookies…). The home is unreadable as a whole in agent
 * and gate sandboxes; these stay readable, read-only, when they exist. Credential files inside them
 * (`.cargo/credentials.toml`, `.m2/settings.xml` is not inside `.m2/repository`) stay hidden.
 */
export const homeToolDirs: readonly string[] = Object.freeze([
  '.nvm',
  '.volta',
  '.fnm',
  '.local/share/fnm',
  '.n',
  '.rustup',
  '.cargo',
  'go/pkg',
  'sdk',
  '.m2/repository',
  '.gradle/caches',
  '.gradle/wrapper',
  '.pyenv',
  '.rbenv',
  '.asdf',
  '.local/share/mise',
  '.sdkman',
  '.bun',
  '.deno',
  '.local/share/pnpm',
  '.npm/_cacache',
  '.cache/ms-playwright',
  '.cache/Cypress',
  '.cache/puppeteer',
]);

/** Variables naming a tool's install or cache directory (read when they lie inside the home). */
const toolDirectoryVariables = ['NVM_DIR', 'VOLTA_HOME', 'FNM_DIR', 'N_PREFIX', 'RUSTUP_HOME', 'CARGO_HOME', 'GOROOT', 'GOPATH', 'GOMODCACHE', 'PYENV_ROOT', 'RBENV_ROOT', 'ASDF_DIR', 'ASDF_DATA_DIR', 'MISE_DATA_DIR', 'SDKMAN_DIR', 'JAVA_HOME', 'GRADLE_HOME', 'MAVEN_HOME', 'M2_HOME', 'BUN_INSTALL', 'DENO_INSTALL', 'PNPM_HOME', 'ANDROID_HOME', 'ANDROID_SDK_ROOT', 'FLUTTER_ROOT', 'CONDA_PREFIX', 'VIRTUAL_ENV'];

/** Variables naming a credential file or directory under a name {@link isCredentialVariable} does not flag. */
const credentialPathVariables = ['KUBECONFIG', 'AWS_CONFIG_FILE', 'DOCKER_CONFIG', 'CLOUDSDK_CONFIG', 'AZURE_CONFIG_DIR', 'GNUPGHOME', 'PASSWORD_STORE_DIR', 'NETRC', 'NPM_CONFIG_USERCONFIG', 'npm_config_userconfig', 'BOTO_CONFIG', 'RCLONE_CONFIG', 'PGPASSFILE', 'PGSERVICEFILE', 'VAULT_CONFIG_PATH', 'TF_CLI_CONFIG_FILE'];

export function realOrResolved(entry: string): string {
  try {
    return realpathSync(entry);
  } catch {
    return path.resolve(entry);
  }
}

/** The directory a build needs for an executable directory `dir` inside `home`: `<tool>/bin` → `<tool>` (not for `~/bin`, `~/.local/bin`). */
function toolRootOf(dir: string, home: string): string {
  if (path.basename(dir) !== 'bin') return dir;
  const parent = path.dirname(dir);
  return parent === home || parent === path.join(home, '.local') ? dir : parent;
}

/**
 * What a link in a PATH directory of the home puts back: the link's target FILE alone, when it is
 * an executable regular file that is not in a credential store ({@link homeSecrets}) nor named like
 * a secret file ({@link secretFileName}). Nothing for a link to a directory (not followed), a data
 * file or anything else. Outside attack X13 #4 (`~/.local/bin/x -> ~/.config/glab-cli/config.yml`)
 * and issue 11 (S9): the target's whole directory was put back, so `~/.local/bin/x ->
 * ~/Documents/run.sh` opened `~/Documents`; a program is run from its one file
 * (`~/.local/bin/claude` → `~/.local/share/claude/versions/1.0`).
 */
function linkTargetFile(target: string, home: string): string | undefined {
  let info;
  try {
    info = statSync(target);
  } catch {
    return undefined; // dangling or unreadable: nothing to put back
  }
  if (!info.isFile() || (info.mode & 0o111) === 0) return undefined;
  if (secretFileName.test(path.basename(target))) return undefined;
  if (homeSecrets.some((entry) => isInside(target, path.join(home, entry)))) return undefined;
  return target;
}

/** polywave's own package directory (dist/native/polywave-seccomp runs in every sandbox) and the `node_modules` holding it, if any. */
function packageDirs(): string[] {
  const packageRoot = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/+$/, '');
  const dirs = [packageRoot];
  // installed as a dependency: sandbox-runtime may be hoisted beside it
  let parent = path.dirname(packageRoot);
  if (path.basename(parent).startsWith('@')) parent = path.dirname(parent);
  if (path.basename(parent) === 'node_modules') dirs.push(parent);
  return dirs;
}

/**
 * What a sandbox reads of the user's home `home` (realpath): every PATH entry inside it (as its tool
 * root: `~/.nvm/versions/node/v20/bin` → `~/.nvm/versions/node/v20`) and, for a link in such an
 * entry to an executable elsewhere in the home, that one file (`~/.local/bin/claude` →
 * `~/.local/share/claude/versions/1.0`; never a directory, a data file or a credential store: {@link linkTargetFile}),
 * {@link homeToolDirs}, the directories {@link toolDirectoryVariables} name, `~/.local/lib/python*`,
 * node itself and polywave's package when installed there. Only existing paths, realpath'd, strictly
 * inside `home`.
 */
export function homeToolRoots(home: string, env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  // remembered for a few seconds: a wave plans many agents and gates with the same PATH (~10 ms each otherwise)
  const key = JSON.stringify([home, env.PATH ?? '', ...toolDirectoryVariables.map((name) => env[name] ?? '')]);
  const cached = toolRootsCache.get(key);
  if (cached && Date.now() - cached.at < 10_000) return cached.roots;
  const roots = findToolRoots(home, env);
  if (toolRootsCache.size > 32) toolRootsCache.clear();
  toolRootsCache.set(key, { at: Date.now(), roots });
  return roots;
}

const toolRootsCache = new Map<string, { at: number; roots: string[] }>();

function findToolRoots(home: string, env: Readonly<Record<string, string | undefined>>): string[] {
  const found: string[] = [];
  const add = (entry: string | undefined): void => {
    if (entry === undefined || entry === '' || !path.isAbsolute(entry)) return;
    const real = realOrResolved(entry);
    if (real !== home && isInside(real, home) && existsSync(real)) found.push(real);
  };
  for (const entry of (env.PATH ?? '').split(path.delimiter)) {
    if (entry === '' || !path.isAbsolute(entry)) continue;
    const real = realOrResolved(entry);
    if (real === home || !isInside(real, home) || !existsSync(real)) continue;
    const root = toolRootOf(real, home);
    add(root);
    // links to programs elsewhere in the home (a few hundred at most)
    try {
      for (const dirent of readdirSync(real, { withFileTypes: true }).slice(0, 500)) {
        if (!dirent.isSymbolicLink()) continue;
        const target = realOrResolved(path.join(real, dirent.name));
        if (!isInside(target, root) && isInside(target, home)) add(linkTargetFile(target, home));
      }
    } catch {
      // unreadable: the directory alone
    }
  }
  for (const entry of homeToolDirs) add(path.join(home, entry));
  for (const name of toolDirectoryVariables) add(env[name]);
  try {
    for (const name of readdirSync(path.join(home, '.local/lib'))) if (name.startsWith('python')) add(path.join(home, '.local/lib', name));
  } catch {
    // none
  }
  const node = realOrResolved(process.execPath);
  add(path.basename(path.dirname(node)) === 'bin' ? path.dirname(path.dirname(node)) : path.dirname(node));
  for (const entry of packageDirs()) add(entry);
  return unique(found);
}

/**
 * `entry` as read-only binds that leave out the writable paths inside it: bubblewrap binds a
 * carve-out of the hidden home AFTER the writable paths, so a read-only bind of the main checkout
 * would cover an agent worktree inside it (`.claude/worktrees/…`). So a directory holding one is
 * bound child by child (the children on the way down likewise); the writable path is bound by its
 * own rule. A child that is a symlink is left out (sandbox-runtime does not bind links back).
 */
function carveAround(entry: string, holes: readonly string[], denied: ReadonlySet<string>): string[] {
  if (holes.length === 0) return [entry];
  const out: string[] = [];
  let children: string[];
  try {
    children = readdirSync(entry);
  } catch {
    return [];
  }
  for (const name of children) {
    const child = path.join(entry, name);
    const inner = holes.filter((hole) => isInside(hole, child));
    // a denied child is not bound back: a file's own read rule would lift the file's deny
    if (inner.includes(child) || denied.has(child)) continue;
    out.push(...carveAround(child, inner, denied));
  }
  return out;
}

/**
 * The readable carve-outs of a plan as bubblewrap can bind them: none inside a writable path, none
 * over a writable one ({@link carveAround}), none that is or lies inside a denied path other than the
 * hidden home itself (`~/.docker/bin` on PATH makes `~/.docker` a tool root: it stays hidden).
 */
function bindable(readable: readonly string[], writable: readonly string[], unreadable: readonly string[], hiddenHome: readonly string[]): string[] {
  const open = writable.map(realOrResolved);
  const denied = new Set(unreadable);
  const inDenied = (entry: string): boolean => unreadable.some((hidden) => !hiddenHome.includes(hidden) && isInside(entry, hidden));
  return unique(
    readable.flatMap((entry) => (inDenied(entry) || open.some((path_) => isInside(entry, path_)) ? [] : carveAround(entry, open.filter((path_) => isInside(path_, entry)), denied))),
  );
}

/** Input of {@link homeView}. */
export interface HomeViewInput {
  /** The user's real home. */
  userHome: string;
  /** Paths the sandbox needs readable besides the tool roots: the repository, its git directory, `sandbox.readable`… */
  needed: readonly string[];
  /** The plan's writable paths (bound back by the sandbox; one that is or holds the home keeps it readable). */
  writable: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The user's home as an allow-list (outside attack X10 N1b): `{ unreadable: [<home>], readable: […] }`
 * where readable = {@link homeToolRoots} + the `needed` paths inside the home. Empty when the home is
 * `/`, missing, or a writable path or a needed one is the home or holds it (then only the deny-list
 * {@link homeSecrets} applies).
 */
export function homeView(input: HomeViewInput): { unreadable: string[]; readable: string[] } {
  const none = { unreadable: [], readable: [] };
  if (!existsSync(input.userHome)) return none;
  const home = realOrResolved(input.userHome);
  if (home === path.parse(home).root) return none;
  const needed = input.needed.map(realOrResolved);
  if ([...input.writable.map(realOrResolved), ...needed].some((entry) => isInside(home, entry))) return none;
  const all = unique([...homeToolRoots(home, input.env ?? process.env), ...needed.filter((entry) => isInside(entry, home) && existsSync(entry))]);
  // one bind for `~/.pyenv` covers `~/.pyenv/shims` (the secrets inside stay hidden: the plan denies them after)
  const readable = all.filter((entry) => !all.some((other) => other !== entry && isInside(entry, other)));
  return { unreadable: unique([home, ...(input.userHome !== home ? [path.resolve(input.userHome)] : [])]), readable };
}

/**
 * Names of files that hold secrets by convention (case-insensitive): `.env`, `.env.*`, `.envrc`,
 * `.dev.vars` (Cloudflare), data files with `secret`/`credential` in their name (`secrets.yml`,
 * `application-secrets.yaml`), keys and certificates (`*.pem`, `*.key`, `*.p12`…), registry and ssh
 * credentials, Terraform variables and state (`*.tfvars`, `*.tfvars.json`, `*.tfstate`,
 * `*.tfstate.backup`) and kubeconfigs (`kubeconfig*`; outside attack X13 #5), and (X14 #2) `.secrets*`,
 * `env.local`, `.vault-token`, `.s3cfg`, `.boto`, `.terraformrc`, `.htpasswd`, `*.ovpn`,
 * `database.yml`, `wp-config.php`, `appsettings.*.json`, and (X30-06) ssh keys under the names ssh-keygen -f and
 * deploy-key how-tos give them (`id_rsa_deploy`, `id_ed25519_sk`, `id_ed25519-github`, `deploy_key`; never a `.pub`),
 * `.yarnrc.yml` (npmAuthToken), Composer's `auth.json`, `token.json`, `*.env`. Only UNTRACKED files are hidden by name (a
 * tracked one is the project's); every untracked IGNORED file is hidden anyway ({@link ignoredPathsToHide}).
 */
export const secretFileName =
  /^(?:\.env(?:\..+)?|\.envrc|\.dev\.vars(?:\..+)?|\.npmrc|\.pypirc|\.netrc|\.git-credentials|\.pgpass|[^/]*(?:secrets?|credentials?)(?:[._-][^/]*)?\.(?:json|ya?ml|toml|ini|env|txt|csv|xml|conf|cfg|properties|enc)|secrets|credentials|.+\.(?:pem|key|p12|pfx|jks|keystore|ppk)|(?![^/]*\.pub$)id_(?:rsa|dsa|ecdsa|ed25519|xmss)(?:_sk)?(?:[._-][^/]*)?|(?![^/]*\.pub$)[^/]*deploy[_-]?key[^/]*|\.yarnrc\.yml|auth\.json|token\.json|.+\.env|service[-_]?account[^/]*\.json|.+\.tfvars(?:\.json)?|.+\.tfstate(?:\.[^/]+)?|\.?kubeconfig[^/]*|\.secrets(?:\..+)?|env\.local|\.vault-token|\.s3cfg|\.boto|\.terraformrc|\.htpasswd|.+\.ovpn|database\.ya?ml|wp-config\.php|appsettings\..+\.json)$/i;

/** git pathspecs for {@link secretFileName} (globs, case-insensitive, filtered by the expression afterwards). */
const secretPathspecs = [
  '.env*', '.envrc', '.dev.vars*', '.npmrc', '.pypirc', '.netrc', '.git-credentials', '.pgpass', '*secret*', '*credential*', '*.pem', '*.key', '*.p12', '*.pfx', '*.jks', '*.keystore', '*.ppk', 'id_*', '*deploy*key*', '.yarnrc.yml', 'auth.json', 'token.json', '*.env', 'service*account*.json',
  '*.tfvars', '*.tfvars.json', '*.tfstate', '*.tfstate.*', 'kubeconfig*', '.kubeconfig*',
  '.secrets*', 'env.local', '.vault-token', '.s3cfg', '.boto', '.terraformrc', '.htpasswd', '*.ovpn', 'database.yml', 'database.yaml', 'wp-config.php', 'appsettings.*.json',
].map((glob) => `:(glob,icase)**/${glob}`);
/** At most this many files of a checkout are hidden (each is one mount). */
const secretFileLimit = 400;
const secretFilesCache = new Map<string, { at: number; files: string[] }>();

/** The code of a sandbox plan that cannot be built because git could not list what it must hide. */
export const planUnavailableCode = 'SANDBOX_PLAN_UNAVAILABLE';
/** The largest listing read from git (a wholly ignored directory is one entry; a per-file rule over a big tree is one per file). */
const listingMaxBytes = 512 * 1024 * 1024;
const listingTimeoutMs = 60_000;

/**
 * The NUL-separated paths `git <args>` lists in `checkout`, FAIL CLOSED (issue 11, outside attack X16
 * #7: a listing over the old 16 MiB buffer, or past its timeout, counted as "nothing to hide", so
 * every ignored file of the checkout was readable again, silently). None when `checkout` does not
 * exist or is not in a git repository; any other failure (output over {@link listingMaxBytes}, the
 * timeout, a git error) throws {@link planUnavailableCode} naming the checkout and git's message, so no
 * agent or gate starts with a plan that lost what it hides.
 */
function listForPlan(checkout: string, args: readonly string[], what: string): string[] {
  if (!existsSync(checkout)) return [];
  let output: string;
  try {
    output = execFileSync('git', ['-c', 'core.fsmonitor=false', ...args], {
      cwd: checkout,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      // LC_ALL=C: git's "not a git repository" in English whatever the user's locale
      // no credential variables: nothing here talks to a remote, and a user's filter may run (X23-08)
      // PATH's absolute entries only: cwd is the main checkout, where an agent's merged `git` may lie (X41-01)
      env: { ...withAbsolutePath(withoutCredentials(process.env)), GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C', LANGUAGE: 'C' },
      maxBuffer: listingMaxBytes,
      timeout: listingTimeoutMs,
    });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { status?: number | null; signal?: string | null; stderr?: string | Buffer };
    const stderr = String(failure.stderr ?? '').trim();
    if (failure.status === 128 && /not a git repository/i.test(stderr)) return [];
    const why =
      failure.code === 'ENOBUFS'
        ? `git's listing is over ${listingMaxBytes / 1024 / 1024} MiB`
        : failure.code === 'ETIMEDOUT' || failure.signal === 'SIGTERM'
          ? `git did not answer within ${listingTimeoutMs / 1000} s`
          : stderr !== ''
            ? stderr.split('\n').map((line) => line.trim()).filter(Boolean).join('; ').slice(0, 400)
            : (failure.message.split('\n')[0] ?? 'git failed');
    throw new PolywaveError({
      code: planUnavailableCode,
      message: `cannot build the sandbox plan: git could not list the ${what} of ${checkout} (${why.trim()}), and a plan without them would leave them readable to agents and gates; fix the repository (or narrow its ignore rules to whole directories) and retry`,
      details: { checkout, listing: what },
      cause: error,
    });
  }
  return output.split('\0').filter((entry) => entry !== '');
}

/**
 * One warning per checkout and limit per process when a hide limit left paths readable (the ignored-path
 * and the secret-name limits alike: outside attack X16 #5, the latter was silent).
 */
function warnLimitOnce(kind: string, checkout: string, message: string): void {
  const key = `${kind}\0${checkout}`;
  if (limitWarned.has(key)) return;
  limitWarned.add(key);
  process.stderr.write(`polywave: warning: ${message}\n`);
}
const limitWarned = new Set<string>();

/** Dependency directories whose secret-named files are test fixtures far more often than secrets (certifi's `*.pem`): counted last. */
const dependencyDirectoryNames: ReadonlySet<string> = new Set(['.venv', 'venv', 'vendor', 'site-packages', 'dist-packages', '.tox', 'node_modules', '.nox', '.eggs']);

/** Sort key of a secret-named candidate: outside dependency directories first, then the shallowest, then by path. */
function secretCandidateOrder(a: string, b: string): number {
  const inDependency = (entry: string): number => (entry.split('/').slice(0, -1).some((segment) => dependencyDirectoryNames.has(segment)) ? 1 : 0);
  const depth = (entry: string): number => entry.split('/').length;
  return inDependency(a) - inDependency(b) || depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The untracked files (ignored or not) of `checkout` whose names are {@link secretFileName}, outside
 * `node_modules` (outside attack X10 N1c: an agent read the main checkout's `pkgs/app/.env.local`,
 * `.dev.vars`, `secrets.yml`). One `git ls-files --others`, remembered for a few seconds (one wave's
 * agents). A tracked file is the project's and stays readable. Absolute paths; none outside git;
 * throws {@link planUnavailableCode} when git cannot list them. Over {@link secretFileLimit}, the files
 * outside dependency directories (`.venv`, `vendor`, `site-packages`…) and the shallowest go first
 * (outside attack X16 #5: 405 `*.pem` of a `.venv` uncovered `build/.env`), with one warning.
 */
export function untrackedSecretFiles(checkout: string): string[] {
  const key = path.resolve(checkout);
  const cached = secretFilesCache.get(key);
  if (cached && Date.now() - cached.at < 10_000) return cached.files;
  const candidates = listForPlan(key, ['ls-files', '--others', '-z', '--', ...secretPathspecs, ':(exclude,glob)**/node_modules/**'], 'untracked secret-named files')
    .filter((entry) => secretFileName.test(path.basename(entry)))
    .sort(secretCandidateOrder);
  if (candidates.length > secretFileLimit) {
    warnLimitOnce('secret-names', key, `${key} has ${candidates.length} untracked secret-named files (keys, certificates, .env…); only ${secretFileLimit} are hidden from agents and gates working elsewhere (those outside dependency directories and the shallowest first), ${candidates.length - secretFileLimit} stay readable. Move private files out of the checkout.`);
  }
  const files = candidates.slice(0, secretFileLimit).map((entry) => path.join(key, entry));
  secretFilesCache.set(key, { at: Date.now(), files });
  return files;
}

/**
 * Directory names whose ignored content stays readable to agents and gates outside the main checkout
 * (build output, dependencies, caches: what a build or a test reads, never a secret by convention):
 * JavaScript (`node_modules`, `dist`, `build`, `out`, `coverage`, `.next`, `.nuxt`, `.svelte-kit`,
 * `.turbo`, `.parcel-cache`, `.cache`), Rust/JVM (`target`, `.gradle`), Python (`.venv`, `venv`,
 * `__pycache__`, `.tox`, `.pytest_cache`, `.mypy_cache`, `.ruff_cache`), Go/PHP/Ruby (`vendor`), Dart
 * (`.dart_tool`), .NET (`bin`, `obj`), and the dependency directories a throwaway checkout links (`bower_components`, `jspm_packages`, `__pypackages__`, Ruby `.bundle`, CocoaPods `Pods`). Secret-named files inside them are still hidden
 * ({@link untrackedSecretFiles}, except under `node_modules`).
 */
export const buildDirectoryNames: ReadonlySet<string> = new Set([
  'node_modules', 'dist', 'build', 'out', 'coverage', '.next', '.nuxt', '.svelte-kit', '.turbo', '.parcel-cache', '.cache',
  'target', '.gradle', '.venv', 'venv', '__pycache__', '.tox', '.pytest_cache', '.mypy_cache', '.ruff_cache', 'vendor', '.dart_tool', 'bin', 'obj',
  // the dependency directories a throwaway checkout links in (src/gates/throwaway-checkout.ts dependencyDirNames)
  'bower_components', 'jspm_packages', '__pypackages__', '.bundle', 'Pods',
]);
/** At most this many ignored paths of a checkout are hidden (each is one mount at every sandbox start). */
const ignoredHideLimit = 300;
const ignoredCache = new Map<string, { at: number; entries: string[] }>();

/** git's collapsed list of the untracked IGNORED paths of `checkout` (a wholly ignored directory is one entry, with a trailing `/`), remembered for a few seconds; fail closed ({@link listForPlan}). */
function ignoredEntries(checkout: string): string[] {
  const cached = ignoredCache.get(checkout);
  if (cached && Date.now() - cached.at < 10_000) return cached.entries;
  const entries = listForPlan(checkout, ['ls-files', '--others', '--ignored', '--exclude-standard', '--directory', '-z'], 'ignored paths');
  if (ignoredCache.size > 64) ignoredCache.clear();
  ignoredCache.set(checkout, { at: Date.now(), entries });
  return entries;
}

/**
 * The untracked IGNORED paths of a main checkout an agent or gate working ELSEWHERE (its worktree, a
 * throwaway checkout) may not read (outside attack X14 #2: a name list always misses some —
 * `.vault-token`, `.s3cfg`, `database.yml`, `wp-config.php`, `*.ovpn`…): every entry of git's
 * collapsed ignored list, except those in a {@link buildDirectoryNames} directory. A path in `keep`
 * (the sandbox's own root, writable paths, `sandbox.readable`) stays readable: an ignored directory
 * holding one is hidden child by child around it. Absolute paths, at most {@link ignoredHideLimit}.
 */
export function ignoredPathsToHide(checkout: string, keep: readonly string[]): string[] {
  const key = path.resolve(checkout);
  const hidden: string[] = [];
  let skipped = 0;
  const around = (absolute: string, depth: number): void => {
    if (hidden.length >= ignoredHideLimit || keep.some((open) => isInside(absolute, open))) return;
    if (!keep.some((open) => isInside(open, absolute))) {
      hidden.push(absolute);
      return;
    }
    if (depth > 12) return;
    let names: string[];
    try {
      names = readdirSync(absolute);
    } catch {
      return;
    }
    for (const name of names) around(path.join(absolute, name), depth + 1);
  };
  // Over the limit (each hidden path is one mount at every sandbox start: 300 ≈ +120 ms, 1,000 ≈ +1.1 s
  // for bwrap here), the entries most likely to hold a secret go first — secret-named, then whole
  // directories (one mount each, any content), then dotfiles, then the rest — and the checkout gets one warning per process naming how many stayed readable.
  const likely = (entry: string): number => {
    const name = path.basename(entry.replace(/\/+$/, ''));
    return secretFileName.test(name) ? 0 : entry.endsWith('/') ? 1 : name.startsWith('.') ? 2 : 3;
  };
  const entries = [...ignoredEntries(key)].sort((a, b) => likely(a) - likely(b));
  // git also lists an untracked directory above an ignored one (`pkgs/`, `pkgs/web/` for `pkgs/web/node_modules/`):
  // not ignored whole — its ignored content has entries of its own
  const parents = new Set(entries.flatMap((entry) => entry.replace(/\/+$/, '').split('/').slice(0, -1).map((_, index, all) => `${all.slice(0, index + 1).join('/')}/`)));
  for (const entry of entries) {
    if (parents.has(entry)) continue;
    const segments = entry.replace(/\/+$/, '').split('/');
    const directories = entry.endsWith('/') ? segments : segments.slice(0, -1);
    if (directories.some((segment) => buildDirectoryNames.has(segment))) continue;
    const before = hidden.length;
    around(path.join(key, ...segments), 0);
    if (hidden.length === before && hidden.length >= ignoredHideLimit) skipped += 1;
  }
  if (skipped > 0) {
    warnLimitOnce('ignored', key, `${key} has more than ${ignoredHideLimit} ignored paths outside build directories; ${skipped} of them stay readable to agents and gates working elsewhere (secret-named files, whole directories and dot files were hidden first). Move private files out of the checkout.`);
  }
  return hidden;
}

/**
 * What a sandbox working ELSEWHERE (an agent's worktree, a gate's throwaway checkout) may still read of
 * the main checkout, which it otherwise cannot read at all (issue 11, outside attack X16: a deny-list
 * taken when the sandbox starts missed every file created in the checkout afterwards, and stopped at
 * 300 ignored paths): its git directory when it lies inside (a linked worktree's git reads it), the
 * dependency directories git lists as ignored that worktrees and throwaway checkouts link to
 * ({@link linkedDependencyNames}: `node_modules`, a `.venv`), and `extra` (`sandbox.readable` entries inside
 * it). Build output (`dist`, `target`, `__pycache__`, `bin`…) is not bound back (outside attack X19-02: the
 * compiled copy of a hidden `local_settings.py`, a private `bin/deploy.sh`): a sandbox elsewhere builds its own.
 * Each is one read-only bind; absolute paths, none inside another; fail closed like {@link ignoredPathsToHide}.
 */
export function checkoutCarveOuts(checkout: string, gitCommonDir: string | undefined, extra: readonly string[]): string[] {
  const key = path.resolve(checkout);
  const found: string[] = [];
  if (gitCommonDir !== undefined && isInside(path.resolve(gitCommonDir), key) && path.resolve(gitCommonDir) !== key) found.push(path.resolve(gitCommonDir));
  for (const entry of ignoredEntries(key)) {
    const segments = entry.replace(/\/+$/, '').split('/');
    // a dependency directory on the way (the entry itself only when git listed it as a directory)
    const last = entry.endsWith('/') ? segments.length : segments.length - 1;
    const at = segments.slice(0, last).findIndex((segment) => linkedDependencyNames.has(segment));
    if (at >= 0) found.push(path.join(key, ...segments.slice(0, at + 1)));
  }
  for (const entry of extra) if (isInside(path.resolve(entry), key) && path.resolve(entry) !== key) found.push(path.resolve(entry));
  const all = unique(found).filter((entry) => existsSync(entry));
  return all.filter((entry) => !all.some((other) => other !== entry && isInside(entry, other)));
}

/**
 * The dependency directories a worktree's or a throwaway checkout's links point into (worktree setup's
 * `node_modules` / `.venv` links, src/gates/throwaway-checkout.ts `dependencyDirNames`): the only ignored
 * content of the main checkout bound back into a sandbox working elsewhere.
 */
const linkedDependencyNames: ReadonlySet<string> = new Set(['node_modules', 'bower_components', 'jspm_packages', '.venv', 'venv', '__pypackages__', '.bundle', 'vendor', 'Pods']);

/**
 * What stays hidden inside a bound-back dependency directory (outside attack X19-02): Bundler's local
 * `config` (where `bundle config set --local` keeps private gem-server credentials), a virtualenv's `pip.conf`
 * / `pip.ini` (an index URL with a token), tool caches (`.cache`), Prisma's copy of `.env`, every secret-named
 * file at its top ({@link secretFileName}: `.env.production`, `.npmrc`…, outside attack X20-09), and the git
 * directories of clones kept inside it ({@link dependencyGitDirectories}).
 */
export function dependencyDirectoryPrivates(dir: string): string[] {
  const name = path.basename(dir);
  const candidates = [...(name === '.bundle' ? ['config'] : []), ...(name === 'node_modules' ? ['.prisma/client/.env'] : []), 'pip.conf', 'pip.ini', '.cache', '.env', '.env.local', '.npmrc', '.pypirc', '.netrc'];
  let top: string[] = [];
  try {
    top = readdirSync(dir).filter((entry) => secretFileName.test(entry));
  } catch {
    // unreadable: nothing more to hide at its top
  }
  const named = unique([...candidates, ...top]).map((entry) => path.join(dir, entry)).filter((entry) => existsSync(entry));
  return [...named, ...dependencyGitDirectories(dir)];
}

/** Entries of `dir` (none when it cannot be read). */
function entriesOf(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** At most this many git directories inside one dependency directory are hidden (each is one mount). */
const dependencyGitDirLimit = 100;

/**
 * The git directories of clones that package managers keep inside a dependency directory (outside attack
 * X20-09): their config keeps the install URL with its token (`pip install -e git+https://TOKEN@…` clones into
 * `<venv>/src/<name>/`; git dependencies kept as clones in `node_modules/<pkg>/` or Composer's
 * `vendor/<vendor>/<pkg>/` with `--prefer-source`; Bundler's bare mirror of a `git:` source in
 * `…/ruby/<version>/cache/bundler/git/<name>/` and its checkouts in `…/bundler/gems/<name>/`), and their
 * reflogs the URLs fetched. No sandbox needs them (the package's files stay readable); hidden whole. Looked for
 * where the package managers put them, not by walking the directory (a `node_modules` holds 10⁵ files).
 */
export function dependencyGitDirectories(dir: string): string[] {
  // (a stat per package: ~16 ms for a node_modules of 1,600 packages; remembered a few seconds, while the directory is unchanged)
  let changed: number;
  try {
    changed = statSync(dir).mtimeMs;
  } catch {
    return [];
  }
  const cached = dependencyGitDirsCache.get(dir);
  if (cached && cached.changed === changed && Date.now() - cached.at < 10_000) return cached.found;
  const found = findDependencyGitDirectories(dir);
  if (dependencyGitDirsCache.size > 64) dependencyGitDirsCache.clear();
  dependencyGitDirsCache.set(dir, { at: Date.now(), changed, found });
  return found;
}
const dependencyGitDirsCache = new Map<string, { at: number; changed: number; found: string[] }>();

function findDependencyGitDirectories(dir: string): string[] {
  const name = path.basename(dir);
  const found: string[] = [];
  const clone = (candidate: string): void => {
    if (found.length < dependencyGitDirLimit && existsSync(path.join(candidate, '.git'))) found.push(path.join(candidate, '.git'));
  };
  const bundler = (rubies: string): void => {
    for (const version of entriesOf(rubies)) {
      const mirrors = path.join(rubies, version, 'cache', 'bundler', 'git');
      for (const mirror of entriesOf(mirrors)) if (found.length < dependencyGitDirLimit) found.push(path.join(mirrors, mirror));
      const gems = path.join(rubies, version, 'bundler', 'gems');
      for (const gem of entriesOf(gems)) clone(path.join(gems, gem));
    }
  };
  if (name === '.venv' || name === 'venv' || name === '__pypackages__') {
    for (const entry of entriesOf(path.join(dir, 'src'))) clone(path.join(dir, 'src', entry));
  } else if (name === '.bundle') {
    bundler(path.join(dir, 'ruby'));
  } else {
    // node_modules/<pkg>, node_modules/@scope/<pkg>; vendor/<vendor>/<pkg> (Composer); Pods/<pod>
    for (const entry of entriesOf(dir)) {
      clone(path.join(dir, entry));
      if (entry.startsWith('@') || name === 'vendor') for (const inner of entriesOf(path.join(dir, entry))) clone(path.join(dir, entry, inner));
    }
    if (name === 'vendor') bundler(path.join(dir, 'bundle', 'ruby'));
  }
  return found;
}

/**
 * The lock and state files a package manager keeps inside a dependency directory, with the URLs it installed
 * from (outside attack X20-09: npm's hidden lockfile `node_modules/.package-lock.json` keeps
 * `"resolved": "git+https://TOKEN:x-oauth-basic@github.com/…"`): masked where a URL carries user-info (the
 * package manager still reads them).
 */
const dependencyStateFiles = ['.package-lock.json', '.yarn-state.yml', '.yarn-integrity', '.modules.yaml', '.pnpm/lock.yaml'];
/** A URL's user-info (group 1), as in git configuration. */
const urlUserinfo = /((?<=:\/\/)[^/\s@"'<>]+(?=@))/;
const stateMaskCache = new Map<string, { key: string; masked: boolean }>();

/** {@link dependencyStateFiles} of a dependency directory holding a URL with user-info, as masks. */
export function dependencyStateMasks(dir: string): Array<{ path: string; extract: string }> {
  const masks: Array<{ path: string; extract: string }> = [];
  for (const entry of dependencyStateFiles) {
    const file = path.join(dir, entry);
    let key: string;
    try {
      const stats = statSync(file);
      if (!stats.isFile()) continue;
      key = `${stats.size}:${stats.mtimeMs}:${stats.ino}`;
    } catch {
      continue;
    }
    let cached = stateMaskCache.get(file);
    if (cached?.key !== key) {
      let masked: boolean;
      try {
        // (a file that is not UTF-8 text cannot be masked: X21-04; a package manager's state file always is)
        const bytes = readFileSync(file);
        masked = isUtf8(bytes) && urlUserinfo.test(bytes.toString('utf8'));
      } catch {
        masked = false;
      }
      cached = { key, masked };
      if (stateMaskCache.size > 256) stateMaskCache.clear();
      stateMaskCache.set(file, cached);
    }
    if (cached.masked) masks.push({ path: file, extract: urlUserinfo.source });
  }
  return masks;
}

/** `word` as a case-insensitive pattern without a flag (the pattern travels to sandbox-runtime as source text, compiled with `gd` only). */
const anyCase = (word: string): string => word.replace(/[a-z]/gi, (letter) => `[${letter.toLowerCase()}${letter.toUpperCase()}]`);

/**
 * A credential in git configuration (group 1, the value): the user-info of a URL — its password
 * (`https://user:TOKEN@host/…`) or, without one, its user part (`https://ghp_TOKEN@host/…`: GitHub and others
 * take a token as the user name, outside attack X19-01; a plain user name is masked too, harmlessly) — in a
 * remote's `url`, `pushurl`, a `[url "…"]` section; and the value of a key that names a secret:
 * `http.extraHeader` (CI checkouts put `AUTHORIZATION: basic …` there, also in every submodule's config),
 * `sendemail.smtpPass`, and any key ending in `token`, `password`, `passwd` or `secret` (`github.token`).
 */
// (outside attack X21-01: also `credential.helper = "!f() { echo password=…; }; f"`, `core.sshCommand = sshpass -p …`,
// `core.askPass`, keys ending in `key` — `jira.apikey`, `api-key`, `accessKey`)
const credentialKeys = [anyCase('extraheader'), anyCase('smtppass'), anyCase('pass'), anyCase('helper'), anyCase('sshcommand'), anyCase('askpass'), `[a-zA-Z0-9_-]*(?:${anyCase('token')}|${anyCase('password')}|${anyCase('passwd')}|${anyCase('secret')}|${anyCase('key')})`].join('|');
/** A command git runs (a filter, a diff or merge driver) whose value names a credential (`curl -H 'PRIVATE-TOKEN: …'`): masked whole (X21-01). */
const credentialCommandKeys = `(?:${[anyCase('clean'), anyCase('smudge'), anyCase('process'), anyCase('textconv'), anyCase('command'), anyCase('driver')].join('|')})`;
const credentialWords = `(?:${[anyCase('token'), anyCase('authorization'), anyCase('bearer'), anyCase('passw'), anyCase('secret'), anyCase('apikey'), anyCase('api-key'), anyCase('x-access')].join('|')})`;
const gitConfigCredential = new RegExp(
  // a URL's whole user-info (outside attack X20-01: `https://u:pa:SECRET@…`, a `:` in the password), or the value of a
  // credential key — at a line's start or after its section header (`[http "…"] extraheader = …`), `pass`
  // (`imap.pass`), `api-token` — with its continuation lines (a value ending in `\` goes on on the next line)
  // (a URL's user-info runs to the LAST `@` of its authority: `https://u:p@SECRET@host`, X21-01)
  String.raw`((?<=://)[^/\s]+(?=@[^@/\s]*(?:[/\s:]|$))|(?<=(?:^|\n|\])[ \t]*(?:` + credentialKeys + String.raw`)[ \t]*=[ \t]*)(?:[^\s\\]|\\[^\n]|\\\n)(?:[^\n\\]|\\[^\n]|\\\n)*|(?<=(?:^|\n|\])[ \t]*` + credentialCommandKeys + String.raw`[ \t]*=[ \t]*)(?=[^\n]*` + credentialWords + String.raw`)(?:[^\s\\]|\\[^\n]|\\\n)(?:[^\n\\]|\\[^\n]|\\\n)*)`,
);

/** The files `[include]` / `[includeIf …]` of a git config file name (`path = …`), resolved as git does (relative to the file, `~/` the home). */
function includedConfigFiles(file: string, text: string, userHome: string): string[] {
  const found: string[] = [];
  let inInclude = false;
  for (const line of text.split('\n')) {
    const section = /^\s*\[\s*([A-Za-z]+)/.exec(line);
    if (section) inInclude = /^include(?:if)?$/i.test(section[1]!);
    const entry = inInclude ? /^\s*path\s*=\s*"?([^"\n]+?)"?\s*(?:[;#].*)?$/i.exec(line.replace(/^\s*\[[^\]]*\]/, '')) : null;
    if (!entry) continue;
    // a comment after the value (`path = info/q.inc ; the CI token`, X20-01) is not part of it
    const value = entry[1]!.replace(/\s+[;#].*$/, '').trim();
    found.push(value.startsWith('~/') ? path.join(userHome, value.slice(2)) : path.resolve(path.dirname(file), value));
  }
  return found;
}

/**
 * The git configuration files of a repository: `config` and `config.worktree` of its git directory and of
 * each linked worktree's, every submodule's `modules/…/config` (actions/checkout with submodules writes its
 * token into each), and the files they `[include]` (depth-limited).
 */
function gitConfigFiles(gitCommonDir: string, userHome: string): string[] {
  const files: string[] = [];
  const visit = (dir: string, depth: number): void => {
    files.push(path.join(dir, 'config'), path.join(dir, 'config.worktree'));
    if (depth > 3) return;
    for (const sub of ['worktrees', 'modules']) {
      let names: string[];
      try {
        names = readdirSync(path.join(dir, sub));
      } catch {
        continue;
      }
      for (const name of names) {
        if (sub === 'worktrees') files.push(path.join(dir, sub, name, 'config.worktree'));
        else visit(path.join(dir, sub, name), depth + 1);
      }
    }
  };
  visit(gitCommonDir, 0);
  const all: string[] = [];
  const queue = files.map((file) => ({ file, depth: 0 }));
  const seen = new Set<string>();
  // (outside attack X20-07: a cap of 64 left 17 of 80 submodule configs unmasked; 4,096 is a safety bound, not a budget)
  while (queue.length > 0 && all.length < 4096) {
    const { file, depth } = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    all.push(file);
    if (depth < 4) for (const included of includedConfigFiles(file, text, userHome)) queue.push({ file: included, depth: depth + 1 });
  }
  return all;
}

/**
 * The repository's git configuration files as masked files where they hold a credential (issue 11: agents read
 * the main checkout's `.git/config` — git needs it — and a token in a remote URL with it; outside attack
 * X19-01: also submodule configs and included files): the sandbox sees each value replaced by a placeholder,
 * git still works. Read when the plan is built; none for files that are unreadable or hold no credential.
 */
export function gitConfigMasks(gitCommonDir: string | undefined, userHome: string = os.homedir()): Array<{ path: string; extract: string }> {
  return classifiedConfigFiles(gitCommonDir, userHome).masks;
}

/**
 * The git configuration files with a credential that sandbox-runtime cannot mask: not UTF-8 text (outside attack
 * X21-04: it leaves such a file as it is — one Latin-1 byte in a comment of `.git/config` put every token in clear),
 * or included from outside the git directory and the user's home (X21-01). Unreadable in the plan; on Linux
 * polywave's masked copy is bound over each ({@link unmaskableConfigCopies}).
 */
export function gitConfigUnmaskable(gitCommonDir: string | undefined, userHome: string = os.homedir()): string[] {
  return classifiedConfigFiles(gitCommonDir, userHome).hidden;
}

/**
 * For each {@link gitConfigUnmaskable} file, a masked copy made here (its bytes as they are, each credential
 * span replaced by `fake_value_<n>`), in a directory of this user's only: bound over the file, git inside reads
 * the configuration without the credential.
 */
export function unmaskableConfigCopies(gitCommonDir: string | undefined, userHome: string = os.homedir()): Array<{ path: string; source: string }> {
  const copies: Array<{ path: string; source: string }> = [];
  for (const file of gitConfigUnmaskable(gitCommonDir, userHome)) {
    try {
      const text = readFileSync(file).toString('latin1');
      let count = 0;
      const masked = text.replace(new RegExp(gitConfigCredential.source, 'g'), () => `fake_value_${(count += 1)}`);
      // A directory of this user's alone (outside attack X22-01: a fixed name in /tmp another local user made first,
      // 0777, let that user swap the copy for a config of theirs — `core.fsmonitor` ran in the agent's sandbox), and
      // a copy written fresh each time (O_EXCL, never one found there), then renamed into place.
      const directory = path.join(os.tmpdir(), `polywave-masked-config-${process.getuid?.() ?? 'user'}`);
      if (!privateUserDir(directory, true)) continue;
      const source = path.join(directory, `${createHash('sha256').update(file).update('\0').update(masked).digest('hex').slice(0, 32)}.config`);
      const temporary = `${source}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(temporary, Buffer.from(masked, 'latin1'), { mode: 0o600, flag: 'wx' });
      renameSync(temporary, source);
      copies.push({ path: file, source });
    } catch {
      // no copy: the file stays hidden (fail closed)
    }
  }
  return copies;
}

/**
 * One plan asks {@link classifiedConfigFiles} up to three times for the same directory (the masks, the hidden
 * files, their copies), all in one synchronous turn: the answer is kept until that turn ends (never across
 * plans: a config edited between two plans is read again).
 */
let classifiedThisTurn: Map<string, { masks: Array<{ path: string; extract: string }>; hidden: string[] }> | undefined;

function classifiedConfigFiles(gitCommonDir: string | undefined, userHome: string): { masks: Array<{ path: string; extract: string }>; hidden: string[] } {
  if (gitCommonDir === undefined) return { masks: [], hidden: [] };
  const key = `${path.resolve(gitCommonDir)}\0${userHome}`;
  const known = classifiedThisTurn?.get(key);
  if (known) return { masks: [...known.masks], hidden: [...known.hidden] };
  const answer = classifyConfigFiles(gitCommonDir, userHome);
  if (!classifiedThisTurn) {
    classifiedThisTurn = new Map();
    queueMicrotask(() => (classifiedThisTurn = undefined));
  }
  classifiedThisTurn.set(key, answer);
  return { masks: [...answer.masks], hidden: [...answer.hidden] };
}

function classifyConfigFiles(gitCommonDir: string | undefined, userHome: string): { masks: Array<{ path: string; extract: string }>; hidden: string[] } {
  const masks: Array<{ path: string; extract: string }> = [];
  const hidden: string[] = [];
  const binary: string[] = [];
  if (gitCommonDir === undefined) return { masks, hidden };
  const root = path.resolve(gitCommonDir);
  // Files of the git directory, and included files outside it and outside the user's home (X21-01: CI images keep
  // an included `ci-auth.gitconfig` in /etc or /opt, which nothing hid). One in the home is hidden with the home
  // (a mask over a hidden file would show it, masked).
  const home = path.resolve(userHome);
  for (const file of gitConfigFiles(root, userHome).filter((entry) => isInside(entry, root) || !isInside(entry, home))) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch {
      continue;
    }
    const utf8 = isUtf8(bytes);
    if (!gitConfigCredential.test(bytes.toString(utf8 ? 'utf8' : 'latin1'))) continue;
    // (outside the git directory: polywave's own masked copy, bound over it like a non-UTF-8 one's)
    if (utf8 && isInside(file, root)) masks.push({ path: file, extract: gitConfigCredential.source });
    else hidden.push(file);
    if (!utf8) binary.push(file);
  }
  if (binary.length > 0) warnLimitOnce('unmaskable-config', root, `${binary.join(', ')} ${binary.length === 1 ? 'holds' : 'hold'} a credential and ${binary.length === 1 ? 'is' : 'are'} not UTF-8 text: agents and gates see polywave's masked copy (on Linux, when a private copy can be made under the temp directory; otherwise, and on other platforms, ${binary.length === 1 ? 'it is' : 'they are'} hidden: git in a sandbox then finds no configuration there). Saving ${binary.length === 1 ? 'it' : 'them'} as UTF-8 lets the sandbox mask ${binary.length === 1 ? 'it' : 'them'} in place.`);
  return { masks, hidden };
}

/**
 * What git itself keeps at the top of a git directory (and polywave's `polywave*`); anything else there was put
 * by someone else — a credential store (`credential.helper 'store --file=.git/.git-credentials'`), a file the
 * config `[include]`s — and is hidden from sandboxes (outside attack X19-01). Lock files, `sharedindex.*`,
 * `BISECT_*`, `NOTES_MERGE_*` and the fsmonitor socket are git's too.
 */
const gitDirectoryEntries: ReadonlySet<string> = new Set([
  'HEAD', 'ORIG_HEAD', 'FETCH_HEAD', 'MERGE_HEAD', 'MERGE_MODE', 'MERGE_MSG', 'MERGE_RR', 'AUTO_MERGE', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'REBASE_HEAD', 'COMMIT_EDITMSG', 'TAG_EDITMSG', 'SQUASH_MSG', 'EDIT_DESCRIPTION',
  'description', 'config', 'config.worktree', 'index', 'packed-refs', 'shallow', 'objects', 'refs', 'logs', 'hooks', 'info', 'worktrees', 'modules', 'rr-cache', 'lfs', 'branches', 'remotes', 'sequencer', 'rebase-merge', 'rebase-apply', 'reftable', 'gc.pid', 'gc.log', 'commondir', 'gitdir', 'gitk.cache', 'annex', 'filter-repo',
]);
/**
 * git's own, but no sandbox needs them and they can hold credentials (outside attack X20-01): `logs/` (git writes
 * the URL of `git pull https://x-access-token:TOKEN@…` into the reflog verbatim) and the legacy remote files of
 * `branches/` and `remotes/` (URLs with passwords). Hidden; git in a worktree works without them (its own reflog is
 * under `worktrees/<name>/`; a sandbox cannot commit to `.git` anyway). `hooks/` stays readable (and read-only: a
 * hook planted from a sandbox must fail, not vanish into an empty view).
 */
const gitDirectoryPrivateEntries: ReadonlySet<string> = new Set(['logs', 'branches', 'remotes']);
/**
 * git's, per working tree (the main one's at the top, a linked one's under `worktrees/<name>/`), needed by no
 * sandbox and holding what the user typed or ran (outside attack X21-01: a rebase todo's `exec curl -H 'Authorization: …'`,
 * a commit message, a merge message, LFS's partial downloads, a linked worktree's reflog with a pull URL): hidden.
 */
const workingTreePrivateEntries: readonly string[] = ['logs', 'MERGE_MSG', 'SQUASH_MSG', 'COMMIT_EDITMSG', 'TAG_EDITMSG', 'rebase-merge', 'rebase-apply', 'sequencer'];
/** More hidden entries than this in submodules' git directories: `modules/` is hidden whole (X21-06: a cap of 200 left later ones readable). */
const moduleEntriesLimit = 100;
function nonEmpty(dir: string): boolean {
  try {
    return readdirSync(dir).length > 0;
  } catch {
    return false;
  }
}

/** What git reads in `info/`. */
const gitInfoEntries: ReadonlySet<string> = new Set(['exclude', 'attributes', 'sparse-checkout', 'grafts', 'refs', 'packs']);
const gitDirectoryEntryPattern = /^(?:polywave.*|.*\.lock|sharedindex\..*|BISECT_.*|NOTES_MERGE_.*|fsmonitor--daemon.*)$/;

/**
 * The entries at the top of the git directory (and of each submodule's) that are not git's ({@link gitDirectoryEntries}): unreadable in every sandbox.
 * `foreignOnly`: only what git never makes there (X43-15/16, the check of what appeared later: git's own private entries —
 * a merge's `MERGE_MSG`, a new worktree's `worktrees/<name>/logs`, made by polywave's own git while agents run — left out).
 */
export function gitDirectoryForeignEntries(gitCommonDir: string | undefined, userHome: string = os.homedir(), foreignOnly = false): string[] {
  if (gitCommonDir === undefined) return [];
  // A file the configuration includes stays (masked where it holds a credential): git inside reads it.
  const configFiles = new Set(gitConfigFiles(path.resolve(gitCommonDir), userHome));
  const found: string[] = [];
  const visit = (dir: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (gitDirectoryPrivateEntries.has(name)) {
        if (foreignOnly) continue;
        // (git init makes an empty `branches/`: nothing to hide, no mount)
        if (name === 'logs' || nonEmpty(path.join(dir, name))) found.push(path.join(dir, name));
      }
      else if (!gitDirectoryEntries.has(name) && !gitDirectoryEntryPattern.test(name) && !configFiles.has(path.join(dir, name))) found.push(path.join(dir, name));
    }
    // X20-01: in `info/` only what git reads there (a credential store kept as `info/git-credentials`, Gerrit's
    // `info/cookies`); git-annex's special-remote credentials
    if (names.includes('info')) {
      let info: string[] = [];
      try {
        info = readdirSync(path.join(dir, 'info'));
      } catch {
        // unreadable: nothing to list
      }
      for (const name of info) if (!gitInfoEntries.has(name) && !configFiles.has(path.join(dir, 'info', name))) found.push(path.join(dir, 'info', name));
    }
    if (names.includes('annex') && existsSync(path.join(dir, 'annex', 'creds'))) found.push(path.join(dir, 'annex', 'creds'));
    if (foreignOnly) {
      if (depth > 3 || !names.includes('modules')) return;
      for (const name of entriesOf(path.join(dir, 'modules'))) visit(path.join(dir, 'modules', name), depth + 1);
      return;
    }
    for (const name of workingTreePrivateEntries) if (name !== 'logs' && names.includes(name)) found.push(path.join(dir, name));
    if (names.includes('lfs') && existsSync(path.join(dir, 'lfs', 'tmp'))) found.push(path.join(dir, 'lfs', 'tmp'));
    // each linked worktree's own (X21-01: the user's linked worktree's reflog and merge message)
    if (names.includes('worktrees')) {
      let linked: string[] = [];
      try {
        linked = readdirSync(path.join(dir, 'worktrees'));
      } catch {
        // unreadable: nothing to list
      }
      for (const name of linked) for (const entry of workingTreePrivateEntries) if (existsSync(path.join(dir, 'worktrees', name, entry))) found.push(path.join(dir, 'worktrees', name, entry));
    }
    if (depth > 3 || !names.includes('modules')) return;
    let modules: string[];
    try {
      modules = readdirSync(path.join(dir, 'modules'));
    } catch {
      return;
    }
    for (const name of modules) visit(path.join(dir, 'modules', name), depth + 1);
  };
  const root = path.resolve(gitCommonDir);
  visit(root, 0);
  // Never a silent cap (X21-06): past the limit, submodules' git directories are hidden whole (no sandbox's git needs them).
  const modules = path.join(root, 'modules');
  const inModules = found.filter((entry) => isInside(entry, modules) && entry !== modules);
  if (inModules.length > moduleEntriesLimit) return [...found.filter((entry) => !isInside(entry, modules)), modules];
  return found;
}

/**
 * The directories whose listing {@link relistedPrivates} takes again, with a stamp of each (inode, modification and change
 * times: a file made, removed or renamed in it changes them): the git directory's top, `info/`, `annex/`, `modules/` and
 * each submodule's git directory and its `info/` (one level: deeper nesting is listed when `modules/` changes); each
 * dependency directory, and Prisma's `.prisma/client/` in a `node_modules`.
 */
function relistedStamp(relisted: NonNullable<SandboxPlan['relisted']>): string {
  const dirs: string[] = [];
  if (relisted.gitDir !== undefined) {
    const root = relisted.gitDir;
    dirs.push(root, path.join(root, 'info'), path.join(root, 'annex'), path.join(root, 'modules'));
    for (const name of entriesOf(path.join(root, 'modules'))) dirs.push(path.join(root, 'modules', name), path.join(root, 'modules', name, 'info'));
  }
  for (const dir of relisted.dependencyDirs ?? []) dirs.push(dir, ...(path.basename(dir) === 'node_modules' ? [path.join(dir, '.prisma', 'client')] : []));
  let stamp = '';
  for (const dir of dirs) {
    try {
      const stat = statSync(dir, { bigint: true });
      stamp += `${stat.ino}:${stat.mtimeNs}:${stat.ctimeNs}\n`;
    } catch {
      stamp += '-\n';
    }
  }
  return stamp;
}

/**
 * What a plan's {@link SandboxPlan.relisted} directories hold now that a plan made now would hide (X43-15/16): the git
 * directory's entries git never makes ({@link gitDirectoryForeignEntries}, `foreignOnly`) and the dependency directories'
 * private files ({@link dependencyDirectoryPrivates}). `previous` (from an earlier call) is reused while no listed
 * directory changed: a stat per directory per check.
 */
export function relistedPrivates(relisted: NonNullable<SandboxPlan['relisted']>, previous?: { stamp: string; entries: string[] }, userHome: string = os.homedir()): { stamp: string; entries: string[] } {
  const stamp = relistedStamp(relisted);
  if (previous !== undefined && previous.stamp === stamp) return previous;
  const entries = [...gitDirectoryForeignEntries(relisted.gitDir, userHome, true), ...(relisted.dependencyDirs ?? []).flatMap(dependencyDirectoryPrivates)];
  return { stamp, entries };
}

/** The main checkout hidden whole from a sandbox working elsewhere, and what of it stays readable ({@link checkoutCarveOuts}). */
interface HiddenCheckout {
  root: string;
  readable: string[];
  /** What stays hidden inside the bound-back directories ({@link dependencyDirectoryPrivates}). */
  privates: string[];
  /** Their package managers' state files with a URL's user-info, masked ({@link dependencyStateMasks}). */
  masks: Array<{ path: string; extract: string }>;
}

/**
 * The main checkout to hide from a sandbox whose own directory is `own`: none when `own` is the
 * checkout (or holds it), when it does not exist, or when a writable path is or holds it (the user
 * made it writable on purpose: the deny-lists apply there instead).
 */
function hiddenCheckout(mainCheckout: string | undefined, own: string, writable: readonly string[], gitCommonDir: string | undefined, extra: readonly string[]): HiddenCheckout | undefined {
  if (mainCheckout === undefined || isInside(mainCheckout, own) || !existsSync(mainCheckout)) return undefined;
  if (writable.some((entry) => isInside(mainCheckout, path.resolve(entry)))) return undefined;
  const readable = checkoutCarveOuts(mainCheckout, gitCommonDir, extra);
  const dependencies = readable.filter((dir) => linkedDependencyNames.has(path.basename(dir)));
  return { root: mainCheckout, readable, privates: dependencies.flatMap(dependencyDirectoryPrivates), masks: dependencies.flatMap(dependencyStateMasks) };
}

const dirSecretsCache = new Map<string, { stamp: string; files: string[] }>();

/**
 * {@link secretFileName} files directly in `dir` (remembered while the directory is unchanged: `/tmp` may hold thousands
 * of entries). Outside attack X43-07/24: a listing kept 10 s by the clock made the plan of a relaunch (and of the next
 * agent) miss a `.env` made meanwhile — the listing is reused only while the directory's inode, modification and change
 * times are what they were, and those are at least 2 s old (a file made within the same clock tick is not missed).
 */
function secretFilesIn(dir: string): string[] {
  let stamp: string | undefined;
  try {
    const stat = statSync(dir, { bigint: true });
    if (Date.now() - Number(stat.ctimeNs / 1_000_000n) > 2_000) stamp = `${stat.ino}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch {
    stamp = undefined;
  }
  const cached = dirSecretsCache.get(dir);
  if (cached && stamp !== undefined && cached.stamp === stamp) return cached.files;
  const files: string[] = [];
  try {
    for (const dirent of readdirSync(dir, { withFileTypes: true })) if ((dirent.isFile() || dirent.isSymbolicLink()) && secretFileName.test(dirent.name)) files.push(path.join(dir, dirent.name));
  } catch {
    // unreadable
  }
  if (dirSecretsCache.size > 256) dirSecretsCache.clear();
  if (stamp !== undefined) dirSecretsCache.set(dir, { stamp, files });
  else dirSecretsCache.delete(dir);
  return files;
}

/** {@link secretFileName} files directly in each directory above `checkout`, up to `/` (a parent's `.env`), except in directories `skip` names. */
export function parentSecretFiles(checkout: string, skip: (dir: string) => boolean = () => false): string[] {
  const files: string[] = [];
  let dir = path.dirname(path.resolve(checkout));
  for (;;) {
    if (!skip(dir)) files.push(...secretFilesIn(dir));
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return files;
}

/**
 * Files and directories the environment names as credentials (`GOOGLE_APPLICATION_CREDENTIALS`,
 * `AWS_SHARED_CREDENTIALS_FILE`, `KUBECONFIG`, `DOCKER_CONFIG`…): the variable is stripped from
 * the sandbox's environment, and the file it named is hidden too (outside attack X10 N1c).
 * Absolute existing paths that hold none of `keep` (the sandbox's writable and needed paths: a
 * variable naming a directory above the repository or a tool root must not hide them).
 */
/** Files this process was given a secret in (the dispatch key's file): unreadable to every sandbox it makes ({@link hideFromEverySandbox}). */
const processSecretFiles = new Set<string>();

/**
 * Outside round A23-02: `file` holds a secret this process read (a worker's `--dispatch-key-file`, the orchestrator's
 * POLYWAVE_DISPATCH_KEY_FILE) — every sandbox it makes from now on (agents, gates, setups) hides it, by the path it
 * was given and by its real path. The agents run as the same user: a mode-600 file is no protection from them.
 */
export function hideFromEverySandbox(file: string): void {
  processSecretFiles.add(path.resolve(file));
  try {
    processSecretFiles.add(realpathSync(file));
  } catch {
    // (only the given path, when it cannot be resolved)
  }
}

/** The files {@link hideFromEverySandbox} named that exist now. */
function processSecrets(): string[] {
  return [...processSecretFiles].filter((file) => existsSync(file));
}

export function credentialPathsOf(env: Readonly<Record<string, string | undefined>>, keep: readonly string[]): string[] {
  const paths: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '' || !(credentialPathVariables.includes(name) || isCredentialVariable(name))) continue;
    for (const named of value.split(path.delimiter)) {
      // Kerberos names a cache or keytab with its type: FILE:/tmp/krb5cc_1000, DIR:/run/user/1000/krb5cc
      const entry = /^(FILE|DIR|WRFILE):\//.test(named) ? named.slice(named.indexOf(':') + 1) : named;
      if (!path.isAbsolute(entry) || entry === '/' || !existsSync(entry)) continue;
      if (keep.some((open) => isInside(path.resolve(open), path.resolve(entry)))) continue;
      paths.push(path.resolve(entry));
    }
  }
  return paths;
}


/**
 * The user's credential stores that live outside the home at their tools' default places (outside attack X35-14):
 * MIT Kerberos' ticket caches `/tmp/krb5cc_*` (Debian/Ubuntu's default when KRB5CCNAME is unset), rootful podman's
 * `/run/containers/<uid>`, and the user's runtime directory (`$XDG_RUNTIME_DIR`, `/run/user/<uid>`: podman's
 * `containers/auth.json`, a `DIR:` Kerberos cache, systemd's `credentials/`, the desktop's Xwayland cookie and keyring,
 * flatpak apps' directories, gvfs mounts) — whole: the sandbox's own writable paths in it (a TMPDIR there) are bound
 * back over it. Only when a path it must READ lies there (`needed`: the checkout, the git directory, a tool root) are
 * the known stores in it hidden one by one instead (X36-07).
 */
export function hostCredentialStores(env: Readonly<Record<string, string | undefined>>, needed: readonly string[]): string[] {
  const uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  const stores: string[] = [];
  for (const dir of unique(['/tmp', path.resolve(os.tmpdir())])) stores.push(...kerberosCachesIn(dir));
  // rootful podman/buildah/skopeo keep their registry logins in /run/containers/<uid>/auth.json (X36-03); Docker,
  // Compose and Swarm secrets and a Kubernetes pod's service-account token are in /run/secrets (/var/run/secrets); the
  // user's mailbox (reset links, codes); crash dumps of the user's processes (apport, systemd-coredump: an agent's
  // keys and passphrases in a core) and the journal (X37-02/09). No build reads them.
  const user = env.USER ?? env.LOGNAME ?? (uid === 0 ? 'root' : undefined);
  // (and systemd's credentials of every unit, /run/credentials, X37-14; a GitHub Codespace's secrets and token in
  // /workspaces/.codespaces/shared, X37-13)
  for (const entry of [...(uid >= 0 ? [`/run/containers/${uid}`] : []), '/run/secrets', '/run/credentials', '/workspaces/.codespaces/shared', ...(user && /^[\w.-]+$/.test(user) ? [`/var/mail/${user}`, `/var/spool/mail/${user}`] : []), '/var/crash', '/var/lib/systemd/coredump', '/var/log/journal']) {
    // (what `sandbox.readable` names there stays readable: tests of a compose service may need its secrets)
    if (existsSync(entry) && !needed.some((open) => isInside(path.resolve(open), entry) || isInside(entry, path.resolve(open)))) stores.push(entry);
  }
  const runtimeDirs = unique([...(env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR) ? [path.resolve(env.XDG_RUNTIME_DIR)] : []), ...(uid >= 0 ? [`/run/user/${uid}`] : [])]);
  // a PATH entry there is a tool the sandbox runs (fnm's multishell links in $XDG_RUNTIME_DIR, X37-04)
  const toolDirs = (env.PATH ?? '').split(path.delimiter).filter((entry) => path.isAbsolute(entry));
  for (const dir of runtimeDirs) {
    if (dir === '/' || !existsSync(dir)) continue;
    const read = [...needed, ...toolDirs].filter((open) => isInside(path.resolve(open), dir) || isInside(dir, path.resolve(open)));
    if (read.length === 0) {
      stores.push(dir);
      continue;
    }
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      // unreadable
    }
    const known = new Set(['containers', 'keyring', 'gnupg', 'gvfs', 'podman', 'docker.sock', 'bus', 'pass', 'secrets', 'credentials', 'app', 'flatpak', 'doc', 'systemd', 'pulse', 'pipewire-0', 'wayland-0', 'at-spi', 'dconf', 'gdm', 'ICEauthority', 'keybase', 'psd']);
    for (const name of names) {
      if (!known.has(name) && !name.startsWith('krb5cc') && !name.startsWith('.mutter-Xwaylandauth') && !name.startsWith('xauth_') && !name.startsWith('.Xauthority') && !name.startsWith('ssh-')) continue;
      const entry = path.join(dir, name);
      if (!read.some((open) => isInside(path.resolve(open), entry))) stores.push(entry);
    }
  }
  return stores;
}

/** `krb5cc*` entries directly in `dir`, listed at each plan (not remembered: a cache made since the last plan is hidden from the next). */
function kerberosCachesIn(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.startsWith('krb5cc')).map((name) => path.join(dir, name));
  } catch {
    return [];
  }
}

/**
 * `unreadable` without the entries inside another unreadable one that no readable or writable path
 * re-opens around them (`~/.ssh` when the whole home is hidden): they are hidden already, and each
 * entry is one more mount at every sandbox's start.
 */
function pruneCovered(unreadable: readonly string[], reopened: readonly string[]): string[] {
  const denied = new Set(unreadable);
  // walks each entry's ancestors (O(entries × depth): there may be hundreds of scratch directories)
  const coveringAncestor = (entry: string): string | undefined => {
    for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) if (denied.has(dir)) return dir;
    return denied.has('/') && entry !== '/' ? '/' : undefined;
  };
  return unreadable.filter((entry) => {
    const cover = coveringAncestor(entry);
    return cover === undefined || reopened.some((open) => open !== cover && isInside(entry, open) && isInside(open, cover));
  });
}

/**
 * The secret files around a checkout (see {@link untrackedSecretFiles}, {@link parentSecretFiles}) for a
 * sandbox whose own directory is `own`, and the main checkout's ignored paths ({@link ignoredPathsToHide})
 * when `own` is elsewhere — except `keep` (writable paths, `sandbox.readable`) and what holds them.
 */
function secretFilesAround(mainCheckout: string | undefined, own: string, view: { unreadable: string[]; readable: string[] }, keep: readonly string[] = [], checkoutHidden = false): string[] {
  const hiddenHome = view.unreadable[0];
  // a directory inside the hidden home and outside every carve-out shows nothing anyway
  const shown = (dir: string): boolean => hiddenHome === undefined || !isInside(dir, hiddenHome) || view.readable.some((open) => isInside(dir, open));
  const parents = (dir: string): string[] => parentSecretFiles(dir, (parent) => !shown(parent));
  const files = parents(own);
  // a checkout hidden whole needs no list of its ignored paths (only its carve-outs show, and the secret-named files in them stay hidden)
  if (mainCheckout !== undefined && mainCheckout !== own) files.push(...untrackedSecretFiles(mainCheckout), ...(checkoutHidden ? [] : ignoredPathsToHide(mainCheckout, [own, ...keep])), ...parents(mainCheckout));
  return unique(files).filter((file) => !isInside(file, own));
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

/**
 * `<git common dir>/polywave/quarantine`, where the ignored-path guard, the solo leftover sweep and the
 * nested-repository quarantine move what agents left behind — including files the USER created in the
 * checkout during a solo agent's run (a new `.env.local`). Unreadable in every agent and gate plan
 * (issue 11, outside attack X16 #9: a later worktree agent, the verify-build gate and Claude Code's Bash
 * read `.git/polywave/quarantine/A-…/.env.local`). Created when the git directory exists, so that the
 * deny is a mount from the start (a path missing when the sandbox starts is not hidden once it appears).
 */
export function quarantineDirOf(gitCommonDir: string): string {
  return ensuredPolywaveDir(gitCommonDir, 'quarantine');
}

function ensuredPolywaveDir(gitCommonDir: string, name: string): string {
  const dir = path.join(path.resolve(gitCommonDir), 'polywave', name);
  if (existsSync(gitCommonDir) && !existsSync(dir)) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch {
      // a read-only git directory: nothing can be moved (or locked) there either
    }
  }
  return dir;
}

/**
 * What an agent or gate may neither read nor lock in the git directory's `polywave/`: the quarantine
 * ({@link quarantineDirOf}) and `locks/`, where the manifest writes' kernel locks live (outside attack
 * X19-06: a read lock taken from inside a sandbox on the read-only lock file conflicts with the writer's
 * exclusive one, and another agent's report timed out: wave BLOCKED). Created up front like the quarantine.
 */
export function privatePolywaveDirsOf(gitCommonDir: string): string[] {
  return [quarantineDirOf(gitCommonDir), ensuredPolywaveDir(gitCommonDir, 'locks')];
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
  /**
   * Also when `root` is the main checkout: its untracked secret-named files and `.env*` files unreadable (outside
   * attack X19-09: the Scout of every `polywave run` works in the checkout, read `.env` and committed it in the IMPL).
   */
  hideCheckoutSecrets?: boolean;
  /** The orchestrator's environment: its TMPDIR / XDG_RUNTIME_DIR place the resident socket (hidden; so is this process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Scratch directories of other agents and gates, unreadable (default: {@link foreignScratchDirs}, the
   * scratch parent and older versions' scratch directories); the agent's own HOME/TMPDIR inside them stay
   * readable and writable (bound back over the denied parent).
   */
  scratchDirs?: readonly string[];
  /**
   * Directories around the agent's root hidden whole, what they hold now and what appears there later alike (a
   * dispatch worker's `--dir`: its other jobs' worktrees, journals, scripts and gate checkouts). Inside them the agent
   * keeps its root (writable) and the repository's git directory (read-only, as everywhere), whose `worktrees/` then
   * shows the agent's own entry only (see {@link hiddenAroundRoot}).
   */
  hiddenAround?: readonly string[];
  /** The `polywave worker` directories of this host (default: {@link registeredWorkerDirs}): see {@link foreignWorkerDirs}. */
  workerDirs?: readonly string[];
}

/** The git directory of the linked worktree `root` (`<common dir>/worktrees/<name>`, as its `.git` file names it), or undefined. */
function linkedGitDirOf(root: string): string | undefined {
  try {
    const dotGit = path.join(root, '.git');
    if (!statSync(dotGit).isFile()) return undefined;
    const pointer = /^gitdir: *(.+?)[ \t\r]*$/m.exec(readFileSync(dotGit, 'utf8'));
    return pointer ? realOrResolved(path.resolve(root, pointer[1]!)) : undefined;
  } catch {
    return undefined;
  }
}

/** What {@link AgentSandboxPlanInput.hiddenAround} hides and puts back, and the hidden directories carve-outs may lie in. */
interface HiddenAround {
  unreadable: string[];
  readable: string[];
  roots: string[];
  /** Whether `entry` lies in what is hidden (and not in what is put back). */
  hides: (entry: string) => boolean;
}

/**
 * The directories `around` hidden whole from a sandbox whose root is `root` (issue 17: a dispatched agent read its
 * worker's other jobs' journals, scripts, gate checkouts and worktrees in `--dir`). An entry that is or lies inside
 * the root, or is or lies inside the git directory, is left out. Put back: the git directory when it lies inside one
 * (read-only: git works in the worktree); its `worktrees/` is hidden then, except the root's own entry (the other
 * worktrees' HEAD, index and logs are theirs).
 */
function hiddenAroundRoot(around: readonly string[], root: string, gitCommonDir: string): HiddenAround | undefined {
  const dirs = unique(around.map(realOrResolved)).filter((entry) => !isInside(entry, root) && !isInside(entry, gitCommonDir));
  if (dirs.length === 0) return undefined;
  const readable: string[] = [];
  const roots = [...dirs];
  const unreadable = [...dirs];
  let worktrees: string | undefined;
  let own: string | undefined;
  if (dirs.some((dir) => isInside(gitCommonDir, dir))) {
    readable.push(gitCommonDir);
    worktrees = path.join(gitCommonDir, 'worktrees');
    unreadable.push(worktrees);
    roots.push(worktrees);
    own = linkedGitDirOf(root);
    if (own !== undefined && isInside(own, worktrees) && own !== worktrees) readable.push(own);
    else own = undefined;
  }
  const hides = (entry: string): boolean => {
    const resolved = path.resolve(entry);
    if (!dirs.some((dir) => isInside(resolved, dir)) || isInside(resolved, root)) return false;
    if (worktrees !== undefined && isInside(resolved, worktrees)) return own === undefined || !isInside(resolved, own);
    return !readable.some((open) => isInside(resolved, open));
  };
  return { unreadable, readable, roots, hides };
}

/**
 * The other `polywave worker` directories of this host, hidden whole (outside attack A17-12: an agent on one worker read
 * a sibling worker's running worktree, its unpushed commits in the clone and its jobs' scripts). Left out: one that
 * holds the sandbox's root or git directory, and those `around` names — the sandbox's own worker's `--dir`, which
 * {@link hiddenAroundRoot} hides but for the root and the clone.
 */
function foreignWorkerDirs(dirs: readonly string[], root: string, gitCommonDir: string | undefined, around: readonly string[] = []): string[] {
  const own = around.map(realOrResolved);
  return dirs.map((entry) => path.resolve(entry)).filter((entry) => !own.includes(entry) && !isInside(root, entry) && (gitCommonDir === undefined || !isInside(gitCommonDir, entry)));
}

/**
 * The directories hidden whole around a sandbox's root ({@link hiddenAroundRoot}): those `around` names (its own worker's
 * `--dir`) and the other registered worker directories that hold its root or git directory — a local repository placed
 * inside a worker's `--dir` (outside attack A18-07: its agents read that worker's clone and running jobs, because
 * {@link foreignWorkerDirs} must leave out a directory around the root).
 */
function aroundDirsOf(workerDirs: readonly string[], root: string, gitCommonDir: string | undefined, around: readonly string[] = []): string[] {
  const own = around.map(realOrResolved);
  const holding = workerDirs.map((entry) => path.resolve(entry)).filter((entry) => !own.includes(entry) && (isInside(root, entry) || (gitCommonDir !== undefined && isInside(gitCommonDir, entry))));
  return [...around, ...holding];
}

/** Denied scratch paths, except one that is or contains a path the plan writes as its working directory. */
function scratchDenials(scratchDirs: readonly string[], root: string): string[] {
  return scratchDirs.map((entry) => path.resolve(entry)).filter((entry) => !isInside(root, entry));
}

/**
 * The plan for an agent: writable = its root + private HOME + TMPDIR (+ `sandbox.writable`);
 * read-only within: `<root>/.git` (and the common git dir when it lies inside root, i.e. an agent
 * working in the main checkout); unreadable: every other worktree, the user's home except its tool
 * roots, the repository and `sandbox.readable` ({@link homeView}; where the home cannot be hidden
 * whole, {@link homeSecrets}), the main checkout's untracked secret files (`.env*`, `.dev.vars`,
 * `secrets.*`, keys: unless it is the agent's own root) and its parents', the files credential
 * variables name, the scratch directories of other agents and gates, present and future (outside
 * attack #12), and the directories `hiddenAround` names, whole but for the root and the git directory
 * ({@link hiddenAroundRoot}); network: `sandbox.network.allow`.
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
  const env = input.env ?? process.env;
  const gitCommonDir = path.resolve(input.gitCommonDir);
  const workerDirs = input.workerDirs ?? registeredWorkerDirs();
  const aroundDirs = aroundDirsOf(workerDirs, root, gitCommonDir, input.hiddenAround);
  const around = aroundDirs.length > 0 ? hiddenAroundRoot(aroundDirs, root, gitCommonDir) : undefined;
  // an agent in a worktree reads nothing of the main checkout but its git directory and dependency directories
  const hidden = hiddenCheckout(mainCheckout, root, writable, gitCommonDir, configReadable(input.config, userHome, mainCheckout));
  const view = homeView({ userHome, needed: [root, ...(hidden ? hidden.readable : [mainCheckout]), gitCommonDir, ...(input.config?.readable ?? []).map((entry) => expandHome(entry, userHome))], writable, env });
  const ownCheckoutHidden = root === mainCheckout && input.hideCheckoutSecrets === true;
  const envFiles = root === mainCheckout && !ownCheckoutHidden ? [] : (input.mainCheckoutEnvFiles ?? []).map((entry) => path.resolve(mainCheckout, entry));
  const unreadable = unique([
    ...input.otherWorktrees.map((entry) => path.resolve(entry)).filter((entry) => entry !== root && !isInside(root, entry)),
    ...view.unreadable,
    ...homeSecrets.map((entry) => path.join(userHome, entry)),
    ...envFiles,
    ...privatePolywaveDirsOf(gitCommonDir),
    ...gitDirectoryForeignEntries(gitCommonDir, userHome),
    ...gitConfigUnmaskable(gitCommonDir, userHome),
    ...(hidden ? [hidden.root, ...hidden.privates] : []),
    ...secretFilesAround(mainCheckout, root, view, [...writable, gitCommonDir, ...configReadable(input.config, userHome, mainCheckout)], hidden !== undefined),
    ...(ownCheckoutHidden ? untrackedSecretFiles(mainCheckout) : []),
    // the orchestrator's own environment too: a gate's or tool's is already stripped of the variable (X10: verify-build read GOOGLE_APPLICATION_CREDENTIALS' file)
    ...credentialPathsOf({ ...process.env, ...env }, [...writable, root, mainCheckout, gitCommonDir, ...view.readable]),
    ...processSecrets(),
    ...hostCredentialStores({ ...process.env, ...env }, [mainCheckout, gitCommonDir, ...view.readable, ...(input.config?.readable ?? []).map((entry) => expandHome(entry, userHome))]),
    ...scratchDenials(input.scratchDirs ?? foreignScratchDirs(input.env), root),
    ...foreignWorkerDirs(workerDirs, root, gitCommonDir, input.hiddenAround),
    ...residentSocketDirs(),
    ...(input.env ? residentSocketDirs(input.env) : []),
    ...(around?.unreadable ?? []),
  ]);
  const watchedFiles = gitConfigIdentityPaths(gitCommonDir, userHome).filter((entry) => !unreadable.includes(entry) && !around?.hides(entry));
  const dependencyDirs = hidden ? hidden.readable.filter((dir) => linkedDependencyNames.has(path.basename(dir))) : [];
  const relisted = { gitDir: gitCommonDir, ...(dependencyDirs.length > 0 ? { dependencyDirs } : {}) };
  return withMountAliases({ ...finishPlan(writable, readOnlyWithin, unreadable, view, input.config, hidden, true, around), ...withoutHidden(maskedFilesOf(gitCommonDir, userHome, hidden), around), ...(watchedFiles.length > 0 ? { watchedFiles } : {}), relisted });
}

/**
 * The git configuration files of the git directory that exist now (X43-18: see {@link SandboxPlan.watchedFiles}), its
 * `config` and `config.worktree` and each linked worktree's `config.worktree` even when absent (X44-09: the main
 * worktree's `config.worktree`, made during a run by `git config --worktree`, was read with its token in clear), and
 * its `modules` directory when absent (a submodule's config made during a run).
 */
function gitConfigIdentityPaths(gitCommonDir: string, userHome: string): string[] {
  const root = path.resolve(gitCommonDir);
  const existing = gitConfigFiles(root, userHome).filter((entry) => isInside(entry, root) && existsSync(entry));
  const modules = path.join(root, 'modules');
  const worktreeConfigs = (() => {
    try {
      return readdirSync(path.join(root, 'worktrees')).map((name) => path.join(root, 'worktrees', name, 'config.worktree'));
    } catch {
      return [];
    }
  })();
  return unique([path.join(root, 'config'), path.join(root, 'config.worktree'), ...worktreeConfigs, ...existing, ...(existsSync(modules) ? [] : [modules])]);
}

/** `masked` without the files {@link hiddenAroundRoot} hides (a mask or a copy bound over one would show it: another worktree's `config.worktree`). */
function withoutHidden(masked: Pick<SandboxPlan, 'maskedFiles' | 'boundCopies'>, around: HiddenAround | undefined): Pick<SandboxPlan, 'maskedFiles' | 'boundCopies'> {
  if (!around) return masked;
  const maskedFiles = (masked.maskedFiles ?? []).filter((entry) => !around.hides(entry.path));
  const boundCopies = (masked.boundCopies ?? []).filter((entry) => !around.hides(entry.path));
  return { ...(maskedFiles.length > 0 ? { maskedFiles } : {}), ...(boundCopies.length > 0 ? { boundCopies } : {}) };
}

function maskedFilesOf(gitCommonDir: string | undefined, userHome: string, hidden?: HiddenCheckout): Pick<SandboxPlan, 'maskedFiles' | 'boundCopies'> {
  const masks = [...gitConfigMasks(gitCommonDir, userHome), ...(hidden?.masks ?? [])];
  const copies = unmaskableConfigCopies(gitCommonDir, userHome);
  if (copies.length > 0) return { ...(masks.length > 0 ? { maskedFiles: masks } : {}), boundCopies: copies };
  return masks.length > 0 ? { maskedFiles: masks } : {};
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
  /** The repository's main checkout (default: the parent of a `gitCommonDir` named `.git`): its untracked secret files are unreadable unless it is `directory`. */
  mainCheckout?: string;
  /**
   * `directory` is one of polywave's own scratch directories (a throwaway checkout, src/gates/
   * throwaway-checkout.ts): every scratch directory stays unreadable, the one containing `directory`
   * included — `directory` itself is bound back writable over it, as the gate's TMPDIR is.
   */
  directoryIsScratch?: boolean;
  /** As for agents ({@link AgentSandboxPlanInput.hiddenAround}), around `directory`: a dispatch worker's `--dir` for its gate jobs. */
  hiddenAround?: readonly string[];
  /** As for agents ({@link AgentSandboxPlanInput.workerDirs}). */
  workerDirs?: readonly string[];
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
 * writable, `<dir>/.git` (and the common git dir inside it) read-only; the user's home (except its
 * tool roots and the repository, as for agents), the main checkout's untracked secret files (unless
 * the gate runs in it) and its parents', the files credential variables name and the scratch
 * directories of agents and other gates unreadable, and the directories `hiddenAround` names (whole but for the
 * gate's directory and the git directory: {@link hiddenAroundRoot}); network = `sandbox.network.allow`.
 */
export function gatePlan(input: GatePlanInput): SandboxPlan {
  const userHome = input.userHome ?? os.homedir();
  const directory = path.resolve(input.directory);
  const writable = unique([directory, path.resolve(input.tmp), ...(input.caches ?? []).map((entry) => path.resolve(entry)), ...(input.config?.writable ?? []).map((entry) => expandHome(entry, userHome))]);
  const gitCommonDir = input.gitCommonDir !== undefined ? path.resolve(input.gitCommonDir) : undefined;
  const workerDirs = input.workerDirs ?? registeredWorkerDirs();
  const aroundDirs = aroundDirsOf(workerDirs, directory, gitCommonDir, input.hiddenAround);
  const around = aroundDirs.length > 0 && gitCommonDir !== undefined ? hiddenAroundRoot(aroundDirs, directory, gitCommonDir) : undefined;
  const readOnlyWithin = unique([
    path.join(directory, '.git'),
    ...(gitCommonDir !== undefined && isInside(gitCommonDir, directory) ? [gitCommonDir] : []),
    ...configFilesOf(directory),
  ]);
  const env = input.env ?? process.env;
  const mainCheckout = input.mainCheckout !== undefined ? path.resolve(input.mainCheckout) : gitCommonDir !== undefined && path.basename(gitCommonDir) === '.git' ? path.dirname(gitCommonDir) : undefined;
  // a gate in a worktree or a throwaway checkout reads nothing of the main checkout but its git directory and dependency directories
  const hidden = hiddenCheckout(mainCheckout, directory, writable, gitCommonDir, mainCheckout !== undefined ? configReadable(input.config, userHome, mainCheckout) : []);
  const view = homeView({
    userHome,
    needed: [directory, ...(gitCommonDir !== undefined ? [gitCommonDir] : []), ...(hidden ? hidden.readable : mainCheckout !== undefined ? [mainCheckout] : []), ...(input.config?.readable ?? []).map((entry) => expandHome(entry, userHome))],
    writable,
    env,
  });
  const unreadable = unique([
    ...view.unreadable,
    ...homeSecrets.map((entry) => path.join(userHome, entry)),
    ...unique([...(gitCommonDir !== undefined ? [gitCommonDir] : []), ...(mainCheckout !== undefined ? [path.join(mainCheckout, '.git')] : [])]).flatMap((dir) => [...privatePolywaveDirsOf(dir), ...gitDirectoryForeignEntries(dir, userHome), ...gitConfigUnmaskable(dir, userHome)]),
    ...(hidden ? [hidden.root, ...hidden.privates] : []),
    ...secretFilesAround(mainCheckout, directory, view, [...writable, ...(gitCommonDir !== undefined ? [gitCommonDir] : []), ...(mainCheckout !== undefined ? configReadable(input.config, userHome, mainCheckout) : [])], hidden !== undefined),
    ...credentialPathsOf({ ...process.env, ...env }, [...writable, ...(gitCommonDir !== undefined ? [gitCommonDir] : []), ...(mainCheckout !== undefined ? [mainCheckout] : []), ...view.readable]),
    ...processSecrets(),
    ...hostCredentialStores({ ...process.env, ...env }, [...(gitCommonDir !== undefined ? [gitCommonDir] : []), ...(mainCheckout !== undefined ? [mainCheckout] : []), ...view.readable, ...(input.config?.readable ?? []).map((entry) => expandHome(entry, userHome))]),
    ...(input.directoryIsScratch === true ? (input.scratchDirs ?? foreignScratchDirs(input.env)).map((entry) => path.resolve(entry)) : scratchDenials(input.scratchDirs ?? foreignScratchDirs(input.env), directory)),
    ...foreignWorkerDirs(workerDirs, directory, gitCommonDir, input.hiddenAround),
    ...residentSocketDirs(),
    ...(input.env ? residentSocketDirs(input.env) : []),
    ...(around?.unreadable ?? []),
  ]);
  return withMountAliases({ ...finishPlan(writable, readOnlyWithin, unreadable, view, input.config, hidden, false, around), ...withoutHidden(maskedFilesOf(gitCommonDir, userHome, hidden), around) });
}

/**
 * `plan` with every other place its hidden paths can be reached at through a mount hidden too (outside round X45,
 * X45-11): the plan hides by path, and the same tree bound at a second path (`mount --bind <repo> /alias`, a
 * devcontainer's `/workspaces/x` of `/src/x`) showed a worktree agent the main checkout's `.env`, its `.git/config`
 * unmasked and another agent's worktree. The aliases of the unreadable paths, of the hidden checkout's empty view and of
 * the masked files are unreadable as well (src/sandbox/mount-table.ts).
 */
function withMountAliases(plan: SandboxPlan): SandboxPlan {
  const aliases = mountAliases([...plan.unreadable, ...(plan.emptyReadOnly ?? []), ...(plan.maskedFiles ?? []).map((file) => file.path), ...(plan.boundCopies ?? []).map((copy) => copy.path)]);
  return aliases.length === 0 ? plan : { ...plan, unreadable: unique([...plan.unreadable, ...aliases]) };
}

/** A plan's last step, the same for agents and gates: what the home view puts back is bound read-only, what it covers is not listed twice. */
function finishPlan(writable: string[], readOnlyWithin: string[], unreadable: string[], view: { readable: string[]; unreadable: string[] }, config: SandboxSettings | undefined, hidden?: HiddenCheckout, readOnlyHomeView = false, around?: HiddenAround): SandboxPlan {
  // a hidden main checkout's carve-outs are the home view's already when it lies in the hidden home
  const readable = unique([...view.readable, ...(hidden?.readable ?? []).filter((entry) => !view.readable.some((open) => isInside(entry, open))), ...(around?.readable ?? [])]);
  // The hidden checkout's empty view is read-only (EROFS rather than a write that vanishes). Inside the hidden
  // home it has no view of its own (the home's covers it): for an agent (its HOME is a private directory) the
  // home's view is made read-only instead; a gate keeps a writable home view (tools write ~/.cache there).
  const inHiddenHome = hidden !== undefined && view.unreadable.some((home) => isInside(hidden.root, home));
  const emptyReadOnly = hidden === undefined ? [] : !inHiddenHome ? [hidden.root] : readOnlyHomeView ? view.unreadable.slice(0, 1) : [];
  return {
    writable,
    readOnlyWithin,
    unreadable: pruneCovered(unreadable, [...readable, ...writable]),
    ...(readable.length > 0 ? { readable: bindable(readable, writable, unreadable, [...view.unreadable, ...(hidden ? [hidden.root] : []), ...(around?.roots ?? [])]) } : {}),
    allowedHosts: unique(config?.network?.allow ?? []),
    ...(emptyReadOnly.length > 0 ? { emptyReadOnly } : {}),
  };
}
