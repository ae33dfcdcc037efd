import { PolywaveError } from '../errors/polywave-error.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { editImpl } from '../store/manifest-file.js';

/** One `interface_deviations` entry of a completion report, with the agent that reported it. */
export interface ReportedDeviation {
  /** The agent whose completion report lists the deviation. */
  agent: string;
  /** The wave of that agent (0 when it is in no wave). */
  wave: number;
  description: string;
  downstream_action_required: boolean;
  /** Agents (IDs) the reporter says are affected. */
  affects: string[];
}

/**
 * E6/E8: every `interface_deviations` entry of every completion report, in wave then report
 * order. The protocol leaves applying them to a human (E6 note); the orchestrator's job is to
 * surface them — agent-status, update-agent-prompt and finalize-impl show these.
 */
export function reportedDeviations(manifest: ImplManifest): ReportedDeviation[] {
  const waveOf = new Map<string, number>();
  for (const wave of manifest.waves ?? []) for (const agent of wave.agents ?? []) if (agent.id) waveOf.set(agent.id, wave.number ?? 0);
  const deviations: ReportedDeviation[] = [];
  for (const [agent, report] of Object.entries(manifest.completion_reports ?? {})) {
    for (const deviation of report?.interface_deviations ?? []) {
      deviations.push({
        agent,
        wave: waveOf.get(agent) ?? 0,
        description: deviation.description ?? '',
        downstream_action_required: deviation.downstream_action_required === true,
        affects: [...(deviation.affects ?? [])],
      });
    }
  }
  return deviations.sort((a, b) => a.wave - b.wave);
}

/** Options of {@link updateAgentPrompt}. */
export interface UpdateAgentPromptOptions {
  implPath: string;
  agent: string;
  /** The new task text (the agent's prompt section in the IMPL, E6). */
  prompt: string;
}

/** Result of {@link updateAgentPrompt} (the Go keys `agent`, `updated`, plus ours). */
export interface UpdateAgentPromptResult {
  agent: string;
  /** False when the task already had this text (nothing written). */
  updated: boolean;
  wave: number;
  /** Deviations reported by other agents that name this agent in `affects` (what the new prompt should address). */
  interface_deviations: ReportedDeviation[];
  warnings: string[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * E6: replaces `waves[].agents[<agent>].task` in the IMPL (the single source of truth, I4) through
 * the locked, format-preserving writer; the agent's next launch renders its brief from it.
 * Refuses an agent that is in no wave (`A006_AGENT_NOT_FOUND`, exit 1, nothing written). An agent
 * with a complete report is updated with a warning (it will not run again unless re-run).
 */
export async function updateAgentPrompt(options: UpdateAgentPromptOptions): Promise<UpdateAgentPromptResult> {
  if (options.prompt.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'the new prompt is empty' });
  return editImpl(options.implPath, (parsed) => {
    const manifest = parsed.manifest;
    if (!manifest) {
      const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
      throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: `${options.implPath}: ${first?.message ?? 'manifest is not usable'} (run: polywave validate)` });
    }
    const rawWaves = isRecord(parsed.data) ? parsed.data.waves : undefined;
    let location: { waveIndex: number; agentIndex: number; wave: number; task: unknown } | undefined;
    if (Array.isArray(rawWaves)) {
      rawWaves.forEach((wave, waveIndex) => {
        if (!isRecord(wave) || !Array.isArray(wave.agents)) return;
        wave.agents.forEach((agent, agentIndex) => {
          if (location === undefined && isRecord(agent) && agent.id === options.agent) location = { waveIndex, agentIndex, wave: typeof wave.number === 'number' ? wave.number : 0, task: agent.task };
        });
      });
    }
    if (location === undefined) {
      const known = (manifest.waves ?? []).flatMap((wave) => (wave.agents ?? []).map((agent) => agent.id)).filter(Boolean);
      throw new PolywaveError({ code: 'A006_AGENT_NOT_FOUND', message: `agent ${options.agent} is not in any wave of ${options.implPath} (agents: ${known.join(', ') || 'none'}); nothing changed`, exitCode: 1 });
    }
    const warnings: string[] = [];
    const status = manifest.completion_reports?.[options.agent]?.status;
    if (status === 'complete') warnings.push(`agent ${options.agent} already has a complete report: the new prompt takes effect only if it is re-run`);
    const interface_deviations = reportedDeviations(manifest).filter((deviation) => deviation.agent !== options.agent && deviation.affects.includes(options.agent));
    const updated = location.task !== options.prompt;
    return {
      edits: updated ? [{ path: ['waves', location.waveIndex, 'agents', location.agentIndex, 'task'], value: options.prompt }] : [],
      outcome: { agent: options.agent, updated, wave: location.wave, interface_deviations, warnings },
    };
  });
}
