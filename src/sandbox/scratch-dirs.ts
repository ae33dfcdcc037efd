/**
 * Where polywave's private scratch directories live (outside attack 2026-12-02, #12): every agent's
 * HOME/TMPDIR (`polywave-agent-<id>-*`, where Claude Code keeps its transcripts and Codex its
 * sessions) and every gate's TMPDIR (`polywave-gate-*`) is made under ONE per-user parent,
 * `<tmp>/polywave-scratch-<uid>/` (mode 0700). Both sandbox plans make that whole parent
 * unreadable and list the process's own scratch directories as writable: sandbox-runtime mounts an
 * empty tmpfs over the parent and binds the own ones back over it. So an agent sees neither the
 * scratch directories of the agents and gates that exist when its sandbox starts nor those made
 * later (its tool executor is one long-lived sandbox). Agents all run as the same uid: 0700 alone
 * does not keep one agent out of another's directory.
 */
import { appendFileSync, chmodSync, closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { processExists, processStartTime, processStillRuns } from '../store/process-alive.js';

/**
 * `tmp` with its symlinks resolved (as it is when missing or unreadable: `path.resolve`). A TMPDIR
 * that is a symlink (macOS `/tmp` → `/private/tmp`, `/var` → `/private/var`, or a user's own link)
 * must name its scratch parent by the real path: the sandbox hides the parent by its real path and
 * binds each agent's own HOME/TMPDIR back over it, and a bind made through the link was covered by
 * that hide — every agent's own HOME and TMPDIR were read-only (EROFS; outside attack X8 #7).
 */
function realTemp(tmp: string): string {
  try {
    return realpathSync(tmp);
  } catch {
    return path.resolve(tmp);
  }
}

/** The parent of this user's scratch directories: `<os.tmpdir(), symlinks resolved>/polywave-scratch-<uid>`. */
export function scratchParent(): string {
  return parentIn(realTemp(os.tmpdir()));
}

function parentIn(tmp: string): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return path.join(tmp, `polywave-scratch-${uid}`);
}

/** The temp directories whose scratch parent every plan hides without asking (see {@link foreignScratchDirs}). */
function wellKnownTemps(): string[] {
  return ['/tmp', ...(process.platform === 'win32' ? [] : ['/var/tmp', '/dev/shm'])];
}

/**
 * Creates `<tmp>/polywave-scratch-<uid>` (0700) when missing and checks it is a real directory of
 * this user — in a shared /tmp another user could have made the name first (then this throws).
 */
function ensureParentIn(tmp: string): string {
  const parent = parentIn(tmp);
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  const stat = lstatSync(parent);
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new Error(`${parent} is not a directory of this user (uid ${uid ?? '?'}): remove it or set TMPDIR elsewhere`);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(parent, 0o700);
  return parent;
}

/**
 * The registry of scratch parents made under a TMPDIR that is not a well-known temp directory
 * (issue 11, X3 #8 rest): `/tmp/polywave-scratch-<uid>/parents`, one absolute path a line. It lives
 * in the /tmp scratch parent, which every sandbox hides, so no agent or gate can read or edit it; a
 * run whose TMPDIR is `/srv/t` registers `/srv/t/polywave-scratch-<uid>` there, and every plan made
 * afterwards — by any polywave process of this user, whatever its own TMPDIR — hides it too. The
 * `workers` registry beside it works the same way for `polywave worker` directories.
 */
const registryLimit = 256;

function registryPath(name: RegistryName): string {
  return path.join(parentIn('/tmp'), name);
}

/**
 * The registries kept in the /tmp scratch parent: `parents` (scratch parents under other TMPDIRs) and `workers`
 * (the `--dir` of every `polywave worker` of this user on this host: what one worker's agents and gates must not
 * read of another's — its jobs' worktrees, scripts, journals, gate checkouts and clone; outside attack A17-12).
 */
type RegistryName = 'parents' | 'workers';

/** The lines of a registry (absolute paths; an unreadable or missing registry is empty). */
function registered(name: RegistryName): string[] {
  try {
    const text = readFileSync(registryPath(name), 'utf8');
    return [...new Set(text.split('\n').filter((line) => line.startsWith('/') && !line.includes('\0')))];
  } catch {
    return [];
  }
}

/** The registered scratch parents (absolute paths; an unreadable or missing registry is empty). */
export function registeredScratchParents(): string[] {
  return registered('parents');
}

/**
 * The registered worker directories (`polywave worker --dir`, real paths) that exist now. Every sandbox plan hides
 * them whole but for what its own `hiddenAround` puts back (a worker's own `--dir` for its own jobs).
 */
export function registeredWorkerDirs(): string[] {
  return registered('workers').filter((entry) => existsSync(entry));
}

/**
 * Adds `entry` to a registry (made 0600, never through a symlink; at most {@link registryLimit} lines). When full (or
 * the file grew past its bound) the registry is written again with what `keep` keeps (default: the entries that still
 * exist — a gone one hides nothing); still full then, this throws: an entry is never dropped to make room for another.
 */
function register(name: RegistryName, entry: string, keep: (line: string) => boolean = (line) => existsSync(line)): void {
  const known = registered(name);
  if (known.includes(entry)) return;
  ensureParentIn('/tmp');
  const file = registryPath(name);
  let size = 0;
  try {
    size = lstatSync(file).size;
  } catch {
    // no registry yet
  }
  if (known.length >= registryLimit || size > registryLimit * 4096) {
    const kept = known.filter(keep);
    if (kept.length >= registryLimit) throw new Error(`${file} holds ${kept.length} entries in use (at most ${registryLimit})`);
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, kept.map((line) => `${line}\n`).join(''), { mode: 0o600, flag: 'wx' });
    renameSync(temporary, file);
  }
  const descriptor = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    const stat = fstatSync(descriptor);
    const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
    if (!stat.isFile() || (uid !== undefined && stat.uid !== uid) || stat.nlink !== 1) throw new Error(`${file} is not a plain file of this user`);
    appendFileSync(descriptor, `${entry}\n`);
  } finally {
    closeSync(descriptor);
  }
}

/** The file in a worker's `--dir` naming the live worker that holds it (its pid). */
const workerOwnerFile = '.polywave-worker.pid';

/** What {@link workerOwnerFile} holds: the pid and, where it can be read, the start time of the holding process. */
const ownerLine = (): string => {
  const start = processStartTime(process.pid);
  return `${process.pid}${start !== undefined ? ` ${start}` : ''}\n`;
};

/** The pid in a worker directory's {@link workerOwnerFile} and the start time beside it (if any). */
function ownerOf(dir: string): { pid: number; start: string | undefined } | undefined {
  try {
    const [pid, start] = readFileSync(path.join(dir, workerOwnerFile), 'utf8').trim().split(/\s+/);
    const number = Number(pid);
    return Number.isInteger(number) && number > 0 ? { pid: number, start: start !== undefined && /^\d+$/.test(start) ? start : undefined } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the live process holding worker directory `dir`, if one does (not this process). The start time beside
 * the pid tells a worker that died and whose pid another process now has (the directory is free) from a live one.
 */
function liveOwnerOf(dir: string): number | undefined {
  const owner = ownerOf(dir);
  return owner !== undefined && owner.pid !== process.pid && processStillRuns(owner.pid, owner.start) ? owner.pid : undefined;
}

/** Why a worker directory cannot be taken (see {@link registerWorkerDir}). */
export class WorkerDirError extends Error {
  constructor(
    readonly reason: 'in-use' | 'nested' | 'registry',
    message: string,
  ) {
    super(message);
  }
}

const inside = (outer: string, inner: string): boolean => inner === outer || inner.startsWith(`${outer}/`);

/**
 * Takes a `polywave worker`'s `--dir` (by its real path) for this process and registers it, so that the sandboxes of
 * every other polywave process of this user — another worker's agents and gates, a local run's — hide it whole
 * (A17-12). Refused (a {@link WorkerDirError}): a directory a live worker holds (A18-14: the second one's start emptied
 * the first's running job), one inside or around another live worker's (A18-01: the inner worker's sandboxes could not
 * hide the outer one, which holds their own root), and a registry that is full of live workers' directories or
 * unusable — a worker never starts unregistered and never evicts a live one's entry (A18-08). The hold ends with
 * {@link releaseWorkerDir}, or with the process.
 */
export function registerWorkerDir(dir: string): void {
  const real = realTemp(dir);
  for (const entry of registered('workers')) {
    if (!(inside(entry, real) || inside(real, entry)) || liveOwnerOf(entry) === undefined) continue;
    if (entry === real) throw new WorkerDirError('in-use', `${real} is the --dir of a live worker (pid ${liveOwnerOf(entry)}): give each worker its own`);
    throw new WorkerDirError('nested', `${real} lies ${inside(entry, real) ? 'inside' : 'around'} ${entry}, the --dir of a live worker (pid ${liveOwnerOf(entry)}): worker directories must not nest`);
  }
  const owner = liveOwnerOf(real);
  if (owner !== undefined) throw new WorkerDirError('in-use', `${real} is the --dir of a live worker (pid ${owner}): give each worker its own`);
  writeFileSync(path.join(real, workerOwnerFile), ownerLine(), { mode: 0o600 });
  try {
    // (when full: the directories of workers that are gone make room; a live one's entry is never dropped)
    register('workers', real, (line) => existsSync(line) && liveOwnerOf(line) !== undefined);
  } catch (error) {
    rmSync(path.join(real, workerOwnerFile), { force: true });
    throw new WorkerDirError('registry', error instanceof Error ? error.message : String(error));
  }
}

/**
 * Puts a held worker directory back into the registry when it is no longer listed (the file removed with /tmp's
 * cleaning, or re-created): a running worker calls it with its heartbeat, so its directory is hidden again from the
 * sandboxes planned from then on (A18-18). Quiet when the registry cannot take it now (the next beat tries again).
 */
export function keepWorkerDirRegistered(dir: string): void {
  const real = realTemp(dir);
  if (registered('workers').includes(real)) return;
  try {
    if (!existsSync(path.join(real, workerOwnerFile))) writeFileSync(path.join(real, workerOwnerFile), ownerLine(), { mode: 0o600 });
    register('workers', real, (line) => existsSync(line) && liveOwnerOf(line) !== undefined);
  } catch {
    // tried again at the next beat
  }
}

/** Ends this process's hold of worker directory `dir` (its entry stays: the directory is hidden while it exists). */
export function releaseWorkerDir(dir: string): void {
  const file = path.join(realTemp(dir), workerOwnerFile);
  try {
    if (Number(readFileSync(file, 'utf8').trim().split(/\s+/)[0]) === process.pid) rmSync(file, { force: true });
  } catch {
    // gone already
  }
}

/**
 * Creates {@link scratchParent} (0700) when missing and checks it is a real directory of this
 * user — in a shared /tmp another user could have made the name first (then this throws). A parent
 * outside the well-known temp directories is registered, so that other runs' sandboxes hide it.
 */
export function ensureScratchParent(): string {
  const tmp = realTemp(os.tmpdir());
  const parent = ensureParentIn(tmp);
  if (!swept.has(parent)) {
    swept.add(parent);
    sweepStaleStatusFiles(parent);
    sweepDeadScratchDirs(parent);
  }
  if (process.platform !== 'win32' && !wellKnownTemps().includes(tmp)) {
    try {
      register('parents', parent);
    } catch {
      // /tmp unusable (another user's name, read-only): this run works, other runs' sandboxes do not hide it
    }
  }
  return parent;
}

const swept = new Set<string>();

/**
 * Bubblewrap status files (`bwrap-status-<pid>-<hex>`, src/sandbox/wrap-in-sandbox.ts) whose process is gone: a
 * sandboxed command's release deletes its file, but a process that ended first (killed, or a CLI that exited with
 * an agent's tool executor still running) left it behind, one per start (X39-14). Removed once per process and
 * scratch parent, at its first use; a live process's (or another user's: EPERM) are left alone.
 */
export function sweepStaleStatusFiles(parent: string): number {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const match = /^bwrap-status-(\d+)-[0-9a-f]+$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || processExists(pid)) continue;
    rmSync(path.join(parent, name), { force: true });
    removed += 1;
  }
  return removed;
}

/** A new scratch directory `<parent>/<prefix>XXXXXX` (prefix such as `polywave-agent-A-`). */
export async function makeScratchDir(prefix: string): Promise<string> {
  const directory = await mkdtemp(path.join(ensureScratchParent(), prefix));
  if (ownedScratchName.test(path.basename(directory))) {
    // P12-31: who made it, beside it in the parent (which every sandbox hides: the agent or gate using the directory
    // cannot change it), so that a later run removes it once that process is gone (a SIGKILLed orchestrator's).
    try {
      writeFileSync(`${directory}${ownerSuffix}`, scratchOwnerLine());
    } catch {
      // no record: the directory is then removed by age alone (see sweepDeadScratchDirs)
    }
  }
  return directory;
}

/** Removes a scratch directory made by {@link makeScratchDir} and its owner record. `keep`: the directory stays, for good (`keepScratch`). */
export async function releaseScratchDir(directory: string, options: { keep?: boolean } = {}): Promise<void> {
  if (options.keep === true) {
    try {
      renameSync(`${directory}${ownerSuffix}`, `${directory}${keepSuffix}`);
    } catch {
      // no owner record: nothing to turn into a keep record
    }
    return;
  }
  await rm(directory, { recursive: true, force: true }).catch(() => undefined);
  rmSync(`${directory}${ownerSuffix}`, { force: true });
}

/** Agents' HOME/TMPDIR and gates' TMPDIR (throwaway checkouts keep their own `owner` file: src/gates/throwaway-checkout.ts). */
const ownedScratchName = /^polywave-(agent|gate)-[^/]+$/;
const ownerSuffix = '.owner';
const keepSuffix = '.keep';
/** A scratch directory with no owner record (made by an older polywave, or the record's write failed) counts as dead once it is this old. */
const unownedScratchMaxAgeMs = 24 * 60 * 60 * 1000;

/** This process's PID namespace (`pid:[4026531836]`), where /proc has it: a pid means nothing in another one. */
function pidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

/** This process, as an owner record holds it: `<pid>[ <start time>[ <pid namespace>]]`. */
export function scratchOwnerLine(): string {
  const started = processStartTime(process.pid);
  const namespace = started !== undefined ? pidNamespace() : undefined;
  return `${process.pid}${started !== undefined ? ` ${started}` : ''}${namespace !== undefined ? ` ${namespace}` : ''}\n`;
}

/**
 * Whether the owner a record of {@link scratchOwnerLine} names still runs. Unreadable lines, and owners in another
 * PID namespace (a container sharing this /tmp), count as alive: never remove what is not provably dead.
 */
export function scratchOwnerAlive(text: string): boolean {
  const match = /^(\d+)(?: (\d+)(?: (\S+))?)?$/.exec(text.trim());
  if (!match) return true;
  if (match[3] !== undefined && match[3] !== pidNamespace()) return true;
  return processStillRuns(Number(match[1]), match[2]);
}

/**
 * P12-31: the agents' and gates' scratch directories whose maker is gone — a SIGKILLed orchestrator, CLI or worker
 * never removes them (normal exits do): one `home`/`tmp` pair per killed agent, for ever. Removed once per process and
 * scratch parent, at its first use, with their owner records; a live owner's (or one in another PID namespace),
 * a kept one (`.keep`) and, without a record, one younger than a day are left alone. Returns the names removed.
 */
export function sweepDeadScratchDirs(parent: string): string[] {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return [];
  }
  const present = new Set(names);
  const removed: string[] = [];
  for (const name of names) {
    const full = path.join(parent, name);
    if (name.endsWith(ownerSuffix)) {
      // a record whose directory is gone (killed between the directory's removal and the record's)
      if (!present.has(name.slice(0, -ownerSuffix.length))) rmSync(full, { force: true });
      continue;
    }
    if (!ownedScratchName.test(name) || name.endsWith(keepSuffix) || present.has(`${name}${keepSuffix}`)) continue;
    try {
      const stat = lstatSync(full);
      if (!stat.isDirectory() || (typeof process.getuid === 'function' && stat.uid !== process.getuid())) continue;
      let owner: string | undefined;
      try {
        owner = readFileSync(`${full}${ownerSuffix}`, 'utf8');
      } catch {
        owner = undefined;
      }
      if (owner !== undefined ? scratchOwnerAlive(owner) : Date.now() - stat.mtimeMs < unownedScratchMaxAgeMs) continue;
      rmSync(full, { recursive: true, force: true });
      rmSync(`${full}${ownerSuffix}`, { force: true });
      removed.push(name);
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
  return removed;
}

/** Names of scratch directories that older polywave versions made directly in the temp directory. */
const legacyScratchName = /^polywave-(agent|gate)-/;

/**
 * Every path a sandbox must not read because it holds some polywave process's scratch files: the
 * scratch parent (whatever is made in it later included) and the scratch directories that older
 * versions made directly in the temp directory (those existing now) — in this process's temp
 * directory, in `env`'s (an orchestrator whose TMPDIR differs), in /tmp, /var/tmp and /dev/shm. The caller's own scratch
 * directories stay readable by being writable in its plan (bound back over the parent) — and the
 * parents other runs registered under any other TMPDIR.
 */
export function foreignScratchDirs(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  // /var/tmp and /dev/shm too: a concurrent run whose TMPDIR is one of them keeps its agents' scratch
  // directories there (outside attack X3 #8). A run with any other TMPDIR registered its parent when it
  // made it (see registeredScratchParents): hidden as well.
  // Each by its real path too (a symlinked TMPDIR: the sandbox mounts on the resolved path).
  const given = [os.tmpdir(), env.TMPDIR, ...wellKnownTemps()].filter((entry): entry is string => typeof entry === 'string' && path.isAbsolute(entry));
  const roots = [...new Set(given.flatMap((entry) => [path.resolve(entry), realTemp(entry)]))];
  const result: string[] = [...roots.map(parentIn), ...registeredScratchParents().filter((entry) => path.basename(entry) === path.basename(parentIn('/tmp')) && existsSync(entry))];
  // (A registered parent that is gone — its run's TMPDIR deleted — is not hidden: bubblewrap cannot mount over a path
  // whose directory is missing and the sandbox failed to start, seen in CI when another run's TMPDIR was removed.)
  for (const tmp of roots) {
    try {
      for (const name of legacyScratchNames(tmp)) result.push(path.join(tmp, name));
    } catch {
      // an unreadable temp directory: only the parent
    }
  }
  return [...new Set(result)];
}

/**
 * The legacy scratch names in temp directories read before, by directory, with the directory's
 * stamp (device, inode, link count, size, mtime, ctime) when it was read. A name made or removed in a directory
 * moves its mtime and ctime, so a listing is reused only while both are unchanged — and only when
 * they were at least {@link settledMs} old when it was read: the kernel stamps directories with a
 * coarse clock, and a name made within the same tick as the reading would leave the stamp as it
 * was. A /tmp of ~7,500 entries took ~30 ms to list per agent sandbox plan.
 */
const legacyListings = new Map<string, { stamp: string; names: string[] }>();
let settledMs = 1000;

/** Tests only: the settle window of {@link legacyScratchNames}' listings. */
export function setScratchListingSettleMsForTests(ms: number): void {
  settledMs = ms;
}

function directoryStamp(directory: string): { stamp: string; settled: boolean } {
  const stats = statSync(directory, { bigint: true });
  const newest = stats.mtimeNs > stats.ctimeNs ? stats.mtimeNs : stats.ctimeNs;
  return { stamp: `${stats.dev}:${stats.ino}:${stats.nlink}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`, settled: BigInt(Date.now()) * 1_000_000n - newest >= BigInt(settledMs) * 1_000_000n };
}

function legacyScratchNames(tmp: string): string[] {
  const before = directoryStamp(tmp);
  const known = legacyListings.get(tmp);
  if (known !== undefined && known.stamp === before.stamp) return known.names;
  const names = readdirSync(tmp).filter((name) => legacyScratchName.test(name));
  if (before.settled && directoryStamp(tmp).stamp === before.stamp) {
    legacyListings.set(tmp, { stamp: before.stamp, names });
    if (legacyListings.size > 32) legacyListings.delete(legacyListings.keys().next().value!);
  } else legacyListings.delete(tmp);
  return names;
}
