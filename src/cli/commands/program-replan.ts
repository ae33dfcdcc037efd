import { existsSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { sayRecovered } from '../replan-recovery.js';
import { acquireRunLock } from '../run-lock.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { replanProgram, warningLine } from '../../orchestrator/run-planner.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { linkedDocsDirectory, projectDirOf, repoDirOption, topLevelOf } from './repo-dir-option.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { requireAgentScripts } from './program-execute.js';

/**
 * `polywave program-replan <program> --reason "…" [--tier N] [--model M]` — E34: the Planner
 * revises the PROGRAM (frozen contracts and completed IMPLs must stay as they are, else the
 * original is restored); the revision waits in REPLANNING for a human's approval.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const target = args[0]?.trim() ?? '';
  if (target === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'program-replan needs the path of a PROGRAM manifest' });
  if (typeof options.reason !== 'string' || options.reason.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'program-replan needs --reason "<what failed or what must change>"' });
  const tier = options.tier === undefined ? undefined : Number(options.tier);
  if (tier !== undefined && (!Number.isInteger(tier) || tier < 1)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--tier must be a positive integer, got ${String(options.tier)}` });
  const given = path.resolve(io.cwd, target);
  // P13-01: a PROGRAM that is not there is said first (it was AGENT_CREDENTIALS_MISSING on a machine without keys).
  if (!existsSync(given) || !statSync(given).isFile()) throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `PROGRAM manifest not found: ${target} — nothing was started or changed`, exitCode: 2 });
  // P14-06: the manifest by its real path (a symlink to it was replaced by a regular file, the real one untouched) and the
  // top of ITS work tree (the Planner works there: --repo-dir src/deep or a path through an in-repo link left its edits
  // nowhere, and the re-plan reported a revision) — refused, like program-execute, unless at docs/PROGRAM/ of that tree.
  const programPath = realpathSync(given);
  const repoDir = (await topLevelOf(path.dirname(programPath), io.env)) ?? (await projectDirOf(options, io));
  const asked = repoDirOption(options, io);
  if (asked !== undefined && (existsSync(asked) ? realpathSync(asked) : asked) !== repoDir) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', exitCode: 2, message: `--repo-dir ${String(options.repoDir)} is not the top of the work tree holding ${target} (${repoDir}): a re-plan works there; nothing was started or changed` });
  }
  const relativeProgram = path.relative(repoDir, programPath).split(path.sep).join('/');
  // P15-20: a committed docs/PROGRAM (or docs) link named, with the commands that replace it.
  const linked = linkedDocsDirectory(repoDir, 'PROGRAM', 'the PROGRAM manifests');
  if (linked !== undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', exitCode: 2, message: `a re-plan cannot revise ${target}: ${linked}` });
  if (!/^docs\/PROGRAM\/PROGRAM-[^/]+\.ya?ml$/.test(relativeProgram)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', exitCode: 2, message: `a re-plan revises a PROGRAM at docs/PROGRAM/PROGRAM-<slug>.yaml of its repository, not ${relativeProgram.startsWith('../') ? programPath : relativeProgram}; nothing was started or changed` });
  }
  // The Planner's model before anything else: credentials, backend, server, agent script (exit 2).
  // (The PROGRAM's state and --tier are checked by replanProgram, before its backup.)
  const roles = [{ role: 'the Planner', model: typeof options.model === 'string' && options.model.trim() !== '' ? options.model.trim() : undefined }];
  requireAgentScripts(await requireAgentsReady(roles, io.env), roles, repoDir, io.env);
  // One run on a PROGRAM at a time (outside attack P12-10: a re-plan rewrote the manifest under a running tier loop):
  // the lock program-execute holds; RUN_IN_PROGRESS (exit 2, nothing changed) while it runs.
  const releaseLock = existsSync(programPath) ? acquireRunLock(repoDir, programPath) : () => undefined;
  try {
    await sayRecovered(repoDir, programPath, io);
    const result = await replanProgram({
      programPath,
      repoDir,
      reason: options.reason,
      env: io.env,
      now: io.now,
      ...(tier !== undefined ? { tier } : {}),
      ...(typeof options.model === 'string' ? { model: options.model } : {}),
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
    });
    printJson(io, result);
    // P15-22: the human approving the revision is told what the Planner's processes changed in the PROGRAM (undone).
    for (const warning of result.warnings ?? []) io.stderr(`program-replan: ${warningLine(warning)}\n`);
    return result.validation_passed ? 0 : 1;
  } finally {
    releaseLock();
  }
}

