/**
 * E40 observability events, in the spec's shape (execution-rules E40; reference/agents.md §5.1):
 * `activity` with an `activity_type`, `agent_performance` at an agent's end, and `cost` per model
 * call. Every event is marked `e40: true` so a subscriber tells them from the engine's progress
 * events (`agent-progress`, `agent-tool-call`, `step-end`, …) without a list of names.
 *
 * Labels: `slug` (the IMPL), `wave` when there is one, `program` (PROGRAM slug) when there is one,
 * `agent` when there is one, `tier` for tier events. Pure types: emitted on the engine's bus
 * (src/engine/events.ts) and stored by the observability store, which adds the run id and sequence.
 */

/** The `activity_type`s of the E40 table. */
export const activityTypes = [
  'scout_launch',
  'scout_complete',
  'wave_start',
  'wave_merge',
  'wave_failed',
  'impl_complete',
  'gate_executed',
  'gate_failed',
  'tier_advanced',
  'tier_gate_passed',
  'tier_gate_failed',
] as const;

export type ActivityType = (typeof activityTypes)[number];

/** Labels every E40 event carries where they apply. */
export interface E40Labels {
  /** The IMPL slug (absent only for PROGRAM-level events: tier gates, tier advancement). */
  slug?: string;
  wave?: number;
  /** The PROGRAM slug when the IMPL runs inside a PROGRAM. */
  program?: string;
  agent?: string;
  tier?: number;
}

/** An E40 `activity` event: a lifecycle transition. */
export interface ActivityEvent extends E40Labels {
  v: 1;
  e40: true;
  type: 'activity';
  activity_type: ActivityType;
  /** Human-readable detail (Go `details`: the failure reason, `gate=<type> passed=<bool>`, …). */
  details?: string;
  /** Gate events: the gate's type and command, and whether it came from the E38 cache. */
  gate?: string;
  command?: string;
  from_cache?: boolean;
  /** Gate events: `pre-merge`, `post-merge`, `tier`. */
  gate_scope?: string;
  /** Gate events of gates that ran on a `polywave worker` (issue 17 gate jobs): its id. */
  worker?: string;
  duration_ms?: number;
  /** `tier_advanced`: the tier the program moves to (`tier` is the one just completed). */
  to_tier?: number;
}

/** E19 statuses of `agent_performance` (Go: success|failed|blocked|partial). */
export type AgentPerformanceStatus = 'success' | 'failed' | 'blocked' | 'partial';

/** An E40 `agent_performance` event: one agent's run in a wave ended (after its last attempt). */
export interface AgentPerformanceEvent extends E40Labels {
  v: 1;
  e40: true;
  type: 'agent_performance';
  slug: string;
  agent: string;
  status: AgentPerformanceStatus;
  /** E19 failure type when the agent did not succeed. */
  failure_type?: string;
  /** Why the run stopped when the runtime stopped it (`budget_exceeded`, `timeout`, …). */
  stop_reason?: string;
  /** Launches after the first (E19 relaunches). */
  retry_count: number;
  duration_ms: number;
  duration_seconds: number;
  /** files_changed + files_created of the completion report. */
  files_modified: string[];
  /** Tests the report added (`tests_added`). */
  tests_added: number;
  /** Tests passed and failed in the agent's gate runs (summaries of Vitest, Jest, node:test/TAP, Mocha, pytest, cargo, go test -v). */
  tests_passed: number;
  tests_failed: number;
  /** False when no gate of the agent printed a test summary we know (then both counts are 0). */
  tests_reported?: boolean;
  model: string;
  backend: string;
  turns: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
}

/** Where a `cost` event's `cost_usd` comes from. */
export type CostSource = 'pricing-table' | 'backend' | 'local' | 'unpriced';

/** An E40 `cost` event: one model call (one step of the tool loop, one result message of a CLI agent). */
export interface CostEvent extends E40Labels {
  v: 1;
  e40: true;
  type: 'cost';
  slug: string;
  agent: string;
  role: string;
  attempt: number;
  /** The model turn this call ended (1-based, per attempt). */
  turn: number;
  model: string;
  backend: string;
  provider?: string;
  /** Uncached input tokens (the pricing table's convention). */
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** USD of this call; null when the model is not in the pricing table. */
  cost_usd: number | null;
  cost_source: CostSource;
  /** The date of the pricing table the cost was computed with. */
  pricing_date: string;
}

/** Every E40 event. */
export type E40Event = ActivityEvent | AgentPerformanceEvent | CostEvent;

/** Where E40 events go (an `EventBus` satisfies it). */
export interface E40EventSink {
  emit(event: E40Event): void;
}

/** An `activity` event with its labels (undefined labels are left out). */
export function activityEvent(activityType: ActivityType, labels: E40Labels & Omit<Partial<ActivityEvent>, 'v' | 'e40' | 'type' | 'activity_type'>): ActivityEvent {
  const event: ActivityEvent = { v: 1, e40: true, type: 'activity', activity_type: activityType };
  for (const [key, value] of Object.entries(labels)) if (value !== undefined && value !== '') (event as unknown as Record<string, unknown>)[key] = value;
  return event;
}

/** Whether `event` is one of the E40 types. */
export function isE40Event(event: { type: string; e40?: unknown }): event is E40Event {
  return event.e40 === true;
}
