import os from 'node:os';
import path from 'node:path';

/** Where the event store lives and whether a run records into it (docs/observability.md). */
export interface StoreSettings {
  /** Absolute path of the SQLite file. */
  path: string;
  /** False with `--no-events` or `POLYWAVE_NO_EVENTS=1`. */
  enabled: boolean;
}

/**
 * One database per user, shared by all of the user's repositories (like the Go tool's
 * `~/.polywave/observability.db`), in the XDG data directory: `$XDG_DATA_HOME/polywave/events.db`,
 * else `~/.local/share/polywave/events.db`. `--store <path>` wins over `POLYWAVE_EVENTS_DB`, which
 * wins over the default; a relative path is taken from `cwd`.
 */
export function resolveStoreSettings(input: { store?: unknown; events?: unknown; env: Readonly<Record<string, string | undefined>>; cwd: string }): StoreSettings {
  const { env, cwd } = input;
  const flag = typeof input.store === 'string' && input.store.trim() !== '' ? input.store.trim() : undefined;
  const fromEnv = env.POLYWAVE_EVENTS_DB?.trim() ? env.POLYWAVE_EVENTS_DB.trim() : undefined;
  const chosen = flag ?? fromEnv;
  const home = env.HOME?.trim() || os.homedir();
  const dataHome = env.XDG_DATA_HOME?.trim() && path.isAbsolute(env.XDG_DATA_HOME.trim()) ? env.XDG_DATA_HOME.trim() : path.join(home, '.local', 'share');
  const storePath = chosen ? path.resolve(cwd, chosen) : path.join(dataHome, 'polywave', 'events.db');
  const enabled = input.events !== false && env.POLYWAVE_NO_EVENTS !== '1' && env.POLYWAVE_NO_EVENTS !== 'true';
  return { path: storePath, enabled };
}
