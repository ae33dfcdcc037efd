import { existsSync } from 'node:fs';
import { PolywaveError } from '../errors/polywave-error.js';
import type { Database } from '../observability/event-store.js';
import { resolveStoreSettings } from '../observability/store-location.js';
import type { CommandIo } from './io.js';

// Apart from event-recording.ts: the query commands load neither the recorder nor OpenTelemetry.

/**
 * Opens the event store of `--store`/POLYWAVE_EVENTS_DB/the default for a query command. A
 * missing store is an empty one (undefined); an unreadable or newer one is a coded error (exit 2).
 */
export async function openStoreForQuery(options: Record<string, unknown>, io: CommandIo, input: { write?: boolean } = {}): Promise<{ path: string; db: Database | undefined }> {
  const settings = resolveStoreSettings({ store: options.store, env: io.env, cwd: io.cwd });
  const { openEventStore, FutureSchemaError } = await import('../observability/event-store.js');
  try {
    if (input.write && !existsSync(settings.path)) return { path: settings.path, db: undefined };
    return { path: settings.path, db: openEventStore(settings.path, input.write ? {} : { readonly: true }) };
  } catch (error) {
    if (error instanceof FutureSchemaError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new PolywaveError({ code: 'EVENT_STORE_UNREADABLE', message: `event store ${settings.path}: ${message}` });
  }
}
