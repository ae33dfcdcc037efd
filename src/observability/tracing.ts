import { context, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { EventBus, PolywaveEvent } from '../engine/events.js';

export interface TracingOptions {
  /** Default: the global tracer `polywave` (a no-op until the process registers an OpenTelemetry SDK). */
  tracer?: Tracer;
  /** Name of the run (the command): the root span is `polywave <name>`. */
  name: string;
  runId?: string;
  now?: () => Date;
}

export interface Tracing {
  /** Ends the spans still open and the run's root span. Idempotent. */
  close(): void;
}

type Payload = Record<string, unknown>;

const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/** Scalar fields of an event as span attributes (`polywave.<key>`). */
function attributesOf(event: Payload): Attributes {
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(event)) {
    if (key === 'v' || key === 'type') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') attributes[`polywave.${key}`] = value;
  }
  return attributes;
}

/**
 * Issue 14 item 6: one OpenTelemetry trace per run through the standard API, built from the bus
 * events — a root span for the run, a span per wave (wave-prepare-start/wave-run-start →
 * wave-run-end), per agent attempt (agent-launch → agent-end), per tool call and per gate (both
 * timed by their duration_ms), E40 activity/cost events as span events. Any collector the
 * process's OpenTelemetry SDK exports to shows the run.
 */
export function attachTracing(bus: EventBus, options: TracingOptions): Tracing {
  const tracer = options.tracer ?? trace.getTracer('polywave');
  const now = options.now ?? (() => new Date());
  const root = tracer.startSpan(`polywave ${options.name}`, { startTime: now(), attributes: options.runId ? { 'polywave.run_id': options.runId } : {} });
  const waves = new Map<string, Span>();
  const agents = new Map<string, Span>();
  let closed = false;
  const under = (parent: Span) => trace.setSpan(context.active(), parent);
  const waveKey = (event: Payload) => `${text(event.slug) ?? ''}\u0000${typeof event.wave === 'number' ? event.wave : ''}`;
  const agentKey = (event: Payload) => `${waveKey(event)}\u0000${text(event.agent) ?? ''}`;
  const waveSpan = (event: Payload, create: boolean): Span | undefined => {
    if (typeof event.wave !== 'number') return undefined;
    const key = waveKey(event);
    let span = waves.get(key);
    if (!span && create) {
      span = tracer.startSpan(`wave ${event.wave}${text(event.slug) ? ` (${String(event.slug)})` : ''}`, { startTime: now(), attributes: { 'polywave.slug': text(event.slug) ?? '', 'polywave.wave': event.wave } }, under(root));
      waves.set(key, span);
    }
    return span;
  };
  /** The innermost open span an event belongs to: its agent's, its wave's, else the run's. */
  const parentOf = (event: Payload): Span => agents.get(agentKey(event)) ?? waveSpan(event, false) ?? [...waves.values()].at(-1) ?? root;
  const timed = (name: string, event: Payload, parent: Span, failed: boolean) => {
    const end = now();
    const duration = typeof event.duration_ms === 'number' && Number.isFinite(event.duration_ms) ? event.duration_ms : 0;
    const span = tracer.startSpan(name, { startTime: new Date(end.getTime() - duration), attributes: attributesOf(event) }, under(parent));
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(end);
  };

  const onEvent = (polywaveEvent: PolywaveEvent) => {
    if (closed) return;
    const event = polywaveEvent as unknown as Payload;
    switch (event.type) {
      case 'wave-prepare-start':
      case 'wave-run-start':
        waveSpan(event, true)!.setAttributes(attributesOf(event));
        break;
      case 'wave-run-end': {
        const span = waveSpan(event, false);
        if (!span) break;
        span.setAttributes(attributesOf(event));
        if (event.success !== true) span.setStatus({ code: SpanStatusCode.ERROR, message: text(event.state) ?? 'wave failed' });
        span.end(now());
        waves.delete(waveKey(event));
        break;
      }
      case 'agent-launch': {
        const parent = waveSpan(event, true) ?? root;
        const span = tracer.startSpan(`agent ${String(event.agent)}${typeof event.attempt === 'number' && event.attempt > 1 ? ` attempt ${event.attempt}` : ''}`, { startTime: now(), attributes: attributesOf(event) }, under(parent));
        agents.set(agentKey(event), span);
        break;
      }
      case 'agent-end': {
        const key = agentKey(event);
        const span = agents.get(key);
        if (!span) break;
        span.setAttributes(attributesOf(event));
        if (event.status !== 'complete') span.setStatus({ code: SpanStatusCode.ERROR, message: text(event.failure_type) ?? text(event.status) ?? 'agent failed' });
        span.end(now());
        agents.delete(key);
        break;
      }
      case 'agent-tool-call':
        timed(`tool ${String(event.tool)}`, event, parentOf(event), event.is_error === true || text(event.denied) !== undefined);
        break;
      case 'gate-result':
        timed(`gate ${String(event.gate)}`, event, parentOf(event), event.passed !== true);
        break;
      case 'activity':
      case 'cost':
      case 'agent_performance':
      case 'agent-retry':
        parentOf(event).addEvent(text(event.activity_type) ?? String(event.type), attributesOf(event), now());
        break;
      default:
        break;
    }
  };
  const unsubscribe = bus.subscribe(onEvent);
  return {
    close() {
      if (closed) return;
      closed = true;
      unsubscribe();
      const end = now();
      for (const span of agents.values()) span.end(end);
      for (const span of waves.values()) span.end(end);
      root.end(end);
    },
  };
}
