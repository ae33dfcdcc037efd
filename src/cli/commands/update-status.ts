import { PolywaveError } from '../../errors/polywave-error.js';
import { applyStatusUpdate } from '../../protocol/completion-report.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import { editImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/** `update-status <impl> --wave N --agent ID --status S [--commit SHA]` (E7). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const agentId = requireOption(options, 'agent', '--agent');
  const status = requireOption(options, 'status', '--status');
  const data = await editImpl(filePath, (parsed) => {
    const manifest = requireManifest(parsed, filePath);
    const result = applyStatusUpdate(manifest, {
      wave: options.wave as number,
      agentId,
      status,
      ...(typeof options.commit === 'string' ? { commit: options.commit } : {}),
    });
    if (!result.ok) throw new PolywaveError({ code: result.finding.code, message: result.finding.message, exitCode: result.finding.code === 'G003_COMMIT_MISSING' ? 1 : 2 });
    const existing = manifest.completion_reports?.[agentId];
    // Field-level edits keep every other field of an existing report (and its comments) as written.
    const edits: YamlEdit[] = existing
      ? [
          { path: ['completion_reports', agentId, 'status'], value: result.report.status },
          ...(result.report.commit && result.report.commit !== existing.commit ? [{ path: ['completion_reports', agentId, 'commit'], value: result.report.commit }] : []),
          ...(result.report.status === 'complete' && existing.failure_type !== undefined ? [{ path: ['completion_reports', agentId, 'failure_type'], delete: true as const }] : []),
        ]
      : [{ path: ['completion_reports', agentId], value: result.report }];
    return { edits, outcome: result.data };
  });
  printJson(io, data);
  return 0;
}
