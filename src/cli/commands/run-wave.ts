import { EventBus } from '../../engine/events.js';
import { startRecording } from '../event-recording.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runWave } from '../../orchestrator/run-wave.js';
import { loadImpl } from '../../store/manifest-file.js';
import { acquireRunLock } from '../run-lock.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { createWaveProgress } from '../wave-progress.js';
import { oneTerminalLine } from '../terminal-text.js';
import { interruptSignal, repoDirOption, waveOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { budgetFrom } from '../budget-option.js';
import { requireAgentsReady, type LaunchRole } from '../../agents/model-preflight.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { agentsOfWave, isWaveFinished } from '../../protocol/waves.js';
import { dispatchFlagsFrom, dispatcherFromConfig } from '../../dispatch/from-config.js';
import path from 'node:path';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';

function positiveNumber(options: Record<string, unknown>, name: string, flag: string): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} must be a positive number (got ${String(value)})` });
  return number;
}

/**
 * The roles the agents of a wave launch as (each agent's own `model:`, else --model, else the
 * environment's default), for {@link requireAgentsReady}; `only`: just these agent ids.
 */
export function waveAgentRoles(manifest: ImplManifest, wave: number, options: Record<string, unknown>, extra: { only?: readonly string[]; remote?: boolean } = {}): LaunchRole[] {
  const cliModel = typeof options.model === 'string' && options.model.trim() !== '' ? options.model.trim() : undefined;
  return agentsOfWave(manifest, wave)
    .filter((agent) => extra.only === undefined || extra.only.includes(agent.id ?? ''))
    .map((agent) => ({ role: `agent ${agent.id ?? '?'}`, model: agent.model?.trim() || cliModel, ...(extra.remote ? { remote: true } : {}) }));
}

/**
 * `run-wave <impl> --wave N [--model M] [--concurrency K] [--no-prioritize] [--timeout S]
 * [--max-turns T] [--auto] [--json] [--no-finalize] …` — runs a wave of agents for real:
 * prepare, launch (E1), E42 on each stop, E19 reactions, finalize. Progress on stderr (a live
 * table on a terminal); `--json` streams the events as NDJSON on stdout instead, ending with the
 * result. Exit 0 when the wave is verified, 1 when it is blocked, 2 for bad input.
 */
async function runWaveCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  await refuseImplOfRunningProgram(implPath, { command: 'run-wave', cwd: io.cwd, mergeTarget: options.mergeTarget, env: io.env });
  // Bad budget amounts are refused before anything starts (polywave.config.json is found upward from the IMPL).
  const budget = await budgetFrom(options, implPath);
  const timeout = positiveNumber(options, 'timeout', '--timeout');
  const concurrency = positiveNumber(options, 'concurrency', '--concurrency');
  const maxTurns = positiveNumber(options, 'maxTurns', '--max-turns');
  const repoDir = repoDirOption(options, io);
  // Issue 17: --dispatch redis://… (or polywave.config.json `dispatch`): agents run on `polywave worker`s.
  const dispatcher = await dispatcherFromConfig(dispatchFlagsFrom(options), { startDir: path.dirname(implPath), env: io.env });
  // Issue 13 (F10, N3, N4): credentials, the backend's package and the model servers, before anything
  // starts (exit 2, nothing changed). Dispatched agents use the workers' packages and servers: only
  // their credentials are checked here. (A finished wave is refused by runWave itself.)
  if (!isWaveFinished(manifest, wave) || options.rerun === true) {
    try {
      await requireAgentsReady(waveAgentRoles(manifest, wave, options, { remote: dispatcher !== undefined }), io.env);
    } catch (error) {
      await dispatcher?.close();
      throw error;
    }
  }
  // attack-serve-17 X1: the plan's run lock (the one `polywave run` and `polywave serve` take) for the
  // wave's life, taken after the checks of the command's input (bad input is reported as such, even
  // while another run holds the plan) and before anything is recorded or changed.
  let releaseLock: () => void;
  try {
    releaseLock = acquireRunLock(repoDir ?? io.cwd, implPath);
  } catch (error) {
    await dispatcher?.close();
    throw error;
  }
  const json = options.json === true;
  const events = new EventBus();
  const progress = json ? undefined : createWaveProgress(io, { tty: io.stderrIsTty === true });
  if (json) events.subscribe((event) => io.stdout(`${JSON.stringify(event)}\n`));
  else events.subscribe(progress!.onEvent);
  const recorder = startRecording(events, { command: 'run-wave', options, io, quiet: json });
  const interrupt = interruptSignal();
  try {
    const result = await runWave({
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      implPath,
      wave,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      ...(repoDir ? { repoDir } : {}),
      ...(typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? { mergeTarget: options.mergeTarget.trim() } : {}),
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
      ...(concurrency ? { concurrency: Math.floor(concurrency) } : {}),
      prioritize: options.prioritize !== false && io.env.POLYWAVE_NO_PRIORITIZE !== '1',
      ...(timeout ? { agentTimeoutMs: Math.round(timeout * 1000) } : {}),
      ...(maxTurns ? { maxTurns: Math.floor(maxTurns) } : {}),
      auto: options.auto === true,
      finalize: options.finalize !== false,
      noCache: options.cache === false,
      skipCritic: options.skipCritic === true,
      ...(options.rerun === true ? { rerun: true } : {}),
      ...(options.strictOwnership === true ? { strictOwnership: true } : {}),
      ...(budget ? { budget } : {}),
      ...(dispatcher ? { dispatcher } : {}),
    });
    if (json) io.stdout(`${JSON.stringify({ v: 1, type: 'run-wave-result', result, ...(recorder ? { run_id: recorder.runId } : {}) })}\n`);
    else printJson(io, result);
    if (!json && result.blocked) {
      io.stderr(`run-wave: wave ${wave} BLOCKED — ${result.blocked.reason}\n`);
      for (const agent of result.blocked.agents) io.stderr(`  ${agent.agent}: ${oneTerminalLine(agent.explanation)}\n`);
    }
    return result.success ? 0 : 1;
  } finally {
    await dispatcher?.close();
    recorder?.close();
    progress?.stop();
    interrupt.dispose();
    releaseLock();
  }
}

/** A second run of the plan while one holds its run lock is RUN_IN_PROGRESS (exit 2), nothing changed (see runWaveCommand). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return runWaveCommand(args, options, io);
}
