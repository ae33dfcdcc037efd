import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/** npm's default registry. */
const defaultRegistry = 'https://registry.npmjs.org/';

/** The `registry=` of an .npmrc file, if it sets one. */
function registryOf(file: string): string | undefined {
  try {
    for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
      const match = /^\s*registry\s*=\s*(\S+)\s*$/.exec(line);
      if (match) return match[1];
    }
  } catch {
    // no such file
  }
  return undefined;
}

/** The registry npm would use in `cwd`: npm_config_registry, the project's .npmrc, the user's, else npm's default. */
export function npmRegistryHost(cwd: string, env: Env): string {
  const registry = env.npm_config_registry ?? env.NPM_CONFIG_REGISTRY ?? registryOf(path.join(cwd, '.npmrc')) ?? registryOf(path.join(env.HOME || os.homedir(), '.npmrc')) ?? defaultRegistry;
  try {
    return new URL(registry).hostname.toLowerCase();
  } catch {
    return new URL(defaultRegistry).hostname;
  }
}

/** Does the sandbox's network allow-list (exact hosts, `*.domain` wildcards) let `host` through? */
export function hostAllowed(host: string, allowedHosts: readonly string[]): boolean {
  return allowedHosts.some((entry) => {
    const pattern = entry.trim().toLowerCase();
    if (pattern === '*' || pattern === host) return true;
    return pattern.startsWith('*.') && (host.endsWith(pattern.slice(1)) || host === pattern.slice(2));
  });
}

/**
 * Issue 13 (outside attack F9): a gate's npm cache is the repository's gate build cache, empty at
 * first, and the sandbox lets the gate reach only polywave.config.json's `sandbox.network.allow`.
 * Where that list does not let npm reach its registry, npm (and `npx <tool>` for a tool the project
 * does not have) would retry the registry for over a minute before failing (`EAI_AGAIN`): npm is
 * told it is offline instead (`npm_config_offline=true`: cache only, a missing package fails at
 * once, ENOTCACHED), and never to retry. The user's npm cache cannot serve as a read-only fallback:
 * npm writes in its cache directory on every run (`_logs`, `_npx`, index entries). Empty where the
 * registry is allowed, or where the caller set npm_config_offline itself.
 */
export function npmOfflineEnv(cwd: string, allowedHosts: readonly string[], env: Env): Record<string, string> {
  if (env.npm_config_offline !== undefined || env.NPM_CONFIG_OFFLINE !== undefined) return {};
  if (hostAllowed(npmRegistryHost(cwd, env), allowedHosts)) return {};
  return { npm_config_offline: 'true', npm_config_fetch_retries: '0', npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };
}

/** npm's own words for "offline, and the package is not in the cache": ENOTCACHED, an offline E404, `only-if-cached`. */
const offlineMiss = /\bENOTCACHED\b|\bE404\b[^\n]*(?:\n[^\n]*){0,3}\boffline\b|\boffline\b[^\n]*\bE404\b|only-if-cached/i;

/**
 * The line a failed gate's output gets when npm ran offline (npmOfflineEnv) and failed for a
 * package it could not fetch (outside attack X6, N7: `npx --yes eslint` passed in Go, which reaches
 * the registry; ours failed with ENOTCACHED and no word why). Undefined for any other failure.
 */
export function npmOfflineHint(output: string, registryHost: string): string | undefined {
  if (!offlineMiss.test(output)) return undefined;
  return `[polywave: npm ran offline in the gate sandbox, so it could not fetch that package: the registry ${registryHost} is not in sandbox.network.allow of the committed polywave.config.json; add "${registryHost}" there to let npm and npx fetch packages in gates]`;
}
