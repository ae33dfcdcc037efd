import { ownershipDenials, readDenials, type DenialRecord } from '../jail-denials.js';
import { journalPaths } from '../journal.js';
import type { StepDefinition } from '../step.js';
import type { FinalizeContext } from './context.js';

/**
 * Issue 13: writes the jail refused an agent are shown where the merge is decided. An agent whose
 * writes to repository files were refused may report `complete` and still lack part of its work
 * (a moved function that could not be removed from a file it does not own): listed here as a
 * warning, and with `--strict-ownership` its wave does not merge.
 */
export const jailDenialsStep: StepDefinition<FinalizeContext> = {
  name: 'check-jail-denials',
  async run(context) {
    const found: Array<{ agent: string; refused: DenialRecord[] }> = [];
    await Promise.all(
      context.agents.map(async (agent) => {
        const refused = ownershipDenials(await readDenials(journalPaths(agent.repo.root, context.slug, context.wave, agent.id).dir));
        if (refused.length > 0) found.push({ agent: agent.id, refused });
      }),
    );
    found.sort((a, b) => a.agent.localeCompare(b.agent));
    if (found.length === 0) return { status: 'success', detail: 'no write of any agent was refused by the jail' };
    const data = { agents: found.map((entry) => ({ agent: entry.agent, refused_writes: entry.refused.map((record) => ({ target: record.target ?? '', code: record.code, reason: record.reason })) })) };
    const listing = found.map((entry) => `agent ${entry.agent}: ${entry.refused.map((record) => `${record.target ?? record.tool} (${record.code})`).join(', ')}`).join('; ');
    if (context.options.strictOwnership) {
      context.block = { reason: `--strict-ownership: the jail refused writes of ${found.map((entry) => `agent ${entry.agent}`).join(', ')}`, mergeState: 'idle' };
      return { status: 'failed', detail: `--strict-ownership: writes refused by the jail — ${listing}; the merge would lack them: re-plan the ownership (amend-impl) or re-run without --strict-ownership to merge anyway`, data };
    }
    return { status: 'warning', detail: `writes refused by the jail — ${listing}; the merged tree may lack them (recorded in the agents' out_of_scope_deps; --strict-ownership blocks the merge)`, data };
  },
};
