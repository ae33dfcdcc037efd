import type { ImplManifest } from './schema/impl-schema.js';

/** The E23 per-agent context payload (`extract-context`; Go's `AgentContextJSONPayload` keys). */
export interface AgentContextPayload {
  /** Absolute path of the IMPL doc: the agent writes its completion report there (I4, I5). */
  impl_doc_path: string;
  agent_id: string;
  /** The wave the agent belongs to. */
  wave: number;
  agent_task: string;
  /** E23: the full File Ownership table (every agent's rows: the agent sees what it must not touch). */
  file_ownership: ImplManifest['file_ownership'];
  interface_contracts: NonNullable<ImplManifest['interface_contracts']>;
  scaffolds: NonNullable<ImplManifest['scaffolds']>;
  quality_gates: ImplManifest['quality_gates'] | null;
  /** E35 Layer 3C: the agent's wiring declarations as a markdown table (only when it has some). */
  wiring_obligations?: string;
}

function cell(value: unknown): string {
  return String(value ?? '').replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();
}

/** E35 Layer 3C: the markdown table of an agent's `wiring` declarations ('' when it has none). */
export function wiringObligationsSection(manifest: ImplManifest, agentId: string): string {
  const entries = (manifest.wiring ?? []).filter((entry) => entry.agent === agentId);
  if (entries.length === 0) return '';
  const rows = entries.map((entry) => `| ${cell(entry.symbol)} | ${cell(entry.defined_in)} | ${cell(entry.must_be_called_from)} | ${cell(entry.integration_pattern)} | ${cell(entry.wave)} |`);
  return [
    '## Wiring Obligations (E35)',
    '',
    'Wire these exports into the named call sites; `validate-integration` checks each one after the merge (a missing call is an error).',
    '',
    '| Symbol | Defined In | Must Be Called From | Pattern | Wave |',
    '|--------|------------|---------------------|---------|------|',
    ...rows,
    '',
  ].join('\n');
}

/**
 * E23: what one wave agent receives instead of the whole IMPL doc — its own task, the interface
 * contracts, the file ownership table, the scaffolds, the quality gates and the absolute IMPL
 * path (plus its E35 wiring obligations). `undefined` when no wave has the agent.
 */
export function extractAgentContext(manifest: ImplManifest, agentId: string, implPath: string): AgentContextPayload | undefined {
  for (const wave of manifest.waves) {
    const agent = (wave.agents ?? []).find((candidate) => candidate.id === agentId);
    if (!agent) continue;
    const wiring = wiringObligationsSection(manifest, agentId);
    return {
      impl_doc_path: implPath,
      agent_id: agentId,
      wave: wave.number ?? 0,
      agent_task: agent.task ?? '',
      file_ownership: manifest.file_ownership,
      interface_contracts: manifest.interface_contracts ?? [],
      scaffolds: manifest.scaffolds ?? [],
      quality_gates: manifest.quality_gates ?? null,
      ...(wiring !== '' ? { wiring_obligations: wiring } : {}),
    };
  }
  return undefined;
}
