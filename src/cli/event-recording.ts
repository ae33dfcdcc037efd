import type { EventBus } from '../engine/events.js';
import { attachRecorder, type Recorder } from '../observability/recorder.js';
import { attachTracing } from '../observability/tracing.js';
import { resolveStoreSettings } from '../observability/store-location.js';
import type { CommandIo } from './io.js';

/**
 * Starts recording `bus` into the event store (unless `--no-events`/POLYWAVE_NO_EVENTS=1). Prints
 * the run id and how to query it on stderr unless `quiet` (JSON modes put `run_id` in their
 * output instead). The caller closes the recorder when the command ends.
 */
export function startRecording(bus: EventBus, input: { command: string; options: Record<string, unknown>; io: CommandIo; quiet?: boolean; program?: string }): Recorder | undefined {
  const settings = resolveStoreSettings({ store: input.options.store, events: input.options.events, env: input.io.env, cwd: input.io.cwd });
  if (!settings.enabled) return undefined;
  // POLYWAVE_EVENTS_FLUSH_MS: a shorter batch delay for runs watched live; 0 writes each event as it is emitted
  // (`polywave serve` sets 0 for the runs it starts: a busy engine thread would hold back a timer, docs/serve.md).
  const flushSetting = input.io.env.POLYWAVE_EVENTS_FLUSH_MS?.trim();
  const flushMs = Number(flushSetting);
  const recorder = attachRecorder(bus, {
    ...(Number.isFinite(flushMs) && flushMs >= 1 && flushMs <= 10_000 ? { flushDelayMs: Math.floor(flushMs) } : {}),
    storePath: settings.path,
    command: input.command,
    warn: input.io.stderr,
    now: input.io.now,
    cwd: input.io.cwd,
    ...(input.program ? { program: input.program } : {}),
  });
  // Immediate mode: the recorder's listener buffered the event (it subscribed first); write it now.
  const offImmediate = flushSetting === '0' ? bus.subscribe(() => recorder.flush()) : undefined;
  // One OpenTelemetry trace per run through the global tracer: a no-op until the process registers an SDK.
  const tracing = attachTracing(bus, { name: input.command, runId: recorder.runId, now: input.io.now });
  const close = recorder.close;
  Object.assign(recorder, {
    close: () => {
      offImmediate?.();
      tracing.close();
      close();
    },
  });
  // Said with the run's first event: input refused before anything ran stays one error line.
  if (!input.quiet) {
    const off = bus.subscribe(() => {
      off();
      input.io.stderr(`${input.command}: run id ${recorder.runId} — query with: polywave query events --run ${recorder.runId}\n`);
    });
  }
  return recorder;
}
