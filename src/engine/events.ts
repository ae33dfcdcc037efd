import type { StepResult } from './step.js';

/**
 * Typed engine/agent events (DESIGN §3): a discriminated union on `type`, names noun-then-verb,
 * payloads versioned by `v`. The in-process bus is the single source; the SQLite store and SSE
 * subscribe later.
 */
export type PolywaveEvent =
  | { v: 1; type: 'step-end'; command: string; slug?: string; wave?: number; step: StepResult }
  | { v: 1; type: 'wave-prepare-start'; slug: string; wave: number }
  | { v: 1; type: 'wave-prepare-end'; slug: string; wave: number; success: boolean }
  | { v: 1; type: 'worktree-create'; slug: string; wave: number; agent: string; path: string; branch: string; reused: boolean }
  | { v: 1; type: 'gate-start'; gate: string; command: string; cwd: string }
  | { v: 1; type: 'gate-result'; gate: string; command: string; passed: boolean; from_cache: boolean; duration_ms: number }
  | { v: 1; type: 'wave-run-start'; slug: string; wave: number; agents: string[]; order: string[]; reordered: boolean; concurrency: number }
  | { v: 1; type: 'agent-launch'; slug: string; wave: number; agent: string; attempt: number; model: string; backend: string }
  | { v: 1; type: 'agent-progress'; slug: string; wave: number; agent: string; attempt: number; turns: number; input_tokens: number; output_tokens: number; cost_usd?: number | undefined }
  | { v: 1; type: 'agent-tool-call'; slug: string; wave: number; agent: string; attempt: number; tool: string; is_error: boolean; denied?: string; duration_ms: number }
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
    }
  | { v: 1; type: 'agent-retry'; slug: string; wave: number; agent: string; attempt: number; next_attempt: number; failure_type: string; action: string; note: string; backoff_ms: number }
  | { v: 1; type: 'wave-run-end'; slug: string; wave: number; success: boolean; state: string; duration_ms: number; cost_usd?: number | undefined };

export type EventListener = (event: PolywaveEvent) => void;

/** A minimal synchronous event bus; a throwing listener never breaks the emitter. */
export class EventBus {
  private readonly listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: PolywaveEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's bug must not break the engine.
      }
    }
  }
}
