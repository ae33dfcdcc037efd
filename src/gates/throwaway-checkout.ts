/**
 * A throwaway checkout for code polywave does not trust that runs on the main checkout's tree
 * (issue 11, outside attacks X3 #18 and X4 #19/#24): post-merge quality gates, finalize-wave's
 * verify-build, the integration verification and the scaffold build check run the merged agent
 * code. In the main checkout, even sandboxed, that code could write the checkout's ignored files —
 * `node_modules/.bin/tsc`, `.envrc`, `.vscode/tasks.json`, `dist/` — which the user later runs outside
 * any sandbox. So these commands run in a detached linked worktree of the checkout's current tree,
 * made in polywave's scratch parent and deleted afterwards: they see the same files, and nothing
 * they write survives.
 *
 * - The tree is the checkout's working tree as git sees it (tracked files with their uncommitted
 *   changes, untracked files that are not ignored), snapshotted through a copy of the index, so a
 *   build check of uncommitted scaffold files sees them, as before.
 * - Ignored dependency directories of the checkout (`node_modules`, `.venv`…, at any depth, see
 *   {@link dependencyDirNames}) are made in it as directories of links to their entries: readable, and
 *   read-only, because the main checkout is not writable in the gate sandbox; their caches
 *   (`node_modules/.cache`…) start empty and writable. Other ignored files (`.env*`, `dist/`, caches) are
 *   not there, as in a fresh clone.
 * - `.git` of the main repository stays read-only in the sandbox (the worktree's gitdir is inside it).
 *
 * bubblewrap's `--tmp-overlay` (a throwaway overlay over the checkout) would do the same without the
 * copy, but it needs bubblewrap ≥ 0.10; Debian bookworm ships 0.8.0, which has no overlay options.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runGit } from '../git/run-git.js';
import { createCheckoutPins } from '../sandbox/checkout-pins.js';
import { secretFileName } from '../sandbox/sandbox-plan.js';
import { pinnedCommitsOf } from '../sandbox/sandbox-settings.js';
import { makeScratchDir, scratchOwnerAlive, scratchOwnerLine, scratchParent } from '../sandbox/scratch-dirs.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The opt-out: commands run in the main checkout itself, as before issue 11 #18 (persisting writes). */
export const inPlaceOptOutVariable = 'POLYWAVE_UNSAFE_GATES_IN_CHECKOUT';

/** The error code of a throwaway checkout that cannot be made (the command is not run: fail closed). */
export const throwawayCheckoutErrorCode = 'GATE_CHECKOUT_UNAVAILABLE';

/**
 * Names of ignored directories linked (read-only) into the throwaway checkout: installed
 * dependencies, which a build or test reads but must not change. Build outputs (`dist`, `target`,
 * `build`) are not linked: they are rebuilt there, as in a fresh clone.
 */
export const dependencyDirNames: ReadonlySet<string> = new Set(['node_modules', 'bower_components', 'jspm_packages', '.venv', 'venv', '__pypackages__', '.bundle', 'vendor', 'Pods']);

/** A throwaway checkout, ready to run a command in. */
export interface ThrowawayCheckout {
  /** The directory to run the command in (the same place relative to the checkout's top level). */
  cwd: string;
  /** The throwaway checkout's top level. */
  root: string;
  /** The main checkout's top level. */
  source: string;
  /** Output with the throwaway checkout's paths written as the main checkout's, so errors name real files. */
  mapOutput(text: string): string;
  /** Deletes the checkout and its worktree registration (never follows a link the command planted). */
  dispose(): Promise<void>;
}

/** True when the opt-out variable is set in `env` (to anything but empty or 0). */
export function inPlaceOptOut(env: Env): boolean {
  const value = env[inPlaceOptOutVariable];
  return value !== undefined && value !== '' && value !== '0';
}

/** Git of the main checkout, outside any sandbox, with no hook able to run and the environment's git overrides dropped. */
function git(args: readonly string[], cwd: string, env: Env, extra: Record<string, string> = {}): Promise<string> {
  const clean: Record<string, string | undefined> = { ...env };
  for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR', 'GIT_OBJECT_DIRECTORY']) delete clean[name];
  return runGit(['-c', 'core.hooksPath=/dev/null', ...args], { cwd, env: { ...clean, ...extra } });
}

/** `rm -rf` that never follows a symlink and gets through directories the command made read-only. */
function removeTree(directory: string): void {
  try {
    rmSync(directory, { recursive: true, force: true });
  } catch {
    const makeWritable = (entry: string): void => {
      try {
        if (!lstatSync(entry).isDirectory()) return;
        chmodSync(entry, 0o700);
        for (const child of readdirSync(entry)) makeWritable(path.join(entry, child));
      } catch {
        // gone: nothing to do
      }
    };
    makeWritable(directory);
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * Caches tools keep inside a dependency directory (`node_modules/.cache`: eslint `--cache`, babel,
 * terser; vite's and vitest's): not linked, so the tools start them empty and can write them.
 */
const dependencyCacheNames: ReadonlySet<string> = new Set(['.cache', '.vite', '.vite-temp', '.vitest']);

/**
 * `target` as a real directory whose entries are links to `source`'s (read-only in the sandbox),
 * except its caches: a tool can still add files there (a cache, a package it installs), which are
 * thrown away with the checkout, and cannot change an installed one. A `source` that is not a
 * directory is linked whole.
 */
function linkDependencyDir(source: string, target: string): void {
  if (existsSync(target)) return;
  mkdirSync(path.dirname(target), { recursive: true });
  let entries: string[];
  try {
    if (!statSync(source).isDirectory()) throw new Error('not a directory');
    entries = readdirSync(source);
  } catch {
    symlinkSync(source, target);
    return;
  }
  mkdirSync(target);
  for (const entry of entries) if (!dependencyCacheNames.has(entry)) symlinkSync(path.join(source, entry), path.join(target, entry));
}

/**
 * Outside attack X7 #6: a run SIGKILLed while a gate ran in its throwaway checkout never disposed of
 * it — the worktree stayed registered in the repository (`git worktree list`) and on disk, a full
 * copy of the tree, and `git worktree prune` keeps it (its directory exists). So each checkout's
 * scratch directory names its owner (`owner`: pid and, on Linux, the process's start time, so a
 * reused pid is not taken for the owner, and its PID namespace), written before the worktree is registered, and
 * {@link pruneDeadCheckouts} removes the checkouts whose owner is gone.
 */
const ownerFileName = 'owner';
const checkoutDirPrefix = 'polywave-checkout-';
const treeName = /^tree-[0-9a-f]{8}$/;
/** A checkout directory an older polywave made (no `owner` file) counts as dead once it is this old. */
const unownedMaxAgeMs = 24 * 60 * 60 * 1000;

/**
 * Removes the throwaway checkouts (`<scratch parent>/polywave-checkout-*`) whose owner process is
 * gone, with their worktree registrations in whichever repository they were made from. Only
 * directories of that name in this user's scratch parent are touched, and a registration only when
 * it points back at the checkout's `tree-*` directory: a worktree anywhere else is never removed.
 * They are throwaway copies by construction (detached, nothing in them is kept). A checkout without
 * an `owner` file (made by an older version) is removed once it is a day old. Returns the removed
 * checkouts' directories. Cheap: one readdir of the scratch parent plus a few small reads.
 */
export function pruneDeadCheckouts(parent: string = scratchParent()): string[] {
  let names: string[];
  try {
    names = readdirSync(parent).filter((name) => name.startsWith(checkoutDirPrefix));
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const scratch = path.join(parent, name);
    try {
      if (!lstatSync(scratch).isDirectory()) continue;
      let owner: string | undefined;
      try {
        owner = readFileSync(path.join(scratch, ownerFileName), 'utf8');
      } catch {
        owner = undefined;
      }
      if (owner !== undefined ? scratchOwnerAlive(owner) : Date.now() - lstatSync(scratch).mtimeMs < unownedMaxAgeMs) continue;
      for (const tree of readdirSync(scratch).filter((entry) => treeName.test(entry))) {
        const root = path.join(scratch, tree);
        let admin: string | undefined;
        try {
          admin = /^gitdir: (.+)$/m.exec(readFileSync(path.join(root, '.git'), 'utf8'))?.[1]?.trim();
        } catch {
          admin = undefined;
        }
        // The registration, only when it is a `<git dir>/worktrees/<id>` entry that names this checkout.
        if (admin === undefined || !path.isAbsolute(admin) || path.basename(path.dirname(admin)) !== 'worktrees') continue;
        let back: string;
        try {
          back = readFileSync(path.join(admin, 'gitdir'), 'utf8').trim();
        } catch {
          continue;
        }
        if (path.resolve(back) === path.join(root, '.git')) removeTree(admin);
      }
      removeTree(scratch);
      removed.push(scratch);
    } catch {
      // Gone meanwhile (another run pruned it), or unreadable: leave it.
    }
  }
  return removed;
}

/**
 * Makes a throwaway checkout of `directory`'s working tree (see the module comment). Returns
 * undefined when `directory` is not inside a git work tree (nothing to snapshot: the caller runs the
 * command where it is). Throws `GATE_CHECKOUT_UNAVAILABLE: …` when the checkout cannot be made.
 */
export async function makeThrowawayCheckout(directory: string, env: Env): Promise<ThrowawayCheckout | undefined> {
  const cwd = path.resolve(directory);
  const top = await git(['rev-parse', '--show-toplevel'], cwd, env).then(
    (output) => output.trim(),
    () => undefined,
  );
  if (top === undefined || top === '') return undefined;
  const source = realpathSync(top);
  const relative = path.relative(source, realpathSync(cwd));
  let scratch: string | undefined;
  let root: string | undefined;
  let registered = false;
  let adminDir: string | undefined;
  const cleanUp = async (): Promise<void> => {
    // The files first (never following a link the command planted), then the worktree's entry in the
    // main repository's `.git/worktrees/` (read before the command ran), then the scratch directory
    // with its `owner` file: a kill at any point leaves either nothing or a checkout that
    // pruneDeadCheckouts finds. `git worktree remove` would be slower (it reads the whole worktree),
    // and `prune` is the fallback when the entry is unknown.
    if (root !== undefined) removeTree(root);
    if (adminDir !== undefined) removeTree(adminDir);
    else if (registered) await git(['worktree', 'prune'], source, env).catch(() => undefined);
    if (scratch !== undefined) removeTree(scratch);
  };
  // Leftovers of runs that were killed while a gate ran (X7 #6).
  pruneDeadCheckouts();
  try {
    scratch = await makeScratchDir(checkoutDirPrefix);
    writeFileSync(path.join(scratch, ownerFileName), scratchOwnerLine());
    // Which installed-dependency directories to link: listed while the tree is made (a walk of the checkout).
    const ignoredListing = git(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'], source, env);
    ignoredListing.catch(() => undefined);
    // The working tree as a tree object: a copy of the index (stat data kept: only changed files are hashed) plus `add -A`.
    const indexPath = path.resolve(source, (await git(['rev-parse', '--git-path', 'index'], source, env)).trim());
    const tempIndex = path.join(scratch, 'index');
    if (existsSync(indexPath)) copyFileSync(indexPath, tempIndex);
    const withIndex = { GIT_INDEX_FILE: tempIndex };
    if (!existsSync(tempIndex)) await git(['read-tree', 'HEAD'], source, env, withIndex);
    // (Agents' worktrees inside the checkout, `.claude/worktrees/`, are ignored or else nested repositories: not copied.)
    // Tracked changes as they are; untracked files only those no trusted ignore rule hides (outside attack X19-16).
    await git(['add', '-u'], source, env, withIndex);
    const untracked = (await git(['ls-files', '-z', '--others', '--exclude-standard'], source, env)).split('\0').filter((file) => file !== '');
    const refused = await untrustedUntracked(source, untracked, env, scratch);
    const kept = untracked.filter((file) => !refused.has(file));
    if (kept.length > 0) {
      const list = path.join(scratch, 'untracked.list');
      writeFileSync(list, `${kept.join('\0')}\0`);
      await git(['add', '--pathspec-from-file', list, '--pathspec-file-nul'], source, env, { ...withIndex, GIT_LITERAL_PATHSPECS: '1' });
      removeTree(list);
    }
    const tree = (await git(['write-tree'], source, env, withIndex)).trim();
    removeTree(tempIndex);
    // Outside attack P12-22: the IMPLs of a PROGRAM tier verify at once, each making a checkout of the same repository;
    // an add that read the other's worktree record while git was still writing it ("failed to read …/worktrees/<name>/
    // commondir") stopped a correct plan BLOCKED. Such a read is tried again (a new name each time), a few times.
    for (let attempt = 1; ; attempt += 1) {
      root = path.join(scratch, `tree-${randomBytes(4).toString('hex')}`);
      try {
        await git(['worktree', 'add', '--detach', '--no-checkout', '--quiet', root, 'HEAD'], source, env);
        break;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (attempt >= 5 || !/failed to read \S*worktrees\/[^/\s]+\/(commondir|gitdir|HEAD)\b/.test(message)) throw error;
        removeTree(root);
        await new Promise((resolve) => setTimeout(resolve, 40 * attempt));
      }
    }
    registered = true;
    const admin = /^gitdir: (.+)$/m.exec(readFileSync(path.join(root, '.git'), 'utf8'))?.[1];
    if (admin !== undefined && path.isAbsolute(admin) && path.basename(path.dirname(admin)) === 'worktrees') adminDir = admin;
    await git(['read-tree', '--reset', '-u', tree], root, env);
    // Installed dependencies: linked, read-only in the sandbox (the main checkout is not writable there).
    const ignored = (await ignoredListing).split('\0');
    for (const entry of ignored) {
      const name = entry.replace(/\/$/, '');
      if (name === '' || !dependencyDirNames.has(path.basename(name))) continue;
      linkDependencyDir(path.join(source, name), path.join(root, name));
    }
  } catch (error) {
    await cleanUp();
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new Error(`${throwawayCheckoutErrorCode}: cannot make a throwaway checkout of ${source} to run merged agent code in (${message}); set ${inPlaceOptOutVariable}=1 to run it in the checkout itself, where its writes persist`, { cause: error });
  }
  const made = root;
  const sources = [...new Set([made, realpathSync(made)])];
  return {
    cwd: path.join(made, relative),
    root: made,
    source,
    mapOutput: (text) => sources.reduce((current, from) => current.split(from).join(source), text),
    dispose: cleanUp,
  };
}

/** Commits whose ignore rules judge the untracked files of a checkout ({@link pinIgnoreRules}). */
const ignorePins = createCheckoutPins();

/**
 * From now until the returned release: a throwaway checkout of `checkout` also leaves out the untracked files the
 * ignore rules of `commit` hide — for a `verify-build` run outside finalize-wave, the last wave's base (outside
 * attack X20-10: there the merged `.gitignore` alone judged them again). finalize-wave pins its base through
 * pinSandboxSettings, which counts here too.
 */
export function pinIgnoreRules(checkout: string, commit: string): () => void {
  return ignorePins.pin(checkout, commit);
}

/**
 * The untracked (not ignored) files of the checkout a throwaway checkout must NOT copy (outside attack X19-16: an
 * agent that owned a `.gitignore` dropped its `.env` line; after the merge the user's `.env` was "untracked", the
 * throwaway tree copied it into the gate's own tree and the merged test code read it): secret-named files
 * ({@link secretFileName}), and files the ignore rules of a pinned commit hide — the base commit of the wave being
 * finalized ({@link pinnedCommitsOf}), whose `.gitignore` files no agent of the wave wrote, with the repository's
 * `info/exclude` and the user's `core.excludesFile`. Judged with git's own `check-ignore` in a scratch repository
 * holding only those.
 */
async function untrustedUntracked(source: string, untracked: readonly string[], env: Env, scratch: string): Promise<Set<string>> {
  const refused = new Set(untracked.filter((file) => secretFileName.test(path.basename(file))));
  const candidates = untracked.filter((file) => !refused.has(file));
  if (candidates.length === 0) return refused;
  // The user's own `core.excludesFile`, also when the repository's config sets it (outside attack X21-03: only the
  // global one was read by the judge, which has a configuration of its own).
  const excludesFile = await git(['config', '--path', '--get', 'core.excludesFile'], source, env).then((output) => output.trim(), () => '');
  let excludes = '';
  try {
    if (excludesFile !== '') excludes = readFileSync(path.resolve(source, excludesFile), 'utf8');
  } catch {
    // named but absent or unreadable: git ignores nothing by it either
  }
  // Commits whose `.gitignore` files are the same judge the same: one judge per distinct set.
  const judged = new Set<string>();
  for (const commit of [...new Set([...pinnedCommitsOf(source), ...ignorePins.of(source)])]) {
    const listing = await git(['ls-tree', '-r', '-z', '--full-tree', commit], source, env).catch(() => '');
    const entries = listing.split('\0').filter((line) => /\t(?:.*\/)?\.gitignore$/.test(line));
    const signature = entries.join('\0');
    if (judged.has(signature)) continue;
    judged.add(signature);
    const ignoreFiles = entries.map((line) => line.slice(line.indexOf('\t') + 1));
    const judge = path.join(scratch, `ignore-rules-${randomBytes(4).toString('hex')}`);
    mkdirSync(judge);
    try {
      await git(['init', '-q'], judge, env);
      // The repository's own `info/exclude` too (outside attack X20-03: a file the user ignores only there was
      // un-ignored by an agent's nested `.gitignore` negation and copied); `core.excludesFile` is read as by git.
      const exclude = await git(['rev-parse', '--git-path', 'info/exclude'], source, env).then((output) => path.resolve(source, output.trim()), () => undefined);
      const excluded = `${exclude !== undefined && existsSync(exclude) ? readFileSync(exclude, 'utf8') : ''}\n${excludes}\n`;
      mkdirSync(path.join(judge, '.git', 'info'), { recursive: true });
      writeFileSync(path.join(judge, '.git', 'info', 'exclude'), excluded);
      for (const file of ignoreFiles) {
        const text = await git(['show', `${commit}:${file}`], source, env).catch(() => '');
        mkdirSync(path.dirname(path.join(judge, file)), { recursive: true });
        writeFileSync(path.join(judge, file), text);
      }
      // exit 1: none of them is ignored
      const ignored = await runGit(['check-ignore', '--no-index', '-z', '--stdin'], { cwd: judge, env: { ...env, GIT_DIR: path.join(judge, '.git') }, input: `${candidates.join('\0')}\0` }).catch(() => '');
      for (const file of ignored.split('\0')) if (file !== '') refused.add(file);
    } finally {
      removeTree(judge);
    }
  }
  return refused;
}

/**
 * The throwaway checkouts of one run of commands (a gate run, verify-build's test and lint), one per
 * directory, made when the first command needs it and shared by the later ones — as they shared the
 * checkout before (a `build` gate's `dist/` is there for the `test` gate after it) — then disposed
 * together by {@link disposeCheckouts}.
 */
export type CheckoutSet = Map<string, Promise<ThrowawayCheckout | undefined>>;

/** The shared throwaway checkout of `directory` in `set` (made on first use; a failure is shared too). */
export function sharedCheckout(set: CheckoutSet, directory: string, env: Env): Promise<ThrowawayCheckout | undefined> {
  const key = path.resolve(directory);
  let made = set.get(key);
  if (!made) {
    made = makeThrowawayCheckout(key, env);
    made.catch(() => undefined);
    set.set(key, made);
  }
  return made;
}

/** Deletes every checkout of `set` (waits for those still being made). */
export async function disposeCheckouts(set: CheckoutSet): Promise<void> {
  const all = [...set.values()];
  set.clear();
  for (const made of all) await (await made.catch(() => undefined))?.dispose();
}
