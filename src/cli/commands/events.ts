import { PolywaveError } from '../../errors/polywave-error.js';
import { parseTimeBound } from '../../observability/time-range.js';
import { openStoreForQuery } from '../event-store-reader.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { filterFromOptions, toRecord } from './query-events.js';

/**
 * `events prune --older-than 30d [--store F]` — deletes the events older than that (and runs
 * left without events); prints {store, deleted_events, deleted_runs}.
 * `events export [--format jsonl] [--impl S] [--program P] [--agent A] [--type T] [--run ID]
 * [--since D] [--until D] [--store F]` — every matching event as one JSON line, oldest first.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const action = args[0]?.trim();
  if (action === 'prune') return prune(options, io);
  if (action === 'export') return exportEvents(options, io);
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `events: unknown action "${action ?? ''}" (expected prune or export)` });
}

async function prune(options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const olderThan = typeof options.olderThan === 'string' ? options.olderThan.trim() : '';
  if (olderThan === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'events prune needs --older-than <duration> (e.g. 30d)' });
  if (!/^\d+(\.\d+)?\s*(ms|s|m|h|d|w)$/i.test(olderThan)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--older-than expects a duration such as 30d, 12h or 2w (got "${olderThan}")` });
  const before = parseTimeBound(olderThan, io.now())!;
  const store = await openStoreForQuery(options, io, { write: true });
  if (!store.db) {
    printJson(io, { store: store.path, deleted_events: 0, deleted_runs: 0 });
    return 0;
  }
  const { pruneEvents } = await import('../../observability/event-store.js');
  try {
    const result = pruneEvents(store.db, before);
    printJson(io, { store: store.path, before: new Date(before).toISOString(), deleted_events: result.events, deleted_runs: result.runs });
    return 0;
  } finally {
    store.db.close();
  }
}

async function exportEvents(options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const format = typeof options.format === 'string' ? options.format.trim() : 'jsonl';
  if (format !== 'jsonl') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `events export: --format must be jsonl (got "${format}")` });
  const filter = filterFromOptions(options, io);
  const store = await openStoreForQuery(options, io);
  if (!store.db) return 0;
  const { iterateEvents } = await import('../../observability/event-store.js');
  try {
    let chunk = '';
    for (const row of iterateEvents(store.db, filter)) {
      chunk += `${JSON.stringify(toRecord(row))}\n`;
      if (chunk.length > 1 << 16) {
        io.stdout(chunk);
        chunk = '';
      }
    }
    if (chunk) io.stdout(chunk);
    return 0;
  } finally {
    store.db.close();
  }
}
