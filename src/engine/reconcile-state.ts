import { stat } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { hasCommit } from '../protocol/completion-report.js';
import { branchName, implSlugFromPath, legacyBranchName } from '../protocol/names.js';
import type { ImplManifest, Wave } from '../protocol/schema/impl-schema.js';
import { checkTransition, isProtocolState, legalTargets } from '../protocol/state-machine.js';
import { repoKey } from '../protocol/waves.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';
import { mapBounded } from './prepare/parallel.js';
import { agentRepoKey, configuredRepositories, resolveRepoRoot } from './prepare/preflight-steps.js';
import { canonicalPath } from './worktrees.js';

// ---------------------------------------------------------------------------------------------
// Shared by reconcile-state (E49), agent-status (E50) and amend-impl (E36b): where an agent's
// branch lives and what git says about it.

/** Options shared by the commands that look at agents' branches. */
export interface AgentGitOptions {
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /**
   * The primary repository. Default: the manifest's `repository` when it is an existing
   * directory, else the repository holding the manifest.
   */
  repoDir?: string;
  /** Environment for git (read once by the CLI). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Git port factory (default: the git CLI with `env`). */
  gitAt?: (directory: string) => Git;
}

/** Finds the repository of each agent (E49/E50 "cross-repo aware"). */
export interface AgentRepos {
  primaryRoot: string;
  /** Repository root of an agent (its ownership rows' `repo:`), undefined when it cannot be found. */
  rootFor(wave: number, agentId: string): Promise<string | undefined>;
  gitAt(directory: string): Git;
  /** HEAD and every local branch tip of a repository, read once per command (two git calls). */
  refsOf(root: string): Promise<RepoRefs>;
}

/** What {@link AgentRepos.refsOf} returns. */
export interface RepoRefs {
  git: Git;
  /** HEAD commit, undefined on an unborn branch. */
  head: string | undefined;
  /** Local branch name → tip commit. */
  tips: Map<string, string>;
}

function defaultGitAt(env: AgentGitOptions['env']): (directory: string) => Git {
  return (directory) => createGit(directory, env ? { env } : {});
}

async function isDirectory(directory: string): Promise<boolean> {
  try {
    return (await stat(directory)).isDirectory();
  } catch {
    return false;
  }
}

async function topLevelOf(git: Git): Promise<string | undefined> {
  try {
    return await canonicalPath(await git.topLevel());
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') return undefined;
    throw error;
  }
}

/**
 * Resolves the primary repository and a per-agent lookup. Order for the primary repository:
 * `repoDir`, the manifest's `repository` (only when it is an existing directory: manifests
 * written on another machine name paths that do not exist here), the repository holding the
 * manifest. A named repository (`repo:` on ownership rows) resolves through polywave.config.json
 * first, then as a sibling directory (reference §8.1). Throws `D011_REPO_ROOT_INVALID` (exit 2)
 * when no repository is found.
 */
export async function resolveAgentRepos(manifest: ImplManifest, options: AgentGitOptions): Promise<AgentRepos> {
  const gitAt = options.gitAt ?? defaultGitAt(options.env);
  const candidates: string[] = [];
  if (options.repoDir !== undefined) candidates.push(options.repoDir);
  else {
    const repository = (manifest.repository ?? '').trim();
    if (repository !== '' && path.isAbsolute(repository) && (await isDirectory(repository))) candidates.push(repository);
    candidates.push(path.dirname(options.implPath));
  }
  let primaryRoot: string | undefined;
  for (const candidate of candidates) {
    if (!(await isDirectory(candidate))) continue;
    primaryRoot = await topLevelOf(gitAt(candidate));
    if (primaryRoot !== undefined) break;
  }
  if (primaryRoot === undefined) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `no git repository found for ${options.implPath} (tried ${candidates.join(', ')}); pass --repo-dir` });
  }
  const root = primaryRoot;
  let registry: Promise<Array<{ name: string; path: string }>> | undefined;
  const loadRegistry = () => configuredRepositories(root);
  const cache = new Map<string, Promise<string | undefined>>();
  const refs = new Map<string, Promise<RepoRefs>>();
  const resolveKey = async (key: string): Promise<string | undefined> => {
    if (key === '') return root;
    registry ??= loadRegistry();
    const entry = (await registry).find((repo) => repo.name.toLowerCase() === key.toLowerCase() || repoKey(repo.path).toLowerCase() === key.toLowerCase());
    if (entry && (await isDirectory(entry.path))) return (await topLevelOf(gitAt(entry.path))) ?? undefined;
    return resolveRepoRoot(manifest, key, root);
  };
  return {
    primaryRoot: root,
    gitAt,
    refsOf(repoRoot) {
      let found = refs.get(repoRoot);
      if (!found) {
        const git = gitAt(repoRoot);
        found = Promise.all([git.tryRevParse('HEAD'), git.listBranches()]).then(([head, branches]) => ({ git, head, tips: new Map(branches.map((branch) => [branch.name, branch.commit])) }));
        refs.set(repoRoot, found);
      }
      return found;
    },
    rootFor(wave, agentId) {
      const key = agentRepoKey(manifest, wave, agentId);
      let found = cache.get(key);
      if (!found) {
        found = resolveKey(key);
        cache.set(key, found);
      }
      return found;
    },
  };
}

/** What git and the manifest say about one agent (the Go `AgentObservation` keys first). */
export interface AgentObservation {
  id: string;
  wave: number;
  /** The agent branch exists (slug-scoped `polywave/<slug>/wave<N>-agent-<ID>` or legacy). */
  branch_exists: boolean;
  /**
   * The agent's work is in HEAD: the branch tip is an ancestor of HEAD and the branch has commits
   * of its own (or the reported commit is reachable); a deleted branch counts as merged when the
   * reported commit is reachable. A fresh branch without commits is not "merged".
   */
  branch_merged: boolean;
  has_report: boolean;
  /** The report's commit (not empty, not `uncommitted`) exists and is an ancestor of HEAD. */
  commit_reachable: boolean;
  /** The existing branch (slug-scoped preferred), else the slug-scoped name it would have. */
  branch: string;
  /** Completion report status, when there is a report. */
  report_status?: string;
  /** Commits on the branch since the wave's base_commit (HEAD..branch when no base is recorded); 0 without a branch. */
  commit_count: number;
  /** Repository root the agent's branch was looked for in ('' when it could not be found). */
  repo_path: string;
}

async function safeAncestor(git: Git, ancestor: string, descendant: string): Promise<boolean> {
  try {
    return await git.isAncestor(ancestor, descendant);
  } catch {
    return false;
  }
}

async function safeCount(git: Git, range: string): Promise<number | undefined> {
  try {
    return await git.revListCount(range);
  } catch {
    return undefined;
  }
}

function candidateBranches(slug: string, wave: number, agentId: string): string[] {
  const names: string[] = [];
  try {
    names.push(branchName(slug, wave, agentId));
  } catch {
    // a slug that cannot be a branch name: only the legacy name can exist
  }
  try {
    names.push(legacyBranchName(wave, agentId));
  } catch {
    // invalid agent ID: no branch can exist
  }
  return names;
}

/** Observes one agent: branch, report, reachability, commit count (reference §7.3, Go bugs fixed). */
export async function observeAgent(manifest: ImplManifest, options: { slug: string; wave: Wave; agentId: string; repos: AgentRepos }): Promise<AgentObservation> {
  const { slug, wave, agentId, repos } = options;
  const waveNumber = wave.number ?? 0;
  const report = manifest.completion_reports?.[agentId];
  const branches = candidateBranches(slug, waveNumber, agentId);
  const observation: AgentObservation = {
    id: agentId,
    wave: waveNumber,
    branch_exists: false,
    branch_merged: false,
    has_report: report !== undefined,
    commit_reachable: false,
    branch: branches[0] ?? '',
    ...(report?.status ? { report_status: report.status } : {}),
    commit_count: 0,
    repo_path: '',
  };
  const root = await repos.rootFor(waveNumber, agentId);
  if (root === undefined) return observation;
  observation.repo_path = root;
  const { git, head, tips } = await repos.refsOf(root);

  let tip: string | undefined;
  for (const candidate of branches) {
    tip = tips.get(candidate);
    if (tip !== undefined) {
      observation.branch_exists = true;
      observation.branch = candidate;
      break;
    }
  }
  const commit = report?.commit?.trim();
  if (head !== undefined && hasCommit(commit) && !commit!.startsWith('-')) {
    // An unknown commit makes `merge-base --is-ancestor` fail: not reachable.
    observation.commit_reachable = await safeAncestor(git, commit!, head);
  }
  if (tip !== undefined) {
    const base = wave.base_commit?.trim();
    const baseCommit = base && !base.startsWith('-') ? await git.tryRevParse(base).catch(() => undefined) : undefined;
    const sinceBase = baseCommit !== undefined ? await safeCount(git, `${baseCommit}..${tip}`) : undefined;
    const ahead = sinceBase === undefined && head !== undefined ? await safeCount(git, `${head}..${tip}`) : undefined;
    observation.commit_count = sinceBase ?? ahead ?? 0;
    const inHead = head !== undefined && (await safeAncestor(git, tip, head));
    observation.branch_merged = inHead && ((sinceBase ?? 0) > 0 || observation.commit_reachable);
  } else {
    observation.branch_merged = observation.commit_reachable;
  }
  return observation;
}

/** Observes every agent of every wave, in manifest order (a few agents at a time: read-only git). */
export async function observeAgents(manifest: ImplManifest, options: { slug: string; repos: AgentRepos }): Promise<AgentObservation[]> {
  const targets = (manifest.waves ?? []).flatMap((wave) => (wave.agents ?? []).flatMap((agent) => (agent.id ? [{ wave, agentId: agent.id }] : [])));
  const outcomes = await mapBounded(targets, 4, (target) => observeAgent(manifest, { slug: options.slug, wave: target.wave, agentId: target.agentId, repos: options.repos }));
  return outcomes.map((outcome) => {
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  });
}

// ---------------------------------------------------------------------------------------------
// E49 reconcile-state

/** One `agent_summary` row (the Go keys plus branch and report status). */
export interface AgentSummary {
  id: string;
  wave: number;
  branch_exists: boolean;
  branch_merged: boolean;
  has_report: boolean;
  commit_reachable: boolean;
  branch: string;
  report_status?: string;
}

/** The reconcile-state JSON (the Go `ReconcileStateResult` keys). */
export interface ReconcileStateResult {
  previous_state: string;
  /** The state the evidence points to (kept even when the transition to it was not allowed). */
  derived_state: string;
  /** True when the manifest's state was rewritten. */
  state_changed: boolean;
  evidence: string[];
  recommended_action: string;
  agent_summary: AgentSummary[];
}

/** Input of {@link deriveImplState}. */
export interface DeriveStateInput {
  manifest: ImplManifest;
  /** The manifest's current state. */
  previous: string;
  observations: readonly AgentObservation[];
  /** How to name the manifest in recommended commands. */
  implArg: string;
}

/** What the evidence says (pure, see {@link deriveImplState}). */
export interface DerivedState {
  state: string;
  action: string;
  /** Derivation notes beyond the per-agent evidence. */
  notes: string[];
}

function isMergedObservation(observation: AgentObservation): boolean {
  return observation.report_status === 'complete' && (observation.commit_reachable || observation.branch_merged);
}

/**
 * E49: derives the IMPL state from observations. Differences from the Go `deriveState` (bugs):
 * - the wave looked at is the latest wave with any evidence (branch or report), not blindly the
 *   highest-numbered wave, so an interrupted wave 1 of a 3-wave IMPL is seen;
 * - WAVE_VERIFIED needs every agent of that wave to have a `complete` report (Go accepts partial
 *   and blocked reports) whose work is in HEAD (reported commit reachable or branch merged);
 * - with that wave merged and a next wave still to run, WAVE_PENDING is kept (Go would try to
 *   force WAVE_VERIFIED, an illegal move from WAVE_PENDING);
 * - `merge_state: in_progress` with every report complete but not everything merged means finalize
 *   was interrupted mid-merge: WAVE_MERGING, re-run finalize-wave;
 * - a BLOCKED IMPL whose latest wave still has a partial/blocked report stays BLOCKED;
 * - no evidence never moves the state (Go derives SCOUT_PENDING, a regression from e.g. REVIEWED);
 * - a critic report moves SCOUT_PENDING/SCOUT_VALIDATING to REVIEWED (as Go).
 */
export function deriveImplState(input: DeriveStateInput): DerivedState {
  const { manifest, previous, observations, implArg } = input;
  const notes: string[] = [];
  const waves = [...(manifest.waves ?? [])].filter((wave) => (wave.agents ?? []).length > 0).sort((left, right) => (left.number ?? 0) - (right.number ?? 0));
  const byWave = (number: number | undefined) => observations.filter((observation) => observation.wave === (number ?? 0));
  const active = [...waves].reverse().find((wave) => byWave(wave.number).some((observation) => observation.branch_exists || observation.has_report));
  const criticVerdict = (manifest.critic_report?.verdict ?? '').trim();

  if (active === undefined) {
    if (criticVerdict !== '' && (previous === 'SCOUT_PENDING' || previous === 'SCOUT_VALIDATING')) {
      return { state: 'REVIEWED', action: `critic review present — review the IMPL, then run: polywave prepare-wave ${implArg} --wave ${waves[0]?.number ?? 1}`, notes };
    }
    if (previous === 'WAVE_EXECUTING' || previous === 'WAVE_MERGING') {
      notes.push(`state is ${previous} but no agent branch or completion report exists`);
      return { state: previous, action: `no agent work found — re-run: polywave prepare-wave ${implArg} --wave ${waves[0]?.number ?? 1}`, notes };
    }
    return { state: previous, action: `no agent branches or completion reports; state ${previous || '(none)'} is consistent — nothing to reconcile`, notes };
  }

  const number = active.number ?? 0;
  const activeObservations = byWave(number);
  const earlier = waves.filter((wave) => (wave.number ?? 0) < number);
  const unmergedEarlier = earlier.filter((wave) => !byWave(wave.number).every(isMergedObservation));
  if (unmergedEarlier.length > 0) {
    notes.push(`warning: earlier wave(s) ${unmergedEarlier.map((wave) => wave.number).join(', ')} not fully merged into HEAD while wave ${number} has work`);
  }
  const failed = activeObservations.filter((observation) => observation.report_status === 'partial' || observation.report_status === 'blocked').map((observation) => observation.id);
  const missing = activeObservations.filter((observation) => !observation.has_report).map((observation) => observation.id);
  const allComplete = activeObservations.every((observation) => observation.report_status === 'complete');
  const mergeState = (manifest.merge_state ?? '').trim();
  if (mergeState !== '') notes.push(`merge_state: ${mergeState}`);

  if (activeObservations.every(isMergedObservation)) {
    const last = waves[waves.length - 1];
    const isLast = last !== undefined && (last.number ?? 0) === number;
    if (isLast && unmergedEarlier.length === 0) {
      return { state: 'WAVE_VERIFIED', action: `all waves are merged into HEAD — verify the build, then run: polywave close-impl ${implArg}`, notes };
    }
    const next = waves.find((wave) => (wave.number ?? 0) > number);
    const nextAction = next ? `wave ${number} is merged into HEAD — run: polywave prepare-wave ${implArg} --wave ${next.number}` : `wave ${number} is merged into HEAD`;
    if (previous === 'WAVE_PENDING') return { state: previous, action: nextAction, notes };
    return { state: 'WAVE_VERIFIED', action: nextAction, notes };
  }
  if (previous === 'BLOCKED' && failed.length > 0) {
    return { state: 'BLOCKED', action: `agent(s) ${failed.join(', ')} of wave ${number} reported partial/blocked — resolve (E19: retry, or amend-impl --redirect-agent), then set-impl-state`, notes };
  }
  if (mergeState === 'in_progress' && allComplete) {
    return { state: 'WAVE_MERGING', action: `finalize-wave was interrupted during the merge of wave ${number} — re-run: polywave finalize-wave ${implArg} --wave ${number}`, notes };
  }
  if (failed.length > 0) {
    return { state: 'WAVE_EXECUTING', action: `agent(s) ${failed.join(', ')} of wave ${number} reported partial/blocked — apply E19 (retry, or amend-impl --redirect-agent), then finalize-wave`, notes };
  }
  if (allComplete) {
    return { state: 'WAVE_EXECUTING', action: `every agent of wave ${number} reported complete — run: polywave finalize-wave ${implArg} --wave ${number}`, notes };
  }
  return { state: 'WAVE_EXECUTING', action: `wave ${number}: waiting for agent(s) ${missing.join(', ')} to report; then run: polywave finalize-wave ${implArg} --wave ${number}`, notes };
}

/** Options of {@link reconcileState}. */
export type ReconcileStateOptions = AgentGitOptions;

function evidenceOf(observation: AgentObservation): string[] {
  const prefix = `wave${observation.wave} agent ${observation.id}`;
  const lines: string[] = [];
  if (observation.branch_exists) lines.push(`${prefix}: branch ${observation.branch} exists (${observation.commit_count} commit(s) since base)`);
  if (observation.branch_merged) lines.push(`${prefix}: work merged into HEAD`);
  if (observation.has_report) lines.push(`${prefix}: completion report present (status ${observation.report_status ?? 'unknown'})`);
  if (observation.commit_reachable) lines.push(`${prefix}: reported commit reachable from HEAD`);
  if (observation.repo_path === '') lines.push(`${prefix}: repository not found (checked polywave.config.json and sibling directories)`);
  return lines;
}

/**
 * E49 reconcile-state: derives the IMPL state from git evidence and, when it differs and the
 * transition is legal (state machine), writes it through editImpl (never commits). An illegal
 * transition leaves the file alone and says so in `evidence`. COMPLETE and NOT_SUITABLE are
 * terminal: no-op.
 */
export async function reconcileState(options: ReconcileStateOptions): Promise<ReconcileStateResult> {
  const { parsed } = await loadImpl(options.implPath);
  const manifest = requireParsedManifest(parsed.manifest, options.implPath);
  const previous = (manifest.state ?? '').trim();
  if (previous === 'COMPLETE' || previous === 'NOT_SUITABLE') {
    return { previous_state: previous, derived_state: previous, state_changed: false, evidence: [`state is ${previous} (terminal)`], recommended_action: 'no action needed', agent_summary: [] };
  }
  const slug = implSlugFromPath(options.implPath, manifest);
  const repos = await resolveAgentRepos(manifest, options);
  const observations = await observeAgents(manifest, { slug, repos });
  const evidence = observations.flatMap(evidenceOf);
  const criticVerdict = (manifest.critic_report?.verdict ?? '').trim();
  if (criticVerdict !== '') evidence.push(`critic report present with verdict: ${criticVerdict}`);
  const derived = deriveImplState({ manifest, previous, observations, implArg: options.implPath });
  evidence.push(...derived.notes);

  let stateChanged = false;
  if (derived.state !== previous) {
    const check = checkTransition(previous, derived.state, manifest);
    if (!check.ok) {
      const targets = isProtocolState(previous) ? ` (valid targets from ${previous}: ${legalTargets(previous).join(', ') || 'none'})` : '';
      evidence.push(`warning: transition ${previous || '(none)'} -> ${derived.state} is not allowed${targets}; state left at ${previous || '(none)'}`);
    } else {
      const outcome = await editImpl(options.implPath, (current) => {
        const now = (current.manifest?.state ?? '').trim();
        if (now !== previous) return { edits: [], outcome: now };
        return { edits: [{ path: ['state'], value: derived.state }], outcome: now };
      });
      if (outcome === previous) stateChanged = true;
      else evidence.push(`warning: the state changed to ${outcome || '(none)'} while reconciling; not overwritten`);
      for (const warning of check.warnings) evidence.push(`warning: ${warning.message}`);
    }
  }
  return {
    previous_state: previous,
    derived_state: derived.state,
    state_changed: stateChanged,
    evidence,
    recommended_action: derived.action,
    agent_summary: observations.map((observation) => ({
      id: observation.id,
      wave: observation.wave,
      branch_exists: observation.branch_exists,
      branch_merged: observation.branch_merged,
      has_report: observation.has_report,
      commit_reachable: observation.commit_reachable,
      branch: observation.branch,
      ...(observation.report_status !== undefined ? { report_status: observation.report_status } : {}),
    })),
  };
}

/** The normalized manifest or a coded error (exit 2) — these commands refuse to guess. */
export function requireParsedManifest(manifest: ImplManifest | null, filePath: string): ImplManifest {
  if (manifest) return manifest;
  throw new PolywaveError({ code: 'V001_MANIFEST_INVALID', message: `${filePath}: manifest structure is invalid (run: polywave validate ${path.basename(filePath)})` });
}
