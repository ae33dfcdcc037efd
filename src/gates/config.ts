import { readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { untrustedConfigReason } from '../store/project-config.js';

export const configFileName = 'polywave.config.json';

/** How far up from a start directory `polywave.config.json` is looked for (reference §8.1). */
export const maxConfigSearchLevels = 10;

/** One entry of the repo registry (`repos[]` of polywave.config.json). */
export interface RepoEntry {
  name: string;
  /** Absolute path (relative paths in the file are resolved against the file's directory). */
  path: string;
  build_command?: string;
  test_command?: string;
}

/** The repo registry read from polywave.config.json. */
export interface RepoRegistry {
  /** The config file, or undefined when none was found. */
  configPath?: string;
  repos: RepoEntry[];
  /** Why the file could not be used (bad JSON, bad shape); gates with `repo:` report it. */
  problem?: string;
}

/**
 * Finds `polywave.config.json` in `startDir` or one of its parents (at most
 * {@link maxConfigSearchLevels} levels up).
 */
export async function findConfigFile(startDir: string): Promise<string | undefined> {
  let directory = path.resolve(startDir);
  for (let level = 0; level <= maxConfigSearchLevels; level += 1) {
    const candidate = path.join(directory, configFileName);
    try {
      // A file another user controls is never read (X26-12, as locateProjectConfig: X25-21).
      if ((await stat(candidate)).isFile() && (await untrustedConfigReason(candidate)) === undefined) return candidate;
    } catch {
      // not here
    }
    const parent = path.dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  return undefined;
}

/**
 * Reads the repo registry. Accepts `{"repos": [{"name", "path", …}]}` (the Go shape), an object
 * map `{"repos": {"name": "/path"}}` or `{"repos": {"name": {"path": …}}}`, and the legacy
 * single-repo `{"repo": {"path", "name"?}}`. Never throws: an unreadable file is a `problem`.
 * The first of `startDirs` with a config file (searching upward) wins.
 */
export async function loadRepoRegistry(startDirs: readonly string[]): Promise<RepoRegistry> {
  let configPath: string | undefined;
  for (const startDir of startDirs) {
    configPath = await findConfigFile(startDir);
    if (configPath) break;
  }
  if (!configPath) return { repos: [] };
  let data: unknown;
  try {
    data = JSON.parse(await readFile(configPath, 'utf8'));
  } catch (error) {
    return { configPath, repos: [], problem: `${configPath} is not readable JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (!isRecord(data)) return { configPath, repos: [], problem: `${configPath}: expected a JSON object` };
  const baseDir = path.dirname(configPath);
  const repos: RepoEntry[] = [];
  const add = (name: unknown, entry: unknown): void => {
    const record = isRecord(entry) ? entry : { path: entry };
    if (typeof record.path !== 'string' || record.path.trim() === '') return;
    const resolved = resolveConfigPath(record.path, baseDir);
    const repoName = typeof name === 'string' && name.trim() !== '' ? name.trim() : path.basename(resolved);
    repos.push({
      name: repoName,
      path: resolved,
      ...(typeof record.build_command === 'string' ? { build_command: record.build_command } : {}),
      ...(typeof record.test_command === 'string' ? { test_command: record.test_command } : {}),
    });
  };
  if (Array.isArray(data.repos)) {
    for (const entry of data.repos) if (isRecord(entry)) add(entry.name, entry);
  } else if (isRecord(data.repos)) {
    for (const [name, entry] of Object.entries(data.repos)) add(name, entry);
  } else if (data.repos !== undefined && data.repos !== null) {
    return { configPath, repos: [], problem: `${configPath}: "repos" must be a list of {name, path} or an object map` };
  }
  if (repos.length === 0 && isRecord(data.repo)) add(data.repo.name, data.repo);
  return { configPath, repos };
}

/** Outcome of resolving a gate's `repo:` value. */
export type RepoResolution = { ok: true; dir: string; via: 'registry' | 'primary' | 'sibling' } | { ok: false; message: string };

/**
 * Resolves a gate's `repo:` to a directory: the registry entry (exact name, then
 * case-insensitive), then the primary repo itself when its directory has that name, then a
 * sibling directory `dirname(primary)/<name>` (reference §8.1: registry first, sibling as
 * fallback). Unknown names and missing directories are reported, never thrown.
 */
export async function resolveGateRepo(name: string, registry: RepoRegistry, primaryDir: string): Promise<RepoResolution> {
  const wanted = name.trim();
  const entry = registry.repos.find((repo) => repo.name === wanted) ?? registry.repos.find((repo) => repo.name.toLowerCase() === wanted.toLowerCase());
  if (entry) {
    if (await isDirectory(entry.path)) return { ok: true, dir: entry.path, via: 'registry' };
    return { ok: false, message: `gate repo ${wanted}: path ${entry.path} from ${registry.configPath ?? configFileName} is not a directory` };
  }
  const primary = path.resolve(primaryDir);
  if (path.basename(primary) === wanted) return { ok: true, dir: primary, via: 'primary' };
  if (!wanted.includes('/') && !wanted.includes(path.sep) && wanted !== '.' && wanted !== '..') {
    const sibling = path.join(path.dirname(primary), wanted);
    // Only a sibling that is a git checkout (a .git directory or file) counts.
    if (await exists(path.join(sibling, '.git'))) {
      return { ok: true, dir: sibling, via: 'sibling' };
    }
  }
  const known = registry.repos.map((repo) => repo.name);
  const where = registry.configPath
    ? `not found in ${registry.configPath} (known repos: [${known.join(', ')}])`
    : `not found: no ${configFileName} in ${primary} or its parents (known repos: [])`;
  return { ok: false, message: `gate repo ${wanted} ${where}${registry.problem ? `; ${registry.problem}` : ''}` };
}

function resolveConfigPath(value: string, baseDir: string): string {
  const trimmed = value.trim();
  if (trimmed === '~') return os.homedir();
  if (trimmed.startsWith('~/')) return path.join(os.homedir(), trimmed.slice(2));
  return path.resolve(baseDir, trimmed);
}

async function isDirectory(directory: string): Promise<boolean> {
  try {
    return (await stat(directory)).isDirectory();
  } catch {
    return false;
  }
}

async function exists(filePath: string): Promise<boolean> {
  try {
    await stat(filePath);
    return true;
  } catch {
    return false;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
