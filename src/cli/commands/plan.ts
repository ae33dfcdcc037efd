import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runPlanner } from '../../orchestrator/run-planner.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { acquireRunLock } from '../run-lock.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { projectDirOf } from './repo-dir-option.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { requireAgentScripts } from './program-execute.js';

/**
 * `polywave plan "<large feature>" [--slug S] [--requirements FILE] [--model M]` — the Planner
 * writes docs/PROGRAM/PROGRAM-<slug>.yaml (validated, corrected up to 3 attempts) in state
 * VALIDATING once validated; a human approves it with `update-program-state --state REVIEWED`.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const description = args.join(' ').trim();
  if (description === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'plan needs a description of the project, e.g. polywave plan "an invoicing system with billing, PDFs and email"' });
  const repoDir = await projectDirOf(options, io);
  // P13-01: the Planner's model before anything (credentials, backend, server, agent script; exit 2, nothing written) —
  // an unknown backend ran the Planner three times and printed 60 lines of attempts.
  const roles = [{ role: 'the Planner', model: typeof options.model === 'string' && options.model.trim() !== '' ? options.model.trim() : undefined }];
  requireAgentScripts(await requireAgentsReady(roles, io.env), roles, repoDir, io.env);
  const result = await runPlanner({
    description,
    repoDir,
    env: io.env,
    now: io.now,
    ...(typeof options.slug === 'string' ? { slug: options.slug } : {}),
    ...(typeof options.requirements === 'string' ? { requirementsPath: options.requirements } : {}),
    ...(typeof options.model === 'string' ? { model: options.model } : {}),
    ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
    // P15-09: the PROGRAM's run lock for the plan's life (RUN_IN_PROGRESS for a second plan of it, decided by the kernel).
    lock: (programPath) => acquireRunLock(repoDir, programPath),
  });
  if (result.recovered !== undefined) io.stderr(`plan: ${result.recovered}\n`);
  printJson(io, result);
  for (const attempt of result.attempts) if (attempt.undone) io.stderr(`plan: warning[PLANNER_DOC_CHANGED_BY_PROCESS]: attempt ${attempt.attempt}: ${attempt.undone}\n`);
  const relative = path.relative(io.cwd, result.program_path);
  if (result.success) io.stderr(`plan: ${relative} written and validated (state ${result.state || '?'}). Review it, then approve: polywave update-program-state ${relative} --state REVIEWED, and run: polywave program-execute ${relative}\n`);
  else io.stderr(`plan: the Planner did not produce a valid PROGRAM after ${result.attempts.length} attempt(s); see the errors above\n`);
  return result.success ? 0 : 1;
}
