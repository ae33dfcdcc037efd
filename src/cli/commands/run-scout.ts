import path from 'node:path';
import { startRecording } from '../event-recording.js';
import { loadImpl } from '../../store/manifest-file.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { implPathFrom } from './shared.js';
import { EventBus, type PolywaveEvent } from '../../engine/events.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runScout } from '../../orchestrator/run-scout.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal } from './prepare-wave.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { slugPattern } from '../../protocol/schema/impl-schema.js';

function text(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function positiveNumber(options: Record<string, unknown>, name: string, flag: string): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} must be a positive number (got ${String(value)})` });
  return number;
}

/** One stderr line per step and per Scout turn batch: `run-scout: [step] status — detail`. */
function progressLine(event: PolywaveEvent): string | undefined {
  switch (event.type) {
    case 'step-end':
      return `${event.command}: [${event.step.step}] ${event.step.status} — ${event.step.detail}`;
    case 'agent-launch':
      return `run-scout: scout attempt ${event.attempt} launched (${event.model}, ${event.backend})`;
    case 'agent-tool-call':
      return event.denied ? `run-scout: scout ${event.tool} denied (${event.denied})` : undefined;
    default:
      return undefined;
  }
}

/**
 * `run-scout "<feature>" [--repo-dir D] [--model M | --scout-model M] [--critic-model M]
 * [--program P] [--no-critic] [--slug S] [--impl-output-path F] [--timeout MIN] [--max-attempts N]
 * [--auto] [--json]` — the Scout plans the feature into docs/IMPL/IMPL-<slug>.yaml with the E16
 * correction loop and the E37 critic gate, then commits the manifest. Progress on stderr, the
 * result JSON on stdout (`--json`: NDJSON events on stdout, ending with a run-scout-result line).
 * Exit 0 REVIEWED, 1 BLOCKED / NOT_SUITABLE / critic gate failed, 2 bad input.
 */
/** The feature text of a brief refresh: the IMPL's title (the Scout reads the IMPL itself). */
async function refreshFeatureText(implPath: string): Promise<string> {
  try {
    const manifest = (await loadImpl(implPath)).parsed.manifest;
    return (manifest?.title ?? manifest?.feature_slug ?? path.basename(implPath)).trim();
  } catch {
    return path.basename(implPath); // runScout reports the missing or unreadable IMPL
  }
}

export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // E28A --refresh-brief: the argument is the reviewed IMPL (path, file name or slug) whose tasks are refreshed.
  const refreshImpl = options.refreshBrief === true ? implPathFrom(args, io) : undefined;
  const feature = refreshImpl ? await refreshFeatureText(refreshImpl) : (args[0] ?? '').trim();
  if (feature === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'a feature description is required: polywave run-scout "<feature>"' });
  const repoDir = path.resolve(io.cwd, text(options, 'repoDir') ?? (refreshImpl ? projectRootOf(refreshImpl, io.cwd) : '.'));
  const model = text(options, 'model') ?? text(options, 'scoutModel');
  const criticModel = text(options, 'criticModel');
  const program = text(options, 'program');
  const slug = text(options, 'slug');
  const implOutputPath = text(options, 'implOutputPath');
  const timeout = positiveNumber(options, 'timeout', '--timeout');
  const maxAttempts = positiveNumber(options, 'maxAttempts', '--max-attempts');
  const maxTurns = positiveNumber(options, 'maxTurns', '--max-turns');
  const json = options.json === true;
  // Issue 13: no model credentials → say which backend would run and what to set, before anything
  // starts (exit 2). After the flags are checked: a bad slug is still reported as such.
  if (slug !== undefined && !slugPattern.test(slug)) throw new PolywaveError({ code: 'V018_INVALID_SLUG_FORMAT', message: `slug "${slug}" is not kebab-case (a-z, 0-9, single hyphens)` });
  const scoutRole = [{ role: 'the Scout', model }];
  // F10, N3, N4: the backend's package and the model server too (the one launch pre-check).
  await requireAgentsReady(scoutRole, io.env);

  const events = new EventBus();
  if (json) events.subscribe((event) => io.stdout(`${JSON.stringify(event)}\n`));
  else
    events.subscribe((event) => {
      const line = progressLine(event);
      if (line) io.stderr(`${line}\n`);
    });
  const recorder = startRecording(events, { command: 'run-scout', options, io, quiet: json });
  const interrupt = interruptSignal();
  try {
    const result = await runScout({
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      feature,
      repoDir,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      critic: options.critic !== false,
      ...(options.scoutTools === false ? { scoutTools: false } : {}),
      auto: options.auto === true,
      ...(model ? { model } : {}),
      ...(criticModel ? { criticModel } : {}),
      ...(program ? { program: path.resolve(io.cwd, program) } : {}),
      ...(slug ? { slug } : {}),
      ...(implOutputPath ? { implPath: path.resolve(io.cwd, implOutputPath) } : {}),
      ...(refreshImpl ? { refreshBrief: true, implPath: refreshImpl } : {}),
      ...(timeout ? { timeoutMs: Math.round(timeout * 60_000) } : {}),
      ...(maxAttempts ? { maxAttempts: Math.floor(maxAttempts) } : {}),
      ...(maxTurns ? { maxTurns: Math.floor(maxTurns) } : {}),
    });
    if (json) io.stdout(`${JSON.stringify({ v: 1, type: 'run-scout-result', result, ...(recorder ? { run_id: recorder.runId } : {}) })}\n`);
    else printJson(io, result);
    if (!json) {
      if (result.success) io.stderr(`run-scout: ${result.impl_path} is ${result.state}; next: review it, then polywave run-wave ${result.impl_path} --wave 1\n`);
      else if (result.error) io.stderr(`run-scout: ${result.state} — [${result.error.code}] ${result.error.message}\n`);
    }
    return result.success ? 0 : 1;
  } finally {
    recorder?.close();
    interrupt.dispose();
  }
}
