/**
 * What appeared on the host since an agent's sandbox was planned or started, which that sandbox does not hide (outside
 * rounds X38/X39/X40, issue 11): the checks the tool executor runs before each tool call, shared with the backends that
 * keep one sandbox for a whole run (`claude-code`: Claude Code's own sandbox, configured once; `cli:claude` /
 * `cli:codex`: the whole CLI in one bubblewrap), which refuse the call and end the run instead (X39-10/11).
 * Cheap: a small registry file, one directory listing of `<common dir>/worktrees` and an lstat per hidden path.
 */
import { closeSync, constants as fsConstants, existsSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { registeredScratchParents, registeredWorkerDirs } from '../../sandbox/scratch-dirs.js';
import { relistedPrivates, secretFileName, type SandboxPlan } from '../../sandbox/sandbox-plan.js';

/**
 * What each path the plan hides is on the host right now (device, inode and birth time, or absent): X39-03 — bubblewrap mounts
 * over the directory or file that is there when the sandbox starts; one removed (or renamed away) and made again
 * later is another inode, which the mount does not cover (the kernel drops a mount whose mount point another
 * namespace deleted). A change means a new sandbox.
 */
export function hiddenIdentity(paths: readonly string[]): string {
  let identity = '';
  for (const entry of paths) {
    try {
      const stat = lstatSync(entry, { bigint: true });
      // (and its birth time: a directory removed and made again at once often gets the freed inode number back; where
      // the file system keeps none, its change time — X40-08: still equal within one tick of a coarse clock)
      identity += `${stat.dev}:${stat.ino}:${stat.birthtimeNs === 0n ? `c${stat.ctimeNs}` : stat.birthtimeNs}\n`;
    } catch {
      identity += '-\n';
    }
  }
  return identity;
}

/** How many hidden paths one executor holds open at most (16 agents of a wave: 4,096 descriptors at most). */
const heldPathsMax = 256;

/**
 * Descriptors of the hidden directories and regular files whose removal {@link hiddenIdentity} cannot see, opened
 * before the sandbox starts (X40-08, X41-03/04): on a file system that keeps no birth time, a path removed and made
 * again can get the same inode number and a change time within the same clock tick; a held descriptor of the old one
 * has no links left then, whatever the file system. Where the birth time is kept the identity tells them apart and
 * nothing is held (`evenWithBirthTimes`: held anyway — tests on file systems that keep them). Never through a symbolic
 * link; no FIFO or device is opened (regular files and directories only).
 */
export function holdHiddenDirectories(paths: readonly string[], evenWithBirthTimes = false): number[] {
  const held: number[] = [];
  for (const entry of paths) {
    if (held.length >= heldPathsMax) break;
    try {
      const stat = lstatSync(entry, { bigint: true });
      if ((stat.birthtimeNs !== 0n && !evenWithBirthTimes) || !(stat.isDirectory() || stat.isFile())) continue;
      held.push(openSync(entry, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK | (stat.isDirectory() ? fsConstants.O_DIRECTORY : 0)));
    } catch {
      // absent, a link, not ours to open: the identity check covers it
    }
  }
  return held;
}

/** True when a held hidden directory was removed (no links left). */
export function heldDirectoryRemoved(held: readonly number[]): boolean {
  for (const fd of held) {
    try {
      if (fstatSync(fd).nlink === 0) return true;
    } catch {
      return true;
    }
  }
  return false;
}

/** Closes what {@link holdHiddenDirectories} opened (and empties the list). */
export function closeHeld(held: number[]): void {
  for (const fd of held.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // closed already
    }
  }
}

/** `<common dir>/worktrees` of the repository `root` is a worktree (or main checkout) of; undefined when not found. */
function worktreesDirOf(root: string): string | undefined {
  const dotGit = path.join(root, '.git');
  try {
    if (lstatSync(dotGit).isDirectory()) return path.join(dotGit, 'worktrees');
    const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
    if (!pointer) return undefined;
    const gitDir = path.resolve(root, pointer);
    let common = path.dirname(path.dirname(gitDir));
    try {
      common = path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
    } catch {
      // no commondir file: <common>/worktrees/<name>
    }
    return path.join(common, 'worktrees');
  } catch {
    return undefined;
  }
}

/** The worktree roots `<common dir>/worktrees/*\/gitdir` name, with the text they were read from (the change stamp). */
function linkedWorktrees(worktreesDir: string): { stamp: string; roots: string[] } {
  let names: string[];
  try {
    names = readdirSync(worktreesDir).sort();
  } catch {
    return { stamp: '', roots: [] };
  }
  const roots: string[] = [];
  let stamp = '';
  for (const name of names) {
    let pointer = '';
    try {
      pointer = readFileSync(path.join(worktreesDir, name, 'gitdir'), 'utf8').trim();
    } catch {
      // none (being added, or prunable)
    }
    stamp += `${name}\0${pointer}\0`;
    if (pointer) roots.push(path.dirname(path.resolve(worktreesDir, name, pointer)));
  }
  return { stamp, roots };
}

/** `inner` is `outer` or inside it. */
function isInsideDir(outer: string, inner: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The code of a tool call refused, and of a run ended, because its sandbox's view went stale (X39-10/11). */
export const staleViewCode = 'SANDBOX_VIEW_STALE';

/**
 * How often a backend with one sandbox per run also runs its stale-view check on its own, between the checks before
 * each tool call (~1 ms each on a loaded 2-core machine with 8 worktrees and ~220 hidden paths).
 */
export const staleCheckIntervalMs = 500;

/** See {@link createAppearedCheck}. */
export interface AppearedCheck {
  /**
   * The paths that appeared since the last call (the first call: since the plan was made) and that the plan does not
   * hide: a worktree added to the repository (X39-12; not one inside a directory the plan hides whole, e.g. under the
   * hidden main checkout's `.claude/worktrees/`), a scratch parent another run registered or made again (X38-09,
   * X39-02/09), a `polywave worker`'s directory (A17-12). Listed-but-absent ones are looked at again each call. It does
   * not add them to the plan.
   */
  added(): string[];
}

/** The appeared-since-start check of an agent whose sandbox follows `plan`, working in `cwd` (its root). */
export function createAppearedCheck(plan: SandboxPlan, cwd: string, options: { workerDirs?: boolean } = {}): AppearedCheck {
  /**
   * A worktree inside a directory the plan hides whole — the main checkout seen from a worktree (its
   * `.claude/worktrees/`), a dispatch worker's `--dir` — with nothing of the plan's readable or writable paths in
   * it or around it, is not in this sandbox's view however late it appears (that directory's view is empty and
   * stays so): no new sandbox for it. Before, every worktree another IMPL of a PROGRAM tier or another job on the
   * worker added restarted each running agent's sandbox at its next tool call. A hidden directory that itself
   * appeared after the start is caught by `hiddenPathAppeared` as before.
   * The same holds for a scratch parent another run registers there (a TMPDIR under your home, in the main checkout
   * seen from a worktree, in another hidden scratch area): before, every such registration ended every `claude-code`
   * and `cli:*` agent of the host (and restarted every tool executor's sandbox); now only one the view exposes does.
   * (A hidden directory removed and made again is no longer covered by its mount: that is the identity check's case —
   * the tool executor's and the CLIs'; Claude Code makes a new sandbox per Bash call.)
   */
  const hiddenByConstruction = (root: string): boolean => {
    if (!plan.unreadable.some((dir) => dir !== root && isInsideDir(dir, root))) return false;
    const open = [...plan.writable, ...plan.readOnlyWithin, ...(plan.readable ?? [])];
    return !open.some((entry) => isInsideDir(entry, root) || isInsideDir(root, entry));
  };
  /**
   * {@link hiddenByConstruction} for a registered scratch parent, by its written path AND its real path (a registry line
   * through a link inside a hidden directory that points out of it is reachable by the real path): absent, or its real
   * path unknown → not hidden (looked at again next time).
   */
  const parentHiddenByConstruction = (entry: string): boolean => {
    if (!hiddenByConstruction(entry)) return false;
    try {
      return hiddenByConstruction(realpathSync(entry));
    } catch {
      return false;
    }
  };
  // X38-09: scratch parents other polywave runs register after this executor started (a run with another TMPDIR: its
  // agents' HOME/TMPDIR) — the plan hides them from then on. The registry is read per request (a small file); parents
  // listed but absent are looked at again each time — those listed before this executor existed too (X39-02: a CI job's
  // TMPDIR registered by an earlier job, wiped, then made again by the next; X39-09: registered after the plan was made).
  let registrySeen: string | undefined;
  let registeredAbsent: string[] = [];
  const newlyRegistered = (): string[] => {
    const listed = registeredScratchParents();
    const text = listed.join('\n');
    const candidates = text === registrySeen ? registeredAbsent : listed;
    registrySeen = text;
    const fresh: string[] = [];
    registeredAbsent = [];
    for (const entry of candidates) {
      if (plan.unreadable.includes(entry) || !path.basename(entry).startsWith('polywave-scratch-')) continue;
      // (hidden by construction now: looked at again each time, as an absent one — its real path can change)
      if (parentHiddenByConstruction(entry)) registeredAbsent.push(entry);
      else if (existsSync(entry)) fresh.push(entry);
      else registeredAbsent.push(entry);
    }
    return fresh;
  };

  // X39-12: a worktree added to the repository after the plan was made (another IMPL's wave of a PROGRAM tier, a
  // retry's or rework agent's worktree, a concurrent run) is hidden like those that existed: read from
  // `<common dir>/worktrees/*/gitdir` before each request (no git process), added to the plan, a new sandbox.
  // Listed worktrees whose directory is absent are looked at again each time (X40-09: one moved away and back, its
  // entry unchanged).
  const worktreesDir = worktreesDirOf(cwd);
  const ownRoot = path.resolve(cwd);
  let worktreesSeen: string | undefined;
  let worktreesAbsent: string[] = [];
  const newWorktrees = (): string[] => {
    if (worktreesDir === undefined) return [];
    const { stamp, roots } = linkedWorktrees(worktreesDir);
    const candidates = stamp === worktreesSeen ? worktreesAbsent : roots;
    worktreesSeen = stamp;
    worktreesAbsent = [];
    const fresh: string[] = [];
    for (const root of candidates) {
      if (root === ownRoot || isInsideDir(ownRoot, root) || isInsideDir(root, ownRoot) || plan.unreadable.includes(root) || hiddenByConstruction(root)) continue;
      if (existsSync(root)) fresh.push(root);
      else worktreesAbsent.push(root);
    }
    return fresh;
  };

  // A17-12: a `polywave worker` of this host started after the plan was made: its `--dir` is hidden like those that
  // were registered before (src/sandbox/sandbox-plan.ts foreignWorkerDirs) — read from the registry per request.
  const newWorkerDirs = (): string[] => registeredWorkerDirs().filter((dir) => !plan.unreadable.includes(dir) && dir !== ownRoot && !isInsideDir(dir, ownRoot));

  // X42-03: a secret-named file that appears directly in a directory above the agent's root (`<parent>/.env.late`,
  // `id_rsa`) after the plan was made — the plan hides those there at its start only. One directory listing per parent
  // (no cache: a file made a moment ago must be seen); a directory the plan hides whole shows nothing new.
  // Those there when this check is made are the plan's decision (hidden, or the project's own: a tracked `.env.example`
  // in the main checkout above a worktree).
  const parentDirs: string[] = [];
  for (let dir = path.dirname(ownRoot); ; dir = path.dirname(dir)) {
    if (!plan.unreadable.some((hidden) => isInsideDir(hidden, dir))) parentDirs.push(dir);
    if (path.dirname(dir) === dir) break;
  }
  const secretsIn = (dir: string): string[] => {
    try {
      return readdirSync(dir).filter((name) => secretFileName.test(name)).map((name) => path.join(dir, name));
    } catch {
      return [];
    }
  };
  const known = new Set([...plan.unreadable, ...parentDirs.flatMap(secretsIn)]);
  // A directory is listed again only when its change time moved (a stat per parent per check; /tmp holds thousands).
  const listed = new Map<string, { stamp: string; fresh: string[] }>();
  const stampOf = (dir: string): string => {
    try {
      const stat = lstatSync(dir, { bigint: true });
      return `${stat.ino}:${stat.mtimeNs}:${stat.ctimeNs}`;
    } catch {
      return '-';
    }
  };
  const newParentSecrets = (): string[] =>
    parentDirs.flatMap((dir) => {
      const stamp = stampOf(dir);
      const seen = listed.get(dir);
      if (seen?.stamp === stamp) return seen.fresh;
      const fresh = secretsIn(dir).filter((file) => !known.has(file));
      listed.set(dir, { stamp, fresh });
      return fresh;
    });

  // X43-15/16: what appears in the places the plan hid entries of by name — at the top of the git directory (a credential
  // store `.git/.git-credentials`, `.git/id_rsa`), in its `info/`, in a submodule's git directory, and at the top of the
  // main checkout's dependency directories bound back into a sandbox working elsewhere (`node_modules/.env.production`)
  // — after the plan was made: listed again whenever one of those directories changed (a stat each per check). Those
  // there when this check is made are the plan's decision, as for the parents above.
  const relisted = plan.relisted;
  let relistedSeen = relisted !== undefined ? relistedPrivates(relisted) : undefined;
  const relistedKnown = new Set(relistedSeen?.entries ?? []);
  // hidden by the plan: itself, or inside a hidden directory with nothing readable again between (the main checkout is
  // hidden whole from a worktree, its `.git` and `node_modules` bound back)
  const coveredByPlan = (entry: string): boolean => {
    const open = [...plan.writable, ...plan.readOnlyWithin, ...(plan.readable ?? [])];
    return plan.unreadable.some((hidden) => isInsideDir(hidden, entry) && !open.some((reopened) => reopened !== hidden && isInsideDir(hidden, reopened) && isInsideDir(reopened, entry)));
  };
  // An entry made empty (an empty directory, a regular file of no bytes) exposes nothing while it stays so: Claude Code
  // makes such mount points for its own sandbox at its start (`.git/glab-cli/`, `.git/info/.claude-sandbox-noreplace`,
  // CI96/CI51 of session forty-three) — held back, and looked at again at each check (a stat: content written into it
  // later does not change the directory's stamp), reported once it holds anything.
  const emptyNow = (entry: string): boolean => {
    try {
      const stat = lstatSync(entry);
      if (stat.isFile()) return stat.size === 0;
      return stat.isDirectory() && readdirSync(entry).length === 0;
    } catch {
      return false;
    }
  };
  const newRelisted = (): string[] => {
    if (relisted === undefined) return [];
    relistedSeen = relistedPrivates(relisted, relistedSeen);
    return relistedSeen.entries.filter((entry) => !relistedKnown.has(entry) && !coveredByPlan(entry) && !emptyNow(entry));
  };

  const workerDirs = options.workerDirs !== false;
  return { added: () => [...newlyRegistered(), ...newWorktrees(), ...(workerDirs ? newWorkerDirs() : []), ...newParentSecrets(), ...newRelisted()] };
}

/**
 * The stale-view check of a sandbox made ONCE for a whole run (`claude-code`: its deny list; `cli:claude` / `cli:codex`:
 * bubblewrap binds its mounts at the start): a new worktree or registered scratch parent {@link createAppearedCheck}
 * finds and, with `identities`, a hidden path removed and made again, or absent at the start and there now (nothing
 * covers those in that sandbox, X39-03, X38-03). Create it right before the sandbox starts; {@link StaleViewCheck.check}
 * returns why the view is stale, or undefined (once stale, stale for good).
 */
export interface StaleViewCheck {
  check(): string | undefined;
  close(): void;
}

export function createStaleViewCheck(plan: SandboxPlan, cwd: string, options: { identities: boolean }): StaleViewCheck {
  // Not the directories of `polywave worker`s started since (A17-12): ending every running agent of these backends
  // each time a worker starts on the host was judged too dear; the tool executor (which only starts a new sandbox)
  // still covers them. README, safety table.
  const appeared = createAppearedCheck(plan, cwd, { workerDirs: false });
  // Per hidden path (workers' directories left out, as above): what it was at the start. A path that is merely gone
  // now hides nothing; one that is there again as another inode (or was absent and is there now) is not covered.
  const workers = new Set(registeredWorkerDirs());
  const watched = options.identities ? [...plan.unreadable, ...(plan.watchedFiles ?? [])].filter((entry) => !workers.has(entry)) : [];
  const atStart = watched.map((entry) => hiddenIdentity([entry]));
  const heldPaths: string[] = [];
  const held: number[] = [];
  for (const entry of watched) {
    const fds = holdHiddenDirectories([entry]);
    if (fds.length === 0) continue;
    if (held.length >= 256) {
      closeHeld(fds);
      break;
    }
    held.push(fds[0]!);
    heldPaths.push(entry);
  }
  let stale: string | undefined;
  const find = (): string | undefined => {
    const added = appeared.added();
    if (added.length > 0) return `${added.length === 1 ? 'a path' : 'paths'} this sandbox does not hide appeared since it started: ${added.join(', ')}`;
    for (const [index, entry] of watched.entries()) {
      const now = hiddenIdentity([entry]);
      if (now === atStart[index] || now === '-\n') continue;
      return atStart[index] === '-\n' ? `a hidden path absent when this sandbox started is there now: ${entry}` : `a hidden path was removed and made again since this sandbox started (its mount no longer covers it): ${entry}`;
    }
    for (const [index, fd] of held.entries()) {
      if (heldDirectoryRemoved([fd]) && existsSync(heldPaths[index]!)) return `a hidden path was removed and made again since this sandbox started (its mount no longer covers it): ${heldPaths[index]}`;
    }
    return undefined;
  };
  return {
    // once stale, stale for good (what appeared is not seen again as new)
    check: () => (stale ??= find()),
    close: () => closeHeld(held),
  };
}
