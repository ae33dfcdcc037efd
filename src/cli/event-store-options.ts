import type { OptionSpec } from './command-spec.js';

// Kept apart from event-recording.ts: the command table loads this on every call, the store only where it records.

/** `--store` and `--no-events` of the commands that run agents (E40 recording). */
export const eventStoreOptions: OptionSpec[] = [
  { flags: '--store <path>', description: 'event store (SQLite) to record into (default: $POLYWAVE_EVENTS_DB, else $XDG_DATA_HOME/polywave/events.db)' },
  { flags: '--no-events', description: 'do not record this run in the event store (also POLYWAVE_NO_EVENTS=1)' },
];

/** The `--store` option of the query commands (reading only). */
export const storeOption: OptionSpec = { flags: '--store <path>', description: 'event store (SQLite) to read (default: $POLYWAVE_EVENTS_DB, else $XDG_DATA_HOME/polywave/events.db)' };
