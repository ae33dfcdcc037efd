import path from 'node:path';
import { slugOfFeature } from '../../orchestrator/autopilot.js';
import { loadImpl } from '../../store/manifest-file.js';
import type { CommandIo, CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';
import { run as runAutopilotCommand } from './run.js';

/**
 * `auto "<feature>" [--scout-model M] [--wave-model M] [--model M] [--timeout MIN] [--skip-confirm]
 * [--protocol-repo DIR] [--json]` — the Go CLI's name for the whole run: Scout → plan summary →
 * confirmation → every wave → close. It is `polywave run` with Go's flags: `--skip-confirm`
 * approves the plan (`--yes`), `--timeout` is per agent in minutes (Go's default 10), and
 * `--protocol-repo` is accepted and ignored (the protocol texts are built in). Exit 0 complete or
 * NOT_SUITABLE (as Go), 1 stopped or failed, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const minutes = options.timeout === undefined ? 10 : Number(options.timeout);
  const mapped: Record<string, unknown> = {
    ...options,
    ...(options.skipConfirm === true ? { yes: true } : {}),
    ...(Number.isFinite(minutes) && minutes > 0 ? { timeout: minutes * 60 } : { timeout: undefined }),
  };
  delete mapped.skipConfirm;
  delete mapped.protocolRepo;
  const code = await runAutopilotCommand(args, mapped, io);
  if (code === 1) {
    const feature = args[0]?.trim() ?? '';
    const repoDir = repoDirOption(options, io) ?? io.cwd;
    const implPath = path.join(repoDir, 'docs', 'IMPL', `IMPL-${slugOfFeature(feature)}.yaml`);
    const state = (await loadImpl(implPath).catch(() => undefined))?.parsed.manifest?.state;
    if (state === 'NOT_SUITABLE') return 0;
  }
  return code;
}
