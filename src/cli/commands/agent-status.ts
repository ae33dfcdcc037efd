import { agentStatus, formatAgentStatusTable } from '../../engine/agent-status.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';
import { implPathFrom } from './shared.js';

/**
 * `agent-status <impl> [--json] [--repo-dir D]` — E50: per agent of every wave: role, branch,
 * commits since base, report, status (plus a critic row). Text table by default, JSON
 * `{impl_slug, state, agents[{id, role, branch, commit_count, has_report, status}]}` with --json.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const repoDir = repoDirOption(options, io);
  const result = await agentStatus({ implPath, ...(repoDir ? { repoDir } : {}), env: io.env });
  if (options.json === true) printJson(io, result);
  else io.stdout(formatAgentStatusTable(result));
  return 0;
}
