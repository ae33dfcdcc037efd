/**
 * The `sandbox` section of polywave.config.json (network allow-list, extra writable directories),
 * shared by agents and gates.
 */
import { realpathSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
// (no export map: the guard's module by its path — the version is pinned in package.json)
import { createResolvedAddressGuard, type ResolvedAddressGuard } from '@anthropic-ai/sandbox-runtime/dist/sandbox/resolved-address-guard.js';
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
  const top = realOrResolvedPath(path.resolve(directory));
  // Outside round A21-01/02: an entry is judged and handed on as ONE absolute, real path — a relative entry was judged
  // against the checkout but resolved by the plan against the worker process's cwd (`.` with the worker started in `/`
  // made `/` writable), and a committed symlink inside the checkout (`lnk -> ~/.config/tool`) was judged by its name
  // while the sandbox followed it.
  const confined = (entries: readonly string[]): string[] =>
    entries.flatMap((entry) => {
      if (entry.trim() === '' || /^~(?=\/|$)/.test(entry)) return [];
      const real = realOrResolvedPath(path.resolve(top, entry));
      const relative = path.relative(top, real);
      return relative.startsWith('..') || path.isAbsolute(relative) ? [] : [real];
    });
  return {
    ...(settings.network ? { network: { ...settings.network, allow: (settings.network.allow ?? []).filter((host) => !reachesThisHost(host)) } } : {}),
    ...(settings.writable ? { writable: confined(settings.writable) } : {}),
    ...(settings.readable ? { readable: confined(settings.readable) } : {}),
  };
}

/** `file`'s real path; for a path that does not exist (yet), its nearest existing ancestor's real path with the rest appended. */
function realOrResolvedPath(file: string): string {
  const rest: string[] = [];
  for (let current = file; ; current = path.dirname(current)) {
    try {
      return path.join(realpathSync(current), ...rest.reverse());
    } catch {
      if (path.dirname(current) === current) return file;
      rest.push(path.basename(current));
    }
  }
}

/**
 * Whether a `sandbox.network.allow` entry names this host (A20-45, A21-03): a loopback name (`localhost`, `*.localhost`,
 * which the sandbox lets resolve to loopback), or an IP literal — in any spelling the URL parser accepts (`127.1`,
 * `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`, `[0:0:0:0:0:0:0:1]`) — that is loopback, unspecified, link-local,
 * multicast, carries such an IPv4 address (mapped, compatible, NAT64, 6to4), or is one of this host's interface
 * addresses — with any IPv6 zone id (`%lo`) ignored; `*` and anything the URL parser cannot read count as this host. The sandbox never re-judges an IP literal on its allow-list; a name is judged by its resolved address.
 */
export function reachesThisHost(entry: string): boolean {
  let value = entry.trim().toLowerCase().replace(/^\*\./, '');
  if (value.startsWith('[')) value = value.slice(1, value.indexOf(']') < 0 ? undefined : value.indexOf(']'));
  else if ((value.match(/:/g) ?? []).length === 1) value = value.replace(/:[^:]*$/, '');
  // A22-03: an IPv6 zone id (`[::1%lo]`, `%25lo`) — the URL parser refuses it, the sandbox drops it and allows `::1`.
  value = value.replace(/%.*$/, '').replace(/\.+$/, '');
  if (value === 'localhost' || value.endsWith('.localhost') || value === '' || value === '*') return true;
  let host: string;
  try {
    host = new URL(`http://${isIP(value) === 6 || value.includes(':') ? `[${value}]` : value}/`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return true; // an entry this judgement cannot read is dropped (fail closed: the sandbox may read it otherwise, A22-03)
  }
  if (isIP(host) === 0) return false;
  // A23-03: the cloud metadata endpoints outside link-local (100.100.100.200, 168.63.129.16, fd00:ec2::/32, …) serve the
  // worker's instance credentials — sandbox-runtime refuses a NAME resolving to them but never re-judges a literal
  // on the allow-list, so its own judgement of a resolved address decides (every class it denies: metadata, loopback…).
  if (!metadataGuard().permits('allow-list-entry.polywave.invalid', host, 80)) return true;
  const v4 = isIP(host) === 4 ? host : embeddedIPv4(host);
  if (isIP(host) === 6 && thisHostV6.check(host, 'ipv6')) return true;
  if (v4 !== undefined && thisHostV4.check(v4, 'ipv4')) return true;
  const own = ownAddresses();
  return own.has(host) || (v4 !== undefined && own.has(v4));
}

let guard: ResolvedAddressGuard | undefined;
/** sandbox-runtime's guard of resolved addresses (its denied classes; this host's own addresses are judged below). */
function metadataGuard(): ResolvedAddressGuard {
  guard ??= createResolvedAddressGuard({ localAddresses: () => [] });
  return guard;
}

const thisHostV4 = (() => {
  const list = new BlockList();
  for (const [net, prefix] of [['127.0.0.0', 8], ['0.0.0.0', 8], ['169.254.0.0', 16], ['224.0.0.0', 4], ['255.255.255.255', 32]] as const) list.addSubnet(net, prefix, 'ipv4');
  return list;
})();
const thisHostV6 = (() => {
  const list = new BlockList();
  for (const [net, prefix] of [['::1', 128], ['::', 128], ['fe80::', 10], ['ff00::', 8]] as const) list.addSubnet(net, prefix, 'ipv6');
  return list;
})();

/** The IPv4 address an IPv6 address carries: IPv4-mapped `::ffff:0:0/96`, IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`. */
function embeddedIPv4(address: string): string | undefined {
  const words = expandIPv6(address);
  if (words === undefined) return undefined;
  const v4 = (high: number, low: number): string => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  const zero = (from: number, to: number): boolean => words.slice(from, to).every((word) => word === 0);
  if (zero(0, 5) && (words[5] === 0xffff || words[5] === 0)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && zero(2, 6)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return undefined;
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted IPv4 part allowed), or undefined. */
function expandIPv6(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const words = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return words.length === 8 ? words.map((word) => Number.parseInt(word, 16)) : undefined;
}

/** This host's interface addresses (a service bound to 0.0.0.0 answers on each of them as on loopback). */
function ownAddresses(): Set<string> {
  try {
    return new Set(Object.values(os.networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address.toLowerCase().replace(/%.*$/, ''))));
  } catch {
    return new Set();
  }
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

/** Whether `directory` lies in a checkout with pinned commits ({@link pinSandboxSettings}): its settings are those commits'. */
export function isInPinnedCheckout(directory: string): boolean {
  if (pins.size === 0) return false;
  const resolved = path.resolve(directory);
  for (const [checkout] of pins.entries()) {
    const relative = path.relative(checkout, resolved);
    if (relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))) return true;
  }
  return false;
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
