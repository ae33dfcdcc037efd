import type { AgentEvent, ToolDenial } from '../agents/contract.js';

/**
 * Issue 17 item 5: a dispatched agent's events of interest (turns, tool calls, denials) reach the
 * orchestrator's event bus WHILE the agent runs, not only with the job's result. The worker numbers
 * each event of a run (`seq`) and stamps it with its own clock (`at`, ms since the epoch); the
 * numbered events since the last publish travel in the job's progress (beside the journal relay, the
 * same throttled `updateProgress`, at most every 500 ms), bounded per publish and per run. The result
 * still carries them all (≤ 5,000 events, 1 MB): the orchestrator emits from it only those the
 * progress did not bring — each event once, with its original time and the worker's id.
 */

/** At most this many events of one run travel live; the rest arrive with the result only (a chatty agent must not flood Redis). */
export const liveEventsMax = 1000;
/** At most this many events per progress update… */
export const liveBatchMax = 200;
/** …and this many characters of their JSON. */
export const liveBatchChars = 64 * 1024;

/** An event as it travels: the agent event plus its number in the run and the worker's time. */
export type NumberedEvent = AgentEvent & { seq: number; at: number };

const shortText = (value: unknown, max: number): string | undefined => (typeof value === 'string' ? value.slice(0, max) : undefined);
const finite = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/**
 * One relayed event, checked (anyone who can write to the Redis can write a job's progress or
 * result): only the kinds a worker sends (`turn-end`, `tool-call-end` without its output,
 * `tool-call-deny`), strings bounded, numbers finite. `seq`/`at` are absent for results of older
 * workers. `at` is never later than `now` (another machine's clock).
 */
export function checkRelayedEvent(raw: unknown, now: number = Date.now()): { event: AgentEvent; seq?: number; at?: number } | undefined {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const record = raw as Record<string, unknown>;
  let event: AgentEvent | undefined;
  if (record.type === 'turn-end') {
    const usage = record.usage && typeof record.usage === 'object' ? (record.usage as Record<string, unknown>) : {};
    const turn = finite(record.turn);
    if (turn === undefined) return undefined;
    const number = (key: string) => finite(usage[key]) ?? 0;
    event = { type: 'turn-end', turn, usage: { inputTokens: number('inputTokens'), outputTokens: number('outputTokens'), cacheReadTokens: number('cacheReadTokens'), cacheWriteTokens: number('cacheWriteTokens'), ...(finite(usage.costUsd) !== undefined ? { costUsd: finite(usage.costUsd) } : {}) } };
  } else if (record.type === 'tool-call-end') {
    const tool = shortText(record.tool, 200);
    if (tool === undefined) return undefined;
    event = { type: 'tool-call-end', toolCallId: shortText(record.toolCallId, 200) ?? '', tool, isError: record.isError === true, output: '', durationMs: finite(record.durationMs) ?? 0 };
  } else if (record.type === 'tool-call-deny') {
    const denial = record.denial && typeof record.denial === 'object' ? (record.denial as Record<string, unknown>) : undefined;
    const tool = shortText(denial?.tool, 200);
    if (!denial || tool === undefined) return undefined;
    event = { type: 'tool-call-deny', toolCallId: shortText(record.toolCallId, 200) ?? '', denial: { tool, code: shortText(denial.code, 100) ?? '', reason: shortText(denial.reason, 2000) ?? '', ...(typeof denial.target === 'string' ? { target: denial.target.slice(0, 1000) } : {}) } satisfies ToolDenial };
  }
  if (!event) return undefined;
  const seq = finite(record.seq);
  const at = finite(record.at);
  return { event, ...(seq !== undefined && Number.isInteger(seq) && seq >= 0 ? { seq } : {}), ...(at !== undefined && at > 0 ? { at: Math.min(at, now) } : {}) };
}

/** The worker's side: numbers the run's events and hands out what is still to relay, bounded. */
export interface LiveEventOutbox {
  /** Adds an event (numbered in the order added) and returns it as it travels. */
  add(event: AgentEvent, at?: number): NumberedEvent;
  /** Events not relayed yet, at most {@link liveBatchMax} / {@link liveBatchChars}; none beyond {@link liveEventsMax} in all. */
  take(): NumberedEvent[];
  /** Whether {@link take} would return something. */
  pending(): boolean;
  /** Events that will travel with the result only (beyond the live cap). */
  readonly capped: number;
}

export function createLiveEventOutbox(limits: { max?: number; batch?: number; chars?: number } = {}): LiveEventOutbox {
  const max = limits.max ?? liveEventsMax;
  const batch = limits.batch ?? liveBatchMax;
  const chars = limits.chars ?? liveBatchChars;
  const queued: NumberedEvent[] = [];
  let next = 0;
  let relayed = 0;
  let capped = 0;
  return {
    add: (event, at = Date.now()) => {
      const numbered = { ...event, seq: next, at } as NumberedEvent;
      next += 1;
      if (relayed + queued.length < max) queued.push(numbered);
      else capped += 1;
      return numbered;
    },
    take: () => {
      const out: NumberedEvent[] = [];
      let size = 0;
      while (queued.length > 0 && out.length < batch) {
        const length = JSON.stringify(queued[0]).length + 1;
        if (out.length > 0 && size + length > chars) break;
        size += length;
        out.push(queued.shift()!);
      }
      relayed += out.length;
      return out;
    },
    pending: () => queued.length > 0,
    get capped() {
      return capped;
    },
  };
}

/**
 * The orchestrator's side, per attempt: events from progress (`fromProgress`) and from the result
 * (`fromResult`) are delivered once per run and number, in arrival order.
 */
export function createLiveEventInbox(deliver: (event: AgentEvent, meta: { at?: number; worker?: string }) => void, limits: { max?: number } = {}): {
  fromProgress(runId: string, worker: string, events: unknown): number;
  fromResult(runId: string, worker: string, events: readonly unknown[]): number;
} {
  const max = limits.max ?? liveEventsMax;
  const seen = new Map<string, Set<number>>();
  const emit = (runId: string, worker: string, raw: unknown, live: boolean): boolean => {
    const checked = checkRelayedEvent(raw);
    if (!checked) return false;
    let numbers = seen.get(runId);
    if (checked.seq !== undefined) {
      if (!numbers) seen.set(runId, (numbers = new Set()));
      if (numbers.has(checked.seq)) return false;
      // (live: at most the worker's cap per run — a forged progress cannot grow this set without bound)
      if (live && numbers.size >= max) return false;
      numbers.add(checked.seq);
    } else if (live) return false;
    deliver(checked.event, { ...(checked.at !== undefined ? { at: checked.at } : {}), ...(worker ? { worker } : {}) });
    return true;
  };
  return {
    fromProgress: (runId, worker, events) => {
      if (!Array.isArray(events)) return 0;
      let count = 0;
      for (const raw of events.slice(0, liveBatchMax)) if (emit(runId, worker, raw, true)) count += 1;
      return count;
    },
    fromResult: (runId, worker, events) => {
      let count = 0;
      for (const raw of events) if (emit(runId, worker, raw, false)) count += 1;
      return count;
    },
  };
}
