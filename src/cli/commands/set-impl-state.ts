import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { checkTransition, e15CompletionGuard, isProtocolState } from '../../protocol/state-machine.js';
import { protocolStates } from '../../protocol/schema/impl-schema.js';
import { editImpl } from '../../store/manifest-file.js';
import { commitFiles } from '../../git/commit-files.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `set-impl-state <impl> --state S [--commit] [--commit-msg M]` — the state machine's only
 * writer from the CLI: refuses illegal transitions (exit 1) listing the legal targets, and
 * (E15, issue 13) REVIEWED/BLOCKED → COMPLETE, which would skip the WAVE_VERIFIED guard.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const target = requireOption(options, 'state', '--state').toUpperCase();
  if (!isProtocolState(target)) {
    throw new PolywaveError({ code: 'V008_INVALID_STATE', message: `unknown state "${target}" — must be one of: ${protocolStates.join(', ')}` });
  }
  const outcome = await editImpl(filePath, (parsed) => {
    const manifest = requireManifest(parsed, filePath);
    const check = checkTransition(manifest.state, target, manifest);
    if (!check.ok) throw new PolywaveError({ code: check.finding.code, message: check.finding.message, exitCode: 1 });
    const guard = e15CompletionGuard(manifest.state, target);
    if (guard) throw new PolywaveError({ code: guard.code, message: `${guard.message}; ${guard.suggestion ?? ''}`.replace(/; $/, ''), exitCode: 1 });
    return { edits: [{ path: ['state'], value: target }], outcome: { previous: manifest.state ?? '', warnings: check.warnings } };
  });
  for (const warning of outcome.warnings) io.stderr(`polywave: warning[${warning.code}]: ${warning.message}\n`);
  let commitSha: string | undefined;
  if (options.commit) {
    const message = typeof options.commitMsg === 'string' && options.commitMsg.trim() !== '' ? options.commitMsg : `chore: set IMPL state to ${target}`;
    commitSha = await commitFiles({ cwd: path.dirname(filePath), files: [filePath], message, env: io.env });
  }
  printJson(io, { previous_state: outcome.previous, new_state: target, committed: commitSha !== undefined, ...(commitSha ? { commit_sha: commitSha } : {}) });
  return 0;
}
