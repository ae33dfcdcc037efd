import { PolywaveError } from '../../errors/polywave-error.js';
import type { EventFilter, EventRow } from '../../observability/event-store.js';
import { parseTimeBound } from '../../observability/time-range.js';
import { openStoreForQuery } from '../event-store-reader.js';
import type { CommandIo, CommandResult } from '../io.js';

type Format = 'table' | 'json' | 'csv';

/** One event as `query events` and `events export` print it. */
export interface EventRecord {
  id: number;
  ts: string;
  run_id: string;
  seq: number;
  type: string;
  activity_type?: string;
  slug?: string;
  wave?: number;
  agent?: string;
  program?: string;
  event: unknown;
}

export function toRecord(row: EventRow): EventRecord {
  let event: unknown;
  try {
    event = JSON.parse(row.payload);
  } catch {
    event = row.payload;
  }
  return {
    id: row.id,
    ts: new Date(row.ts).toISOString(),
    run_id: row.run_id,
    seq: row.seq,
    type: row.type,
    ...(row.activity_type ? { activity_type: row.activity_type } : {}),
    ...(row.slug ? { slug: row.slug } : {}),
    ...(row.wave !== null ? { wave: row.wave } : {}),
    ...(row.agent ? { agent: row.agent } : {}),
    ...(row.program ? { program: row.program } : {}),
    event,
  };
}

function textOption(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The filters of `query events` / `events export` from their flags (bad values: X001, exit 2). */
export function filterFromOptions(options: Record<string, unknown>, io: CommandIo): EventFilter {
  const filter: EventFilter = {};
  const types = Array.isArray(options.type) ? (options.type as string[]) : typeof options.type === 'string' ? options.type.split(',').map((item) => item.trim()).filter(Boolean) : [];
  if (types.length > 0) filter.types = types;
  const impl = textOption(options, 'impl');
  if (impl) filter.impl = impl;
  const program = textOption(options, 'program');
  if (program) filter.program = program;
  const agent = textOption(options, 'agent');
  if (agent) filter.agent = agent;
  const run = textOption(options, 'run');
  if (run) filter.run = run;
  for (const [name, flag] of [['since', '--since'], ['until', '--until']] as const) {
    const value = textOption(options, name);
    if (value === undefined) continue;
    const bound = parseTimeBound(value, io.now());
    if (bound === undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} expects a duration (30m, 24h, 7d) or an ISO date, got "${value}"` });
    filter[name] = bound;
  }
  return filter;
}

/** A short human summary of an event for the table's DETAIL column. */
function detail(record: EventRecord): string {
  const event = (record.event ?? {}) as Record<string, unknown>;
  const parts: string[] = [];
  const step = event.step as { step?: unknown; status?: unknown } | undefined;
  if (step && typeof step === 'object') parts.push(`step=${String(step.step)} ${String(step.status)}`);
  for (const key of ['activity_type', 'status', 'failure_type', 'gate', 'tool', 'model', 'passed', 'success', 'state', 'input_tokens', 'output_tokens', 'cost_usd', 'duration_ms', 'details']) {
    const value = event[key];
    if (value === undefined || value === null || value === '') continue;
    parts.push(`${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  }
  const line = parts.join(' ');
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}

const tableColumns = ['TIME', 'TYPE', 'IMPL', 'WAVE', 'AGENT', 'RUN', 'SEQ', 'DETAIL'] as const;

function tableCells(record: EventRecord): string[] {
  return [record.ts, record.type, record.slug ?? record.program ?? '-', record.wave === undefined ? '-' : String(record.wave), record.agent ?? '-', record.run_id, String(record.seq), detail(record)];
}

function formatTable(records: EventRecord[], header: boolean): string {
  const rows = records.map(tableCells);
  const widths = tableColumns.map((name, index) => Math.max(header ? name.length : 0, ...rows.map((row) => row[index]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, index) => (index === cells.length - 1 ? cell : cell.padEnd(widths[index]!))).join('  ').trimEnd();
  return [...(header ? [line(tableColumns)] : []), ...rows.map(line)].map((text) => `${text}\n`).join('');
}

const csvColumns = ['id', 'ts', 'run_id', 'seq', 'type', 'activity_type', 'slug', 'wave', 'agent', 'program', 'event'] as const;

function csvCell(value: unknown): string {
  const text = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function formatCsv(records: EventRecord[], header: boolean): string {
  const lines = records.map((record) => csvColumns.map((column) => csvCell(record[column])).join(','));
  return [...(header ? [csvColumns.join(',')] : []), ...lines].map((text) => `${text}\n`).join('');
}

function formatOption(options: Record<string, unknown>): Format {
  const format = textOption(options, 'format') ?? 'table';
  if (format !== 'table' && format !== 'json' && format !== 'csv') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--format must be table, json or csv (got "${format}")` });
  return format;
}

/**
 * `query events [--type T] [--impl S] [--program P] [--agent A] [--since D] [--until D] [--run ID]
 * [--format table|json|csv] [--limit N] [--follow] [--store F]` — the newest N matching events,
 * oldest first. `--follow` then prints new matching events as other processes store them (polling
 * by row id) until interrupted; with `--format json` each is one JSON line.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const what = args[0]?.trim();
  if (what !== 'events') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `query: unknown subject "${what ?? ''}" (expected: query events)` });
  const format = formatOption(options);
  const limit = options.limit === undefined ? 100 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--limit expects a non-negative integer` });
  const filter = filterFromOptions(options, io);
  const follow = options.follow === true;
  const intervalMs = Math.max(20, Number(io.env.POLYWAVE_FOLLOW_INTERVAL_MS) || 200);
  let store = await openStoreForQuery(options, io);
  const { queryLatestEvents, iterateEvents, lastEventId, openEventStore } = await import('../../observability/event-store.js');
  try {
    const records = store.db && limit > 0 ? queryLatestEvents(store.db, filter, limit).map(toRecord) : [];
    if (!follow) {
      if (format === 'json') io.stdout(`${JSON.stringify(records, null, 2)}\n`);
      else if (format === 'csv') io.stdout(formatCsv(records, true));
      else if (records.length === 0) io.stderr(`query events: no events${store.db ? '' : ` (no store at ${store.path})`}\n`);
      else io.stdout(formatTable(records, true));
      return 0;
    }
    // --follow: what was there (as lines), then every new row as it arrives, until SIGINT/SIGTERM.
    const print = (batch: EventRecord[], first: boolean) => {
      if (batch.length === 0 && !(first && format === 'csv')) return;
      if (format === 'json') for (const record of batch) io.stdout(`${JSON.stringify(record)}\n`);
      else if (format === 'csv') io.stdout(formatCsv(batch, first));
      else io.stdout(formatTable(batch, first));
    };
    print(records, true);
    let afterId = records.length > 0 ? records[records.length - 1]!.id : store.db ? lastEventId(store.db) : 0;
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      while (!controller.signal.aborted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, intervalMs);
          controller.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          }, { once: true });
        });
        // The reader went away (`--follow | head`): nothing printed now reaches anyone.
        if (controller.signal.aborted || io.outputClosed?.() === true) break;
        if (!store.db) {
          // The store appears when the first run records into it.
          store = { path: store.path, db: openEventStore(store.path, { readonly: true }) };
          if (!store.db) continue;
        }
        const batch = [...iterateEvents(store.db, { ...filter, afterId }, 1000)].map(toRecord);
        if (batch.length > 0) afterId = batch[batch.length - 1]!.id;
        print(batch, false);
      }
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    return 0;
  } finally {
    store.db?.close();
  }
}
