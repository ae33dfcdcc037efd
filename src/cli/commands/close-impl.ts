import { existsSync } from 'node:fs';
import path from 'node:path';
import { closeImpl } from '../../engine/close-impl.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';
import { acquireRunLock } from '../run-lock.js';

/** `--date YYYY-MM-DD` (a real calendar date), default: today in local time. */
export function dateOption(options: Record<string, unknown>, io: CommandIo): string {
  const value = options.date;
  if (value === undefined || value === true) {
    const now = io.now();
    return `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}-${String(now.getDate()).padStart(2, '0')}`;
  }
  const text = String(value).trim();
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const parsed = match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : undefined;
  if (!match || !parsed || parsed.getUTCMonth() + 1 !== Number(match[2]) || parsed.getUTCDate() !== Number(match[3])) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--date expects a date YYYY-MM-DD, got "${text}"` });
  }
  return text;
}

/**
 * The `<impl>` of close-impl: like every command (path, file name or slug), plus the original
 * path of a manifest that an interrupted close-impl already moved to `complete/`.
 */
function closeTarget(args: string[], io: CommandIo): string {
  const reference = args[0] ?? '';
  try {
    return resolveManifestPath(reference, { cwd: io.cwd, kind: 'impl' }).path;
  } catch (error) {
    const direct = path.resolve(io.cwd, reference.trim());
    if (reference.trim() !== '' && existsSync(path.join(path.dirname(direct), 'complete', path.basename(direct)))) return direct;
    throw error;
  }
}

/**
 * `close-impl <impl> [--date YYYY-MM-DD] [--force] [--repo-dir D]` — E15 + E18: mark COMPLETE
 * (state, completion_date, `# polywave:complete` marker), archive to docs/IMPL/complete/, update
 * docs/CONTEXT.md, clean the slug's stale worktrees, all in one commit. Re-runnable after a
 * crash. Prints compact JSON `{marked, date, archived_path, context_updated, context_path,
 * worktrees_cleaned, committed, commit_sha, …, steps[]}`; progress lines on stderr. Exit 1 when the IMPL is not finished (nothing
 * changed) or the commit failed.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = closeTarget(args, io);
  const date = dateOption(options, io);
  const repoDir = repoDirOption(options, io);
  // --force closes it on the current branch anyway (a PROGRAM's IMPL is closed by finalize-tier).
  if (options.force !== true) await refuseImplOfRunningProgram(implPath, { command: 'close-impl', cwd: io.cwd, env: io.env, ...(repoDir ? { repoDir } : {}) });
  // P14-40: the plan's run lock (the one `run`, run-wave and the tier loop hold while they run it): with --force too —
  // a close while a run still runs the IMPL committed on main mid-tier and archived the doc under its wave.
  const releaseLock = acquireRunLock(repoDir ?? io.cwd, implPath);
  let result: Awaited<ReturnType<typeof closeImpl>>;
  try {
    result = await closeImpl({
      implPath,
      date,
      force: options.force === true,
      ...(repoDir ? { repoDir } : {}),
      env: io.env,
      onStep: (step) => io.stderr(`close-impl: [${step.step}] ${step.status} — ${step.detail}\n`),
    });
  } finally {
    releaseLock();
  }
  for (const warning of result.warnings) io.stderr(`close-impl: warning: ${warning}\n`);
  // commit_paths is for callers that commit themselves (finalize-tier); the CLI committed already.
  const { commit_paths: _commitPaths, ...output } = result;
  printJson(io, output, { compact: true });
  return result.commit_error === undefined ? 0 : 1;
}
