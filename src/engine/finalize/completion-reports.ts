import { decideFailureAction } from '../../protocol/e19.js';
import type { StepDefinition } from '../step.js';
import { manifestOf, type AgentFailure, type FinalizeContext } from './context.js';

/** I4: every agent of the wave has a completion report in the manifest. */
export const completionReportsStep: StepDefinition<FinalizeContext> = {
  name: 'verify-completion-reports',
  run(context) {
    const missing = context.agents.filter((agent) => agent.report === undefined).map((agent) => agent.id);
    if (missing.length > 0) {
      return {
        status: 'failed',
        detail: `finalize-wave: missing completion reports for agents: [${missing.join(', ')}] — agents must call polywave-tools set-completion before merge (I4)`,
        data: { missing },
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
  run(context) {
    const manifest = manifestOf(context);
    const failures: AgentFailure[] = [];
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
