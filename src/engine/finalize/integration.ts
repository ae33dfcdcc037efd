import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { blobSpec, buildReferenceIndex, validateIntegration, type IntegrationReport, type ReferenceIndex } from '../../analysis/index.js';
import type { StepDefinition } from '../step.js';
import { virtualMergeCommit } from './git-batch.js';
import { listForDetail, manifestOf, type FinalizeContext } from './context.js';

/** What the run indexed once for E25 and E35 (primary repository). */
export interface WaveReferenceIndex {
  /** The scratch commit holding the merged tree (or the target tip when nothing is left to merge). */
  ref: string;
  index: ReferenceIndex;
}

/**
 * The reference index of the wave's merged result, built ONCE per run (10.3): before the merge
 * the merged tree is composed as a scratch commit (see virtualMergeCommit) so the index sees
 * every agent's new call sites, not only the pre-merge target.
 */
export function waveReferenceIndex(context: FinalizeContext): Promise<WaveReferenceIndex> {
  // The promise is shared: E25 and E35 may ask at the same time.
  context.referenceIndex ??= buildWaveReferenceIndex(context);
  return context.referenceIndex as Promise<WaveReferenceIndex>;
}

async function buildWaveReferenceIndex(context: FinalizeContext): Promise<WaveReferenceIndex> {
  const repo = context.primary;
  const pending = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined && !agent.merged);
  let ref = repo.targetTip;
  if (pending.length > 0) {
    const indexPath = path.join(os.tmpdir(), `polywave-index-${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      ref = await virtualMergeCommit(repo.git, { targetTip: repo.targetTip, tips: pending.map((agent) => agent.tip!), diffs: pending.map((agent) => agent.diff ?? []), indexPath });
    } finally {
      await rm(indexPath, { force: true });
    }
  }
  return { ref, index: await buildReferenceIndex({ git: repo.git, ref }) };
}

/**
 * E25 (step 3.5a, informational unless `enforceIntegration`): new exports of the wave that
 * nothing calls, judged against the index of the merged result, each agent's files read from its
 * own branch. Stored in `integration_reports.wave{N}`.
 */
export const validateIntegrationStep: StepDefinition<FinalizeContext> = {
  name: 'validate-integration',
  // Informational E25 cannot stop the merge, so it runs alongside it (the index reads the scratch
  // merge commit, not the checkout); populate-integration-checklist waits for it.
  background: (context) => !context.options.enforceIntegration && !context.dryRun,
  async run(context) {
    const manifest = manifestOf(context);
    const repo = context.primary;
    const agentRefs = Object.fromEntries(context.agents.filter((agent) => agent.repo.primary && agent.tip !== undefined).map((agent) => [agent.id, agent.tip!]));
    // The merged result = the target, with each agent's changed files taken from its tip (I1: no
    // two agents change one file). References: one git grep over the target for the files no agent
    // touched, plus the agents' changed files read from their tips — no scratch merge commit and
    // no index of the whole repository (that is built only for a caller that asks for it).
    const pending = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined && !agent.merged);
    const touched = new Set(pending.flatMap((agent) => (agent.diff ?? []).map((entry) => entry.path)));
    const changedAtTips = pending.flatMap((agent) => (agent.diff ?? []).filter((entry) => !entry.status.startsWith('D')).map((entry) => ({ spec: blobSpec(agent.tip!, entry.path), path: entry.path })));
    const report: IntegrationReport = await validateIntegration({
      manifest,
      wave: context.wave,
      git: repo.git,
      ref: repo.targetTip,
      agentRefs,
      searchRefs: [repo.targetTip],
      searchExclude: touched,
      searchFiles: changedAtTips,
      loadIndex: async () => (await waveReferenceIndex(context)).index,
      // load-manifest resolved the base to a commit id.
      ...(repo.base ? { base: repo.base, baseResolved: true } : {}),
    });
    context.result.integration_report = report;
    let saved = '';
    if (!context.dryRun) {
      context.pendingEdits.push({ edit: { path: ['integration_reports', `wave${context.wave}`], value: report }, what: `integration_reports.wave${context.wave}` });
      saved = `; recorded in integration_reports.wave${context.wave}`;
    }
    if (report.gaps.length === 0) return { status: 'success', detail: `E25: ${report.summary || 'no integration gaps'}${saved}`, data: report };
    const gaps = report.gaps.map((gap) => `${gap.export_name} in ${gap.file_path} (${gap.agent_id}, ${gap.severity})`);
    if (context.options.enforceIntegration) {
      context.block = { reason: 'E25: integration gaps', mergeState: 'idle' };
      return { status: 'failed', detail: `E25: ${report.gaps.length} integration gap(s): ${listForDetail(gaps, 8)}${saved}`, data: report };
    }
    context.result.integration_action_required = true;
    return { status: 'warning', detail: `E25: ${report.gaps.length} integration gap(s), informational (an integration agent may wire them, E26): ${listForDetail(gaps, 8)}${saved}`, data: report };
  },
};
