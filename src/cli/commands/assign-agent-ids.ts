import { PolywaveError } from '../../errors/polywave-error.js';
import { assignAgentIds, type AgentGrouping } from '../../protocol/agent-ids.js';
import type { CommandIo, CommandResult } from '../io.js';

/** `assign-agent-ids --count N [--grouping JSON]` — prints the IDs space-separated (as Go does). */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  let grouping: AgentGrouping[] | undefined;
  if (typeof options.grouping === 'string') {
    try {
      grouping = JSON.parse(options.grouping) as AgentGrouping[];
    } catch (error) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--grouping must be a JSON array: ${(error as Error).message}` });
    }
    if (!Array.isArray(grouping)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--grouping must be a JSON array' });
  }
  io.stdout(`${assignAgentIds(options.count as number, grouping).join(' ')}\n`);
  return 0;
}
