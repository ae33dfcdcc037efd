import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { EventFilter, EventRow } from '../observability/event-store.js';
import { rootsInRepo, type EventTail } from './event-tail.js';

/** Rows read from the store per step of one client: its whole queue (bounded memory per client). */
export const sseBatchRows = 256;

export interface StreamEventsOptions {
  tail: EventTail;
  filter: EventFilter;
  /** Resume after this row id (Last-Event-ID / ?after=); undefined = only what is stored from now on. */
  after: number | undefined;
  /** Only events of runs that worked on one of these repositories (their recorded roots, else their cwd; undefined: every event). */
  repoPaths: readonly string[] | undefined;
  heartbeatMs: number;
  /** Send `resync` before anything else (the client's Last-Event-ID was not a row id, or a bare one without the store's epoch: it must refetch). */
  resyncFirst?: boolean;
  /** The store epoch of the client's Last-Event-ID (`<epoch>-<row>`): another store's → `resync` (attack-serve-15 N7). */
  epoch?: string;
  redact: (value: unknown) => unknown;
  /** Latency tracing (POLYWAVE_SERVE_TRACE, benches only): told after each write which rows it carried, when they were read and when the write returned. */
  trace?: (rows: readonly EventRow[], readAt: number, writtenAt: number) => void;
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { unparsable: true };
  }
}

/**
 * One SSE frame: `id` is `<store epoch>-<row id>` (what Last-Event-ID resumes after; the epoch
 * tells a row of this store from one of a replaced or restored store, see EventTail.epoch).
 */
export function eventFrame(row: EventRow, redact: (value: unknown) => unknown, epoch = 'none'): string {
  const data = redact({ id: row.id, run_id: row.run_id, seq: row.seq, ts: row.ts, type: row.type, activity_type: row.activity_type, slug: row.slug, wave: row.wave, agent: row.agent, program: row.program, payload: parsePayload(row.payload) });
  const type = /^[\w.-]+$/.test(row.type) ? row.type : 'message';
  return `id: ${epoch}-${row.id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * `/api/events`: every matching row after the client's cursor, in storage order, never dropped.
 * The client's loop reads at most {@link sseBatchRows} rows, writes them, and awaits the write:
 * a socket that does not drain stops the loop (the node adapter waits for 'drain'), so a slow
 * client holds back only itself and later continues from its own cursor. When caught up, it
 * waits until the tail sees a newer row (woken by the store's write notification), sending a
 * heartbeat comment every heartbeatMs.
 */
export function streamEvents(c: Context, options: StreamEventsOptions): Response {
  const { tail } = options;
  return streamSSE(c, async (stream) => {
    const controller = new AbortController();
    stream.onAbort(() => controller.abort());
    let cursor = options.after ?? tail.poll();
    const latest = tail.poll();
    let generation = tail.generation;
    // `id:` moves the browser's Last-Event-ID to the new cursor: a reconnect right after resumes there, not at the stale id.
    const resync = (after: number) => `id: ${tail.epoch}-${after}\nevent: resync\ndata: ${JSON.stringify({ after })}\n\n`;
    await stream.write(`retry: 1000\n: polywave events after ${cursor}\n\n`);
    if (options.after !== undefined && options.epoch !== undefined && options.epoch !== 'none' && options.epoch !== tail.epoch) {
      // attack-serve-15 N7: the client's id is a row of another store (replaced or restored while it was away, or
      // another --store): whatever its number, the rows it would resume after are not this store's. Refetch, then follow.
      await stream.write(resync(latest));
      cursor = latest;
    } else if (options.after !== undefined && options.after > latest) {
      // The client's id is newer than the store — an empty store included (it was replaced,
      // pruned or deleted): the rows it would wait for are not its rows. It must refetch, then
      // follows from the store's current max id (attack-serve.md F5a).
      await stream.write(resync(latest));
      cursor = latest;
    } else if (options.resyncFirst) {
      // No usable id (after undefined: from the store's current position), or a bare row id of a pre-epoch client
      // (attack-serve-17 X4: the rows after it follow, but the store may have been replaced: refetch first).
      await stream.write(resync(cursor));
    }
    const repos = options.repoPaths;
    // A run belongs to a served repository by the roots it recorded (else its cwd): EventTail.runRoots.
    const inRepo = (row: EventRow): boolean => {
      if (!repos) return true;
      const roots = tail.runRoots(row.run_id);
      return repos.some((repo) => rootsInRepo(roots, repo));
    };
    while (!stream.aborted && !controller.signal.aborted && !tail.closed) {
      if (tail.generation !== generation) {
        // The store file was replaced while serving (the tail reopened it): ids start over.
        generation = tail.generation;
        cursor = tail.poll();
        await stream.write(resync(cursor));
        continue;
      }
      const seen = tail.lastId;
      const readAt = options.trace ? Date.now() : 0;
      const rows = tail.read(options.filter, cursor, sseBatchRows);
      if (rows.length > 0) {
        let text = '';
        const epoch = tail.epoch;
        for (const row of rows) if (inRepo(row)) text += eventFrame(row, options.redact, epoch);
        cursor = rows[rows.length - 1]!.id;
        if (text !== '') {
          await stream.write(text);
          options.trace?.(rows.filter(inRepo), readAt, Date.now());
        }
        if (rows.length === sseBatchRows) continue;
      }
      // Every row up to `seen` was committed before this read (one writer at a time, ids in commit order).
      cursor = Math.max(cursor, seen);
      const before = tail.lastId;
      if (tail.generation !== generation) continue;
      await tail.waitBeyond(cursor, options.heartbeatMs, controller.signal, generation);
      if (tail.lastId === before && !controller.signal.aborted && !tail.closed && tail.lastId <= cursor) await stream.write(': heartbeat\n\n');
    }
  });
}
