import { appendFileSync } from 'node:fs';
import type { EventRow } from '../observability/event-store.js';
import type { EventTail } from './event-tail.js';

/** How often the trace's buffered lines are appended to its file (ms). */
export const traceFlushMs = 250;

/**
 * Latency tracing for the benches (`POLYWAVE_SERVE_TRACE=<file>`; off otherwise, nothing is
 * measured then): one line per event and SSE client —
 * `<row id> <client> <ts> <noticed> <read> <written>` (epoch ms): when the run emitted it, when the
 * server's tail first saw a max id that covers it (or the loop's read, when that found it first), when that
 * client's loop read it, when the write
 * of its frame returned. `client` is `<n>:<first word of the User-Agent>` (n counts connections).
 * Lines are kept in memory and appended every {@link traceFlushMs} and when the process exits: a
 * synchronous file append per write sat between one client's write and the next client's read.
 */
export function latencyTracer(file: string, tail: EventTail): { stream: (userAgent: string | undefined) => (rows: readonly EventRow[], readAt: number, writtenAt: number) => void } {
  // (max id, when seen), in increasing id order; a row's "noticed" is the first entry that covers it.
  const advances: Array<[number, number]> = [];
  tail.onAdvance = (id, at) => {
    if (advances.length > 0 && id <= advances[advances.length - 1]![0]) advances.length = 0; // a replaced store starts over
    advances.push([id, at]);
  };
  const noticed = (id: number): number => {
    let low = 0;
    let high = advances.length - 1;
    let found = -1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if (advances[middle]![0] >= id) {
        found = middle;
        high = middle - 1;
      } else low = middle + 1;
    }
    return found < 0 ? 0 : advances[found]![1];
  };
  let pending = '';
  const flush = (): void => {
    if (pending === '') return;
    const text = pending;
    pending = '';
    try {
      appendFileSync(file, text);
    } catch {
      // tracing is for benches: a lost line is not worth failing the server
    }
  };
  setInterval(flush, traceFlushMs).unref();
  process.once('exit', flush);
  let clients = 0;
  return {
    stream: (userAgent) => {
      clients += 1;
      const client = `${clients}:${(userAgent ?? 'none').split(/[\s/]/)[0] || 'none'}`;
      return (rows, readAt, writtenAt) => {
        // A row committed after the tail's last poll was found by the loop's own read: noticed when read.
        for (const row of rows) pending += `${row.id} ${client} ${row.ts} ${Math.min(noticed(row.id) || readAt, readAt)} ${readAt} ${writtenAt}\n`;
      };
    },
  };
}
