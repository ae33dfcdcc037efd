import type { Git } from '../../git/git-port.js';
import { isProtocolOwnedPath, normalizeReportedPath, reportConflicts, type OwnershipConflict } from '../../protocol/conflicts.js';
import type { CompletionReport, ImplManifest } from '../../protocol/schema/impl-schema.js';
import { repoKey } from '../../protocol/waves.js';
import type { StepDefinition } from '../step.js';
import { diffKey, diffPairs, type DiffEntry } from './git-batch.js';
import { listForDetail, manifestOf, type FinalizeContext } from './context.js';

/** One agent as the prediction sees it. */
export interface PredictionAgent {
  agent: string;
  branch: string;
  tip: string;
  /** The agent's repository key ('' = primary). */
  repo: string;
  diff: readonly DiffEntry[];
  report?: CompletionReport;
  /** Already in the target's history (E9): no merge-tree check against the target. */
  merged?: boolean;
}

/** Input of {@link predictConflicts}. */
export interface PredictConflictsInput {
  git: Git;
  manifest: ImplManifest;
  wave: number;
  agents: readonly PredictionAgent[];
  /** The wave's base and the target's tip: when they differ, the target moved during the wave. */
  base: string;
  targetTip: string;
  /** `git diff base..targetTip` (what changed on the target since the wave began). */
  targetDiff: readonly DiffEntry[];
  /** Repository-relative paths never checked (the IMPL doc when it lives outside docs/IMPL/). */
  ignore?: ReadonlySet<string>;
}

/** A path several agents touched with different content (E11 / I1). */
export interface FileConflict {
  file: string;
  agents: string[];
}

/** The prediction (Go `predict-conflicts` keys `conflicts_detected`, `conflicts[{file, agents}]`, `warnings`, plus ours). */
export interface ConflictPrediction {
  /**
   * Go's number: how many `conflicts` (files changed by more than one agent); 0 when none. Our
   * other blocking findings are not in it (outside attack X6, N8) — see `blocking_findings`.
   */
  conflicts_detected: number;
  /** Ours: every blocking finding — conflicts + undeclared_modifications + report_mismatches + textual_conflicts (above 0 exactly when the exit code is 1). */
  blocking_findings: number;
  /** Files touched by more than one agent with differing content. */
  conflicts: FileConflict[];
  /** I1 amendment: files several agents changed to byte-identical content (same blob) — allowed. */
  identical_edits: Array<FileConflict & { blob: string }>;
  /** I1 amendment: files an agent changed outside its declared ownership. */
  undeclared_modifications: Array<{ agent: string; file: string; owners: string[] }>;
  /** The report's files_changed/files_created against the agent's real diff. */
  report_mismatches: Array<{ agent: string; missing_from_report: string[]; not_in_diff: string[] }>;
  /** `git merge-tree --write-tree` predictions: textual conflicts with the target or between agents. */
  textual_conflicts: Array<{ between: string[]; paths: string[]; messages: string[] }>;
  /** E11 from the reports alone (what Go checks), for reference. */
  report_conflicts: OwnershipConflict[];
  /** Each agent's changed paths (from its diff). */
  agent_files: Record<string, string[]>;
  warnings?: string[];
}

/**
 * E11 before any merge, from the agents' ACTUAL diffs (`base..tip`), not only their reports:
 * - files touched by more than one agent — unless every version is byte-identical (same blob id:
 *   the I1 identical-edit allowance);
 * - files an agent touched outside its declared ownership (I1 undeclared modification);
 * - each report's files_changed ∪ files_created against the real diff (both directions);
 * - textual conflicts, predicted with `git merge-tree --write-tree` (no working tree touched):
 *   each unmerged agent against the target when the target moved since the base and changed a
 *   path the agent touched, and each pair of agents sharing a path.
 * Paths under docs/IMPL/ and .polywave-state/ are the protocol's own and are not checked.
 */
export async function predictConflicts(input: PredictConflictsInput): Promise<ConflictPrediction> {
  const { manifest, wave } = input;
  const skip = (file: string) => isProtocolOwnedPath(file) || (input.ignore?.has(file) ?? false);
  const owned = new Map<string, Set<string>>();
  const ownersOf = new Map<string, Set<string>>();
  const own = (agent: string, file: string) => {
    const normalized = normalizeReportedPath(file);
    if (!owned.has(agent)) owned.set(agent, new Set());
    owned.get(agent)!.add(normalized);
    if (!ownersOf.has(normalized)) ownersOf.set(normalized, new Set());
    ownersOf.get(normalized)!.add(agent);
  };
  const repoOf = new Map(input.agents.map((agent) => [agent.agent, agent.repo]));
  for (const row of manifest.file_ownership ?? []) {
    if (row.wave !== wave || !row.file || !row.agent) continue;
    const agentRepo = repoOf.get(row.agent);
    if (agentRepo !== undefined && repoKey(row.repo) !== '' && agentRepo !== '' && repoKey(row.repo) !== agentRepo) continue;
    own(row.agent, row.file);
  }
  for (const agent of manifest.waves?.find((item) => item.number === wave)?.agents ?? []) {
    for (const file of agent.files ?? []) if (agent.id) own(agent.id, file);
  }

  const touches = new Map<string, Array<{ agent: string; blob: string }>>();
  const prediction: ConflictPrediction = {
    conflicts_detected: 0,
    blocking_findings: 0,
    conflicts: [],
    identical_edits: [],
    undeclared_modifications: [],
    report_mismatches: [],
    textual_conflicts: [],
    report_conflicts: reportConflicts(manifest, wave),
    agent_files: {},
  };
  const warnings: string[] = [];
  for (const agent of input.agents) {
    const files = agent.diff.map((entry) => entry.path).filter((file) => !skip(file));
    prediction.agent_files[agent.agent] = files;
    for (const entry of agent.diff) {
      if (skip(entry.path)) continue;
      const list = touches.get(entry.path) ?? [];
      list.push({ agent: agent.agent, blob: entry.blob });
      touches.set(entry.path, list);
    }
    // Issue 13 (F3): a report that lists no files at all (a set_completion without file lists) is not a
    // mismatch: its branch diff is taken as the report, with a warning (the diff is still checked against ownership).
    const listsNoFiles = agent.report !== undefined && (agent.report.files_changed ?? []).length === 0 && (agent.report.files_created ?? []).length === 0;
    if (listsNoFiles && files.length > 0) warnings.push(`agent ${agent.agent}'s report lists no files; its branch diff is taken as the report (${listForDetail(files, 5)})`);
    if (agent.report !== undefined && !listsNoFiles) {
      const reported = new Set([...(agent.report.files_changed ?? []), ...(agent.report.files_created ?? [])].map(normalizeReportedPath).filter((file) => file !== '' && !skip(file)));
      const tests = new Set((agent.report.tests_added ?? []).map(normalizeReportedPath));
      const actual = new Set(files);
      const missing = files.filter((file) => !reported.has(file) && !tests.has(file));
      const extra = [...reported].filter((file) => !actual.has(file));
      if (missing.length > 0 || extra.length > 0) prediction.report_mismatches.push({ agent: agent.agent, missing_from_report: missing, not_in_diff: extra });
      const created = new Set((agent.report.files_created ?? []).map(normalizeReportedPath));
      const added = agent.diff.filter((entry) => entry.status === 'A' && !skip(entry.path) && reported.has(entry.path) && !created.has(entry.path)).map((entry) => entry.path);
      if (added.length > 0) warnings.push(`agent ${agent.agent} created ${listForDetail(added, 5)} but lists them under files_changed (files_created expected)`);
    }
  }

  const sharedPairs = new Map<string, { agents: [string, string]; paths: string[] }>();
  for (const [file, list] of [...touches.entries()].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))) {
    const agents = [...new Set(list.map((item) => item.agent))];
    if (agents.length < 2) continue;
    const blobs = new Set(list.map((item) => item.blob));
    if (blobs.size === 1) {
      prediction.identical_edits.push({ file, agents, blob: [...blobs][0] ?? '' });
      continue;
    }
    prediction.conflicts.push({ file, agents });
    for (let left = 0; left < agents.length; left += 1) {
      for (let right = left + 1; right < agents.length; right += 1) {
        const key = `${agents[left]}\u0000${agents[right]}`;
        const pair = sharedPairs.get(key) ?? { agents: [agents[left]!, agents[right]!] as [string, string], paths: [] };
        pair.paths.push(file);
        sharedPairs.set(key, pair);
      }
    }
  }

  // I1 amendment: a change outside the agent's ownership — unless it is an identical edit.
  const identical = new Set(prediction.identical_edits.map((edit) => edit.file));
  for (const agent of input.agents) {
    for (const entry of agent.diff) {
      if (skip(entry.path) || owned.get(agent.agent)?.has(entry.path)) continue;
      if (identical.has(entry.path)) {
        warnings.push(`agent ${agent.agent} changed ${entry.path} outside its ownership, identically to another agent (allowed)`);
        continue;
      }
      prediction.undeclared_modifications.push({ agent: agent.agent, file: entry.path, owners: [...(ownersOf.get(entry.path) ?? [])].sort() });
    }
  }

  // merge-tree only where a textual conflict is possible at all: a path the target also changed
  // since the base, or a path two agents share.
  const targetPaths = new Set(input.targetDiff.map((entry) => entry.path));
  const byAgent = new Map(input.agents.map((agent) => [agent.agent, agent]));
  const checks: Array<{ between: string[]; ours: string; theirs: string }> = [];
  if (input.targetTip !== input.base) {
    for (const agent of input.agents) {
      if (agent.merged) continue;
      if (agent.diff.some((entry) => targetPaths.has(entry.path))) checks.push({ between: ['target', agent.agent], ours: input.targetTip, theirs: agent.tip });
    }
  }
  for (const pair of sharedPairs.values()) {
    const [left, right] = [byAgent.get(pair.agents[0])!, byAgent.get(pair.agents[1])!];
    checks.push({ between: [...pair.agents], ours: left.tip, theirs: right.tip });
  }
  for (const check of checks) {
    const merged = await input.git.mergeTree(undefined, check.ours, check.theirs);
    if (!merged.clean) prediction.textual_conflicts.push({ between: check.between, paths: merged.conflictedPaths, messages: merged.messages });
  }

  prediction.conflicts_detected = prediction.conflicts.length;
  prediction.blocking_findings =
    prediction.conflicts.length + prediction.undeclared_modifications.length + prediction.report_mismatches.length + prediction.textual_conflicts.length;
  if (warnings.length > 0) prediction.warnings = warnings;
  return prediction;
}

/** Human summary of a prediction's blocking findings. */
export function describePrediction(prediction: ConflictPrediction): string[] {
  const parts: string[] = [];
  if (prediction.conflicts.length > 0) {
    parts.push(`I1: ${prediction.conflicts.length} file(s) changed by more than one agent: ${listForDetail(prediction.conflicts.map((conflict) => `${conflict.file} (${conflict.agents.join(', ')})`), 8)}`);
  }
  if (prediction.undeclared_modifications.length > 0) {
    parts.push(
      `I1 undeclared modification: ${listForDetail(prediction.undeclared_modifications.map((item) => `agent ${item.agent} changed ${item.file} (${item.owners.length > 0 ? `owned by ${item.owners.join(', ')}` : 'owned by no agent of this wave'})`), 8)}`,
    );
  }
  for (const mismatch of prediction.report_mismatches) {
    const pieces = [
      ...(mismatch.missing_from_report.length > 0 ? [`changed but not reported: ${listForDetail(mismatch.missing_from_report, 5)}`] : []),
      ...(mismatch.not_in_diff.length > 0 ? [`reported but not in its diff: ${listForDetail(mismatch.not_in_diff, 5)}`] : []),
    ];
    parts.push(`agent ${mismatch.agent}'s report does not match its branch (${pieces.join('; ')})`);
  }
  for (const conflict of prediction.textual_conflicts) {
    parts.push(`git merge-tree predicts a textual conflict between ${conflict.between.join(' and ')} in ${listForDetail(conflict.paths, 5)}`);
  }
  return parts;
}

/**
 * Computes every agent's `base..tip` diff (and the target's) with one `diff-tree --stdin` per
 * repository; stored on the agents for the later steps.
 */
export function loadDiffs(context: FinalizeContext): Promise<Map<string, DiffEntry[]>> {
  // Fetched once per run (verify-commits starts it early; later steps reuse it).
  context.diffs ??= fetchDiffs(context);
  return context.diffs;
}

async function fetchDiffs(context: FinalizeContext): Promise<Map<string, DiffEntry[]>> {
  const targetDiffs = new Map<string, DiffEntry[]>();
  for (const repo of context.repos) {
    const mine = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined && agent.diff === undefined);
    if (repo.base === undefined) continue;
    const pairs = [...mine.map((agent) => ({ base: repo.base!, tip: agent.tip! })), { base: repo.base, tip: repo.targetTip }];
    const diffs = await diffPairs(repo.git, pairs);
    for (const agent of mine) agent.diff = diffs.get(diffKey(repo.base, agent.tip!)) ?? [];
    targetDiffs.set(repo.key, diffs.get(diffKey(repo.base, repo.targetTip)) ?? []);
  }
  return targetDiffs;
}

/** E11 step: see {@link predictConflicts}. Blocking findings stop the wave before any merge. */
export const predictConflictsStep: StepDefinition<FinalizeContext> = {
  name: 'predict-conflicts',
  async run(context) {
    const manifest = manifestOf(context);
    const targetDiffs = await loadDiffs(context);
    const predictions: Record<string, ConflictPrediction> = {};
    const problems: string[] = [];
    const warnings: string[] = [];
    for (const repo of context.repos) {
      const mine = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined);
      if (mine.length === 0 || repo.base === undefined) continue;
      const implRelative = repo.primary ? normalizeReportedPath(context.implPath.startsWith(`${repo.root}/`) ? context.implPath.slice(repo.root.length + 1) : '') : '';
      const prediction = await predictConflicts({
        git: repo.git,
        manifest,
        wave: context.wave,
        agents: mine.map((agent) => ({
          agent: agent.id,
          branch: agent.branch,
          tip: agent.tip!,
          repo: repo.primary ? '' : repo.key,
          diff: agent.diff ?? [],
          ...(agent.report ? { report: agent.report } : {}),
          ...(agent.merged ? { merged: true } : {}),
        })),
        base: repo.base,
        targetTip: repo.targetTip,
        targetDiff: targetDiffs.get(repo.key) ?? [],
        ...(implRelative ? { ignore: new Set([implRelative]) } : {}),
      });
      predictions[repo.key] = prediction;
      problems.push(...describePrediction(prediction).map((text) => (context.repos.length > 1 ? `${repo.key}: ${text}` : text)));
      warnings.push(...(prediction.warnings ?? []));
      if (prediction.identical_edits.length > 0) {
        warnings.push(`identical edits allowed (I1 amendment): ${listForDetail(prediction.identical_edits.map((edit) => `${edit.file} (${edit.agents.join(', ')})`), 5)}`);
      }
    }
    context.result.conflict_report = context.repos.length === 1 ? predictions[context.primary.key] : predictions;
    if (problems.length > 0) {
      context.block = { reason: 'E11: conflicts predicted before merge', mergeState: 'idle' };
      return {
        status: 'failed',
        detail: `E11: ${problems.join('; ')} — nothing was merged; fix the agent branches or the IMPL doc's ownership, then re-run finalize-wave`,
        data: predictions,
      };
    }
    const files = Object.values(predictions).reduce((sum, prediction) => sum + Object.values(prediction.agent_files).reduce((count, list) => count + list.length, 0), 0);
    return {
      status: warnings.length > 0 ? 'warning' : 'success',
      detail: `E11: ${files} changed file(s) across the wave, disjoint and owned; reports match the diffs; no textual conflict predicted${warnings.length > 0 ? ` (${warnings.join('; ')})` : ''}`,
      data: predictions,
    };
  },
};
