import { PolywaveError } from '../errors/polywave-error.js';
import { locateProjectConfig, readProjectConfig, type ProjectDispatchConfig } from '../store/project-config.js';
import { dispatchCodes } from './codes.js';
import type { Dispatcher } from './dispatcher.js';

/** Flags of run-wave/run that choose the dispatcher. */
export interface DispatchFlags {
  /** `--dispatch redis://host:port` (or `inprocess` to ignore polywave.config.json's `dispatch`). */
  dispatch?: string;
  /** `--dispatch-remote <git-url>` */
  dispatchRemote?: string;
}

/**
 * The dispatcher a run uses: `--dispatch` first, then polywave.config.json's `dispatch.url` (found
 * upward from `startDir`); none → undefined (in-process). Redis is checked now: unreachable →
 * DISPATCH_REDIS_UNREACHABLE (exit 2) before anything changed.
 */
export async function dispatcherFromConfig(flags: DispatchFlags, options: { startDir: string; env: Readonly<Record<string, string | undefined>> }): Promise<Dispatcher | undefined> {
  if (flags.dispatch === 'inprocess' || flags.dispatch === 'in-process') return undefined;
  const configPath = await locateProjectConfig(options.startDir).catch(() => undefined);
  const config: ProjectDispatchConfig = (configPath ? (await readProjectConfig(configPath).catch(() => undefined))?.config?.dispatch : undefined) ?? {};
  const url = flags.dispatch ?? config.url;
  if (!url) return undefined;
  if (!/^rediss?:\/\//.test(url)) throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `--dispatch: not a Redis URL: ${JSON.stringify(url)} (expected redis://host:port, or inprocess)` });
  const remote = flags.dispatchRemote ?? config.remote ?? '';
  const { createRedisDispatcher } = await import('./redis-dispatcher.js');
  return createRedisDispatcher({
    url,
    remote,
    env: options.env,
    ...(config.labels ? { labels: config.labels } : {}),
    ...(config.label_wait_seconds ? { labelWaitMs: Math.round(config.label_wait_seconds * 1000) } : {}),
    ...(config.outage_seconds ? { outageMs: Math.round(config.outage_seconds * 1000) } : {}),
  });
}
