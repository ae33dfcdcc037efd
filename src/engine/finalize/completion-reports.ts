import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { decideFailureAction } from '../../protocol/e19.js';
import { journalPaths } from '../journal.js';
import type { StepDefinition } from '../step.js';
import { manifestOf, type AgentFailure, type FinalizeContext } from './context.js';

/** I4: every agent of the wave has a completion report in the manifest. */
export const completionReportsStep: StepDefinition<FinalizeContext> = {
  name: 'verify-completion-reports',
  async run(context) {
    const missing = context.agents.filter((agent) => agent.report === undefined);
    if (missing.length > 0) {
      // Outside round A24-05a: an agent without a report whose attempt ran as a job on a worker and never ended in an
      // orchestrator (run-wave killed before any early report) — the run-wave re-run with the run's dispatch flags (and
      // `--model`, A23-04) collects the job; "relaunch" without them would run the agent again in-process.
      const open = (await Promise.all(missing.map(async (agent) => {
        const record = await openDispatchedRecord(journalPaths(agent.repo.root, context.slug, context.wave, agent.id).dir);
        return record ? { agent: agent.id, ...record } : undefined;
      }))).filter((item): item is NonNullable<typeof item> => item !== undefined);
      const rerun = open.length > 0 ? `; agent(s) ${open.map((item) => item.agent).join(', ')} ran as job(s) on a worker (${open[0]!.flags}) whose result no orchestrator collected — re-run \`polywave run-wave ${context.implPath} --wave ${context.wave} ${open[0]!.flags}\` (it awaits or adopts each job, then finalizes)` : '';
      return {
        status: 'failed',
        detail: `finalize-wave: missing completion reports for agents: [${missing.map((agent) => agent.id).join(', ')}] — agents must call polywave-tools set-completion before merge (I4)${rerun}`,
        data: { missing: missing.map((agent) => agent.id), ...(open.length > 0 ? { uncollected: open } : {}) },
      };
    }
    return { status: 'success', detail: `all ${context.agents.length} agent(s) reported (I4)` };
  },
};

/**
 * E7: an agent reporting `partial` or `blocked` stops the wave before any merge (no partial
 * merges) and the IMPL goes to BLOCKED; E19: each failing agent comes with the orchestrator's
 * decision (retry, fix prompt, pause, escalate) from its `failure_type` and the `reactions:` block.
 */
export const agentStatusesStep: StepDefinition<FinalizeContext> = {
  name: 'check-agent-statuses',
  async run(context) {
    const manifest = manifestOf(context);
    const failures: AgentFailure[] = [];
    // A21-06: a complete report whose attempt ran as a job on a worker and never ended in an orchestrator (run-wave
    // killed: the report is the one the job's progress brought early, the job may still run and commit) is not final.
    const unsettled = await Promise.all(context.agents.map((agent) => (agent.report?.status === 'complete' ? openDispatchedRecord(journalPaths(agent.repo.root, context.slug, context.wave, agent.id).dir) : Promise.resolve(undefined))));
    const pending = context.agents.flatMap((agent, index) => (unsettled[index] ? [{ agent: agent.id, ...unsettled[index] }] : []));
    if (pending.length > 0) {
      // No BLOCKED (A22-07): nothing failed — the job's result is still to be collected, by the run-wave re-run this
      // names, whose prepare-wave refuses a BLOCKED IMPL. The state stays what the killed run left.
      return {
        status: 'failed',
        detail: `E7: ${pending.map((item) => `agent ${item.agent}'s report came from attempt ${item.attempt}, a job on a worker (${item.flags}) whose result no orchestrator collected — the report its job sent early is not final, and the job may still be running and committing`).join('; ')} — nothing merged; re-run \`polywave run-wave ${context.implPath} --wave ${context.wave} ${pending[0]!.flags}\` (it awaits or adopts the job, then finalizes)`,
        data: { unsettled: pending },
      };
    }
    for (const agent of context.agents) {
      const status = agent.report?.status;
      if (status !== 'partial' && status !== 'blocked') continue;
      failures.push({
        agent: agent.id,
        status,
        ...(agent.report?.failure_type ? { failure_type: agent.report.failure_type } : {}),
        ...(agent.report?.notes ? { notes: agent.report.notes } : {}),
        decision: decideFailureAction({ failureType: agent.report?.failure_type, attempt: 1, ...(manifest.reactions ? { reactions: manifest.reactions } : {}) }),
      });
    }
    if (failures.length === 0) return { status: 'success', detail: `all ${context.agents.length} agent(s) report complete (E7)` };
    context.result.blocked_agents = failures;
    context.block = { reason: `E7: ${failures.map((failure) => `agent ${failure.agent} ${failure.status}`).join(', ')}`, mergeState: 'idle' };
    return {
      status: 'failed',
      detail: `E7: ${failures.map((failure) => `agent ${failure.agent} has status ${failure.status} (${failure.failure_type ?? 'no failure_type'} → E19: ${failure.decision.action}: ${failure.decision.note})`).join('; ')} — the wave does not merge (no partial merges); resolve the failing agent(s), then re-run finalize-wave`,
      data: { agents: failures },
    };
  },
};

/**
 * A20-49/A21-06: the agent's latest attempt as run-wave recorded it (`attempt.json`, orchestrator/attempt-record.ts), when it was dispatched — a job on a
 * worker — and never ended in an orchestrator (run-wave settles the record once the job's outcome was taken).
 */
export async function openDispatchedRecord(journalDir: string): Promise<{ attempt: number; flags: string } | undefined> {
  try {
    const value = JSON.parse(await readFile(path.join(journalDir, 'attempt.json'), 'utf8')) as { attempt?: unknown; dispatched?: unknown };
    if (typeof value.attempt !== 'number' || !value.dispatched || typeof value.dispatched !== 'object') return undefined;
    const flags = (value.dispatched as { flags?: unknown }).flags;
    return { attempt: value.attempt, flags: typeof flags === 'string' && flags !== '' ? flags : '--dispatch redis://…' };
  } catch {
    return undefined;
  }
}
