import { PolywaveError } from '../errors/polywave-error.js';
import type { ProjectDispatchConfig } from '../store/project-config.js';
import { assertConfigAccepted, loadTrustedConfig } from '../store/trusted-config.js';
import { dispatchCodes } from './codes.js';
import type { Dispatcher } from './dispatcher.js';
import { checkQueueName } from './job.js';
import { redactRedisUrl, redactUserinfo, redisOptionsFromUrl } from './redis-url.js';

/** Flags of run-wave/run that choose the dispatcher. */
export interface DispatchFlags {
  /** `--dispatch redis://host:port` (or `inprocess` to ignore polywave.config.json's `dispatch`). */
  dispatch?: string;
  /** `--dispatch-remote <git-url>` */
  dispatchRemote?: string;
  /** `--dispatch-queue <name>` */
  dispatchQueue?: string;
}

/** The dispatch flags of a command's parsed options (run, run-wave, retry). */
export function dispatchFlagsFrom(options: Record<string, unknown>): DispatchFlags {
  return {
    ...(typeof options.dispatch === 'string' ? { dispatch: options.dispatch } : {}),
    ...(typeof options.dispatchRemote === 'string' ? { dispatchRemote: options.dispatchRemote } : {}),
    ...(typeof options.dispatchQueue === 'string' ? { dispatchQueue: options.dispatchQueue } : {}),
  };
}

/**
 * The dispatcher a run uses: `--dispatch` first, then polywave.config.json's `dispatch.url` (the
 * repository root's config as committed, store/trusted-config.ts); none → undefined (in-process).
 * A blocked, unaccepted config change of the repository is refused first (SANDBOX_CONFIG_CHANGED, exit 1). Everything is checked now, before
 * anything changed (exit 2, one coded line): an invalid `dispatch` block (DISPATCH_INVALID_CONFIG),
 * a bad `--dispatch-queue` (DISPATCH_INVALID_QUEUE), `--dispatch-remote`/`--dispatch-queue` with no
 * Redis URL (DISPATCH_NO_URL), the shared remote
 * (DISPATCH_REMOTE_UNREACHABLE) and Redis (DISPATCH_REDIS_UNREACHABLE).
 */
export async function dispatcherFromConfig(flags: DispatchFlags, options: { startDir: string; env: Readonly<Record<string, string | undefined>> }): Promise<Dispatcher | undefined> {
  const inProcess = flags.dispatch === 'inprocess' || flags.dispatch === 'in-process';
  // A bad queue name is refused first, whatever else is wrong (DISPATCH_INVALID_QUEUE).
  if (flags.dispatchQueue !== undefined) checkQueueName(flags.dispatchQueue, '--dispatch-queue');
  const lone = flags.dispatchRemote !== undefined ? '--dispatch-remote' : flags.dispatchQueue !== undefined ? '--dispatch-queue' : undefined;
  if (inProcess && lone) throw new PolywaveError({ code: dispatchCodes.noUrl, message: `${lone} needs the Redis dispatcher, not --dispatch inprocess; nothing was started` });
  // X10 N9/R5: a BLOCKED change of the repository's config (its dispatch, sandbox, setup…) is refused until
  // accepted — before anything starts, in-process runs too (their prepare-wave would refuse after the IMPL changed).
  await assertConfigAccepted([options.startDir], 'this run');
  if (inProcess) return undefined;
  // X10 N6: `dispatch` comes only from the repository root's committed config (never a nested or untracked one).
  const loaded = await loadTrustedConfig(options.startDir).catch(() => undefined);
  const configPath = loaded?.path;
  // F16: a `dispatch` block with problems is never used half-checked.
  const problems = (loaded?.findings ?? []).filter((finding) => finding.severity !== 'warning' && (finding.field === 'dispatch' || finding.field?.startsWith('dispatch.')));
  if (problems.length > 0) {
    throw new PolywaveError({ code: dispatchCodes.invalidConfig, message: `${configPath}: ${redactUserinfo(problems.map((finding) => finding.message).join('; '))}; nothing was started` });
  }
  const config: ProjectDispatchConfig = loaded?.config?.dispatch ?? {};
  const url = flags.dispatch ?? config.url;
  if (!url) {
    // F17: a remote with nothing to dispatch through is a mistake, not an in-process run.
    if (lone) throw new PolywaveError({ code: dispatchCodes.noUrl, message: `${lone} needs a Redis URL: --dispatch redis://host:port or dispatch.url in polywave.config.json; nothing was started` });
    return undefined;
  }
  if (!/^rediss?:\/\//.test(url)) throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: `--dispatch: not a Redis URL: ${JSON.stringify(redactRedisUrl(url))} (expected redis://host:port, or inprocess)` });
  // A malformed URL (bad port, db) is refused before the remote is asked anything — with the same `--dispatch:` as above.
  try {
    redisOptionsFromUrl(url);
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === dispatchCodes.invalidUrl) {
      throw new PolywaveError({ code: dispatchCodes.invalidUrl, message: error.message.startsWith('not a Redis URL') ? `--dispatch: not a Redis URL: ${JSON.stringify(redactRedisUrl(url))} (expected redis://host:port, or inprocess)` : `--dispatch: ${error.message}` });
    }
    throw error;
  }
  const remote = flags.dispatchRemote ?? config.remote ?? '';
  const queue = flags.dispatchQueue ?? config.queue;
  const { createRedisDispatcher } = await import('./redis-dispatcher.js');
  return createRedisDispatcher({
    url,
    remote,
    cwd: options.startDir,
    env: options.env,
    ...(queue !== undefined ? { queue } : {}),
    ...(config.labels ? { labels: config.labels } : {}),
    ...(config.label_wait_seconds !== undefined ? { labelWaitMs: Math.round(config.label_wait_seconds * 1000) } : {}),
    ...(config.outage_seconds !== undefined ? { outageMs: Math.round(config.outage_seconds * 1000) } : {}),
    ...(config.gates ? { gates: config.gates } : {}),
  });
}
