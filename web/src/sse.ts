// Live events over SSE (/api/events). EventSource reconnects by itself and sends Last-Event-ID,
// so the server resumes after the last frame this page saw; a `resync` frame (the client fell too
// far behind) makes the view refetch its state. The cookie authenticates (EventSource cannot set
// headers; same origin).

import { useEffect, useRef, useState } from 'preact/hooks';
import type { StreamEvent } from './board';

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

export interface EventStreamOptions {
  /** Query of /api/events (repo, impl, program, after). Undefined: no stream. */
  query: Record<string, string> | undefined;
  onEvent: (event: StreamEvent) => void;
  onResync: () => void;
}

export function useEventStream({ query, onEvent, onResync }: EventStreamOptions): Connection {
  const [connection, setConnection] = useState<Connection>('connecting');
  const handlers = useRef({ onEvent, onResync });
  handlers.current = { onEvent, onResync };
  const key = query ? new URLSearchParams(query).toString() : '';
  useEffect(() => {
    if (!query) return undefined;
    const source = new EventSource(`/api/events?${key}`, { withCredentials: true });
    const handle = (message: MessageEvent<string>): void => {
      let event: StreamEvent;
      try {
        event = JSON.parse(message.data) as StreamEvent;
      } catch {
        return;
      }
      if (typeof event.id !== 'number' && message.lastEventId) event.id = Number(message.lastEventId);
      event.type ??= message.type;
      event.payload ??= {};
      handlers.current.onEvent(event);
    };
    for (const type of eventTypes) source.addEventListener(type, handle as EventListener);
    source.onmessage = handle;
    source.addEventListener('resync', () => handlers.current.onResync());
    source.onopen = () => setConnection('open');
    source.onerror = () => setConnection(source.readyState === EventSource.CLOSED ? 'connecting' : 'reconnecting');
    return () => source.close();
  }, [key]);
  return connection;
}
