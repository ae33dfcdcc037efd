import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runReview } from '../../orchestrator/run-review.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { interruptSignal } from './prepare-wave.js';

/**
 * `run-review [--model M] [--threshold N] [--blocking]` — LLM code review of the latest commit's
 * diff (Go `run-review`): scores per dimension, overall, summary, `passed = overall >= threshold`.
 * Exit 0; 1 only with `--blocking` when the review did not pass or could not be made; 2 bad input.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const raw = options.threshold;
  const threshold = raw === undefined ? 70 : Number(raw);
  if (!Number.isFinite(threshold) || threshold < 0 || threshold > 100) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--threshold must be 0–100 (got ${String(raw)})` });
  const repoDir = path.resolve(io.cwd, typeof options.repoDir === 'string' && options.repoDir !== '' ? options.repoDir : '.');
  const interrupt = interruptSignal();
  try {
    const result = await runReview({
      repoDir,
      threshold,
      env: io.env,
      signal: interrupt.signal,
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
    });
    printJson(io, result);
    if (result.error) io.stderr(`run-review: [${result.error.code}] ${result.error.message}\n`);
    return options.blocking === true && !result.passed ? 1 : 0;
  } finally {
    interrupt.dispose();
  }
}
