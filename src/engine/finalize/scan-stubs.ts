import { formatStubTable, scanStubsOnBranches, type AgentStubHit } from '../../analysis/index.js';
import { isProtocolOwnedPath } from '../../protocol/conflicts.js';
import type { StepDefinition } from '../step.js';
import type { FinalizeContext } from './context.js';

/**
 * E20 (informational unless `requireNoStubs`): the files each agent changed, read from its
 * branch (not from the pre-merge main checkout, where new files do not exist), scanned for stub
 * patterns. The hits go to `stub_reports.wave{N}` (one locked manifest edit) and are shown as
 * the E20 table.
 */
export const scanStubsStep: StepDefinition<FinalizeContext> = {
  name: 'scan-stubs',
  async run(context) {
    const hits: AgentStubHit[] = [];
    let scanned = 0;
    for (const repo of context.repos) {
      const agents = context.agents
        .filter((agent) => agent.repo === repo && agent.tip !== undefined)
        .map((agent) => ({ agentId: agent.id, ref: agent.tip!, files: (agent.diff ?? []).filter((entry) => entry.status !== 'D' && !isProtocolOwnedPath(entry.path)).map((entry) => entry.path) }));
      scanned += agents.reduce((sum, agent) => sum + agent.files.length, 0);
      if (agents.length === 0) continue;
      const found = await scanStubsOnBranches({ git: repo.git, agents });
      hits.push(...found.hits);
    }
    // The manifest's StubHit has no agent field (schema); the result keeps it.
    const stored = hits.map(({ agent_id: _agent, ...hit }) => hit);
    context.result.stub_report = { hits };
    const table = formatStubTable(hits, { wave: context.wave });
    context.result.stub_table = table;
    let saved = '';
    if (!context.dryRun) {
      context.pendingEdits.push({ edit: { path: ['stub_reports', `wave${context.wave}`], value: { hits: stored } }, what: `stub_reports.wave${context.wave}` });
      saved = `; recorded in stub_reports.wave${context.wave}`;
    }
    if (hits.length === 0) return { status: 'success', detail: `E20: no stub patterns in ${scanned} changed file(s)${saved}`, data: { hits, table } };
    const byAgent = [...new Set(hits.map((hit) => hit.agent_id))].map((agent) => `${agent}: ${hits.filter((hit) => hit.agent_id === agent).length}`);
    if (context.options.requireNoStubs) {
      context.block = { reason: 'E20: stubs found', mergeState: 'idle' };
      return { status: 'failed', detail: `E20: ${hits.length} stub pattern(s) (${byAgent.join(', ')}) and stubs are not allowed (--require-no-stubs)${saved}`, data: { hits, table } };
    }
    return { status: 'warning', detail: `E20: ${hits.length} stub pattern(s) found (${byAgent.join(', ')}) — informational, not blocking${saved}`, data: { hits, table } };
  },
};
