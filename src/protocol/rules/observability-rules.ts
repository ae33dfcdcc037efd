import { protocolStates } from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { isBlank, report } from './rule-helpers.js';

/** Where the Scout has written the IMPL and the feature is not finished (E44 "active IMPL"). */
const activeStates = new Set<string>(protocolStates.filter((state) => !['INTERVIEWING', 'COMPLETE', 'NOT_SUITABLE'].includes(state)));
/** States in which wave agents have been launched (E44: context_source expected). */
const launchedStates = new Set(['WAVE_EXECUTING', 'WAVE_MERGING', 'WAVE_VERIFIED']);

/**
 * E44 (Scout obligation): an active IMPL records how the Scout received its reference files
 * (`polywave set-injection-method <impl> --method hook|manual-fallback|unknown`). A warning —
 * E44 enforcement is non-blocking. Checked only when `state` is a protocol state of an active IMPL.
 */
export const injectionMethodRecorded: ImplRule = {
  name: 'injection-method-recorded',
  reference: 'E44',
  codes: ['E44_INJECTION_METHOD_MISSING'],
  check(context) {
    const state = (context.manifest.state ?? '').trim();
    if (!activeStates.has(state) || !isBlank(context.manifest.injection_method)) return [];
    return [
      report(context, {
        code: 'E44_INJECTION_METHOD_MISSING',
        severity: 'warning',
        message: `injection_method is not recorded on this ${state} IMPL — the Scout runs: polywave set-injection-method <impl> --method hook|manual-fallback|unknown`,
        path: ['state'],
      }),
    ];
  },
};

/**
 * E44 (orchestrator obligation): once agents run (WAVE_EXECUTING, WAVE_MERGING, WAVE_VERIFIED),
 * every launched wave agent records its prompt path in `context_source` (prepare-wave and
 * prepare-agent write `prepared-brief`). Launched = its wave has a `base_commit` (worktrees were
 * created) or it has a completion report. One warning per agent, non-blocking.
 */
export const contextSourceRecorded: ImplRule = {
  name: 'context-source-recorded',
  reference: 'E44',
  codes: ['E44_CONTEXT_SOURCE_MISSING'],
  check(context) {
    const state = (context.manifest.state ?? '').trim();
    if (!launchedStates.has(state)) return [];
    const reports = context.manifest.completion_reports ?? {};
    return context.manifest.waves.flatMap((wave, waveIndex) =>
      (wave.agents ?? []).flatMap((agent, agentIndex) => {
        const launched = !isBlank(wave.base_commit) || (agent.id !== undefined && reports[agent.id] !== undefined);
        if (!launched || !isBlank(agent.context_source)) return [];
        return [
          report(context, {
            code: 'E44_CONTEXT_SOURCE_MISSING',
            severity: 'warning',
            message: `agent ${agent.id ?? `#${agentIndex}`} of wave ${wave.number ?? waveIndex + 1} has no context_source (E44: prepared-brief, cross-repo-full or fallback-full-context) in state ${state}`,
            path: ['waves', waveIndex, 'agents', agentIndex],
          }),
        ];
      }),
    );
  },
};
