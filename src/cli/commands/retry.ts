import { dispatchFlagsFrom, dispatcherFromConfig } from '../../dispatch/from-config.js';
import path from 'node:path';
import { startRecording } from '../event-recording.js';
import { EventBus } from '../../engine/events.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { retryWave } from '../../orchestrator/retry-wave.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { createWaveProgress } from '../wave-progress.js';
import { interruptSignal, repoDirOption, waveOption } from './prepare-wave.js';
import { implPathFrom } from './shared.js';
import { withRunLock } from '../run-lock.js';
import { loadImpl } from '../../store/manifest-file.js';
import { agentsOfWave } from '../../protocol/waves.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { waveAgentRoles } from './run-wave.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';

function positive(options: Record<string, unknown>, name: string, flag: string, allowZero = false): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(number) || number < 0 || (!allowZero && number === 0)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} must be a ${allowZero ? 'non-negative' : 'positive'} number (got ${String(value)})` });
  return number;
}

/**
 * `retry <impl> --wave N [--agent X] [--gate-type T] [--max-retries K] [run-wave flags]` —
 * E7/E19/E7a: relaunch the failed agents of a wave (partial, blocked or no report) with the E19
 * retry context of their last report, then finalize when all completed. Prints `{wave,
 * max_retries, gate_type?, agents[{agent, attempt, previous_status, error_class, failure_type?,
 * relaunched}], final_state: passed|retrying|blocked, warnings, run?, success}`. Exit 0 passed,
 * 1 still failing or nothing to retry (R001_NOTHING_TO_RETRY), 2 bad input.
 */
async function retryCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  const gateType = typeof options.gateType === 'string' && options.gateType.trim() !== '' ? options.gateType.trim() : undefined;
  if (gateType !== undefined && !['build', 'test', 'lint'].includes(gateType)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --gate-type "${gateType}": must be one of build, test, lint` });
  const maxRetries = positive(options, 'maxRetries', '--max-retries', true);
  const timeout = positive(options, 'timeout', '--timeout');
  const maxTurns = positive(options, 'maxTurns', '--max-turns');
  const repoDir = typeof options.repoRoot === 'string' && options.repoRoot.trim() !== '' ? path.resolve(io.cwd, options.repoRoot) : repoDirOption(options, io);
  // Issue 17: --dispatch redis://… (or polywave.config.json `dispatch`): the relaunched agents run on `polywave worker`s.
  const dispatcher = await dispatcherFromConfig(dispatchFlagsFrom(options), { startDir: path.dirname(implPath), env: io.env });
  // Issue 13 (N4): the agents retry would relaunch (no complete report; --agent: that one) pass the
  // same pre-check as run-wave — credentials, backend package, model servers — before anything is
  // written (exit 2). Nothing to retry, an unknown wave or agent: retryWave's own refusals.
  try {
    const manifest = (await loadImpl(implPath)).parsed.manifest;
    const agentOption = typeof options.agent === 'string' && options.agent.trim() !== '' ? options.agent.trim() : undefined;
    const failed = !manifest
      ? []
      : agentsOfWave(manifest, wave)
      .map((agent) => agent.id ?? '')
          .filter((id) => id !== '' && manifest.completion_reports?.[id]?.status !== 'complete' && (agentOption === undefined || id === agentOption));
    // --max-retries 0 relaunches nobody (retryWave reports the agents as not relaunched): nothing to check.
    const relaunchesNone = maxRetries !== undefined && Math.floor(maxRetries) === 0;
    if (manifest && failed.length > 0 && !relaunchesNone) await requireAgentsReady(waveAgentRoles(manifest, wave, options, { only: failed, remote: dispatcher !== undefined }), io.env);
  } catch (error) {
    await dispatcher?.close();
    throw error;
  }
  const json = options.json === true;
  const events = new EventBus();
  const progress = json ? undefined : createWaveProgress(io, { tty: io.stderrIsTty === true, command: 'retry' });
  if (json) events.subscribe((event) => io.stdout(`${JSON.stringify(event)}\n`));
  else events.subscribe(progress!.onEvent);
  const recorder = startRecording(events, { command: 'retry', options, io, quiet: json });
  const interrupt = interruptSignal();
  try {
    const result = await retryWave({
      ...(dispatcher ? { dispatcher } : {}),
      implPath,
      wave,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      ...(typeof options.agent === 'string' && options.agent.trim() !== '' ? { agent: options.agent.trim() } : {}),
      ...(gateType ? { gateType } : {}),
      ...(maxRetries !== undefined ? { maxRetries: Math.floor(maxRetries) } : {}),
      ...(repoDir ? { repoDir } : {}),
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
      ...(typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? { mergeTarget: options.mergeTarget.trim() } : {}),
      ...(timeout ? { agentTimeoutMs: Math.round(timeout * 1000) } : {}),
      ...(maxTurns ? { maxTurns: Math.floor(maxTurns) } : {}),
      finalize: options.finalize !== false,
      skipCritic: options.skipCritic === true,
    });
    for (const warning of result.warnings) io.stderr(`retry: warning: ${warning}\n`);
    if (json) io.stdout(`${JSON.stringify({ v: 1, type: 'retry-result', result, ...(recorder ? { run_id: recorder.runId } : {}) })}\n`);
    else printJson(io, result);
    return result.success ? 0 : 1;
  } finally {
    await dispatcher?.close();
    recorder?.close();
    progress?.stop();
    interrupt.dispose();
  }
}

/** attack-serve-17 X1: the plan's run lock (the one `polywave run` and `polywave serve` take) for the command's life: a second run of the plan is RUN_IN_PROGRESS (exit 2), nothing changed. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  waveOption(options);
  const repoDir = typeof options.repoRoot === 'string' && options.repoRoot.trim() !== '' ? path.resolve(io.cwd, options.repoRoot) : repoDirOption(options, io);
  await refuseImplOfRunningProgram(implPath, { command: 'retry', cwd: io.cwd, mergeTarget: options.mergeTarget, env: io.env });
  return withRunLock(repoDir ?? io.cwd, implPath, () => retryCommand(args, options, io));
}
