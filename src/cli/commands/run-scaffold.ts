import { EventBus } from '../../engine/events.js';
import { oneTerminalLine } from '../terminal-text.js';
import { startRecording } from '../event-recording.js';
import { runScaffold } from '../../orchestrator/run-scaffold.js';
import { loadImpl } from '../../store/manifest-file.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal, repoDirOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';

/** Progress of one orchestrator-run agent on stderr: launch, refused tool calls, end. */
export function agentProgressPrinter(command: string, io: CommandIo): EventBus {
  const events = new EventBus();
  events.subscribe((event) => {
    if (event.type === 'agent-launch') io.stderr(`${command}: launching the ${event.agent} agent (${event.model})\n`);
    else if (event.type === 'agent-tool-call' && event.denied) io.stderr(`${command}: ${event.agent}: ${event.tool} refused — ${event.denied}\n`);
    else if (event.type === 'agent-end') io.stderr(`${command}: the ${event.agent} agent stopped: ${event.status} after ${event.turns} turn(s)${event.explanation ? ` — ${oneTerminalLine(event.explanation)}` : ''}\n`);
  });
  return events;
}

/**
 * `run-scaffold <impl> [--model M] [--repo-dir D]` (E22) — the Scaffold Agent creates the pending
 * scaffold files, builds and commits them; the orchestrator then checks each file is really
 * committed (and builds it again), writes `committed (<sha>)` / `FAILED: <reason>` into the
 * manifest, moves the state (WAVE_PENDING, or BLOCKED) and commits the manifest. Prints
 * `{impl_path, slug, scaffolds[{file, status}], success, state, agent_launched, agent?, build?,
 * violations, impl_commit?, duration_ms}`; exit 0 when every scaffold is committed, 1 otherwise.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  requireManifest((await loadImpl(implPath)).parsed, implPath);
  const repoDir = repoDirOption(options, io);
  // P14-03: an IMPL of a running PROGRAM tier is the tier loop's (E28B_IMPL_OF_PROGRAM, exit 2, nothing changed).
  await refuseImplOfRunningProgram(implPath, { command: 'run-scaffold', cwd: io.cwd, env: io.env, noMergeTarget: true, ...(repoDir ? { repoDir } : {}) });
  const events = agentProgressPrinter('run-scaffold', io);
  const recorder = startRecording(events, { command: 'run-scaffold', options, io });
  const interrupt = interruptSignal();
  try {
    const result = await runScaffold({
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      implPath,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      ...(repoDir ? { repoDir } : {}),
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
    });
    printJson(io, result);
    if (!result.success) io.stderr(`run-scaffold: E22 — not every scaffold is committed; the IMPL is ${result.state || 'unchanged'}. Revise the contracts and re-run.\n`);
    return result.success ? 0 : 1;
  } finally {
    recorder?.close();
    interrupt.dispose();
  }
}
