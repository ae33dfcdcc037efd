/**
 * Issue 13 (outside attack F1): is a wave's work in the target branch? A wave whose agents all
 * reported `complete` is not finished until their commits are merged: reports and `merge_state`
 * alone cannot tell "finalized" from "reported, then the orchestrator stopped before the merge".
 * This module decides from git, in one batch for any number of waves:
 *
 * - an agent's evidence is its report `commit` (when it names a commit this repository has), the
 *   tip of its report `branch` when that is an agent branch, and the tip of its E5 branch (`polywave/<slug>/wave<N>-agent-<ID>`,
 *   or the legacy `wave<N>-agent-<ID>`) when those branches exist;
 * - the agent is merged when any piece of evidence is reachable from the target (finalize merges
 *   the branch tip; a solo agent that worked on the target has its commit there already);
 * - an agent without evidence (no commit this repository knows, no branch: a cross-repo agent, a
 *   report imported from elsewhere, a branch deleted after the merge) is not counted as unmerged.
 *
 * Cost: one `for-each-ref` and one `cat-file --batch-check` (in parallel), then one `rev-list`, for
 * the whole batch, and only for waves whose reports all say `complete` (the callers check that first).
 */
import type { Git } from '../git/git-port.js';
import { branchName, legacyBranchName, parseBranchName } from '../protocol/names.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { findWave, isWaveFinished } from '../protocol/waves.js';

/** One agent whose work is not in the target. */
export interface UnmergedAgent {
  agent: string;
  wave: number;
  /** The commit or branch that holds the work (for messages). */
  ref: string;
}

const blank = (value: string | undefined): boolean => value === undefined || value.trim() === '' || value.trim() === 'uncommitted';

function candidateBranches(slug: string, wave: number, agentId: string, reported: string | undefined): string[] {
  const names: string[] = [];
  try {
    names.push(branchName(slug, wave, agentId));
  } catch {
    // A slug or ID that cannot be a branch name has no E5 branch.
  }
  try {
    names.push(legacyBranchName(wave, agentId));
  } catch {
    // Same for the legacy name.
  }
  // The reported branch counts only when it is an agent branch: a solo agent's "main" is the target
  // itself (its commit decides), and a report naming the target must not make unmerged work look merged.
  const named = blank(reported) ? '' : reported!.trim().replace(/^refs\/heads\//, '');
  if (named !== '' && (parseBranchName(named) !== undefined || named.startsWith('saw/'))) names.push(named);
  return [...new Set(names)];
}

/**
 * The agents of `waves` whose work is not reachable from `target` (a ref or commit, default
 * HEAD). Agents without a report are skipped (they have no work to be merged yet).
 */
export async function unmergedAgents(git: Git, manifest: ImplManifest, slug: string, waves: readonly number[], target = 'HEAD'): Promise<UnmergedAgent[]> {
  const agents: Array<{ agent: string; wave: number; commit?: string; branches: string[] }> = [];
  for (const number of waves) {
    for (const agent of findWave(manifest, number)?.agents ?? []) {
      const id = agent.id ?? '';
      const report = manifest.completion_reports?.[id];
      if (id === '' || report === undefined) continue;
      agents.push({ agent: id, wave: number, ...(blank(report.commit) ? {} : { commit: report.commit!.trim() }), branches: candidateBranches(slug, number, id, report.branch) });
    }
  }
  if (agents.length === 0) return [];

  // 1. Branch tips (one for-each-ref; exact names, so a prefix never matches another agent's branch) and
  // 2. reported commits this repository has, as full ids (one cat-file; short ids resolve, unknown ones are
  // "missing") — the two in parallel.
  const wanted = [...new Set(agents.flatMap((agent) => agent.branches))];
  const reported = [...new Set(agents.flatMap((agent) => (agent.commit !== undefined && /^[0-9a-f]{4,64}$/i.test(agent.commit) ? [agent.commit] : [])))];
  const [refs, check] = await Promise.all([
    wanted.length === 0 ? { stdout: '' } : git.run(['for-each-ref', '--format=%(refname)%00%(objectname)', ...wanted.map((name) => `refs/heads/${name}`)]),
    reported.length === 0 ? { stdout: '' } : git.run(['cat-file', '--batch-check=%(objectname) %(objecttype)'], { input: `${reported.map((commit) => `${commit}^{commit}`).join('\n')}\n`, allowExitCodes: [1, 128] }),
  ]);
  const tips = new Map<string, string>();
  for (const line of refs.stdout.split('\n')) {
    const [refname = '', commit = ''] = line.split('\0');
    if (refname.startsWith('refs/heads/') && commit !== '') tips.set(refname.slice('refs/heads/'.length), commit);
  }
  const resolved = new Map<string, string>();
  const lines = check.stdout.split('\n');
  reported.forEach((commit, index) => {
    const [id = '', type = ''] = (lines[index] ?? '').split(' ');
    if (type === 'commit') resolved.set(commit, id);
  });

  // 3. Which evidence is not reachable from the target (one rev-list: evidence minus the target's history).
  const evidenceOf = (agent: (typeof agents)[number]): string[] => {
    const found: string[] = [];
    if (agent.commit !== undefined && resolved.has(agent.commit)) found.push(resolved.get(agent.commit)!);
    for (const name of agent.branches) if (tips.has(name)) found.push(tips.get(name)!);
    return [...new Set(found)];
  };
  const evidence = [...new Set(agents.flatMap(evidenceOf))];
  if (evidence.length === 0) return [];
  // A target git cannot resolve (an unborn branch) decides nothing: no agent is called unmerged.
  const listed = await git.run(['rev-list', ...evidence, '--not', target, '--'], { allowExitCodes: [128] });
  if (listed.exitCode !== 0) return [];
  const outside = new Set(listed.stdout.split('\n').filter((line) => line !== ''));
  const result: UnmergedAgent[] = [];
  for (const agent of agents) {
    const found = evidenceOf(agent);
    if (found.length === 0 || found.some((commit) => !outside.has(commit))) continue;
    const branch = agent.branches.find((name) => tips.has(name));
    result.push({ agent: agent.agent, wave: agent.wave, ref: branch !== undefined ? `${branch} at ${tips.get(branch)!.slice(0, 12)}` : `commit ${agent.commit!.slice(0, 12)}` });
  }
  return result;
}

/** Where a manifest-finished wave stands in git. */
export type WaveFinish = 'not-finished' | 'finished' | 'unmerged';

/**
 * {@link isWaveFinished} checked against git: `finished` only when the manifest says so and every
 * agent's work is reachable from `target`; `unmerged` when the manifest says finished but an
 * agent's commits are not in the target (reported, never finalized: finalize-wave merges it).
 */
export async function waveFinishInGit(git: Git, manifest: ImplManifest, slug: string, wave: number, target = 'HEAD'): Promise<{ finish: WaveFinish; unmerged: UnmergedAgent[] }> {
  if (!isWaveFinished(manifest, wave)) return { finish: 'not-finished', unmerged: [] };
  const unmerged = await unmergedAgents(git, manifest, slug, [wave], target);
  return { finish: unmerged.length > 0 ? 'unmerged' : 'finished', unmerged };
}

/** "A (polywave/x/wave2-agent-A at abc), B (…)" for messages. */
export function describeUnmerged(unmerged: readonly UnmergedAgent[]): string {
  return unmerged.map((agent) => `${agent.agent} (wave ${agent.wave}: ${agent.ref})`).join(', ');
}
