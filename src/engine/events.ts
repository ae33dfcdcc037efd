import type { E40Event } from '../protocol/e40.js';
import type { StepResult } from './step.js';

export type { ActivityEvent, AgentPerformanceEvent, CostEvent, E40Event } from '../protocol/e40.js';

/**
 * Typed engine/agent events (DESIGN §3): a discriminated union on `type`, names noun-then-verb,
 * payloads versioned by `v`. The in-process bus is the single source; the SQLite store and SSE
 * subscribe later.
 *
 * The E40 events (`activity`, `agent_performance`, `cost`; src/protocol/e40.ts) are part of the
 * union and carry `e40: true`; the others are progress events (what a live view shows).
 */
export type PolywaveEvent = (EngineEvent | E40Event) & { program?: string; run_id?: string; seq?: number };

/** The engine's progress events (not E40). */
export type EngineEvent =
  | { v: 1; type: 'step-end'; command: string; slug?: string; wave?: number; step: StepResult }
  | { v: 1; type: 'wave-prepare-start'; slug: string; wave: number }
  | { v: 1; type: 'wave-prepare-end'; slug: string; wave: number; success: boolean }
  | { v: 1; type: 'worktree-create'; slug: string; wave: number; agent: string; path: string; branch: string; reused: boolean }
  | { v: 1; type: 'gate-start'; gate: string; command: string; cwd: string }
  | { v: 1; type: 'gate-result'; gate: string; command: string; passed: boolean; from_cache: boolean; duration_ms: number }
  | { v: 1; type: 'wave-run-start'; slug: string; wave: number; agents: string[]; order: string[]; reordered: boolean; concurrency: number }
  | { v: 1; type: 'agent-launch'; slug: string; wave: number; agent: string; attempt: number; model: string; backend: string; dispatcher?: 'in-process' | 'redis' }
  /** Issue 17: a worker took a dispatched attempt's job (before its result); again when another worker takes it over. */
  | { v: 1; type: 'agent-running'; slug: string; wave: number; agent: string; attempt: number; dispatcher: 'redis'; job_id: string; worker: string; host?: string }
  /** `at`/`worker`: relayed from a worker — when it happened there (ms since the epoch; the store's `ts`) and the worker's id. */
  | { v: 1; type: 'agent-progress'; slug: string; wave: number; agent: string; attempt: number; turns: number; input_tokens: number; output_tokens: number; cost_usd?: number | undefined; at?: number; worker?: string }
  | { v: 1; type: 'agent-tool-call'; slug: string; wave: number; agent: string; attempt: number; tool: string; is_error: boolean; denied?: string; duration_ms: number; at?: number; worker?: string }
  | {
      v: 1;
      type: 'agent-end';
      slug: string;
      wave: number;
      agent: string;
      attempt: number;
      status: string;
      failure_type?: string;
      turns: number;
      input_tokens: number;
      output_tokens: number;
      cost_usd?: number | undefined;
      duration_ms: number;
      explanation?: string;
      /** Issue 17: where a dispatched attempt ran (the worker's id; the dispatcher's timings). Absent: in this process. */
      dispatch?: { dispatcher: string; job_id: string; worker?: string | undefined; host?: string | undefined; stalls: number; enqueue_to_start_ms?: number | undefined; finish_to_result_ms?: number | undefined };
    }
  | {
      v: 1;
      type: 'agent-merge';
      slug: string;
      wave: number;
      agent: string;
      branch: string;
      /** Merges done by this finalize so far (this one included) and how many it set out to do. */
      merged: number;
      total: number;
    }
  | { v: 1; type: 'agent-retry'; slug: string; wave: number; agent: string; attempt: number; next_attempt: number; failure_type: string; action: string; note: string; backoff_ms: number }
  | { v: 1; type: 'wave-run-end'; slug: string; wave: number; success: boolean; state: string; duration_ms: number; cost_usd?: number | undefined };

/**
 * A bus that adds `labels` (e.g. the PROGRAM slug) to every event emitted on it that does not
 * carry them yet, and forwards it to `parent`. Undefined `parent` → undefined (nothing to emit to).
 */
export function labelEvents(parent: EventBus | undefined, labels: { program?: string }): EventBus | undefined {
  if (!parent) return undefined;
  const entries = Object.entries(labels).filter(([, value]) => value !== undefined && value !== '');
  if (entries.length === 0) return parent;
  const child = new EventBus();
  child.subscribe((event) => {
    const record = event as Record<string, unknown>;
    const missing = entries.filter(([key]) => record[key] === undefined);
    parent.emit(missing.length === 0 ? event : ({ ...event, ...Object.fromEntries(missing) } as PolywaveEvent));
  });
  return child;
}

export type EventListener = (event: PolywaveEvent) => void;

/** A minimal synchronous event bus; a throwing listener never breaks the emitter. */
export class EventBus {
  private readonly listeners = new Set<EventListener>();
  private stamper: ((event: PolywaveEvent) => PolywaveEvent) | undefined;

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * E40: every event of a recorded run carries its run id and a monotonic sequence number — on
   * the bus itself, so every subscriber (the store, `--json` streams, traces) sees the same ones.
   * The stamp is applied once, where the event is emitted; `undefined` removes it.
   */
  stampWith(stamper: ((event: PolywaveEvent) => PolywaveEvent) | undefined): void {
    this.stamper = stamper;
  }

  emit(original: PolywaveEvent): void {
    let event = original;
    if (this.stamper) {
      try {
        event = this.stamper(original);
      } catch {
        event = original;
      }
    }
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's bug must not break the engine.
      }
    }
  }
}
