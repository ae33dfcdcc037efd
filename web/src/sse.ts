// Live events over SSE (/api/events). EventSource reconnects by itself and sends Last-Event-ID,
// so the server resumes after the last frame this page saw; a `resync` frame (the client fell too
// far behind) makes the view refetch its state. The cookie authenticates (EventSource cannot set
// headers; same origin).
//
// Events are handed over in batches: Chromium dispatches every frame of one received chunk one after
// the other in one task, and a state update per frame re-rendered the page between frames (each a
// microtask checkpoint), so the 6th frame of a chunk waited for five renders. The frames of one chunk
// are collected and handed over together in the next task (a MessageChannel message: not throttled in
// background tabs, unlike requestAnimationFrame and timers), and the view folds them in one update.

import { useEffect, useRef, useState } from 'preact/hooks';
import type { StreamEvent } from './board.js';

/** Every event type the engine emits (src/engine/events.ts, src/protocol/e40.ts). */
export const eventTypes = [
  'step-end',
  'wave-prepare-start',
  'wave-prepare-end',
  'worktree-create',
  'gate-start',
  'gate-result',
  'wave-run-start',
  'agent-launch',
  'agent-progress',
  'agent-tool-call',
  'agent-end',
  'agent-retry',
  'agent-merge',
  'wave-run-end',
  'activity',
  'agent_performance',
  'cost',
] as const;

export type Connection = 'connecting' | 'open' | 'reconnecting';

/** An event as the page's EventSource delivered it. */
export interface Received {
  event: StreamEvent;
  /** When the EventSource delivered it (epoch ms; the latency bench's "received"). */
  at: number;
}

export interface EventStreamOptions {
  /** Query of /api/events (repo, impl, program, after). Undefined: no stream. */
  query: Record<string, string> | undefined;
  /** The events of one burst (the frames of one received chunk), in stream order; never empty. */
  onEvents: (events: Received[]) => void;
  /** Called after every event received before the resync frame was handed to onEvents. */
  onResync: () => void;
}

/**
 * Runs `flush` once in a later task after any number of `schedule()` calls in this one: a
 * MessageChannel message (runs after the current task, and is not throttled in a background tab).
 */
export function taskBatcher(flush: () => void): { schedule: () => void; close: () => void } {
  const channel = new MessageChannel();
  let scheduled = false;
  channel.port1.onmessage = () => {
    scheduled = false;
    flush();
  };
  return {
    schedule: () => {
      if (scheduled) return;
      scheduled = true;
      channel.port2.postMessage(undefined);
    },
    close: () => {
      channel.port1.onmessage = null;
      channel.port1.close();
    },
  };
}

export function useEventStream({ query, onEvents, onResync }: EventStreamOptions): Connection {
  const [connection, setConnection] = useState<Connection>('connecting');
  const handlers = useRef({ onEvents, onResync });
  handlers.current = { onEvents, onResync };
  const key = query ? new URLSearchParams(query).toString() : '';
  useEffect(() => {
    if (!query) return undefined;
    const source = new EventSource(`/api/events?${key}`, { withCredentials: true });
    let queue: Received[] = [];
    const flush = (): void => {
      if (queue.length === 0) return;
      const events = queue;
      queue = [];
      handlers.current.onEvents(events);
    };
    const batcher = taskBatcher(flush);
    const handle = (message: MessageEvent<string>): void => {
      let event: StreamEvent;
      try {
        event = JSON.parse(message.data) as StreamEvent;
      } catch {
        return;
      }
      if (typeof event.id !== 'number' && message.lastEventId) event.id = Number(message.lastEventId.split('-').pop());
      event.type ??= message.type;
      event.payload ??= {};
      queue.push({ event, at: Date.now() });
      batcher.schedule();
    };
    for (const type of eventTypes) source.addEventListener(type, handle as EventListener);
    source.onmessage = handle;
    source.addEventListener('resync', () => {
      // The events before the resync belong to the state being replaced: folded first, never on top of the refetch.
      flush();
      handlers.current.onResync();
    });
    source.onopen = () => setConnection('open');
    source.onerror = () => setConnection(source.readyState === EventSource.CLOSED ? 'connecting' : 'reconnecting');
    return () => {
      source.close();
      batcher.close();
      queue = [];
    };
  }, [key]);
  return connection;
}
