import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseImpl } from '../../protocol/parse-impl.js';
import { adoptMergeLog, readMergeLog } from '../merge.js';
import type { StepDefinition, StepOutcome } from '../step.js';
import { restoreTornMerge } from '../torn-merge.js';
import { describeFindings, foreignChanges, judgeRepository, observeRepository, type RepositoryObservation, type TamperFinding, type TargetRule } from '../tamper-check.js';
import {
  hooksSnapshotPath,
  manifestFingerprint,
  pinnedGitConfig,
  pinsForDirectory,
  readTamperRecord,
  recordRepository,
  tamperDetectedCode,
  tamperRecordPath,
  writeTamperRecord,
  type TamperRecord,
} from '../tamper-record.js';
import { errorText, listForDetail, type FinalizeContext, type FinalizeRepo } from './context.js';

/** A record finalize-wave holds for one repository. */
interface HeldRecord {
  path: string;
  record: TamperRecord;
}

/** What one finalize-wave run knows about tampering (see the check-tamper step). */
export interface FinalizeTamperState {
  /** Pinned git configuration per main-checkout root (its worktrees included). */
  pins: Map<string, Readonly<Record<string, string>>>;
  /** Configuration for a directory under no known root, and for every command before the check: no hooks at all. */
  fallback: Readonly<Record<string, string>>;
  /** Common git directory per root. */
  commonDirs: Map<string, string>;
  records: Map<string, HeldRecord>;
  /** The check passed once in this run: a record that disappears after that is itself tampering. */
  verified: boolean;
  /** SHA-256 of the manifest text the check judged (the pre-merge re-check re-parses only when it differs). */
  manifestSha?: string;
  /** Record rewrites, one after the other (the state write and the merges overlap). */
  saving: Promise<void>;
  /** Probes started early (load-manifest starts the primary repository's while it asks git about the wave). */
  probes: Map<string, Promise<RepositoryProbe>>;
  /** The pipeline checks the repository (finalize-wave, merge-agents): load-manifest starts the probe. */
  prefetch: boolean;
}

/** One repository as the check sees it: its record and what is there now. */
export interface RepositoryProbe {
  commonDir: string;
  recordPath: string;
  record?: TamperRecord;
  /** Why the record could not be read. */
  unreadable?: string;
  observation?: RepositoryObservation;
  /** The main checkout's changes that are not the orchestrator's (undefined: not read). */
  foreign?: string[];
}

/** A fresh state: until the check passes, every git command runs with no hooks. */
export function createTamperState(): FinalizeTamperState {
  return { pins: new Map(), fallback: pinnedGitConfig(undefined), commonDirs: new Map(), records: new Map(), verified: false, saving: Promise.resolve(), probes: new Map(), prefetch: false };
}

/** The pinned configuration for git commands running in `directory` (longest known root that contains it). */
export function pinsFor(state: FinalizeTamperState, directory: string): Readonly<Record<string, string>> {
  return pinsForDirectory(state.pins, directory) ?? state.fallback;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function repoName(context: FinalizeContext, repo: FinalizeRepo): string {
  return context.repos.length > 1 ? `${path.basename(repo.root)}: ` : '';
}

async function commonDirOf(context: FinalizeContext, repo: FinalizeRepo): Promise<string> {
  const known = context.tamper.commonDirs.get(repo.root);
  if (known !== undefined) return known;
  const commonDir = path.resolve(repo.root, await repo.git.commonDir());
  context.tamper.commonDirs.set(repo.root, commonDir);
  return commonDir;
}

function homeOf(context: FinalizeContext): string | undefined {
  return (context.options.env ?? process.env).HOME;
}

/**
 * Reads one repository for the check: its record, then what the record describes (file system,
 * plus — with `git` — its refs and the main checkout's status). Reads only.
 */
async function probeRepository(context: FinalizeContext, repo: FinalizeRepo, options: { git: boolean }): Promise<RepositoryProbe> {
  const foreign = options.git ? foreignChanges(repo.git, repo.root, context.implPath, context.options.orchestratorFiles) : Promise.resolve(undefined);
  foreign.catch(() => undefined);
  const commonDir = await commonDirOf(context, repo);
  const recordPath = tamperRecordPath(commonDir, context.slug, context.wave);
  let record: TamperRecord | undefined;
  try {
    record = await readTamperRecord(recordPath);
  } catch (error) {
    return { commonDir, recordPath, unreadable: errorText(error), foreign: await foreign };
  }
  const home = homeOf(context);
  const observation = record ? await observeRepository(record, repo.git, { ...(home ? { home } : {}), refs: options.git }) : undefined;
  return { commonDir, recordPath, ...(record ? { record } : {}), ...(observation ? { observation } : {}), ...((await foreign) ? { foreign: (await foreign)! } : {}) };
}

/** Starts the check's reads of `repo` ahead of the check (load-manifest calls it while the manifest parses). */
export function startTamperProbe(context: FinalizeContext, repo: FinalizeRepo): void {
  if (!context.tamper.prefetch || context.tamper.probes.has(repo.root)) return;
  const probe = probeRepository(context, repo, { git: true });
  probe.catch(() => undefined);
  context.tamper.probes.set(repo.root, probe);
}

/** Agent tips a resumed merge may have merged already: the branches' tips, and the merge log's for branches already gone. */
async function mergeableTips(context: FinalizeContext, repo: FinalizeRepo): Promise<Set<string>> {
  const agents = context.agents.filter((agent) => agent.repo === repo);
  const tips = new Set(agents.flatMap((agent) => (agent.tip ? [agent.tip] : [])));
  if (agents.some((agent) => agent.tip === undefined)) {
    const log = await readMergeLog(await adoptMergeLog(repo.root, context.slug, context.wave)).catch(() => undefined);
    for (const entry of log?.merges ?? []) if (agents.some((agent) => agent.id === entry.agent && agent.tip === undefined)) tips.add(entry.tip);
  }
  return tips;
}

/** The checkout the wave's merges run in is `directory` (the main checkout unless the target lives in another worktree). */
function isTargetCheckout(repo: FinalizeRepo, directory: string): boolean {
  return repo.scratchTarget === undefined && (repo.targetDir === '' || path.resolve(repo.targetDir) === path.resolve(directory));
}

/**
 * A wave merge SIGKILLed before git wrote MERGE_HEAD leaves an agent's files uncommitted in the
 * checkout it merged into, with no merge to abort. They are put back only when no merge is in
 * progress there and every changed file holds exactly what one of this wave's agent tips has
 * committed for it (nothing can be lost); anything else stays a finding for a human.
 */
async function restoreTornWaveMerge(context: FinalizeContext, repo: FinalizeRepo, git: FinalizeRepo['git'], directory: string): Promise<string[]> {
  const mergeHead = await git.tryRevParse('MERGE_HEAD');
  if (mergeHead !== undefined) {
    // P13-23: killed after git wrote MERGE_HEAD, before the merge commit — the merge of one of this wave's own agent
    // tips (ours to undo: the merge step makes it again). `merge --abort` puts the checkout back at its HEAD; the
    // checkout was clean when the merge began (this check refuses a dirty one), so only the merge's own changes go.
    // A merge of anything else stays a finding for a human.
    if (!(await mergeableTips(context, repo)).has(mergeHead)) return [];
    // Only when everything staged is the merge's: each path as the agent tip has it (or a conflict entry of the merge)
    // — `merge --abort` resets the index, so a staged change of anyone else's would go with it.
    const staged = (await git.run(['diff', '--cached', '--name-only', '-z', '--no-renames'])).stdout.split('\0').filter((file) => file !== '');
    if (staged.length === 0) return [];
    const indexed = new Map<string, string>();
    for (const line of (await git.run(['ls-files', '--stage', '-z', '--', ...staged.map((file) => `:(literal)${file}`)])).stdout.split('\0')) {
      const match = /^\d+ ([0-9a-f]+) (\d)\t(.+)$/s.exec(line);
      if (match) indexed.set(match[3]!, match[2] === '0' ? match[1]! : 'conflict');
    }
    const inTip = new Map<string, string>();
    for (const line of (await git.run(['ls-tree', '-r', '-z', mergeHead, '--', ...staged.map((file) => `:(literal)${file}`)])).stdout.split('\0')) {
      const match = /^\d+ blob ([0-9a-f]+)\t(.+)$/s.exec(line);
      if (match) inTip.set(match[2]!, match[1]!);
    }
    if (!staged.every((file) => indexed.get(file) === 'conflict' || indexed.get(file) === inTip.get(file))) return [];
    await git.mergeAbort();
    return staged;
  }
  return restoreTornMerge({ git, root: directory }, await mergeableTips(context, repo));
}

/** The manifest as the check judges it now: the text load-manifest read, or (re-check) the file again. */
async function currentManifest(context: FinalizeContext, phase: 'start' | 'pre-merge'): Promise<{ sha: string; data: unknown; state: string; mergeState?: string } | undefined> {
  if (phase === 'start' || context.tamper.manifestSha === undefined) {
    const text = context.manifestText;
    if (text === undefined || !context.parsed) return undefined;
    const manifest = context.parsed.manifest;
    return { sha: sha256(text), data: context.parsed.data, state: context.initialState, ...(manifest?.merge_state ? { mergeState: manifest.merge_state } : {}) };
  }
  const text = await readFile(context.implPath, 'utf8');
  const sha = sha256(text);
  if (sha === context.tamper.manifestSha) return { sha, data: undefined, state: '' };
  const parsed = parseImpl(text);
  return { sha, data: parsed.data, state: (parsed.manifest?.state ?? '').trim(), ...(parsed.manifest?.merge_state ? { mergeState: parsed.manifest.merge_state } : {}) };
}

/**
 * Issue 11 item 3: before anything is merged, the repository must be as prepare-wave recorded
 * it (see tamper-record.ts) — git's config files, hooks (and their snapshot), every ref but the
 * agents' branches, the merge target (moved only by this wave's merges), the manifest's
 * merge-relevant fields and state — and its main checkout must hold no change that is not the
 * orchestrator's own (the IMPL manifest, `.polywave-state/`). Any difference refuses with
 * TAMPER_DETECTED and changes nothing (no state written, pending report fields dropped).
 *
 * Without a record (a prepare-wave of an older version, or a manual prepare) one is taken now,
 * with a warning — and since nothing vouches for the hooks then, no repository hook runs in this
 * finalize. After the check, every git command of the run takes its hooks from the recorded
 * snapshot (`-c core.hooksPath`), never from the live hooks directory or an agent's worktree.
 *
 * `pre-merge` (from the merge step, right before WAVE_MERGING): the check again — git's files,
 * the hooks, their snapshot and the manifest always; refs and the main checkout's status when
 * pre-merge gates ran the agents' code since (for merge-agents alone: everything, it is the first).
 */
export async function verifyRepositories(context: FinalizeContext, phase: 'start' | 'pre-merge'): Promise<StepOutcome> {
  const state = context.tamper;
  const findings: TamperFinding[] = [];
  const notes: string[] = [];
  const home = homeOf(context);
  const manifest = await currentManifest(context, phase);
  // Right before the merge, git (refs, status) is asked again only when the agents' code ran
  // since (pre-merge gates); git's files, the hooks, their snapshot and the manifest always are.
  const askGit = phase === 'start' || !state.verified || Object.values(context.result.gate_results).some((results) => results.length > 0);

  const found = await Promise.all(
    context.repos.map(async (repo) => {
      const early = state.verified ? undefined : state.probes.get(repo.root);
      state.probes.delete(repo.root);
      return { repo, probe: await (early ?? probeRepository(context, repo, { git: askGit })) };
    }),
  );
  const recordPaths = [...new Set(found.map((item) => item.probe.recordPath))].sort();
  const judged = manifest?.data !== undefined ? manifest : context.parsed ? { data: context.parsed.data, state: context.initialState, mergeState: context.parsed.manifest?.merge_state } : undefined;
  const manifestFields = judged ? { path: context.implPath, fields: manifestFingerprint(judged.data, context.wave), state: judged.state, ...(judged.mergeState ? { merge_state: judged.mergeState } : {}) } : undefined;
  // The manifest is judged once, against the first record holding it (prepare's primary
  // repository may differ from finalize's on a cross-repo wave, E51).
  const manifestRoot = found.find((item) => item.probe.record?.manifest !== undefined)?.repo.root;

  await Promise.all(
    found.map(async ({ repo, probe }) => {
      const name = repoName(context, repo);
      const { record, recordPath } = probe;
      if (probe.unreadable !== undefined) {
        findings.push({ what: `${name}record ${recordPath}`, change: `unreadable (${probe.unreadable})` });
        return;
      }
      if (record === undefined) {
        if (state.verified || state.records.has(repo.root)) {
          findings.push({ what: `${name}record ${recordPath}`, change: 'removed while finalize-wave ran' });
          return;
        }
        if (context.dryRun) {
          notes.push(`${name}no record from prepare-wave (dry run: none written); no repository hook would run`);
          return;
        }
        const written = await recordRepository({
          git: context.rawGitAt(repo.root),
          slug: context.slug,
          wave: context.wave,
          recordedBy: 'finalize-wave',
          now: context.now(),
          snapshot: false,
          ...(repo.targetBranch ? { targetBranch: repo.targetBranch } : {}),
          ...(repo.base ? { baseCommit: repo.base } : {}),
          ...(manifestFields ? { manifest: manifestFields } : {}),
          ...(home ? { home } : {}),
          ...(context.options.concurrentRefs ? { concurrentRefs: context.options.concurrentRefs } : {}),
        });
        state.records.set(repo.root, written);
        notes.push(`${name}no record from prepare-wave (an older or manual prepare): recorded now at ${written.path}; no repository hook runs in this finalize`);
        return;
      }
      const target: TargetRule | undefined = repo.targetBranch
        ? { branch: repo.targetBranch, mode: context.mode === 'skip-merge' || record.target?.merged ? 'descendant' : 'merges', agentTips: await mergeableTips(context, repo) }
        : undefined;
      const checked = await judgeRepository({
        record,
        git: repo.git,
        observation: probe.observation ?? (await observeRepository(record, repo.git, { ...(home ? { home } : {}), refs: askGit })),
        ...(target ? { target } : {}),
        ...(repo.root === manifestRoot && manifest?.data !== undefined ? { manifest: { data: manifest.data, state: manifest.state, ...(manifest.mergeState ? { mergeState: manifest.mergeState } : {}) } } : {}),
      });
      findings.push(...checked.findings.map((finding) => ({ what: `${name}${finding.what}`, change: finding.change })));
      if (checked.acceptedTargetCommits.length > 0) {
        notes.push(`${name}${repo.targetBranch} gained commits after the wave's merges (accepted, E47 fixes): ${listForDetail(checked.acceptedTargetCommits, 5)}`);
      }
      state.records.set(repo.root, { path: recordPath, record });
    }),
  );

  // The checkouts the merges and the build use hold nothing but the orchestrator's own changes.
  const foreign: TamperFinding[] = [];
  for (const { repo, probe } of found) {
    if (probe.foreign && probe.foreign.length > 0 && askGit && !context.dryRun && isTargetCheckout(repo, repo.root)) {
      const restored = await restoreTornWaveMerge(context, repo, repo.git, repo.root);
      if (restored.length > 0) {
        notes.push(`${repoName(context, repo)}a killed merge of an agent branch left ${listForDetail(restored, 5)} in ${repo.root} — each held an agent tip's committed content; put back as HEAD has it`);
        probe.foreign = await foreignChanges(repo.git, repo.root, context.implPath, context.options.orchestratorFiles);
      }
    }
    if (probe.foreign && probe.foreign.length > 0) foreign.push({ what: `checkout ${repo.root}`, change: `uncommitted changes that are not the orchestrator's: ${listForDetail(probe.foreign, 15)}` });
    if (askGit && repo.targetDir !== '' && path.resolve(repo.targetDir) !== path.resolve(repo.root) && repo.scratchTarget === undefined) {
      let changes = await foreignChanges(repo.targetGit, repo.targetDir, context.implPath, context.options.orchestratorFiles);
      if (changes.length > 0 && !context.dryRun) {
        const restored = await restoreTornWaveMerge(context, repo, repo.targetGit, repo.targetDir);
        if (restored.length > 0) {
          notes.push(`${repoName(context, repo)}a killed merge of an agent branch left ${listForDetail(restored, 5)} in ${repo.targetDir} — each held an agent tip's committed content; put back as HEAD has it`);
          changes = await foreignChanges(repo.targetGit, repo.targetDir, context.implPath, context.options.orchestratorFiles);
        }
      }
      if (changes.length > 0) foreign.push({ what: `checkout ${repo.targetDir}`, change: `uncommitted changes that are not the orchestrator's: ${listForDetail(changes, 15)}` });
    }
  }

  const accepting = context.options.acceptChanges === true && findings.length > 0 && foreign.length === 0 && !context.dryRun;
  if (findings.length > 0 && !accepting) findings.push(...foreign);
  else if (foreign.length > 0) findings.splice(0, findings.length, ...foreign);
  if (findings.length > 0 && !accepting) {
    // Nothing may change: report fields gathered so far are not written either.
    context.pendingEdits = [];
    const records = recordPaths;
    const remedy =
      foreign.length > 0 && foreign.length === findings.length
        ? 'Commit or remove those changes (they are not part of the wave), then re-run.'
        : `Undo the changes (or find out who made them); if they are yours and intended, re-run with --accept-changes (finalize-wave then records the repository as it is now, its hooks included).`;
    return {
      status: 'failed',
      detail: `${tamperDetectedCode}: ${findings.length} change(s) since prepare-wave recorded the repository${phase === 'pre-merge' ? ' (found right before merging)' : ''} — ${describeFindings(findings)}. Nothing was merged or written. ${remedy}`,
      data: { code: tamperDetectedCode, phase, findings, records },
    };
  }
  if (accepting) {
    // The caller vouches for the repository as it is now: record it again, hooks included.
    for (const repo of context.repos) {
      const written = await recordRepository({
        git: context.rawGitAt(repo.root),
        slug: context.slug,
        wave: context.wave,
        recordedBy: 'finalize-wave',
        now: context.now(),
        snapshot: true,
        ...(repo.targetBranch ? { targetBranch: repo.targetBranch } : {}),
        ...(repo.base ? { baseCommit: repo.base } : {}),
        ...(manifestFields ? { manifest: manifestFields } : {}),
        ...(home ? { home } : {}),
        ...((context.options.concurrentRefs ?? state.records.get(repo.root)?.record.concurrent_refs) ? { concurrentRefs: context.options.concurrentRefs ?? state.records.get(repo.root)!.record.concurrent_refs! } : {}),
      });
      const previous = state.records.get(repo.root)?.record.target;
      if (previous?.merged && written.record.target) {
        written.record.target.merged = true;
        await writeTamperRecord(written.path, written.record);
      }
      state.records.set(repo.root, written);
    }
    notes.push(`accepted as the caller's own (--accept-changes), repository recorded again: ${describeFindings(findings)}`);
  }

  for (const repo of context.repos) {
    const held = state.records.get(repo.root);
    const trusted = held !== undefined && held.record.hooks_trusted && held.record.hooks.snapshot !== undefined;
    const commonDir = state.commonDirs.get(repo.root)!;
    state.pins.set(repo.root, pinnedGitConfig(trusted ? hooksSnapshotPath(commonDir, context.slug, context.wave) : undefined));
  }
  if (manifest !== undefined && manifest.data !== undefined) state.manifestSha = manifest.sha;
  state.verified = true;
  const summary = 'repository as recorded: config, hooks, refs, manifest; main checkout clean; no repository hook runs in its git commands';
  if (notes.length > 0) return { status: 'warning', detail: `${notes.join('; ')}${state.records.size > 0 ? `; otherwise ${summary}` : ''}`, data: { phase, notes, records: recordPaths } };
  return { status: 'success', detail: summary, data: { phase, records: recordPaths } };
}

/** The check before any merge (see {@link verifyRepositories}); right after load-manifest. */
export const tamperCheckStep: StepDefinition<FinalizeContext> = {
  name: 'check-tamper',
  run(context) {
    return verifyRepositories(context, 'start');
  },
};

/** Rewrites the held records (after finalize itself moved the target or wrote the state). */
function saveRecords(context: FinalizeContext, change: (record: TamperRecord, repo: FinalizeRepo) => boolean): Promise<void> {
  if (context.dryRun) return Promise.resolve();
  const changed: HeldRecord[] = [];
  for (const repo of context.repos) {
    const held = context.tamper.records.get(repo.root);
    if (held !== undefined && change(held.record, repo)) changed.push(held);
  }
  if (changed.length === 0) return Promise.resolve();
  // Serialized: each write is of the record as it is when its turn comes, so none is lost.
  const next = context.tamper.saving.then(async () => {
    for (const held of changed) await writeTamperRecord(held.path, held.record);
  });
  context.tamper.saving = next.catch(() => undefined);
  return next;
}

/** The orchestrator moved `repo`'s target (its merges, or the verified tip): the record follows. */
export function noteTargetMoved(context: FinalizeContext, repo: FinalizeRepo, commit: string, options: { merged?: boolean } = {}): Promise<void> {
  return saveRecords(context, (record, candidate) => {
    if (candidate !== repo || !repo.targetBranch || commit === '') return false;
    record.refs[`refs/heads/${repo.targetBranch}`] = commit;
    record.target = { branch: repo.targetBranch, commit, ...(options.merged || record.target?.merged ? { merged: true } : {}) };
    return true;
  });
}

/** The orchestrator wrote the manifest's state: the record follows. */
export function noteManifestState(context: FinalizeContext, state: string, mergeState: string | undefined): Promise<void> {
  return saveRecords(context, (record) => {
    if (record.manifest === undefined) return false;
    record.manifest.state = state;
    if (mergeState !== undefined) record.manifest.merge_state = mergeState;
    return true;
  });
}
