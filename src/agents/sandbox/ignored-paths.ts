/**
 * The main checkout's git-IGNORED files, for an agent that works in the main checkout (a solo wave's
 * agent, the integration, scaffold and Scout agents: issue 11, note9). Its sandbox makes that
 * checkout writable, and git ignores what it writes to `.envrc`, `node_modules/.bin/…`, `.vscode/`,
 * `dist/`, `__pycache__/`: neither the jail's audit (git status) nor check-tamper sees those files,
 * and the user later runs them outside any sandbox (direnv, npm scripts, the editor's tasks, Python's
 * bytecode cache). Two parts:
 *
 * - **Prevention.** Every ignored path that exists when the agent starts (git's own collapsed list:
 *   a wholly ignored directory is one entry) is read-only in its sandbox, except one that is or holds
 *   a file the agent owns, or holds a path the plan hides (another worktree); an existing build-output
 *   directory (`dist/`, `target/`, `__pycache__/`…) is an empty throwaway tmpfs instead. At most 256 mounts,
 *   shallowest first; the deeper entries past that (many `__pycache__/`) are fingerprinted instead
 *   (inode, size, mtime, ctime, mode of every file, up to 50,000) and moved out like new ones when
 *   the agent changed them. Fail closed (outside attack X9 #3): a deep entry that does not fit in
 *   what is left of that budget (a monorepo's `pkgs/app/node_modules/`) is mounted read-only after
 *   all; an entry that holds an owned file or a worktree and does not fit, or more such mounts than
 *   8 × the limit, stop the agent's launch with SANDBOX_IGNORED_TOO_MANY (remedy: worktrees).
 * - **Containment.** A sandbox cannot keep a writable directory from getting NEW files, so ignored
 *   paths that appear while the agent runs are moved, after it stopped (its processes are dead by
 *   then), out of the checkout into `<git common dir>/polywave/quarantine/<agent>-<time>/` — read-only
 *   to every sandbox — and recorded in its journal's `denials.jsonl` (code SANDBOX_IGNORED_QUARANTINED).
 *   Nothing is deleted; the wave goes on (a test run's `__pycache__` is such a path, and polywave's
 *   post-merge commands run in a throwaway checkout anyway). An existing entry that holds a hidden
 *   worktree or an owned file (`.claude/` holding `.claude/worktrees/<x>`) is one entry in git's list
 *   before and after, so its content is fingerprinted file by file (within the same 50,000 budget)
 *   and what is new or changed in it is moved out the same way (outside attack X8 #3:
 *   `.claude/settings.local.json` hooks). Only the worktrees git registers are skipped, not a place.
 *
 * Limits: an orchestrator killed while the agent runs leaves the new paths in place; a change the
 * user makes in the checkout's ignored files during the agent's run is quarantined too.
 */
import { lstat, readdir } from 'node:fs/promises';
import { moveToQuarantine } from '../../git/quarantine-move.js';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runGit } from '../../git/run-git.js';
import type { SandboxPlan } from '../../sandbox/sandbox-plan.js';

/** The code of a quarantined path in the agent's denials. */
export const ignoredQuarantineCode = 'SANDBOX_IGNORED_QUARANTINED';

/**
 * Existing ignored build-output and cache directories: instead of read-only (a solo agent's build or
 * test run writes them: `tsc` into `dist/`, cargo into `target/`, Python's bytecode), each is an empty
 * writable tmpfs in the agent's sandbox, for its whole run (the tool executor is one sandbox) — the
 * agent builds as in a fresh clone, and nothing it writes there reaches the checkout. Dependencies
 * (`node_modules`, `.venv`) stay read-only: tests read them.
 */
export const throwawayDirNames: ReadonlySet<string> = new Set([
  'dist',
  'build',
  'out',
  'target',
  'coverage',
  '.nyc_output',
  '.next',
  '.nuxt',
  '.svelte-kit',
  '.turbo',
  '.parcel-cache',
  '__pycache__',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
  '.tox',
]);

/**
 * More read-only mounts than this and the rest (the deepest entries: a Python tree's `__pycache__/`
 * directories) is watched instead: bubblewrap takes at most ~3,000 mounts, and each costs start-up
 * time (measured ~+0.9 s for 200 at load 30).
 */
const readOnlyLimit = 256;

/**
 * Files and directories fingerprinted under the watched entries, at most. Beyond it nothing is left
 * unwatched (outside attack X9 #3: a 50,000-file `node_modules/` past the mount limit was neither
 * read-only nor watched, and its `.bin/tsc` was rewritten): an entry that does not fit is mounted
 * read-only (a build-output directory: throwaway) after all, and an entry gone through child by
 * child that does not fit stops the launch (see {@link ignoredTooManyCode}).
 */
const defaultWatchBudget = 50_000;

/**
 * Mounts in all, at most, counting those over the mount limit for entries the budget could not
 * watch: bubblewrap takes ~3,000. More, and the agent is not started (see {@link ignoredTooManyCode}).
 */
const mountCeilingFactor = 8;

/** The code of a solo agent not started because its checkout's ignored files cannot all be guarded. */
export const ignoredTooManyCode = 'SANDBOX_IGNORED_TOO_MANY';

function tooMany(root: string, entry: string, why: string): PolywaveError {
  return new PolywaveError({
    code: ignoredTooManyCode,
    message: `the main checkout's ignored ${path.relative(root, entry) || entry} ${why}, so an agent working in the checkout could change it unseen; run this wave with worktrees (more than one agent, or an IMPL that is not solo), or remove/unignore what it does not need`,
    details: { entry },
  });
}

/**
 * `ino:size:mtime:ctime:mode` of every path under `absolute` (not following links), into `into`;
 * a directory's print starts with `dir:`. Paths for which `skip` is true are left out with their content.
 */
async function fingerprint(absolute: string, into: Map<string, string>, budget: { left: number }, skip?: (absolute: string) => boolean): Promise<boolean> {
  if (skip?.(absolute) === true) return true;
  if (budget.left <= 0) return false;
  budget.left -= 1;
  let stats;
  try {
    stats = await lstat(absolute, { bigint: true });
  } catch {
    into.set(absolute, 'missing');
    return true;
  }
  into.set(absolute, `${stats.isDirectory() ? 'dir:' : ''}${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}:${stats.mode}`);
  if (!stats.isDirectory()) return true;
  const children = await readdir(absolute).catch(() => [] as string[]);
  for (const child of children) if (!(await fingerprint(path.join(absolute, child), into, budget, skip))) return false;
  return true;
}

/**
 * The paths of `now` that are new since `before`, or files (not directories) that changed, outermost
 * only (a new directory stands for what it holds).
 */
function changedPaths(before: ReadonlyMap<string, string>, now: ReadonlyMap<string, string>): string[] {
  const changed = [...now]
    .filter(([file, print]) => {
      const was = before.get(file);
      return was === undefined || (was !== print && !print.startsWith('dir:'));
    })
    .map(([file]) => file)
    .sort();
  const outermost: string[] = [];
  for (const file of changed) if (!outermost.some((outer) => isInside(file, outer))) outermost.push(file);
  return outermost;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The path polywave itself writes in the checkout while an agent runs: its state directory. (The
 * worktrees of other IMPLs that a PROGRAM tier's prepare-wave may make meanwhile under
 * `.claude/worktrees/` are skipped by what `git worktree list` names, never by their place: a plant
 * of the agent's own under `.claude/worktrees/` is quarantined — outside attack X8 #3.)
 */
const polywaveOwned = ['.polywave-state'];

/** The work trees git knows of (absolute), for the quarantine never to move one. */
async function worktreePaths(root: string, env: Env): Promise<string[]> {
  const output = await runGit(['worktree', 'list', '--porcelain'], { cwd: root, env: { ...env, GIT_DIR: undefined, GIT_WORK_TREE: undefined } }).catch(() => '');
  return output.split('\n').filter((line) => line.startsWith('worktree ')).map((line) => path.resolve(line.slice('worktree '.length)));
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * The ignored entries of `root`'s work tree, relative, as git collapses them (`dist/`, `.envrc`,
 * `src/__pycache__/`): `git ls-files --others --ignored --exclude-standard --directory`, run outside
 * any sandbox with the environment's git-locating variables dropped.
 */
export async function listIgnored(root: string, env: Env): Promise<string[]> {
  const clean: Record<string, string | undefined> = { ...env };
  for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR', 'GIT_OBJECT_DIRECTORY']) delete clean[name];
  const output = await runGit(['-c', 'core.hooksPath=/dev/null', 'ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'], { cwd: root, env: clean });
  // git also lists the directories inside an untracked directory that holds only ignored files
  // (`pkg/`, `pkg/a/`, `pkg/a/__pycache__/`): the outermost one stands for them all.
  const entries = output.split('\0').filter((entry) => entry !== '').sort();
  const outermost: string[] = [];
  for (const entry of entries) {
    const last = outermost[outermost.length - 1];
    if (last !== undefined && last.endsWith('/') && entry.startsWith(last)) continue;
    outermost.push(entry);
  }
  return outermost;
}

/** What {@link guardIgnoredPaths} needs. */
export interface IgnoredGuardInput {
  /** The agent's root: the main checkout (realpath). */
  root: string;
  /** Its sandbox plan, extended in place with the read-only entries. */
  plan: SandboxPlan;
  /** Files the agent owns (relative to root): never made read-only, never quarantined. */
  ownedFiles: readonly string[];
  /** The repository's common git directory (absolute): the quarantine is under it. */
  gitCommonDir: string;
  agentId: string;
  env: Env;
  now?: () => Date;
  /** Read-only/throwaway mounts at most (default 256; tests use fewer). */
  mountLimit?: number;
  /** Files fingerprinted at most past the mount limit (default 50,000; tests use fewer). */
  watchBudget?: number;
  /**
   * The agent's sandbox has the whole checkout read-only (a Scout, critic or Planner: run-agent.ts): nothing needs
   * a read-only mount, a fingerprint or a move afterwards — only the build-output throwaways are made (so that a build
   * it runs still works), and nothing can refuse its start.
   */
  throwawayOnly?: boolean;
}

/** One path moved out of the checkout. */
export interface QuarantinedPath {
  /** Relative to the checkout, as git listed it. */
  path: string;
  /** Where it is now (absolute), or undefined when the move failed. */
  movedTo?: string;
  error?: string;
  /** A watched entry (past the read-only mounts) the agent deleted: no copy was kept, it cannot be put back (X30-11). */
  deleted?: true;
}

/** The guard of one agent run: call {@link IgnoredGuard.quarantineNew} once its processes are gone. */
export interface IgnoredGuard {
  /** Entries made read-only in the plan. */
  readOnly: string[];
  /** Entries past the mount limit that the watch budget could not fingerprint: mounted (read-only or throwaway) after all. */
  overBudget: string[];
  /** Build-output directories the agent sees empty and writable, and whose writes vanish (see {@link throwawayDirNames}). */
  throwaway: string[];
  quarantineNew(): Promise<QuarantinedPath[]>;
}

/**
 * Lists the checkout's ignored entries, makes them read-only in `plan` (see the module comment) and
 * returns the guard that moves the entries that appear later out of the checkout.
 */
export async function guardIgnoredPaths(input: IgnoredGuardInput): Promise<IgnoredGuard> {
  const root = path.resolve(input.root);
  const before = new Set(await listIgnored(root, input.env));
  const owned = input.ownedFiles.map((file) => path.resolve(root, file));
  // An entry that is (or lies inside) an owned file stays the agent's to write; one that HOLDS an owned
  // file is gone through below (its other content read-only or watched file by file).
  const keep = (entry: string): boolean => {
    const absolute = path.resolve(root, entry);
    if (polywaveOwned.some((name) => isInside(absolute, path.join(root, name)))) return false;
    return !owned.some((file) => isInside(absolute, file));
  };
  const worktreesAtStart = (await worktreePaths(root, input.env)).filter((entry) => entry !== root);
  const hiddenAtStart = [...input.plan.unreadable];
  const readOnly: string[] = [];
  const throwaway: string[] = [];
  const mountLimit = input.mountLimit ?? readOnlyLimit;
  // Entries gone through child by child (they hold a hidden worktree or an owned file): a NEW child
  // is neither read-only nor a new entry of git's collapsed list (`.claude/` before and after), so
  // their content is fingerprinted file by file and what is new or changed at the end is quarantined.
  const recursed: string[] = [];
  const protectedInside = (absolute: string): boolean =>
    input.plan.unreadable.some((hidden) => isInside(hidden, absolute)) || input.plan.writable.some((open) => open !== root && isInside(open, absolute)) || owned.some((file) => isInside(file, absolute));
  // An entry that holds a path with a mount of its own (another worktree, hidden) or an owned file:
  // its other children are read-only one by one (a few levels down).
  const add = async (absolute: string, depth: number): Promise<void> => {
    if (readOnly.length + throwaway.length >= mountLimit * 2) return;
    if (input.plan.unreadable.includes(absolute) || owned.some((file) => isInside(absolute, file))) return;
    if (polywaveOwned.some((name) => isInside(absolute, path.join(root, name)))) return;
    if (!protectedInside(absolute)) {
      if (throwawayDirNames.has(path.basename(absolute)) && (await lstat(absolute).then((stats) => stats.isDirectory(), () => false))) throwaway.push(absolute);
      else readOnly.push(absolute);
      return;
    }
    if (depth === 0) recursed.push(absolute);
    if (depth >= 4) return;
    const children = await readdir(absolute, { withFileTypes: true }).catch(() => []);
    for (const child of children) await add(path.join(absolute, child.name), depth + 1);
  };
  // Shallow entries first: the top-level `node_modules/`, `.envrc`, `dist/` are the ones users run.
  const depth = (entry: string): number => entry.replace(/\/$/, '').split('/').length;
  const ordered = [...before].filter(keep).sort((left, right) => depth(left) - depth(right) || (left < right ? -1 : left > right ? 1 : 0));
  if (input.throwawayOnly) {
    for (const entry of ordered) {
      if (throwaway.length >= mountLimit) break;
      const absolute = path.resolve(root, entry);
      if (!throwawayDirNames.has(path.basename(absolute)) || input.plan.unreadable.includes(absolute) || protectedInside(absolute)) continue;
      if (await lstat(absolute).then((stats) => stats.isDirectory(), () => false)) throwaway.push(absolute);
    }
    input.plan.unreadable = [...new Set([...input.plan.unreadable, ...throwaway])];
    return { readOnly, overBudget: [], throwaway, quarantineNew: async () => [] };
  }
  const overflow: string[] = [];
  for (const entry of ordered) {
    const absolute = path.resolve(root, entry);
    if (readOnly.length + throwaway.length < mountLimit) await add(absolute, 0);
    // Past the limit, one that holds an owned file or a hidden path is never read-only as a whole: its print skips those.
    else if (protectedInside(absolute)) recursed.push(absolute);
    else overflow.push(entry);
  }
  const watchBudget = input.watchBudget ?? defaultWatchBudget;
  const budget = { left: watchBudget };
  // Never watched inside a recursed entry: other worktrees (hidden, or registered), owned files, polywave's state.
  const skipAt = (worktrees: readonly string[]) => (absolute: string): boolean =>
    hiddenAtStart.some((hidden) => isInside(absolute, hidden)) ||
    worktrees.some((worktree) => isInside(absolute, worktree)) ||
    owned.some((file) => isInside(absolute, file)) ||
    polywaveOwned.some((name) => isInside(absolute, path.join(root, name)));
  // The recursed entries first (`.claude/` holding a worktree: what is new there is only found by its
  // print). One that does not fit in the budget cannot be guarded (it cannot be read-only as a whole:
  // it holds a worktree or an owned file): the agent is not started (fail closed, outside attack X9 #3).
  const recursedPrints = new Map<string, string>();
  for (const entry of recursed) if (!(await fingerprint(entry, recursedPrints, budget, skipAt(worktreesAtStart)))) throw tooMany(root, entry, `holds more than ${watchBudget} files beside a worktree or an owned file`);
  // Past the mount limit: each entry's files are fingerprinted now and compared when the agent stops.
  // One that does not fit in what is left of the budget is mounted after all (read-only; a build
  // output throwaway): never writable and unwatched (fail closed, outside attack X9 #3).
  const watched = new Map<string, Map<string, string>>();
  const overBudget: string[] = [];
  for (const entry of overflow) {
    const prints = new Map<string, string>();
    const absolute = path.resolve(root, entry);
    if (budget.left > 0 && (await fingerprint(absolute, prints, budget))) watched.set(entry, prints);
    else {
      overBudget.push(absolute);
      if (throwawayDirNames.has(path.basename(absolute)) && (await lstat(absolute).then((stats) => stats.isDirectory(), () => false))) throwaway.push(absolute);
      else readOnly.push(absolute);
    }
  }
  if (readOnly.length + throwaway.length > mountLimit * mountCeilingFactor) {
    throw tooMany(root, overBudget[0] ?? root, `and ${readOnly.length + throwaway.length - mountLimit} more ignored entries are past ${mountLimit} read-only mounts and ${watchBudget} watched files`);
  }
  input.plan.readOnlyWithin = [...new Set([...input.plan.readOnlyWithin, ...readOnly])];
  // "Unreadable" is an empty tmpfs over the directory: writable in the sandbox, gone with it.
  input.plan.unreadable = [...new Set([...input.plan.unreadable, ...throwaway])];
  return {
    readOnly,
    overBudget,
    throwaway,
    async quarantineNew() {
      const after = await listIgnored(root, input.env);
      const candidates = after.filter((entry) => !before.has(entry) && keep(entry));
      const deleted: string[] = [];
      for (const [entry, prints] of watched) {
        const now = new Map<string, string>();
        await fingerprint(path.resolve(root, entry), now, { left: Number.POSITIVE_INFINITY });
        const same = now.size === prints.size && [...prints].every(([file, print]) => now.get(file) === print);
        if (same) continue;
        if (now.get(path.resolve(root, entry)) !== 'missing') candidates.push(entry);
        else if (!owned.some((file) => isInside(path.resolve(root, entry), file) || isInside(file, path.resolve(root, entry)))) deleted.push(entry);
      }
      const gone: QuarantinedPath[] = deleted.map((entry) => ({ path: entry, deleted: true, error: `deleted by the agent: one of the ignored entries past the ${mountLimit} read-only mounts (watched, not kept), so it could not be put back` }));
      const worktrees = [...new Set([...worktreesAtStart, ...(await worktreePaths(root, input.env)).filter((entry) => entry !== root)])];
      if (recursed.length > 0) {
        const now = new Map<string, string>();
        for (const entry of recursed) await fingerprint(entry, now, { left: Number.POSITIVE_INFINITY }, skipAt(worktrees));
        for (const changed of changedPaths(recursedPrints, now)) {
          const relative = path.relative(root, changed);
          candidates.push(now.get(changed)?.startsWith('dir:') === true ? `${relative}/` : relative);
        }
      }
      // A candidate that is or lies inside a worktree or an owned file stays; one that holds one is
      // gone through child by child (a new `.claude/` holding a worktree made meanwhile: its other content).
      const keepers = [...worktrees, ...owned];
      const fresh: string[] = [];
      const around = async (entry: string, depth: number): Promise<void> => {
        const absolute = path.resolve(root, entry);
        if (keepers.some((keeper) => isInside(absolute, keeper))) return;
        if (!keepers.some((keeper) => isInside(keeper, absolute))) {
          fresh.push(entry);
          return;
        }
        if (depth >= 8) return;
        const children = await readdir(absolute, { withFileTypes: true }).catch(() => []);
        for (const child of children) await around(`${path.relative(root, path.join(absolute, child.name))}${child.isDirectory() ? '/' : ''}`, depth + 1);
      };
      for (const entry of [...new Set(candidates)]) await around(entry, 0);
      if (fresh.length === 0) return gone;
      const stamp = (input.now ?? (() => new Date()))().toISOString().replace(/[:.]/g, '-');
      const target = path.join(input.gitCommonDir, 'polywave', 'quarantine', `${input.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}`);
      const moved: QuarantinedPath[] = [];
      for (const entry of fresh) {
        const from = path.resolve(root, entry);
        const to = path.join(target, entry);
        try {
          // The entry itself is moved (a symlink as a symlink); its parent directories are the checkout's own.
          moved.push({ path: entry, movedTo: await moveToQuarantine(from, to, { mode: 0o700 }) });
        } catch (error) {
          moved.push({ path: entry, error: error instanceof Error ? error.message : String(error) });
        }
      }
      return [...gone, ...moved];
    },
  };
}
