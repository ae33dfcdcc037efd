import path from 'node:path';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { EventBus } from '../../engine/events.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseAutonomy, runDaemon, type AutonomyLevel } from '../../orchestrator/daemon.js';
import { readQueue } from '../../store/queue-files.js';
import { locateProjectConfig, readProjectConfig } from '../../store/project-config.js';
import type { CommandIo, CommandResult } from '../io.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { repoDirOption } from './prepare-wave.js';

/** `30s`, `2m`, `1h`, `500ms` or plain seconds → milliseconds. */
export function parseDuration(value: unknown, flag: string): number {
  const text = String(value ?? '').trim();
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  const unit = match?.[2] ?? 's';
  const ms = match ? Number(match[1]) * (unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 100 || ms > 86_400_000) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag}: a duration from 100ms to 24h like 30s, 2m or 1h, got "${text}"` });
  return ms;
}

function model(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** `autonomy` of polywave.config.json: `{level, max_auto_retries}` (Go's keys); undefined when absent. */
async function configuredAutonomy(repoDir: string): Promise<{ level?: AutonomyLevel; maxAutoRetries?: number }> {
  const file = await locateProjectConfig(repoDir);
  if (!file) return {};
  const autonomy = (await readProjectConfig(file)).config?.autonomy as { level?: unknown; max_auto_retries?: unknown } | undefined;
  if (!autonomy || typeof autonomy !== 'object') return {};
  return {
    ...(autonomy.level !== undefined ? { level: parseAutonomy(autonomy.level, `${file}: autonomy.level`) } : {}),
    ...(typeof autonomy.max_auto_retries === 'number' && autonomy.max_auto_retries >= 0 ? { maxAutoRetries: Math.floor(autonomy.max_auto_retries) } : {}),
  };
}

/**
 * `daemon [--autonomy gated|supervised|autonomous] [--model M] [--poll-interval 30s] [--once]
 * [--max-items N] [--no-critic] [--timeout S] [--json]` — watch docs/IMPL/queue/ and run its items
 * with our real agents (src/orchestrator/daemon.ts). Exit 0 when it stops (Ctrl-C, --once, --max-items)
 * with nothing blocked, 1 when an item it ran ended blocked or another daemon holds the repository,
 * 2 bad input.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const repoDir = path.resolve(repoDirOption(options, io) ?? io.cwd);
  const fromConfig = await configuredAutonomy(repoDir);
  const autonomy = options.autonomy !== undefined ? parseAutonomy(options.autonomy, '--autonomy') : (fromConfig.level ?? 'gated');
  const pollIntervalMs = options.pollInterval !== undefined ? parseDuration(options.pollInterval, '--poll-interval') : 30_000;
  const maxItems = options.maxItems === undefined ? undefined : Number(options.maxItems);
  if (maxItems !== undefined && (!Number.isInteger(maxItems) || maxItems < 1)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--max-items: a positive integer, got "${String(options.maxItems)}"` });
  // A queue that cannot be read is bad input now, not a failure at the first poll.
  await readQueue(repoDir);
  // Issue 13 (N4): the one launch pre-check (credentials, backend package, model servers) before the first item.
  await requireAgentsReady(
    [
      { role: 'the Scout', model: model(options, 'scoutModel') ?? model(options, 'model') },
      { role: 'the wave agents', model: model(options, 'waveModel') ?? model(options, 'model') },
    ],
    io.env,
  );
  const json = options.json === true;
  const events = new EventBus();
  const controller = new AbortController();
  const stop = () => {
    if (!controller.signal.aborted) io.stderr('daemon: stopping (the running item is interrupted and resumed by the next daemon run)\n');
    controller.abort(new Error('interrupted'));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const timeout = Number(options.timeout);
  const concurrency = Number(options.concurrency);
  try {
    const result = await runDaemon({
      repoDir,
      autonomy,
      ...(fromConfig.maxAutoRetries !== undefined ? { maxAutoRetries: fromConfig.maxAutoRetries } : {}),
      pollIntervalMs,
      ...(options.once === true ? { once: true } : {}),
      ...(maxItems !== undefined ? { maxItems } : {}),
      env: io.env,
      signal: controller.signal,
      log: (line) => io.stderr(`${line}\n`),
      ...(json ? { onOutcome: (outcome) => io.stdout(`${JSON.stringify({ type: 'daemon-item', ...outcome })}\n`) } : {}),
      run: {
        events,
        ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
        ...(model(options, 'model') ? { model: model(options, 'model')! } : {}),
        models: {
          ...(model(options, 'scoutModel') ? { scout: model(options, 'scoutModel')! } : {}),
          ...(model(options, 'waveModel') ? { wave: model(options, 'waveModel')! } : {}),
        },
        ...(options.critic === false ? { noCritic: true } : {}),
        ...(Number.isFinite(timeout) && timeout > 0 ? { agentTimeoutMs: Math.round(timeout * 1000) } : {}),
        ...(Number.isFinite(concurrency) && concurrency > 0 ? { concurrency: Math.floor(concurrency) } : {}),
        onPhase: (phase) => io.stderr(`daemon: ${phase.phase}${phase.wave ? ` ${phase.wave}` : ''} ${phase.status} — ${phase.detail}\n`),
      },
    });
    if (json) io.stdout(`${JSON.stringify({ type: 'daemon-result', passes: result.passes, stopped: result.stopped, items: result.outcomes.length })}\n`);
    return result.outcomes.some((outcome) => outcome.status === 'blocked') ? 1 : 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
