import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Git } from '../git/git-port.js';
import {
  fingerprintGitFiles,
  fingerprintPath,
  fingerprintSnapshot,
  fingerprintTree,
  hooksSnapshotPath,
  manifestFingerprint,
  isConcurrentRef,
  readRefs,
  type ManifestFingerprint,
  type PathFingerprint,
  type TamperRecord,
} from './tamper-record.js';

/** One thing that changed since the record: what, and how (`old → new`). */
export interface TamperFinding {
  what: string;
  change: string;
}

/** How the merge target may have moved since the record. */
export interface TargetRule {
  branch: string;
  /**
   * `merges`: only by `--no-ff` merges of this wave's agents — each commit on the first-parent
   * chain from the recorded tip has two parents, the second one in `agentTips`, and exactly the
   * tree git's merge of the two gives (an interrupted finalize-wave, E9).
   * `descendant`: any history on top of the recorded tip (E11a: the user merged by hand).
   */
  mode: 'merges' | 'descendant';
  agentTips: ReadonlySet<string>;
}

/** Options of {@link checkRepository}. */
export interface CheckRepositoryOptions {
  record: TamperRecord;
  /** Git of the main checkout (pinned configuration is fine: it only reads). */
  git: Git;
  home?: string;
  target?: TargetRule;
  /** The manifest as it is now (primary repository only). */
  manifest?: { data: unknown; state: string; mergeState?: string };
}

/** States a wave passes through before finalize-wave verifies it (written by run-wave, finalize-wave, reconcile-state). */
const waveStates = new Set(['WAVE_PENDING', 'WAVE_EXECUTING', 'WAVE_MERGING', 'BLOCKED']);
/** merge_state values of a wave whose merge is not completed. */
const openMergeStates = new Set(['', 'idle', 'in_progress', 'failed']);
/** The target's history is walked at most this far (an E9 resume has one merge per agent). */
const maximumTargetCommits = 500;

/** `file 0755 1a2b3c4d5e6f`, `symlink → x`, `(absent)`. */
export function describeFingerprint(fingerprint: PathFingerprint | undefined): string {
  if (fingerprint === undefined || fingerprint.kind === 'missing') return '(absent)';
  const mode = fingerprint.mode === undefined ? '' : ` ${fingerprint.mode.toString(8).padStart(4, '0')}`;
  const content = fingerprint.sha256 ? ` ${fingerprint.sha256.slice(0, 12)}` : '';
  if (fingerprint.kind === 'symlink') return `symlink → ${fingerprint.link ?? '?'}${mode}${content}`;
  return `${fingerprint.kind}${mode}${content}`;
}

function sameFingerprint(left: PathFingerprint | undefined, right: PathFingerprint | undefined): boolean {
  const a = left ?? { kind: 'missing' as const };
  const b = right ?? { kind: 'missing' as const };
  return a.kind === b.kind && a.mode === b.mode && a.sha256 === b.sha256 && a.link === b.link;
}

/** Entry-by-entry differences of two fingerprint maps, as findings named `label <key>`. */
export function diffFingerprints(label: string, before: Readonly<Record<string, PathFingerprint>>, after: Readonly<Record<string, PathFingerprint>>): TamperFinding[] {
  const findings: TamperFinding[] = [];
  for (const key of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    if (!sameFingerprint(before[key], after[key])) findings.push({ what: `${label} ${key}`, change: `${describeFingerprint(before[key])} → ${describeFingerprint(after[key])}` });
  }
  return findings;
}

function short(id: string | undefined): string {
  return id === undefined ? '(absent)' : id.slice(0, 12);
}

/** Credentials in URLs (`https://user:token@host`) are not repeated in messages. */
function maskCredentials(value: string): string {
  return value.replace(/(\/\/)[^/@\s]+@/g, '$1***@');
}

/** `git config --file <file> --list --null` → key → values. */
async function configEntries(git: Git, file: string): Promise<Map<string, string[]>> {
  const { stdout } = await git.run(['config', '--file', file, '--no-includes', '--list', '--null'], { allowExitCodes: [1] });
  const entries = new Map<string, string[]>();
  for (const record of stdout.split('\0')) {
    if (record === '') continue;
    const newline = record.indexOf('\n');
    const key = newline < 0 ? record : record.slice(0, newline);
    const value = newline < 0 ? '(true)' : record.slice(newline + 1);
    entries.set(key, [...(entries.get(key) ?? []), value]);
  }
  return entries;
}

/** The keys that differ between a recorded config text and the file now (`core.hooksPath: (unset) → /x`). */
async function configKeyChanges(git: Git, name: string, recordedText: string, currentFile: string): Promise<TamperFinding[]> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'polywave-config-'));
  try {
    const before = path.join(scratch, 'recorded');
    await writeFile(before, recordedText, { mode: 0o600 });
    const [old, now] = await Promise.all([configEntries(git, before), configEntries(git, currentFile)]);
    const findings: TamperFinding[] = [];
    for (const key of [...new Set([...old.keys(), ...now.keys()])].sort()) {
      const previous = old.get(key) ?? [];
      const current = now.get(key) ?? [];
      if (previous.join('\0') === current.join('\0')) continue;
      const show = (values: string[]) => (values.length === 0 ? '(unset)' : values.map((value) => JSON.stringify(maskCredentials(value))).join(', '));
      findings.push({ what: `${name} ${key}`, change: `${show(previous)} → ${show(current)}` });
    }
    return findings;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Config keys that neither run code nor redirect git (identity, colours, advice, UI): a change
 * there — the user fixing their name between two runs — is not tampering.
 */
export function isHarmlessConfigKey(key: string): boolean {
  return /^(user\.(name|email)|author\.(name|email)|committer\.(name|email)|color\..*|advice\..*|column\..*|i18n\..*|gui\..*|help\.autocorrect)$/i.test(key);
}

/** git's own files (config and friends): by key where the config text was kept, else by file. */
async function judgeGitFiles(record: TamperRecord, now: TamperRecord['files'], git: Git): Promise<TamperFinding[]> {
  const findings: TamperFinding[] = [];
  for (const key of [...new Set([...Object.keys(record.files), ...Object.keys(now)])].sort()) {
    const before = record.files[key];
    const after = now[key];
    if (sameFingerprint(before, after)) continue;
    const label = key.startsWith('include:') ? `config include ${key.slice('include:'.length)}` : `.git/${key}`;
    if (before?.text !== undefined && after?.kind === 'file' && before.kind === 'file') {
      const keys = await configKeyChanges(git, label, before.text, path.join(record.common_dir, key));
      findings.push(...keys.filter((finding) => !isHarmlessConfigKey(finding.what.slice(label.length + 1))));
      // Same keys and values (only layout or harmless keys changed) and same mode: nothing to report.
      if (before.mode === after.mode) continue;
    }
    findings.push({ what: label, change: `${describeFingerprint(before)} → ${describeFingerprint(after)}` });
  }
  return findings;
}

/**
 * The hooks: the directory git runs them from (every entry and its own permissions — unless it is
 * inside the working tree, where the merges change it and the dirty check covers the rest) and
 * the snapshot finalize runs them from.
 */
function judgeHooks(record: TamperRecord, observation: RepositoryObservation): TamperFinding[] {
  const hooks = record.hooks;
  const findings: TamperFinding[] = [];
  if (observation.hooksDirectory !== undefined && !sameFingerprint(hooks.directory_entry, observation.hooksDirectory)) {
    findings.push({ what: `hooks directory ${hooks.directory}`, change: `${describeFingerprint(hooks.directory_entry)} → ${describeFingerprint(observation.hooksDirectory)}` });
  }
  if (observation.hooks !== undefined) findings.push(...diffFingerprints('hook', hooks.entries, observation.hooks));
  if (hooks.snapshot && observation.snapshot) findings.push(...diffFingerprints('recorded hook copy', hooks.snapshot, observation.snapshot));
  return findings;
}

/** Every ref but the merge target: exactly as recorded. */
function checkRefs(record: TamperRecord, now: Readonly<Record<string, string>>, targetRef: string | undefined): TamperFinding[] {
  const findings: TamperFinding[] = [];
  const concurrent = record.concurrent_refs ?? [];
  for (const name of [...new Set([...Object.keys(record.refs), ...Object.keys(now)])].sort()) {
    if (name === targetRef || isConcurrentRef(name, concurrent)) continue;
    const before = record.refs[name];
    const after = now[name];
    if (before === after) continue;
    findings.push({ what: `ref ${name}`, change: `${before === undefined ? '(absent)' : short(before)} → ${after === undefined ? '(deleted)' : short(after)}` });
  }
  return findings;
}

/** Commits listed per moved ref (the rest counted). */
const movedCommitsShown = 5;

/**
 * A branch that moved forward since the record: its finding lists the commits it gained (short id and subject;
 * outside round X61-01: "main: 3b9a0a0 → 53e11c7" named only polywave's own BLOCKED commit on top, not the foreign
 * commit beneath it, and steered a human towards --accept-changes). A ref that moved elsewhere keeps its line.
 */
async function withMovedCommits(git: Git, findings: TamperFinding[], before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>): Promise<TamperFinding[]> {
  return Promise.all(
    findings.map(async (finding) => {
      const name = finding.what.startsWith('ref refs/heads/') ? finding.what.slice('ref '.length) : undefined;
      const from = name ? before[name] : undefined;
      const to = name ? after[name] : undefined;
      if (!from || !to) return finding;
      const listed = await git
        .run(['log', '--no-color', `--max-count=${movedCommitsShown + 1}`, '--format=%h %s', `${from}..${to}`, '--'])
        .then((out) => out.stdout.split('\n').filter(Boolean), () => undefined);
      const ancestor = listed !== undefined && listed.length > 0 && (await git.run(['merge-base', '--is-ancestor', from, to], { allowExitCodes: [1] }).then((out) => out.exitCode === 0, () => false));
      if (!ancestor || listed === undefined) return finding;
      const shown = listed.slice(0, movedCommitsShown).map((line) => (line.length > 72 ? `${line.slice(0, 71)}…` : line));
      const more = listed.length > movedCommitsShown ? '; and more' : '';
      return { ...finding, change: `${finding.change} (${listed.length > movedCommitsShown ? `${movedCommitsShown}+` : listed.length} new commit(s), newest first: ${shown.join('; ')}${more})` };
    }),
  );
}

/** One commit of the target's first-parent history since the record. */
interface TargetCommit {
  commit: string;
  tree: string;
  parents: string[];
  subject: string;
}

/** What {@link checkTarget} found: refusals, and commits it accepted on top of the recorded tip (descendant rule). */
export interface TargetCheck {
  findings: TamperFinding[];
  accepted: string[];
}

/** The merge target: at its recorded tip, or moved only as `rule` allows (see {@link TargetRule}). */
export async function checkTarget(git: Git, rule: TargetRule, recorded: string | undefined, current: string | undefined): Promise<TargetCheck> {
  const what = `merge target refs/heads/${rule.branch}`;
  if (recorded === current) return { findings: [], accepted: [] };
  if (recorded === undefined || current === undefined) return { findings: [{ what, change: `${recorded === undefined ? '(absent)' : short(recorded)} → ${current === undefined ? '(deleted)' : short(current)}` }], accepted: [] };
  const { stdout } = await git.run(['log', '--first-parent', `--max-count=${maximumTargetCommits + 1}`, '--format=%H%x00%T%x00%P%x00%s', `${recorded}..${current}`, '--']);
  const commits: TargetCommit[] = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [commit = '', tree = '', parents = '', subject = ''] = line.split('\0');
      return { commit, tree, parents: parents.split(' ').filter(Boolean), subject };
    });
  const describe = (items: readonly TargetCommit[]) => items.map((item) => `${short(item.commit)} "${item.subject}"`);
  if (rule.mode === 'descendant') {
    if (await git.isAncestor(recorded, current)) return { findings: [], accepted: describe(commits.slice(0, 20)) };
    return { findings: [{ what, change: `${short(recorded)} → ${short(current)}, which does not contain the recorded tip (history rewritten)` }], accepted: [] };
  }
  const oldest = commits.at(-1);
  if (commits.length > maximumTargetCommits || oldest === undefined || oldest.parents[0] !== recorded) {
    return { findings: [{ what, change: `${short(recorded)} → ${short(current)}, not by this wave's merges (the recorded tip is not on its first-parent history)` }], accepted: [] };
  }
  const foreign = commits.filter((item) => item.parents.length !== 2 || !rule.agentTips.has(item.parents[1]!));
  if (foreign.length > 0) {
    return { findings: [{ what, change: `${short(recorded)} → ${short(current)}; not merges of this wave's agent tips: ${describe(foreign.slice(0, 5)).join(', ')}${foreign.length > 5 ? ` and ${foreign.length - 5} more` : ''}` }], accepted: [] };
  }
  // A merge commit is exactly git's merge of its parents: nothing was added to it.
  const forged: TargetCommit[] = [];
  for (const item of commits) {
    const merge = await git.mergeTree(undefined, item.parents[0]!, item.parents[1]!);
    if (!merge.clean || merge.tree !== item.tree) forged.push(item);
  }
  if (forged.length > 0) {
    return { findings: [{ what, change: `${short(recorded)} → ${short(current)}; merge commit(s) whose content is not the merge of their parents: ${describe(forged).join(', ')}` }], accepted: [] };
  }
  return { findings: [], accepted: [] };
}

/** The manifest's merge-relevant fields, and a state the orchestrator wrote or a wave passes through. */
export function checkManifest(recorded: ManifestFingerprint, now: { data: unknown; state: string; mergeState?: string }, wave: number): TamperFinding[] {
  const findings: TamperFinding[] = [];
  const fields = manifestFingerprint(now.data, wave);
  for (const key of [...new Set([...Object.keys(recorded.fields), ...Object.keys(fields)])].sort()) {
    const before = recorded.fields[key];
    const after = fields[key];
    if (before === after) continue;
    findings.push({ what: `manifest field ${key}`, change: before === undefined ? 'added' : after === undefined ? 'removed' : 'changed' });
  }
  const state = now.state.trim();
  if (state !== recorded.state && !waveStates.has(state)) {
    findings.push({ what: 'manifest state', change: `${recorded.state || '(none)'} → ${state || '(none)'} (the orchestrator did not write it, and a wave is never in it before finalize-wave verifies it)` });
  }
  const mergeState = (now.mergeState ?? '').trim();
  if (mergeState !== (recorded.merge_state ?? '') && !openMergeStates.has(mergeState)) {
    findings.push({ what: 'manifest merge_state', change: `${recorded.merge_state || '(none)'} → ${mergeState} (the orchestrator did not write it)` });
  }
  return findings;
}

/** What the repository looks like now, in the record's terms (file system reads, and one `for-each-ref` unless `refs: false`). */
export interface RepositoryObservation {
  files: TamperRecord['files'];
  /** Entries of the recorded hooks directory (undefined when it is inside the working tree). */
  hooks?: Record<string, PathFingerprint>;
  hooksDirectory?: PathFingerprint;
  snapshot?: Record<string, PathFingerprint>;
  /** Every ref but this wave's agent branches; undefined when not read. */
  refs?: Record<string, string>;
}

/** Reads the repository as the record describes it (see {@link RepositoryObservation}). */
export async function observeRepository(record: TamperRecord, git: Git, options: { home?: string; refs?: boolean } = {}): Promise<RepositoryObservation> {
  const hooks = record.hooks;
  const [files, entries, directory, snapshot, refs] = await Promise.all([
    fingerprintGitFiles(git, record.common_dir, options.home),
    hooks.in_tree ? Promise.resolve(undefined) : fingerprintTree(hooks.directory),
    hooks.in_tree ? Promise.resolve(undefined) : fingerprintPath(hooks.directory),
    hooks.snapshot ? fingerprintSnapshot(hooksSnapshotPath(record.common_dir, record.slug, record.wave)) : Promise.resolve(undefined),
    options.refs === false ? Promise.resolve(undefined) : readRefs(git, record.slug, record.wave, record.concurrent_refs),
  ]);
  return { files, ...(entries ? { hooks: entries } : {}), ...(directory ? { hooksDirectory: directory } : {}), ...(snapshot ? { snapshot } : {}), ...(refs ? { refs } : {}) };
}

/** Options of {@link judgeRepository}. */
export interface JudgeRepositoryOptions extends Omit<CheckRepositoryOptions, 'home'> {
  observation: RepositoryObservation;
}

/**
 * Compares one repository with its record: git's files, the hooks and their snapshot, every ref
 * (the target by {@link TargetRule}; refs only when observed), and — for the repository holding
 * it — the manifest. Returns every difference (empty: nothing changed). Reads only.
 */
export async function judgeRepository(options: JudgeRepositoryOptions): Promise<{ findings: TamperFinding[]; acceptedTargetCommits: string[] }> {
  const { record, git, observation } = options;
  const targetRef = options.target ? `refs/heads/${options.target.branch}` : undefined;
  const findings = [...(await judgeGitFiles(record, observation.files, git)), ...judgeHooks(record, observation)];
  let accepted: string[] = [];
  if (observation.refs !== undefined) {
    findings.push(...(await withMovedCommits(git, checkRefs(record, observation.refs, targetRef), record.refs, observation.refs)));
    if (options.target && targetRef) {
      const target = await checkTarget(git, options.target, record.refs[targetRef], observation.refs[targetRef]);
      findings.push(...target.findings);
      accepted = target.accepted;
    }
  }
  if (options.manifest && record.manifest) findings.push(...checkManifest(record.manifest, options.manifest, record.wave));
  return { findings, acceptedTargetCommits: accepted };
}

/** {@link observeRepository} then {@link judgeRepository}. */
export async function checkRepository(options: CheckRepositoryOptions): Promise<{ findings: TamperFinding[]; acceptedTargetCommits: string[] }> {
  const observation = await observeRepository(options.record, options.git, options.home ? { home: options.home } : {});
  return judgeRepository({ ...options, observation });
}

/** Porcelain status code → a word. */
function statusWord(code: string): string {
  if (code === '??') return 'untracked';
  if (code.includes('D')) return 'deleted';
  if (code.includes('A')) return 'added';
  if (code.includes('R')) return 'renamed';
  if (code.includes('U')) return 'unmerged';
  return 'modified';
}

/** Paths of the worktrees inside the main checkout (never the user's files). */
const worktreePrefix = '.claude/worktrees/';

/**
 * The orchestrator's own files in a main checkout: the IMPL manifest (and its writer's lock and
 * temp files next to it) and `.polywave-state/`. Everything else is somebody else's change.
 */
export function isOrchestratorFile(file: string, implRelative: string | undefined): boolean {
  if (file === '.polywave-state' || file.startsWith('.polywave-state/')) return true;
  if (implRelative === undefined) return false;
  if (file === implRelative || file.startsWith(`${implRelative}.lock`)) return true;
  const directory = path.posix.dirname(implRelative);
  const base = path.posix.basename(implRelative);
  return path.posix.dirname(file) === directory && path.posix.basename(file).startsWith(`.${base}.`) && file.endsWith('.tmp');
}

/**
 * Uncommitted changes in a main checkout that are not the orchestrator's own (modified, deleted,
 * untracked and not ignored), as `path (what)`, sorted. `otherManifests`: manifests the
 * orchestrator writes there at the same time (a PROGRAM tier's), also its own.
 */
export async function foreignChanges(git: Git, root: string, implPath: string | undefined, otherManifests: readonly string[] = []): Promise<string[]> {
  const inside = (manifest: string): string | undefined => {
    const relative = path.relative(root, manifest).split(path.sep).join('/');
    return relative.startsWith('..') || path.isAbsolute(relative) ? undefined : relative;
  };
  const implRelative = implPath === undefined ? undefined : inside(implPath);
  const others = otherManifests.flatMap((manifest) => inside(manifest) ?? []);
  const changes = new Set<string>();
  for (const entry of await git.status()) {
    for (const file of entry.from !== undefined ? [entry.path, entry.from] : [entry.path]) {
      if (file.startsWith(worktreePrefix) || `${file}/` === worktreePrefix || file === '.claude/') continue;
      if (isOrchestratorFile(file, implRelative) || others.some((other) => isOrchestratorFile(file, other))) continue;
      changes.add(`${file} (${statusWord(entry.code)})`);
    }
  }
  return [...changes].sort();
}

/** Findings as one line: `what: change; …` (the first `limit`, then a count). */
export function describeFindings(findings: readonly TamperFinding[], limit = 20): string {
  const shown = findings.slice(0, limit).map((finding) => `${finding.what}: ${finding.change}`);
  return `${shown.join('; ')}${findings.length > limit ? `; and ${findings.length - limit} more` : ''}`;
}
