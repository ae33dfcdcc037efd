/**
 * The `sandbox` section of polywave.config.json (network allow-list, extra writable directories),
 * shared by agents and gates.
 */
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runGit } from '../git/run-git.js';
import { configuredSandbox, parseProjectConfig } from '../store/project-config.js';
import { configBlockInEffect, readTrustedConfigText } from '../store/trusted-config.js';
import { createCheckoutPins } from './checkout-pins.js';
import type { SandboxSettings } from './sandbox-plan.js';

/**
 * The `sandbox` settings for `directory` (empty when there is no config or it is unreadable) — from
 * the repository root's polywave.config.json as COMMITTED (store/trusted-config.ts). These settings
 * widen every later sandbox of the repository, and sandboxed code can write the main checkout (a
 * post-merge gate, verify-build's test run, a solo-wave agent): outside attack X4 wrote a config with
 * `sandbox.writable: ["~"]` there, and the next gate wrote `~/.bashrc`. So a working-tree file that
 * differs from HEAD's is not trusted: HEAD's version is used (none: the defaults); a nested
 * directory's config is never read for them (X10 N6). A config outside any repository is read as it
 * is. While a blocked change of the repository's config is in effect (X10 N9: finalize-wave BLOCKED
 * it, no one accepted it), the settings are the narrower of HEAD's and the accepted config's.
 */
export async function readSandboxSettings(directory: string): Promise<SandboxSettings> {
  const settings = await readProjectSandboxSettings(directory);
  return confinedToProject ? confine(settings, directory) : settings;
}

/**
 * Outside round A20-45: on a `polywave worker` the project's committed settings are a job producer's, not the worker
 * operator's — `sandbox.writable: ["~"]` let a dispatched agent write the worker user's home (a shell rc file: code
 * outside any sandbox), `readable` read the operator's files, `network.allow: ["localhost"]` reach the worker host's
 * own Redis. A worker confines them: writable and readable paths only inside the job's own checkout, no loopback host.
 */
let confinedToProject = false;

/** Turns the worker's confinement of the project's sandbox settings on (for this process; `false` for tests). */
export function confineProjectSandboxSettings(on = true): void {
  confinedToProject = on;
}

function confine(settings: SandboxSettings, directory: string): SandboxSettings {
  const top = path.resolve(directory);
  const inside = (entry: string): boolean => {
    const absolute = path.resolve(top, entry.replace(/^~(?=\/|$)/, os.homedir()));
    const relative = path.relative(top, absolute);
    return !relative.startsWith('..') && !path.isAbsolute(relative);
  };
  const loopback = (host: string): boolean => /^(localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[?::1?\]?|.*\.localhost)(:\d+)?$/i.test(host.trim());
  return {
    ...(settings.network ? { network: { ...settings.network, allow: (settings.network.allow ?? []).filter((host) => !loopback(host)) } } : {}),
    ...(settings.writable ? { writable: settings.writable.filter(inside) } : {}),
    ...(settings.readable ? { readable: settings.readable.filter(inside) } : {}),
  };
}

async function readProjectSandboxSettings(directory: string): Promise<SandboxSettings> {
  try {
    const trusted = await readTrustedConfigText(directory);
    if (trusted.path === undefined) return {};
    const configPath = trusted.path;
    // no catch here: a block check that fails takes the catch below (the defaults, narrowest), never HEAD's settings alone
    const block = trusted.repository ? await configBlockInEffect(trusted.repository.toplevel) : undefined;
    const accepted: SandboxSettings[] = block ? [configuredSandbox(block.accepted)] : [];
    const pinned = pinsOf(configPath);
    if (pinned.length > 0) return narrowest([...(await Promise.all(pinned.map((commit) => settingsAt(configPath, commit)))), ...accepted]);
    if (trusted.text === undefined) return {};
    return narrowest([configuredSandbox(parseProjectConfig(trusted.text).config), ...accepted]);
  } catch {
    return {}; // stays: the defaults are the narrowest settings (fail closed: no extra writable/readable path, no network)
  }
}

/**
 * Pinned commits (outside attack X8 #4): while a wave is finalized, the sandbox settings of its
 * repository are those of the wave's BASE commit (recorded by prepare-wave), not HEAD's — HEAD is the
 * merge just made, and an agent that owned polywave.config.json committed `sandbox.writable: [<home>]`
 * that verify-build's test run then got. Keyed by the checkout (resolved); several pins of one
 * checkout (concurrent finalizes in one process) give the narrowest settings.
 */
const pins = createCheckoutPins();

/**
 * From now until the returned release is called, {@link readSandboxSettings} for a config inside
 * `checkout` reads it as committed at `commit` (a config absent there: the defaults).
 */
export function pinSandboxSettings(checkout: string, commit: string): () => void {
  return pins.pin(checkout, commit);
}

/** The commits pinned for `checkout` ({@link pinSandboxSettings}): the base commits of the waves being finalized there. */
export function pinnedCommitsOf(checkout: string): string[] {
  return pins.of(checkout);
}

function pinsOf(configPath: string): string[] {
  if (pins.size === 0) return [];
  let real = configPath;
  try {
    real = realpathSync(configPath);
  } catch {
    // as given
  }
  const result: string[] = [];
  for (const [checkout, commits] of pins.entries()) {
    const relative = path.relative(checkout, real);
    if (!relative.startsWith('..') && !path.isAbsolute(relative)) result.push(...commits);
  }
  return [...new Set(result)];
}

/** The sandbox settings of `configPath` as committed at `commit` (absent, unreadable: the defaults). */
async function settingsAt(configPath: string, commit: string): Promise<SandboxSettings> {
  const committed = await committedText(configPath, commit).catch(() => undefined);
  if (committed?.text === undefined) return {};
  return configuredSandbox(parseProjectConfig(committed.text).config);
}

/** What every one of `all` allows (hosts, writable and readable paths listed by each). */
function narrowest(all: readonly SandboxSettings[]): SandboxSettings {
  if (all.length === 1) return all[0]!;
  const allow = (settings: SandboxSettings): readonly string[] => settings.network?.allow ?? [];
  const writable = (settings: SandboxSettings): readonly string[] => settings.writable ?? [];
  const readable = (settings: SandboxSettings): readonly string[] => settings.readable ?? [];
  return {
    network: { allow: allow(all[0]!).filter((host) => all.every((settings) => allow(settings).includes(host))) },
    writable: writable(all[0]!).filter((entry) => all.every((settings) => writable(settings).includes(entry))),
    readable: readable(all[0]!).filter((entry) => all.every((settings) => readable(settings).includes(entry))),
  };
}

/**
 * `revision`'s content of `file` (`text` undefined when it has no such file), or undefined when
 * `file` is not in a git work tree.
 */
async function committedText(file: string, revision: string): Promise<{ text: string | undefined } | undefined> {
  const cwd = path.dirname(file);
  const inRepository = await runGit(['rev-parse', '--is-inside-work-tree'], { cwd }).then(
    (output) => output.trim() === 'true',
    () => false,
  );
  if (!inRepository) return undefined;
  // `HEAD:./name` is relative to cwd (no top-level path to compute through symlinks).
  return runGit(['show', `${revision}:./${path.basename(file)}`], { cwd }).then(
    (output) => ({ text: output }),
    () => ({ text: undefined }),
  );
}
