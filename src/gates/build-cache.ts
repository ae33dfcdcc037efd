/**
 * The build caches of a sandboxed quality gate (issue 11: "gates: worktree + build caches writable";
 * outside attack 2026-12-02, #13). A gate runs agent-written code. It used to get the user's own caches
 * writable (`~/.cache`, `~/.npm`, `~/go/pkg/mod`, `~/.cargo/registry`…), and their contents later run
 * outside any sandbox: corepack's package-manager shims under `~/.cache/node/corepack`, `npx`'s
 * packages under `~/.npm/_npx`, objects of Go's build cache linked into the user's binaries, a crate's
 * build script… a way for agent code to persist on the user's machine.
 *
 * Now a gate writes one polywave-owned cache per repository instead,
 * `<XDG_CACHE_HOME or ~/.cache>/polywave/gate-build-cache/<hash of the repository's git dir>/`, and the
 * user's own caches are read-only in its sandbox. Nothing outside a gate sandbox uses that directory,
 * and it is shared by every gate of the repository (worktrees and the main checkout, wave after wave),
 * so the caches stay warm. Which variable moves which tool there: {@link gateBuildCacheEnv}.
 */
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, constants as fsConstants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/** The user's cache base: `$XDG_CACHE_HOME`, else `~/.cache`. */
function userCacheBase(env: Env): string {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  return path.join(env.HOME || os.homedir(), '.cache');
}

/**
 * The gate build cache of the repository whose common git directory (or, outside git, directory) is
 * `repository`: `<cache base>/polywave/gate-build-cache/<16 hex of sha256(realpath)>`.
 */
export function gateBuildCacheDir(repository: string, env: Env = process.env): string {
  let real = path.resolve(repository);
  try {
    real = realpathSync(real);
  } catch {
    // a path that does not exist: hash it as given
  }
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 16);
  return path.join(userCacheBase(env), 'polywave', 'gate-build-cache', hash);
}

/**
 * Creates the gate build cache of `repository` (and its XDG cache base) when missing, with a
 * `REPOSITORY` file naming the repository (so a user looking at the directory knows what it is;
 * removing it only costs a cold cache). Returns its path.
 */
export function ensureGateBuildCache(repository: string, env: Env = process.env): string {
  const directory = gateBuildCacheDir(repository, env);
  if (!existsSync(path.join(directory, 'REPOSITORY'))) {
    mkdirSync(path.join(directory, 'xdg'), { recursive: true, mode: 0o700 });
    const marker = path.join(directory, 'REPOSITORY');
    try {
      writeNewFile(directory, 'REPOSITORY', `${path.resolve(repository)}\n`);
    } catch (error) {
      // Something a gate left in its place (a dangling symlink: existsSync said no): removed, not followed.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || lstatSync(marker).isFile()) throw error;
      rmSync(marker, { force: true });
      writeNewFile(directory, 'REPOSITORY', `${path.resolve(repository)}\n`);
    }
    pruneGateBuildCaches(path.dirname(directory));
  }
  return directory;
}

/** `rm -rf`, also through the read-only directories Go's module cache makes. */
function removeCache(directory: string): void {
  try {
    rmSync(directory, { recursive: true, force: true });
  } catch {
    const makeWritable = (entry: string): void => {
      try {
        if (!lstatSync(entry).isDirectory()) return;
        chmodSync(entry, 0o700);
        for (const child of readdirSync(entry)) makeWritable(path.join(entry, child));
      } catch {
        // gone or not ours: rmSync reports what is left
      }
    };
    makeWritable(directory);
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * Removes the gate build caches whose repository is gone (a deleted clone, `polywave demo`'s temporary
 * repositories): run when a new one is made, so the hot path (a warm cache) never lists the directory.
 * A cache without its REPOSITORY file (being made right now) is left alone.
 */
function pruneGateBuildCaches(parent: string): void {
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  for (const entry of entries) {
    const cache = path.join(parent, entry);
    try {
      const repository = readFileSync(path.join(cache, 'REPOSITORY'), 'utf8').trim();
      if (repository !== '' && !existsSync(repository)) removeCache(cache);
    } catch {
      // no REPOSITORY file (yet), or not removable: keep it
    }
  }
}

/** The user's Go module cache (read-only in a gate; seeds the gate's own through GOPROXY). */
function userGoModCache(env: Env): string {
  if (env.GOMODCACHE && path.isAbsolute(env.GOMODCACHE)) return env.GOMODCACHE;
  const gopath = (env.GOPATH ?? '').split(path.delimiter).find((entry) => entry !== '' && path.isAbsolute(entry));
  return path.join(gopath ?? path.join(env.HOME || os.homedir(), 'go'), 'pkg', 'mod');
}

/**
 * The variables that point a gate's tools at the gate build cache `directory` (each overrides the
 * user's value: the user's caches are read-only in the gate):
 * - `XDG_CACHE_HOME` = `<dir>/xdg`: every tool that follows the XDG base directories — corepack
 *   (`node/corepack`), pip, Go's build cache by default, yarn 1, node-gyp's headers, deno, pre-commit;
 * - `npm_config_cache` = `<dir>/npm` (npm's cache and `npx`'s packages); `PNPM_HOME` = `<dir>/pnpm`
 *   (pnpm's default store is `$PNPM_HOME/store`), and in a pnpm project (a `pnpm-lock.yaml` or
 *   `pnpm-workspace.yaml` at or above `projectDir`, or `packageManager: pnpm@…`) also
 *   `npm_config_store_dir` = `<dir>/pnpm/store`, which outranks a store-dir in the user's pnpm
 *   config — never elsewhere: npm warns `Unknown env config "store-dir"` on every run (outside
 *   attack X6, N7); `YARN_CACHE_FOLDER` / `YARN_GLOBAL_FOLDER` (yarn 1 and berry),
 *   `BUN_INSTALL_CACHE_DIR` (bun);
 * - `GOCACHE` = `<dir>/go-build`, `GOMODCACHE` = `<dir>/go-mod`; when the user's module cache has
 *   downloads, `GOPROXY` starts with it (`file://…/cache/download`, read-only) so that modules the
 *   user already has need no network, then the user's GOPROXY (default `https://proxy.golang.org,direct`);
 * - `PIP_CACHE_DIR` = `<dir>/pip`;
 * - `CARGO_HOME` = `<dir>/cargo` (registry, git checkouts; the user's `~/.cargo/config.toml` is
 *   copied in once, never its credentials), `GRADLE_USER_HOME` = `<dir>/gradle` (its init scripts
 *   run in every build), Maven's local repository through `MAVEN_OPTS=-Dmaven.repo.local=<dir>/m2`;
 * - browsers installed under the user's cache (Playwright, Cypress, Puppeteer) stay where they are,
 *   read-only: `PLAYWRIGHT_BROWSERS_PATH`, `CYPRESS_CACHE_FOLDER`, `PUPPETEER_CACHE_DIR` name them when
 *   they exist and the user set none (moving XDG_CACHE_HOME would otherwise hide them).
 */
export function gateBuildCacheEnv(directory: string, env: Env = process.env, projectDir?: string): Record<string, string> {
  const home = env.HOME || os.homedir();
  const userCache = userCacheBase(env);
  const result: Record<string, string> = {
    XDG_CACHE_HOME: path.join(directory, 'xdg'),
    npm_config_cache: path.join(directory, 'npm'),
    PNPM_HOME: path.join(directory, 'pnpm'),
    ...(projectDir !== undefined && isPnpmProject(projectDir) ? { npm_config_store_dir: path.join(directory, 'pnpm', 'store') } : {}),
    YARN_CACHE_FOLDER: path.join(directory, 'yarn'),
    YARN_GLOBAL_FOLDER: path.join(directory, 'yarn-berry'),
    BUN_INSTALL_CACHE_DIR: path.join(directory, 'bun'),
    GOCACHE: path.join(directory, 'go-build'),
    GOMODCACHE: path.join(directory, 'go-mod'),
    PIP_CACHE_DIR: path.join(directory, 'pip'),
    CARGO_HOME: path.join(directory, 'cargo'),
    GRADLE_USER_HOME: path.join(directory, 'gradle'),
    MAVEN_OPTS: `${env.MAVEN_OPTS ? `${env.MAVEN_OPTS} ` : ''}-Dmaven.repo.local=${path.join(directory, 'm2')}`,
  };
  const downloads = path.join(userGoModCache(env), 'cache', 'download');
  if (existsSync(downloads)) result.GOPROXY = `file://${downloads},${env.GOPROXY || 'https://proxy.golang.org,direct'}`;
  const userCargoConfig = path.join(env.CARGO_HOME && path.isAbsolute(env.CARGO_HOME) ? env.CARGO_HOME : path.join(home, '.cargo'), 'config.toml');
  const gateCargoConfig = path.join(result.CARGO_HOME!, 'config.toml');
  if (existsSync(userCargoConfig) && !existsSync(gateCargoConfig)) {
    try {
      mkdirSync(result.CARGO_HOME!, { recursive: true });
      writeNewFile(result.CARGO_HOME!, 'config.toml', readFileSync(userCargoConfig, 'utf8'));
    } catch {
      // an unreadable config: cargo's defaults
    }
  }
  const browsers: Array<[string, string]> = [
    ['PLAYWRIGHT_BROWSERS_PATH', 'ms-playwright'],
    ['CYPRESS_CACHE_FOLDER', 'Cypress'],
    ['PUPPETEER_CACHE_DIR', 'puppeteer'],
  ];
  for (const [name, sub] of browsers) if (!env[name] && existsSync(path.join(userCache, sub))) result[name] = path.join(userCache, sub);
  return result;
}

/**
 * Writes `name` in `directory` only as a new file in a real directory: gates can write the cache,
 * so `directory` or `name` may be a symlink a gate planted to have polywave (outside the sandbox)
 * create a file anywhere (outside attack X3 #13, #14). Throws when it is not.
 */
function writeNewFile(directory: string, name: string, content: string): void {
  if (!lstatSync(directory).isDirectory()) throw new Error(`${directory} is not a directory`);
  const fd = openSync(path.join(directory, name), fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
}

/** A pnpm project: `pnpm-lock.yaml` / `pnpm-workspace.yaml` in `directory` or above, or a package.json naming pnpm as its packageManager. */
export function isPnpmProject(directory: string): boolean {
  let current = path.resolve(directory);
  for (let depth = 0; depth < 64; depth += 1) {
    if (existsSync(path.join(current, 'pnpm-lock.yaml')) || existsSync(path.join(current, 'pnpm-workspace.yaml'))) return true;
    try {
      const manifest = JSON.parse(readFileSync(path.join(current, 'package.json'), 'utf8')) as { packageManager?: unknown };
      if (typeof manifest.packageManager === 'string') return manifest.packageManager.startsWith('pnpm@');
    } catch {
      // no package.json here, or not JSON
    }
    if (existsSync(path.join(current, '.git'))) return false;
    const parent = path.dirname(current);
    if (parent === current) return false;
    current = parent;
  }
  return false;
}
