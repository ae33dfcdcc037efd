import { buildRetryContext } from '../../orchestrator/retry-context.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `build-retry-context <impl> --agent X [--attempt n]` (E19, E7a) — the retry prompt context of a
 * failed agent from its completion report. Prints `{attempt_number, agent_id, error_class,
 * error_excerpt, gate_results, suggested_fixes, prior_notes, prompt_text, failure_type?,
 * language?}`; exit 1 when the agent has no completion report (R002_REPORT_MISSING).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const agentId = requireOption(options, 'agent', '--agent');
  const attempt = typeof options.attempt === 'number' && options.attempt >= 1 ? options.attempt : 1;
  const { parsed } = await loadImpl(filePath);
  printJson(io, buildRetryContext(requireManifest(parsed, filePath), agentId, { attempt }));
  return 0;
}
