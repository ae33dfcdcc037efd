import { createHash, randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { codes } from '../errors/codes.js';
import type { Git } from '../git/git-port.js';
import { canonicalJson, formatTimestamp } from '../protocol/freeze.js';
import { branchNamePattern } from '../protocol/names.js';
import { writeTextAtomic } from './prepare/write-text.js';

/**
 * Tamper-proof merges (issue 11, DESIGN §3.1 "nothing the agent can write may run with the
 * orchestrator's rights"): what prepare-wave records about a repository so that finalize-wave can
 * prove, before it merges anything, that nobody changed what makes git run code or decides what
 * gets merged while the agents worked.
 *
 * The record (`<git common dir>/polywave/tamper-<slug>-wave<N>.json`, never in a working tree, so
 * never committed; under the OS sandbox agents cannot write `.git` at all) holds:
 * - git's own files that can run code or redirect git: `config`, `config.worktree`, files they
 *   include, `info/attributes`, `info/exclude`, `info/grafts`, `objects/info/alternates`, `HEAD`;
 * - the hooks: every entry of the directory git runs them from (content, mode, symlink target,
 *   the directory's own mode; `*.sample` files are never run and are left out) and a copy of
 *   them — the snapshot (`hooks-<slug>-wave<N>/`) — which is where finalize's git commands take
 *   their hooks from (`-c core.hooksPath=<snapshot>`), so a hook that appears later never runs;
 * - every ref except this wave's agent branches (their tips are the agents' work, judged by the
 *   pre-merge checks); the merge target is recorded too and may only move by the wave's merges;
 * - the manifest's merge-relevant fields (hashes) and the state the orchestrator last wrote.
 */

/** Version of the record's shape. */
export const tamperRecordVersion = 1;

/** The stable code of a refusal. */
export const tamperDetectedCode = codes.tamperDetected;

/** One file or directory entry, as recorded. */
export interface PathFingerprint {
  kind: 'missing' | 'file' | 'symlink' | 'directory' | 'other';
  /** Permission bits (`mode & 0o7777`); for a symlink, those of its target. */
  mode?: number;
  /** SHA-256 of the content (for a symlink: of its target's content, when that is a file). */
  sha256?: string;
  /** A symlink's target as stored in the link. */
  link?: string;
}

/** The hooks git runs for the main checkout. */
export interface HooksFingerprint {
  /** The directory git runs them from (absolute). */
  directory: string;
  /** Inside the working tree (tracked hooks: husky, `.githooks`): merges change it legitimately, so only the snapshot counts. */
  in_tree: boolean;
  /** Directory the snapshot was copied from: `directory`, or the original hooks behind polywave's wrapper directory. */
  source: string;
  /** Every entry of `directory` (relative POSIX paths), `*.sample` left out; empty when in the tree. */
  entries: Record<string, PathFingerprint>;
  /** `directory` itself (its permissions). */
  directory_entry: PathFingerprint;
  /** The snapshot's files (relative paths), symlinks dereferenced; undefined when none was taken. */
  snapshot?: Record<string, PathFingerprint>;
}

/** The manifest fields that decide what is merged and how it is judged. */
export interface ManifestFingerprint {
  path: string;
  /** Top-level key → SHA-256 of its canonical JSON (see {@link manifestFingerprint}). */
  fields: Record<string, string>;
  /** State and merge_state as the orchestrator last wrote them. */
  state: string;
  merge_state?: string;
}

/** What prepare-wave (or, without one, finalize-wave) recorded about one repository. */
export interface TamperRecord {
  version: number;
  slug: string;
  wave: number;
  recorded_by: 'prepare-wave' | 'finalize-wave';
  recorded_at: string;
  /**
   * False when the record was only made by finalize-wave (no record from prepare-wave): nothing
   * vouches for the hooks then, and finalize runs none of them.
   */
  hooks_trusted: boolean;
  repo_root: string;
  common_dir: string;
  /** The wave's base in this repository (a record of another base belongs to another run). */
  base_commit?: string;
  /** git's files, by path relative to the common directory (`include:<absolute path>` for included config files). */
  files: Record<string, PathFingerprint & { text?: string }>;
  hooks: HooksFingerprint;
  /** Full ref name → object id, this wave's agent branches (and `concurrent_refs`) left out. */
  refs: Record<string, string>;
  /**
   * Refs that other orchestrated work moves while this wave runs (a PROGRAM tier: the other IMPLs'
   * agent branches and IMPL branches): left out of `refs` and of the check. An entry ending in `/`
   * is a prefix, any other one exact ref (see {@link isConcurrentRef}).
   */
  concurrent_refs?: string[];
  /**
   * The merge target and its tip as the orchestrator last left it (moved since only by the
   * wave's merges). `merged`: finalize-wave merged every agent; from then on commits on top are
   * accepted and listed (E47: callers fixed on the target after a failed verification).
   */
  target?: { branch: string; commit: string; merged?: boolean };
  manifest?: ManifestFingerprint;
}

/** Files of the common git directory that can run code or redirect git. */
export const recordedGitFiles = ['config', 'config.worktree', 'info/attributes', 'info/exclude', 'info/grafts', 'objects/info/alternates', 'HEAD'] as const;

/** Config files whose text is kept in the record (to name the keys that changed). */
const textKeptFiles = new Set(['config', 'config.worktree']);
/** Larger config texts are not kept (their hash still is). */
const maximumKeptText = 256 * 1024;
/** A hooks directory holding more entries than this is refused rather than half recorded. */
const maximumHookEntries = 500;
const maximumHookDepth = 4;

/** Directory (inside the common git directory) holding the records and snapshots. */
export function tamperDirectory(commonDir: string): string {
  return path.join(commonDir, 'polywave');
}

/** `<common dir>/polywave/tamper-<slug>-wave<N>.json`. */
export function tamperRecordPath(commonDir: string, slug: string, wave: number): string {
  return path.join(tamperDirectory(commonDir), `tamper-${slug}-wave${wave}.json`);
}

/** `<common dir>/polywave/hooks-<slug>-wave<N>` — the hooks finalize's git commands run. */
export function hooksSnapshotPath(commonDir: string, slug: string, wave: number): string {
  return path.join(tamperDirectory(commonDir), `hooks-${slug}-wave${wave}`);
}

/** A hooks path under which git finds no hook at all. */
export const noHooksPath = os.devNull;

/**
 * The configuration finalize's (and prepare's) git commands run with: no hook at all (X25-03/04: a
 * hook in `.git/hooks` — even the verified snapshot's copy — may run tree content an agent wrote:
 * a symlink to a tracked script, the pre-commit framework, lefthook; harden.ts gives every host git
 * the same), and no fsmonitor command (it would run on every index refresh, and is config an agent
 * could have set after the check). The snapshot stays part of the record (what the hooks were).
 */
export function pinnedGitConfig(_hooksDirectory?: string): Record<string, string> {
  return { 'core.hooksPath': noHooksPath, 'core.fsmonitor': 'false' };
}

/** The pinned configuration for a directory: that of the longest root in `pins` containing it (undefined: none). */
export function pinsForDirectory<Pins>(pins: ReadonlyMap<string, Pins>, directory: string): Pins | undefined {
  let best: string | undefined;
  const resolved = path.resolve(directory);
  for (const root of pins.keys()) {
    if (isInside(root, resolved) && (best === undefined || root.length > best.length)) best = root;
  }
  return best === undefined ? undefined : pins.get(best);
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Fingerprint of one path (never throws for a missing one). */
export async function fingerprintPath(filePath: string, options: { keepText?: boolean } = {}): Promise<PathFingerprint & { text?: string }> {
  let info;
  try {
    info = await lstat(filePath);
  } catch (error) {
    if (isMissing(error)) return { kind: 'missing' };
    throw error;
  }
  if (info.isSymbolicLink()) {
    const link = await readlink(filePath);
    try {
      const target = await stat(filePath);
      if (!target.isFile()) return { kind: 'symlink', link, mode: target.mode & 0o7777 };
      return { kind: 'symlink', link, mode: target.mode & 0o7777, sha256: sha256(await readFile(filePath)) };
    } catch (error) {
      if (isMissing(error)) return { kind: 'symlink', link };
      throw error;
    }
  }
  if (info.isDirectory()) return { kind: 'directory', mode: info.mode & 0o7777 };
  if (!info.isFile()) return { kind: 'other', mode: info.mode & 0o7777 };
  const content = await readFile(filePath);
  const fingerprint: PathFingerprint & { text?: string } = { kind: 'file', mode: info.mode & 0o7777, sha256: sha256(content) };
  if (options.keepText && content.length <= maximumKeptText) fingerprint.text = content.toString('utf8');
  return fingerprint;
}

/** Every entry under `directory` (relative POSIX paths), `*.sample` left out; `{}` when it does not exist. */
export async function fingerprintTree(directory: string): Promise<Record<string, PathFingerprint>> {
  const entries: Record<string, PathFingerprint> = {};
  let count = 0;
  const walk = async (relative: string, depth: number): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(path.join(directory, relative));
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    const wanted = names.filter((name) => !name.endsWith('.sample')).sort();
    count += wanted.length;
    if (count > maximumHookEntries) throw new Error(`${directory} holds more than ${maximumHookEntries} entries: not a hooks directory polywave can vouch for`);
    const found = await Promise.all(wanted.map(async (name) => [name, await fingerprintPath(path.join(directory, relative, name))] as const));
    for (const [name, fingerprint] of found) {
      const key = relative === '' ? name : `${relative}/${name}`;
      entries[key] = fingerprint;
      if (fingerprint.kind === 'directory' && depth < maximumHookDepth) await walk(key, depth + 1);
    }
  };
  await walk('', 0);
  return entries;
}

/** Refs to leave out of the record: this wave's agent branches (E5 and legacy names). */
export function isWaveAgentRef(refName: string, slug: string, wave: number): boolean {
  if (!refName.startsWith('refs/heads/')) return false;
  const match = branchNamePattern.exec(refName.slice('refs/heads/'.length));
  if (!match || Number(match[2]) !== wave) return false;
  return match[1] === undefined || match[1] === slug;
}

/** Every ref (one `for-each-ref`), this wave's agent branches left out. */
/**
 * Whether `name` is one of the refs other orchestrated work moves meanwhile: an entry ending in
 * `/` is a prefix (`refs/heads/polywave/<other IMPL>/`), any other entry one exact ref.
 */
export function isConcurrentRef(name: string, concurrent: readonly string[]): boolean {
  return concurrent.some((entry) => (entry.endsWith('/') ? name.startsWith(entry) : name === entry));
}

export async function readRefs(git: Git, slug: string, wave: number, concurrent: readonly string[] = []): Promise<Record<string, string>> {
  const { stdout } = await git.run(['for-each-ref', '--format=%(refname)%00%(objectname)']);
  const refs: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    if (line === '') continue;
    const [name = '', id = ''] = line.split('\0');
    if (name !== '' && !isWaveAgentRef(name, slug, wave) && !isConcurrentRef(name, concurrent)) refs[name] = id;
  }
  return refs;
}

/** Where the main checkout's repository lives and where git runs its hooks from. */
export interface RepositoryLocation {
  root: string;
  commonDir: string;
  hooksDirectory: string;
}

/** One `rev-parse`: top level, common directory, and the hooks directory as git resolves it (core.hooksPath honoured). */
export async function locateRepository(git: Git): Promise<RepositoryLocation> {
  const { stdout } = await git.run(['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir', '--git-path', 'hooks']);
  const [root = '', commonDir = '', hooks = ''] = stdout.replace(/\n$/, '').split('\n');
  return { root, commonDir, hooksDirectory: path.resolve(root, hooks) };
}

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Name of polywave's wrapper hooks directory (see isolation-hook.ts, core.hooksPath inside the tree). */
const wrapperDirectoryName = 'polywave-hooks';

/**
 * Where the snapshot's hooks come from. Polywave's wrapper directory (installed when
 * core.hooksPath points into the working tree) delegates to the repository's own hooks in the
 * main checkout, which the merges change: the snapshot copies those originals instead.
 */
async function hooksSource(git: Git, location: RepositoryLocation, home: string | undefined): Promise<string> {
  if (path.resolve(location.hooksDirectory) !== path.join(location.commonDir, wrapperDirectoryName)) return location.hooksDirectory;
  const { stdout, exitCode } = await git.run(['config', '--local', '--get', 'core.hooksPath'], { allowExitCodes: [1] });
  const original = stdout.trim();
  if (exitCode !== 0 || original === '') return location.hooksDirectory;
  return path.resolve(location.root, original.startsWith('~/') && home ? path.join(home, original.slice(2)) : original);
}

/** Files included by the repository's config (`include.path`, `includeIf.*.path`), resolved. */
async function includedConfigFiles(git: Git, commonDir: string, texts: readonly string[], home: string | undefined): Promise<string[]> {
  if (!texts.some((text) => /include/i.test(text))) return [];
  const files: string[] = [];
  for (const name of ['config', 'config.worktree']) {
    const file = path.join(commonDir, name);
    const { stdout } = await git.run(['config', '--file', file, '--null', '--get-regexp', '^include(if\\..*)?\\.path$'], { allowExitCodes: [1] });
    for (const record of stdout.split('\0')) {
      const value = record.slice(record.indexOf('\n') + 1).trim();
      if (record.indexOf('\n') < 0 || value === '') continue;
      const expanded = value.startsWith('~/') && home ? path.join(home, value.slice(2)) : value;
      files.push(path.resolve(path.dirname(file), expanded));
    }
  }
  return [...new Set(files)].sort();
}

/** The fingerprints of git's own files (see {@link recordedGitFiles}) plus the files the config includes. */
export async function fingerprintGitFiles(git: Git, commonDir: string, home: string | undefined): Promise<TamperRecord['files']> {
  const files: TamperRecord['files'] = {};
  const found = await Promise.all(recordedGitFiles.map(async (name) => [name, await fingerprintPath(path.join(commonDir, name), { keepText: true })] as const));
  for (const [name, fingerprint] of found) {
    if (!textKeptFiles.has(name)) delete fingerprint.text;
    files[name] = fingerprint;
  }
  const texts = found.flatMap(([, fingerprint]) => (fingerprint.text !== undefined ? [fingerprint.text] : []));
  for (const included of await includedConfigFiles(git, commonDir, texts, home)) {
    const fingerprint = await fingerprintPath(included);
    files[`include:${included}`] = fingerprint;
  }
  return files;
}

/**
 * Copies the hooks of `source` (files and symlinks to files, dereferenced; `*.sample` left out)
 * into `snapshot`, replacing what was there (written next to it, then renamed). Returns the
 * snapshot's fingerprint.
 */
export async function writeHooksSnapshot(source: string, snapshot: string): Promise<Record<string, PathFingerprint>> {
  const entries = await fingerprintTree(source);
  const staging = `${snapshot}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true, mode: 0o700 });
  const copied: Record<string, PathFingerprint> = {};
  try {
    for (const [relative, entry] of Object.entries(entries)) {
      const target = path.join(staging, ...relative.split('/'));
      if (entry.kind === 'directory') {
        await mkdir(target, { recursive: true });
        continue;
      }
      if (entry.sha256 === undefined || entry.mode === undefined) continue; // dangling link, socket…
      const content = await readFile(path.join(source, ...relative.split('/')));
      // The copy is what runs: it must be what was fingerprinted.
      if (sha256(content) !== entry.sha256) throw new Error(`hook ${relative} changed while it was being recorded`);
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, content);
      await chmod(target, entry.mode & 0o777);
      copied[relative] = { kind: 'file', mode: entry.mode & 0o777, sha256: entry.sha256 };
    }
    await rm(snapshot, { recursive: true, force: true });
    await rename(staging, snapshot);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return copied;
}

/** Fingerprint of a snapshot directory, in the shape {@link writeHooksSnapshot} returns. */
export async function fingerprintSnapshot(snapshot: string): Promise<Record<string, PathFingerprint>> {
  const tree = await fingerprintTree(snapshot);
  const files: Record<string, PathFingerprint> = {};
  for (const [relative, entry] of Object.entries(tree)) {
    if (entry.kind === 'directory') continue;
    files[relative] = entry.kind === 'file' ? { kind: 'file', mode: (entry.mode ?? 0) & 0o777, ...(entry.sha256 ? { sha256: entry.sha256 } : {}) } : entry;
  }
  return files;
}

/** Top-level manifest keys that legitimately change during a wave (reports, state) — left out of the fingerprint. */
export const unprotectedManifestKeys = new Set(['state', 'merge_state', 'completion_reports', 'stub_reports', 'integration_reports', 'wiring_validation_reports', 'post_merge_checklist']);

/**
 * The manifest fields that decide what gets merged and how it is judged, as hashes per top-level
 * key: everything except the reports and the state (written during a wave by the agents' report
 * tool, run-wave and finalize itself; the state is checked separately). Waves after this one
 * (E36a add-wave), the agents' `task` (E36b redirect) and `context_source` (E44, prepare-agent)
 * are left out too: they do not change this wave's merge.
 */
export function manifestFingerprint(data: unknown, wave: number): Record<string, string> {
  const fields: Record<string, string> = {};
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { '(document)': sha256(canonicalJson(data ?? null)) };
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
    if (unprotectedManifestKeys.has(key)) continue;
    let relevant = value;
    if (key === 'waves' && Array.isArray(value)) {
      relevant = value
        .filter((item) => !(item && typeof item === 'object' && typeof (item as { number?: unknown }).number === 'number' && (item as { number: number }).number > wave))
        .map((item) => {
          if (!item || typeof item !== 'object' || !Array.isArray((item as { agents?: unknown }).agents)) return item;
          const agents = ((item as { agents: unknown[] }).agents).map((agent) => {
            if (!agent || typeof agent !== 'object') return agent;
            const { task: _task, context_source: _source, ...rest } = agent as Record<string, unknown>;
            return rest;
          });
          return { ...(item as Record<string, unknown>), agents };
        });
    } else if (key === 'file_ownership' && Array.isArray(value)) {
      relevant = value.filter((row) => !(row && typeof row === 'object' && typeof (row as { wave?: unknown }).wave === 'number' && (row as { wave: number }).wave > wave));
    }
    fields[key] = sha256(canonicalJson(relevant ?? null));
  }
  return fields;
}

/** Reads a record; undefined when there is none. A record that is not one of ours throws (it is refused as tampered). */
export async function readTamperRecord(recordPath: string): Promise<TamperRecord | undefined> {
  let text: string;
  try {
    text = await readFile(recordPath, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
  let value: Partial<TamperRecord>;
  try {
    value = JSON.parse(text) as Partial<TamperRecord>;
  } catch {
    throw new Error(`${recordPath} is not valid JSON`);
  }
  if (value?.version !== tamperRecordVersion || typeof value.refs !== 'object' || typeof value.files !== 'object' || typeof value.hooks !== 'object' || value.hooks === null) {
    throw new Error(`${recordPath} is not a polywave tamper record (version ${String(value?.version)})`);
  }
  return value as TamperRecord;
}

/** Writes a record atomically (temp file + rename), readable by its owner only. */
export async function writeTamperRecord(recordPath: string, record: TamperRecord): Promise<void> {
  await mkdir(path.dirname(recordPath), { recursive: true, mode: 0o700 });
  await writeTextAtomic(recordPath, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
}

/** Options of {@link recordRepository}. */
export interface RecordRepositoryOptions {
  /** Git of the main checkout, without pinned configuration (it asks git where the hooks are). */
  git: Git;
  slug: string;
  wave: number;
  recordedBy: TamperRecord['recorded_by'];
  now: Date;
  /** Take the hooks snapshot (prepare-wave). Without it finalize runs no repository hook. */
  snapshot: boolean;
  targetBranch?: string;
  baseCommit?: string;
  manifest?: ManifestFingerprint;
  /** HOME for `~/` in include paths. */
  home?: string;
  /** Known already (saves the rev-parse). */
  location?: RepositoryLocation;
  /** Ref prefixes other orchestrated work moves meanwhile (see {@link TamperRecord.concurrent_refs}). */
  concurrentRefs?: readonly string[];
}

/** Records one repository (see the file comment) and writes the record. Returns it with its path. */
export async function recordRepository(options: RecordRepositoryOptions): Promise<{ record: TamperRecord; path: string }> {
  const location = options.location ?? (await locateRepository(options.git));
  const [files, refs, source, directoryEntry] = await Promise.all([
    fingerprintGitFiles(options.git, location.commonDir, options.home),
    readRefs(options.git, options.slug, options.wave, options.concurrentRefs),
    hooksSource(options.git, location, options.home),
    fingerprintPath(location.hooksDirectory),
  ]);
  const inTree = isInside(location.root, location.hooksDirectory) && !isInside(location.commonDir, location.hooksDirectory);
  const entries = inTree ? {} : await fingerprintTree(location.hooksDirectory);
  const hooks: HooksFingerprint = { directory: location.hooksDirectory, in_tree: inTree, source, entries, directory_entry: directoryEntry };
  // Hooks kept in the tracked tree (core.hooksPath `.githooks`, husky — directly or through polywave's wrapper) are
  // content agents write and earlier waves merged: never snapshotted, so finalize's git runs no hook at all there
  // (outside attack X24-01: the snapshot of wave 2 held the hooks wave 1's agent had rewritten).
  const sourceInTree = isInside(location.root, path.resolve(source)) && !isInside(location.commonDir, path.resolve(source));
  if (options.snapshot && !sourceInTree) hooks.snapshot = await writeHooksSnapshot(source, hooksSnapshotPath(location.commonDir, options.slug, options.wave));
  const targetCommit = options.targetBranch ? refs[`refs/heads/${options.targetBranch}`] : undefined;
  const record: TamperRecord = {
    version: tamperRecordVersion,
    slug: options.slug,
    wave: options.wave,
    recorded_by: options.recordedBy,
    recorded_at: formatTimestamp(options.now),
    hooks_trusted: options.snapshot,
    repo_root: location.root,
    common_dir: location.commonDir,
    ...(options.baseCommit ? { base_commit: options.baseCommit } : {}),
    files,
    hooks,
    refs,
    ...(options.concurrentRefs && options.concurrentRefs.length > 0 ? { concurrent_refs: [...options.concurrentRefs] } : {}),
    ...(options.targetBranch && targetCommit ? { target: { branch: options.targetBranch, commit: targetCommit } } : {}),
    ...(options.manifest ? { manifest: options.manifest } : {}),
  };
  const recordPath = tamperRecordPath(location.commonDir, options.slug, options.wave);
  await writeTamperRecord(recordPath, record);
  return { record, path: recordPath };
}

/**
 * The orchestrator's own commit on the merge target (E47's hotfix, made on top of the tip the
 * record holds): the record follows that one commit — and nothing else, so any other change
 * (hooks, config, refs) since the record is still found by the next check. False when the record
 * is missing or its target tip is not the commit's parent (then the change is not vouched for).
 */
export async function vouchForTargetCommit(options: { git: Git; slug: string; wave: number; branch: string; commit: string; parent: string }): Promise<boolean> {
  const location = await locateRepository(options.git);
  const recordPath = tamperRecordPath(location.commonDir, options.slug, options.wave);
  const record = await readTamperRecord(recordPath);
  if (record === undefined || record.target === undefined || record.target.branch !== options.branch || record.target.commit !== options.parent) return false;
  record.refs[`refs/heads/${options.branch}`] = options.commit;
  record.target = { ...record.target, commit: options.commit };
  await writeTamperRecord(recordPath, record);
  return true;
}

/**
 * The orchestrator's own commit on a branch that is not the waves' merge target — a PROGRAM loop's
 * BLOCKED state commit on main while its tier's IMPL waves stay prepared on their IMPL branches
 * (outside attack X60-01: the resumed wave was refused TAMPER_DETECTED for the loop's own commit).
 * Every record of a wave of `slugs` that holds `ref` at `parent` follows it to `commit`, and nothing
 * else: any other change since a record (hooks, config, other refs, `ref` moved elsewhere) is still
 * found by the next check. Returns the records moved (file names).
 */
export async function vouchForRefMove(options: { git: Git; slugs: readonly string[]; ref: string; commit: string; parent: string }): Promise<string[]> {
  if (options.commit === options.parent || options.slugs.length === 0) return [];
  const location = await locateRepository(options.git);
  const directory = tamperDirectory(location.commonDir);
  const names = await readdir(directory).catch(() => [] as string[]);
  const moved: string[] = [];
  for (const slug of options.slugs) {
    const escaped = slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern = new RegExp(`^tamper-${escaped}-wave(\\d+)\\.json$`);
    for (const name of names.filter((candidate) => pattern.test(candidate))) {
      const recordPath = path.join(directory, name);
      const record = await readTamperRecord(recordPath).catch(() => undefined);
      if (record === undefined || record.refs[options.ref] !== options.parent) continue;
      record.refs[options.ref] = options.commit;
      await writeTamperRecord(recordPath, record);
      moved.push(name);
    }
  }
  return moved;
}
