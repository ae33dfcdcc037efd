import { PolywaveError } from '../../errors/polywave-error.js';
import { extractAgentContext } from '../../protocol/agent-context.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `extract-context <impl> --agent ID` — E23: the per-agent payload a wave agent is launched with
 * instead of the whole IMPL: `{impl_doc_path (absolute), agent_id, wave, agent_task,
 * file_ownership (the full table), interface_contracts, scaffolds, quality_gates,
 * wiring_obligations?}`. Exit 0, 1 when no wave has the agent (A006_BRIEF_EXTRACT_FAIL), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const agentId = requireOption(options, 'agent', '--agent');
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const payload = extractAgentContext(manifest, agentId, implPath);
  if (!payload) {
    const known = manifest.waves.flatMap((wave) => (wave.agents ?? []).map((agent) => agent.id)).filter(Boolean);
    throw new PolywaveError({ code: 'A006_BRIEF_EXTRACT_FAIL', message: `agent ${agentId} is not in any wave of ${implPath} (agents: ${known.join(', ') || 'none'})`, exitCode: 1 });
  }
  printJson(io, payload);
  return 0;
}
