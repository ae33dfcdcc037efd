import { PolywaveError } from '../../errors/polywave-error.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { findWave } from '../../protocol/waves.js';
import { requireOption } from './shared.js';

/** `--wave N --agent ID` of the journal commands, checked against the manifest (exit 1 with `code` when the agent is not in that wave). */
export function journalAgent(manifest: ImplManifest, options: Record<string, unknown>, code: string): { wave: number; agentId: string } {
  const agentId = requireOption(options, 'agent', '--agent');
  const wave = options.wave;
  if (typeof wave !== 'number' || wave < 1) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--wave is required (a wave number >= 1)' });
  const agents = (findWave(manifest, wave)?.agents ?? []).map((agent) => agent.id);
  if (!agents.includes(agentId)) {
    throw new PolywaveError({ code, message: `agent ${agentId} is not in wave ${wave} of this IMPL (wave ${wave} agents: ${agents.join(', ') || 'none'})`, exitCode: 1 });
  }
  return { wave, agentId };
}
