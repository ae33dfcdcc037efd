import type { Git } from '../git/git-port.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { currentWave } from '../protocol/waves.js';
import { isTerminalState, scanImpls } from './prepare/impl-scan.js';
import { mapBounded } from './prepare/parallel.js';
import { identifyAgentWorktree } from './stale-worktrees.js';
import { canonicalPath, worktreeChanges } from './worktrees.js';
import { openDispatchedRecord } from './finalize/completion-reports.js';
import { journalPaths } from './journal.js';
import { describeUnmerged, unmergedAgents } from './wave-merged.js';

/** An interrupted IMPL (reference §7.4), with the keys of the issue and the Go `resume-detect` keys. */
export interface ResumeCandidate {
  impl_path: string;
  slug: string;
  /** The wave to resume: the first wave with an agent lacking a `complete` report. */
  wave: number;
  /** Agent worktrees of this IMPL in a wave that is not complete (or unknown to the manifest). */
  orphaned_worktrees: string[];
  /** Agents of `wave` without a completion report. */
  reports_missing: string[];
  suggested_action: string;
  // Go keys
  impl_slug: string;
  current_wave: number;
  total_waves: number;
  completed_agents: string[];
  failed_agents: string[];
  pending_agents: string[];
  progress_pct: number;
  can_auto_resume: boolean;
  resume_command: string;
  dirty_worktrees?: string[];
}

export interface DetectResumeOptions {
  /** Git of the repository's main checkout. */
  git: Git;
  gitAt: (directory: string) => Git;
  /** Look for uncommitted work in orphaned worktrees (one `git status` each). Default true. */
  checkDirty?: boolean;
  signal?: AbortSignal;
}

function agentsByStatus(manifest: ImplManifest): { all: string[]; complete: string[]; failed: string[]; pending: string[] } {
  const reports = manifest.completion_reports ?? {};
  const all: string[] = [];
  const complete: string[] = [];
  const failed: string[] = [];
  const pending: string[] = [];
  for (const wave of manifest.waves ?? []) {
    for (const agent of wave.agents ?? []) {
      if (!agent.id) continue;
      all.push(agent.id);
      const status = reports[agent.id]?.status;
      if (status === 'complete') complete.push(agent.id);
      else if (status === 'partial' || status === 'blocked') failed.push(agent.id);
      else pending.push(agent.id);
    }
  }
  return { all, complete, failed, pending };
}

/**
 * resume-detect (reference §7.4): every non-terminal IMPL of `docs/IMPL` that has progress
 * (reports) or orphaned worktrees, with what to do next. `[]` when nothing was interrupted.
 */
export async function detectResumable(options: DetectResumeOptions): Promise<ResumeCandidate[]> {
  const { git } = options;
  const repoRoot = await canonicalPath(await git.topLevel());
  const [impls, entries] = await Promise.all([scanImpls(repoRoot), git.worktreeList()]);
  const worktrees = (
    await Promise.all(
      entries.slice(1).map(async (entry) => {
        const entryPath = await canonicalPath(entry.path);
        const identity = identifyAgentWorktree(repoRoot, { path: entryPath, ...(entry.branch ? { branch: entry.branch } : {}) });
        return identity ? { path: entryPath, prunable: entry.prunable, ...identity } : undefined;
      }),
    )
  ).filter((item): item is NonNullable<typeof item> => item !== undefined);
  const archivedSlugs = new Set(impls.filter((impl) => impl.archived).map((impl) => impl.slug));

  const candidates: ResumeCandidate[] = [];
  for (const impl of impls) {
    if (impl.archived || isTerminalState(impl.state)) continue;
    const manifest = impl.manifest;
    const waves = manifest.waves ?? [];
    const status = agentsByStatus(manifest);
    const resumeWave = currentWave(manifest);
    const completeWaves = new Set(waves.filter((wave) => wave !== resumeWave && (wave.agents ?? []).every((agent) => status.complete.includes(agent.id ?? ''))).map((wave) => wave.number));
    const orphaned = worktrees.filter(
      (worktree) => worktree.slug === impl.slug && !archivedSlugs.has(worktree.slug) && (worktree.wave === undefined || !completeWaves.has(worktree.wave)) && !worktree.prunable,
    );
    const hasProgress = status.complete.length + status.failed.length > 0;
    if (!hasProgress && orphaned.length === 0) continue;

    let dirty: string[] = [];
    if (options.checkDirty ?? true) {
      const outcomes = await mapBounded(orphaned, 4, async (worktree) => ((await worktreeChanges(options.gitAt(worktree.path))).length > 0 ? worktree.path : undefined), options.signal);
      dirty = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' && outcome.value ? [outcome.value] : []));
    }

    // Issue 13 (F1): every report says complete, but a wave whose work is not merged must be finalized, not closed.
    const unmerged = resumeWave === undefined ? await unmergedAgents(git, manifest, impl.slug, waves.map((wave) => wave.number ?? 0)).catch(() => []) : [];
    const waveNumber = unmerged[0]?.wave ?? resumeWave?.number ?? Math.min(...orphaned.map((worktree) => worktree.wave ?? Number.MAX_SAFE_INTEGER), waves[waves.length - 1]?.number ?? 1);
    const waveAgents = (resumeWave?.agents ?? []).map((agent) => agent.id ?? '').filter((id) => id !== '');
    const missing = waveAgents.filter((id) => manifest.completion_reports?.[id] === undefined);
    const failedInWave = waveAgents.filter((id) => status.failed.includes(id));
    const implArg = impl.path;
    // A22-07: a complete report brought early by a dispatched job whose orchestrator was killed is not final —
    // finalize-wave refuses it; the run-wave re-run with the same dispatch flags collects the job, then finalizes.
    const finalizeWave = unmerged[0]?.wave ?? (missing.length === 0 && failedInWave.length === 0 && resumeWave !== undefined ? waveNumber : undefined);
    const uncollected =
      finalizeWave === undefined
        ? []
        : (
            await Promise.all(
              ((waves.find((wave) => wave.number === finalizeWave)?.agents ?? []).map((agent) => agent.id ?? '').filter((id) => id !== '')).map(async (id) => {
                const open = await openDispatchedRecord(journalPaths(repoRoot, impl.slug, finalizeWave, id).dir);
                return open ? { id, ...open } : undefined;
              }),
            )
          ).filter((item): item is NonNullable<typeof item> => item !== undefined);
    const missingDispatched =
      resumeWave === undefined || missing.length === 0
        ? []
        : (
            await Promise.all(
              missing.map(async (id) => {
                const open = await openDispatchedRecord(journalPaths(repoRoot, impl.slug, waveNumber, id).dir);
                return open ? { id, ...open } : undefined;
              }),
            )
          ).filter((item): item is NonNullable<typeof item> => item !== undefined);
    let action: string;
    let command: string;
    if (uncollected.length > 0 && finalizeWave !== undefined && manifest.state === 'BLOCKED') {
      // A23-41: the run BLOCKED on another error with a job still out — run-wave refuses a BLOCKED IMPL; retry re-runs it.
      action = `wave ${finalizeWave}: the job(s) of agent(s) ${uncollected.map((item) => item.id).join(', ')} ran on a worker and their results were never collected (the run BLOCKED on another error) — retry the wave with the same dispatch flags (it resumes the wave, awaits or adopts each job, then finalizes)`;
      command = `polywave retry ${implArg} --wave ${finalizeWave} ${uncollected[0]!.flags}`;
    } else if (uncollected.length > 0 && finalizeWave !== undefined) {
      action = `wave ${finalizeWave}: the job(s) of agent(s) ${uncollected.map((item) => item.id).join(', ')} ran on a worker and their results were never collected (the orchestrator stopped) — re-run run-wave with the same dispatch flags (it awaits or adopts each job, then finalizes)`;
      command = `polywave run-wave ${implArg} --wave ${finalizeWave} ${uncollected[0]!.flags}`;
    } else if (unmerged.length > 0) {
      action = `wave ${unmerged[0]!.wave}: every agent reported complete but its work is not merged (${describeUnmerged(unmerged)}) — finalize the wave`;
      command = `polywave finalize-wave ${implArg} --wave ${unmerged[0]!.wave}`;
    } else if (resumeWave === undefined) {
      action = orphaned.length > 0 ? 'all waves complete; clean up the leftover worktrees' : 'all waves complete; close the IMPL';
      command = orphaned.length > 0 ? `polywave cleanup-stale --slug ${impl.slug}` : `polywave close-impl ${implArg}`;
    } else if (failedInWave.length > 0) {
      action = `wave ${waveNumber}: agent(s) ${failedInWave.join(', ')} reported partial/blocked — apply E19 and retry them`;
      command = `polywave prepare-wave ${implArg} --wave ${waveNumber}`;
    } else if (missing.length === 0) {
      action = `wave ${waveNumber}: every agent reported complete — finalize the wave`;
      command = `polywave finalize-wave ${implArg} --wave ${waveNumber}`;
    } else if (missingDispatched.length > 0) {
      // A24-05a: agents without a report whose jobs ran on a worker (the orchestrator killed before any early report):
      // the re-run with the run's dispatch flags and --model collects them — a plain relaunch would run them again here.
      action = `wave ${waveNumber}: agent(s) ${missingDispatched.map((item) => item.id).join(', ')} have no report, but their attempt(s) ran as job(s) on a worker (${missingDispatched[0]!.flags}) whose result no orchestrator collected (the orchestrator stopped) — re-run run-wave with the same dispatch flags (it prepares the wave again, awaits or adopts each job, and relaunches the agents without one)`;
      // (a BLOCKED IMPL: run-wave's prepare-wave refuses it — `retry` resumes the wave and makes that re-run, as A23-41)
      command = `polywave ${manifest.state === 'BLOCKED' ? 'retry' : 'run-wave'} ${implArg} --wave ${waveNumber} ${missingDispatched[0]!.flags}`;
    } else if (dirty.length > 0) {
      action = `wave ${waveNumber}: ${dirty.length} worktree(s) hold uncommitted work — re-run prepare-wave (it reuses them) and relaunch agents ${missing.join(', ')}`;
      command = `polywave prepare-wave ${implArg} --wave ${waveNumber}`;
    } else if (orphaned.length > 0) {
      action = `wave ${waveNumber}: worktrees exist but agents ${missing.join(', ')} have no report — re-run prepare-wave (it reuses them) and relaunch those agents`;
      command = `polywave prepare-wave ${implArg} --wave ${waveNumber}`;
    } else {
      action = `wave ${waveNumber}: not started — run prepare-wave`;
      command = `polywave prepare-wave ${implArg} --wave ${waveNumber}`;
    }
    candidates.push({
      impl_path: impl.path,
      slug: impl.slug,
      wave: waveNumber,
      orphaned_worktrees: orphaned.map((worktree) => worktree.path).sort(),
      reports_missing: missing,
      suggested_action: action,
      impl_slug: impl.slug,
      current_wave: waveNumber,
      total_waves: waves.length,
      completed_agents: status.complete,
      failed_agents: status.failed,
      pending_agents: status.pending,
      progress_pct: status.all.length === 0 ? 0 : Math.round((status.complete.length / status.all.length) * 100),
      can_auto_resume: status.failed.length === 0 && missing.length === 0,
      resume_command: command,
      ...(dirty.length > 0 ? { dirty_worktrees: dirty.sort() } : {}),
    });
  }
  return candidates;
}
