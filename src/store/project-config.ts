import { closeSync, openSync } from 'node:fs';
import { lstat, readFile, realpath, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { codes } from '../errors/codes.js';
import { writeFileAtomic } from './locked-write.js';
import { readTextFile } from './read-text.js';

/** A label in `dispatch.labels` (compared in lower case, as the workers' `--label`). */
const configLabelPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** The file name shared with the Go tool (reference/engine-cli.md §8.1). */
export const projectConfigFileName = 'polywave.config.json';

/** How many directories {@link locateProjectConfig} walks up by default (the Go `config.Load` limit). */
export const defaultConfigSearchLevels = 10;

/** Config codes of the Go registry. */
export const configCodes = {
  notFound: 'N013_CONFIG_NOT_FOUND',
  invalid: 'N014_CONFIG_INVALID',
} as const;

/** One configured repository (`repos[]`); `build_command`/`test_command` are the E21B per-repo baseline. */
export interface ProjectRepoEntry {
  name: string;
  path: string;
  build_command?: string;
  test_command?: string;
  /** Worktree setup (issue 13): see {@link WorktreeSetupEntry}. */
  setup?: SetupCommand | false;
  teardown?: SetupCommand;
  copy?: string[];
  [key: string]: unknown;
}

/** A setup/teardown command: a string runs through `bash -c`; an array is an argv run without a shell. */
export type SetupCommand = string | string[];

/**
 * polywave.config.json as both tools read it. Unknown keys (providers, autonomy, quality,
 * appearance, …) are kept as they are. Command keys: the snake_case ones are ours and Go's
 * gate discovery's; `buildCommand`/`testCommand`/`lintCommand` are what the Go extractor reads;
 * `build`/`test` objects are what the Go `init` writes.
 */
export interface ProjectConfig {
  repos?: ProjectRepoEntry[];
  /** Legacy single-repo form, migrated to `repos[0]` when `repos` is empty. */
  repo?: { path: string; name?: string };
  build_command?: string;
  test_command?: string;
  lint_command?: string;
  format_command?: string;
  buildCommand?: string;
  testCommand?: string;
  lintCommand?: string;
  build?: { command: string; detected?: boolean };
  test?: { command: string; detected?: boolean };
  /** The agents' OS sandbox (issue 11): see {@link configuredSandbox}. */
  sandbox?: ProjectSandboxConfig;
  /** Worktree setup for the primary repository when its `repos[]` entry sets none (issue 13). */
  setup?: SetupCommand | false;
  teardown?: SetupCommand;
  copy?: string[];
  /** Worktree setup settings shared by every repository: see {@link configuredWorktreeSetup}. */
  worktree_setup?: WorktreeSetupSettings;
  /** Issue 17: run agents on `polywave worker`s through BullMQ on Redis (docs/scale-out.md). */
  dispatch?: ProjectDispatchConfig;
  /** Command templates of the `cli:<name>` models: see {@link configuredAgentClis}. */
  agent_clis?: Record<string, ProjectAgentCli>;
  [key: string]: unknown;
}

/**
 * One entry of `agent_clis` in polywave.config.json: the command a `cli:<name>` model runs (docs/agent-clis.md).
 *
 * ```json
 * { "agent_clis": { "aider": { "command": ["aider", "--yes-always", "--model", "{model}", "--message-file", "{prompt_file}"], "prompt_via": "file", "format": "text" } } }
 * ```
 */
export interface ProjectAgentCli {
  /** argv; `command[0]` is the binary (a name on PATH, or a path relative to the worktree); placeholders `{prompt}`, `{model}`, `{max_turns}`, `{cwd}`, `{prompt_file}`. */
  command: string[];
  /** How the prompt reaches the CLI. Default `stdin`. */
  prompt_via?: 'stdin' | 'argument' | 'file';
  /** How its stdout is read. Default `text`. */
  format?: 'claude-stream-json' | 'codex-json' | 'text';
}

/** An `agent_clis` entry resolved with its defaults (the cli backend's `CliTemplate` shape). */
export interface AgentCliTemplate {
  command: string[];
  promptVia: 'stdin' | 'argument' | 'file';
  format: 'claude-stream-json' | 'codex-json' | 'text';
}

/** What an `agent_clis` name must look like (it is the `<name>` of a `cli:<name>` model). */
export const agentCliNamePattern = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const agentCliPromptVia = ['stdin', 'argument', 'file'] as const;
const agentCliFormats = ['claude-stream-json', 'codex-json', 'text'] as const;
const agentCliKeys = ['command', 'prompt_via', 'format'];

/**
 * `dispatch` of polywave.config.json (issue 17). `--dispatch`/`--dispatch-remote`/`--dispatch-queue` override `url`/`remote`/`queue`.
 *
 * ```json
 * { "dispatch": { "url": "redis://build-host:6379", "remote": "ssh://git@host/repo.git", "labels": { "C": ["gpu"] }, "label_wait_seconds": 30, "outage_seconds": 60 } }
 * ```
 */
export interface ProjectDispatchConfig {
  url?: string;
  remote?: string;
  /** A named queue: only workers started with the same `--queue` take the jobs (`--dispatch-queue` overrides). */
  queue?: string;
  /** Where dispatched waves run their E21 pre-merge gates: `local` (default) or `workers` (gate jobs; docs/scale-out.md). */
  gates?: 'local' | 'workers';
  /** Labels per agent id (or `<slug>/<agent id>`): the job goes only to a worker with every one of them. */
  labels?: Record<string, string[]>;
  label_wait_seconds?: number;
  outage_seconds?: number;
}

/**
 * `worktree_setup` of polywave.config.json (issue 13, docs/worktree-setup.md).
 *
 * ```json
 * { "worktree_setup": { "base_port": 41000, "concurrency": 2, "timeout_seconds": 600, "defaults": true } }
 * ```
 */
export interface WorktreeSetupSettings {
  /** First `POLYWAVE_PORT`; agent i of the wave (manifest order) gets base_port + i. Default 41000. */
  base_port?: number;
  /** Setups running at once. Default: min(4, CPUs). */
  concurrency?: number;
  /** Per setup/teardown run, seconds. Default 600. */
  timeout_seconds?: number;
  /** The built-in defaults (shared node_modules, go.work, .venv) when no `setup` is given. Default true. */
  defaults?: boolean;
}

/** What to do in each new worktree of one repository (see {@link configuredWorktreeSetup}). */
export interface WorktreeSetupEntry {
  /** The configured setup command; undefined = built-in defaults; false = none at all. */
  setup: SetupCommand | false | undefined;
  teardown?: SetupCommand;
  /** Untracked files/globs copied from the main checkout (relative to the repository root). */
  copy: string[];
}

/** The resolved `worktree_setup` settings with their defaults. */
export interface WorktreeSetupConfig {
  basePort: number;
  concurrency: number | undefined;
  timeoutSeconds: number;
  defaults: boolean;
}

/**
 * `sandbox` of polywave.config.json. Default: no network and nothing writable beyond the agent's
 * worktree, private HOME and TMPDIR.
 *
 * ```json
 * { "sandbox": { "network": { "allow": ["registry.npmjs.org", "*.pypi.org"] }, "writable": ["~/.npm"] } }
 * ```
 */
export interface ProjectSandboxConfig {
  /** Hosts agents and gates may reach (through the sandbox's proxy); `*.example.com` matches subdomains. */
  network?: { allow?: string[] };
  /** Extra writable directories for agents and gates (shared caches), `~/` = the user's home. */
  writable?: string[];
  /** Parts of the user's home put back read-only in the sandboxes' home view (`~/.config/mytool`), `~/` = the user's home. */
  readable?: string[];
}

/** The outcome of {@link parseProjectConfig}; `config` is undefined when the text is not a usable config. */
export interface ProjectConfigParse {
  config: ProjectConfig | undefined;
  /** Shape problems (error) and notices (warning, e.g. no repos configured). */
  findings: Finding[];
}

const stringKeys = ['build_command', 'test_command', 'lint_command', 'format_command', 'buildCommand', 'testCommand', 'lintCommand'] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/**
 * Pure: parses and checks the text of a polywave.config.json; never throws. Not JSON or not an
 * object → `N014_CONFIG_INVALID` (fatal) and no config. Wrong types of the keys both tools read
 * (`repos[]` entries with string `name`/`path`, the command keys, `repo`, `build`/`test`,
 * `agent`, `agent_clis`) → `N014_CONFIG_INVALID` errors with the field path; the config is still returned.
 * No repository configured → a warning.
 */
export function parseProjectConfig(text: string): ProjectConfigParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { config: undefined, findings: [{ code: configCodes.invalid, message: `not valid JSON: ${(error as Error).message}`, severity: 'fatal' }] };
  }
  if (!isRecord(value)) {
    return { config: undefined, findings: [{ code: configCodes.invalid, message: `must be a JSON object, found ${typeName(value)}`, severity: 'fatal' }] };
  }
  const findings: Finding[] = [];
  const problem = (field: string, message: string): void => {
    findings.push({ code: configCodes.invalid, message: `${field}: ${message}`, severity: 'error', field });
  };

  if (value.repos !== undefined && value.repos !== null) {
    if (!Array.isArray(value.repos)) problem('repos', `must be an array of {name, path}, found ${typeName(value.repos)}`);
    else {
      value.repos.forEach((entry: unknown, index) => {
        const field = `repos[${index}]`;
        if (!isRecord(entry)) {
          problem(field, `must be an object {name, path}, found ${typeName(entry)}`);
          return;
        }
        for (const key of ['name', 'path'] as const) {
          if (typeof entry[key] !== 'string' || (entry[key] as string).trim() === '') problem(`${field}.${key}`, 'must be a non-empty string');
        }
        for (const key of ['build_command', 'test_command'] as const) {
          if (entry[key] !== undefined && typeof entry[key] !== 'string') problem(`${field}.${key}`, `must be a string, found ${typeName(entry[key])}`);
        }
        checkSetupKeys(entry, `${field}.`, problem);
      });
    }
  }
  if (value.repo !== undefined && value.repo !== null) {
    if (!isRecord(value.repo)) problem('repo', `must be an object {path, name?}, found ${typeName(value.repo)}`);
    else {
      if (value.repo.path !== undefined && typeof value.repo.path !== 'string') problem('repo.path', 'must be a string');
      if (value.repo.name !== undefined && typeof value.repo.name !== 'string') problem('repo.name', 'must be a string');
    }
  }
  for (const key of stringKeys) {
    if (value[key] !== undefined && value[key] !== null && typeof value[key] !== 'string') problem(key, `must be a string, found ${typeName(value[key])}`);
  }
  for (const key of ['build', 'test'] as const) {
    const entry = value[key];
    if (entry === undefined || entry === null) continue;
    if (!isRecord(entry)) problem(key, `must be an object {command, detected}, found ${typeName(entry)}`);
    else {
      if (entry.command !== undefined && typeof entry.command !== 'string') problem(`${key}.command`, 'must be a string');
      if (entry.detected !== undefined && typeof entry.detected !== 'boolean') problem(`${key}.detected`, 'must be a boolean');
    }
  }
  if (value.agent !== undefined && value.agent !== null) {
    if (!isRecord(value.agent)) problem('agent', `must be an object, found ${typeName(value.agent)}`);
    else for (const [key, model] of Object.entries(value.agent)) if (typeof model !== 'string') problem(`agent.${key}`, 'must be a string');
  }
  if (value.sandbox !== undefined && value.sandbox !== null) {
    const sandbox = value.sandbox;
    if (!isRecord(sandbox)) problem('sandbox', `must be an object {network: {allow: [hosts]}, writable: [dirs]}, found ${typeName(sandbox)}`);
    else {
      const stringList = (field: string, list: unknown): void => {
        if (list === undefined || list === null) return;
        if (!Array.isArray(list)) problem(field, `must be an array of strings, found ${typeName(list)}`);
        else list.forEach((entry: unknown, index) => {
          if (typeof entry !== 'string' || entry.trim() === '') problem(`${field}[${index}]`, 'must be a non-empty string');
        });
      };
      if (sandbox.network !== undefined && sandbox.network !== null) {
        if (!isRecord(sandbox.network)) problem('sandbox.network', `must be an object {allow: [hosts]}, found ${typeName(sandbox.network)}`);
        else stringList('sandbox.network.allow', sandbox.network.allow);
      }
      stringList('sandbox.writable', sandbox.writable);
      stringList('sandbox.readable', sandbox.readable);
    }
  }
  checkSetupKeys(value, '', problem);
  if (value.worktree_setup !== undefined && value.worktree_setup !== null) {
    const settings = value.worktree_setup;
    if (!isRecord(settings)) problem('worktree_setup', `must be an object {base_port, concurrency, timeout_seconds, defaults}, found ${typeName(settings)}`);
    else {
      const integer = (key: string, min: number, max: number): void => {
        const entry = settings[key];
        if (entry !== undefined && (typeof entry !== 'number' || !Number.isInteger(entry) || entry < min || entry > max)) problem(`worktree_setup.${key}`, `must be an integer from ${min} to ${max}`);
      };
      integer('base_port', 1024, 65_000);
      integer('concurrency', 1, 64);
      integer('timeout_seconds', 1, 86_400);
      if (settings.defaults !== undefined && typeof settings.defaults !== 'boolean') problem('worktree_setup.defaults', 'must be a boolean');
    }
  }
  if (value.dispatch !== undefined && value.dispatch !== null) {
    const dispatch = value.dispatch;
    if (!isRecord(dispatch)) problem('dispatch', `must be an object {url, remote, queue, labels, label_wait_seconds, outage_seconds}, found ${typeName(dispatch)}`);
    else {
      for (const key of ['url', 'remote'] as const) if (dispatch[key] !== undefined && (typeof dispatch[key] !== 'string' || dispatch[key] === '')) problem(`dispatch.${key}`, 'must be a non-empty string');
      if (typeof dispatch.url === 'string' && !/^rediss?:\/\//.test(dispatch.url)) problem('dispatch.url', 'must be a redis:// URL');
      if (dispatch.queue !== undefined && (typeof dispatch.queue !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,39}$/.test(dispatch.queue))) problem('dispatch.queue', `must be a queue name matching ^[a-z0-9][a-z0-9_-]{0,39}$ (the same as the workers' --queue), found ${String(JSON.stringify(dispatch.queue)).slice(0, 80)}`);
      for (const key of ['label_wait_seconds', 'outage_seconds'] as const) {
        const entry = dispatch[key];
        if (entry !== undefined && (typeof entry !== 'number' || !(entry >= 0) || entry > 86_400)) problem(`dispatch.${key}`, 'must be a number of seconds from 0 to 86400');
      }
      if (dispatch.gates !== undefined && dispatch.gates !== 'local' && dispatch.gates !== 'workers') problem('dispatch.gates', `must be "local" (the default: pre-merge gates run on this machine) or "workers", found ${JSON.stringify(dispatch.gates)}`);
      if (dispatch.labels !== undefined && dispatch.labels !== null) {
        if (!isRecord(dispatch.labels)) problem('dispatch.labels', `must be an object {agent: [labels]}, found ${typeName(dispatch.labels)}`);
        else for (const [agent, labels] of Object.entries(dispatch.labels)) {
          // (the real reason: an array with an invalid label was reported as "must be an array")
          const invalid = Array.isArray(labels) ? (labels as unknown[]).find((label) => typeof label !== 'string' || !configLabelPattern.test(label)) : undefined;
          // (A17-30: a key that names no agent — `a` for A — silently dropped the label requirement)
          if (!/^(?:[a-z0-9][-a-z0-9]*\/)?[A-Z][2-9]?$/.test(agent)) problem(`dispatch.labels.${agent.slice(0, 80)}`, 'is not an agent: a key is an agent ID (A, B2) or <impl-slug>/<agent ID>');
          else if (!Array.isArray(labels)) problem(`dispatch.labels.${agent}`, `must be an array of labels, found ${typeName(labels)}`);
          else if (invalid !== undefined) problem(`dispatch.labels.${agent}`, `${String(JSON.stringify(invalid)).slice(0, 80)} is not a valid label: a label must match ${configLabelPattern.source} (letters, digits, - and _)`);
          // A worker takes at most 6 labels: a job with more could never run.
          else if (new Set(labels.map((label: string) => label.toLowerCase())).size > 6) problem(`dispatch.labels.${agent}`, `has ${new Set(labels.map((label: string) => label.toLowerCase())).size} labels; a worker takes at most 6, so no worker could run it`);
        }
      }
    }
  }
  if (value.agent_clis !== undefined && value.agent_clis !== null) checkAgentClis(value.agent_clis, problem);
  const config = value as ProjectConfig;
  if (findings.length === 0 && configuredRepos(config, '/').length === 0) {
    findings.push({ code: configCodes.invalid, message: 'no repos configured (run: polywave init)', severity: 'warning', field: 'repos' });
  }
  return { config, findings };
}

/** An `agent_clis` command: a non-empty argv of strings (no NUL) whose binary is not blank. */
function isAgentCliCommand(command: unknown): command is string[] {
  return Array.isArray(command) && command.length > 0 && typeof command[0] === 'string' && command[0].trim() !== '' && command.every((item) => typeof item === 'string' && !item.includes('\0'));
}

/** `agent_clis`: names matching {@link agentCliNamePattern}, each `{command: [argv], prompt_via?, format?}` and nothing else. */
function checkAgentClis(clis: unknown, problem: (field: string, message: string) => void): void {
  if (!isRecord(clis)) {
    problem('agent_clis', `must be an object {<name>: {command: [argv], prompt_via, format}}, found ${typeName(clis)}`);
    return;
  }
  for (const [name, entry] of Object.entries(clis)) {
    const field = `agent_clis.${JSON.stringify(name).slice(1, -1).slice(0, 60)}`;
    if (!agentCliNamePattern.test(name)) problem(field, `the name must match ${agentCliNamePattern.source} (it is the <name> of a cli:<name> model)`);
    if (!isRecord(entry)) {
      problem(field, `must be an object {command: [argv], prompt_via, format}, found ${typeName(entry)}`);
      continue;
    }
    const command = entry.command;
    if (!isAgentCliCommand(command)) {
      problem(`${field}.command`, `must be a non-empty argv array of strings whose first one (the binary) is not empty, found ${String(JSON.stringify(command)).slice(0, 80)}`);
    }
    if (entry.prompt_via !== undefined && !(agentCliPromptVia as readonly unknown[]).includes(entry.prompt_via)) problem(`${field}.prompt_via`, `must be one of ${agentCliPromptVia.map((item) => `"${item}"`).join(', ')} (default "stdin"), found ${String(JSON.stringify(entry.prompt_via)).slice(0, 80)}`);
    if (entry.format !== undefined && !(agentCliFormats as readonly unknown[]).includes(entry.format)) problem(`${field}.format`, `must be one of ${agentCliFormats.map((item) => `"${item}"`).join(', ')} (default "text"), found ${String(JSON.stringify(entry.format)).slice(0, 80)}`);
    // A misspelt key (`promptVia`) would silently fall back to the default: refused instead.
    for (const key of Object.keys(entry)) if (!agentCliKeys.includes(key)) problem(`${field}.${key}`, `unknown key (known: ${agentCliKeys.join(', ')})`);
  }
}

/**
 * Pure: the `agent_clis` templates of a config with their defaults (`prompt_via` stdin, `format`
 * text), by name. Only entries {@link parseProjectConfig} accepts are returned; callers refuse a
 * config with `agent_clis` problems before using any of them.
 */
export function configuredAgentClis(config: ProjectConfig | undefined): Record<string, AgentCliTemplate> {
  const templates: Record<string, AgentCliTemplate> = {};
  const clis = config && isRecord(config.agent_clis) ? config.agent_clis : {};
  for (const [name, entry] of Object.entries(clis)) {
    if (!agentCliNamePattern.test(name) || !isRecord(entry) || Object.keys(entry).some((key) => !agentCliKeys.includes(key))) continue;
    const command = entry.command;
    if (!isAgentCliCommand(command)) continue;
    const promptVia = entry.prompt_via === undefined ? 'stdin' : entry.prompt_via;
    const format = entry.format === undefined ? 'text' : entry.format;
    if (!(agentCliPromptVia as readonly unknown[]).includes(promptVia) || !(agentCliFormats as readonly unknown[]).includes(format)) continue;
    templates[name] = { command: [...command], promptVia: promptVia as AgentCliTemplate['promptVia'], format: format as AgentCliTemplate['format'] };
  }
  return templates;
}

/** `setup`/`teardown` (string or argv), `copy` (list of paths/globs) of a repos[] entry or the top level. */
function checkSetupKeys(entry: Record<string, unknown>, prefix: string, problem: (field: string, message: string) => void): void {
  const command = (key: 'setup' | 'teardown'): void => {
    const value = entry[key];
    if (value === undefined || value === null || (key === 'setup' && value === false)) return;
    if (typeof value === 'string') {
      if (value.trim() === '') problem(`${prefix}${key}`, 'must not be empty');
    } else if (Array.isArray(value)) {
      if (value.length === 0 || value.some((item) => typeof item !== 'string' || item === '' || item.includes('\0'))) problem(`${prefix}${key}`, 'must be a non-empty argv array of non-empty strings');
    } else problem(`${prefix}${key}`, `must be a command string or an argv array${key === 'setup' ? ' (or false)' : ''}, found ${typeName(value)}`);
  };
  command('setup');
  command('teardown');
  const copy = entry.copy;
  if (copy === undefined || copy === null) return;
  if (!Array.isArray(copy)) problem(`${prefix}copy`, `must be an array of paths or globs, found ${typeName(copy)}`);
  else copy.forEach((item: unknown, index) => {
    if (typeof item !== 'string' || item.trim() === '' || item.includes('\0')) problem(`${prefix}copy[${index}]`, 'must be a non-empty path or glob');
  });
}

/** A configured repository with its path made absolute. */
export interface ResolvedRepo {
  name: string;
  /** The path as written in the config. */
  configuredPath: string;
  /** Absolute path: `~/` expanded with `homeDir`, relative paths resolved against the config's directory. */
  path: string;
}

/**
 * The repositories of a config: `repos[]` entries with a usable name and path, or the legacy
 * `repo.path` when `repos` is empty (as the Go `config.Load` migrates it).
 */
export function configuredRepos(config: ProjectConfig, configDir: string, homeDir?: string): ResolvedRepo[] {
  const resolve = (configured: string): string => {
    if (homeDir && (configured === '~' || configured.startsWith('~/'))) return path.join(homeDir, configured.slice(1));
    return path.resolve(configDir, configured);
  };
  const repos: ResolvedRepo[] = [];
  if (Array.isArray(config.repos)) {
    for (const entry of config.repos as unknown[]) {
      if (!isRecord(entry) || typeof entry.path !== 'string' || entry.path.trim() === '') continue;
      const name = typeof entry.name === 'string' && entry.name.trim() !== '' ? entry.name : path.basename(entry.path);
      repos.push({ name, configuredPath: entry.path, path: resolve(entry.path) });
    }
  }
  if (repos.length === 0 && isRecord(config.repo) && typeof config.repo.path === 'string' && config.repo.path.trim() !== '') {
    const name = typeof config.repo.name === 'string' && config.repo.name !== '' ? config.repo.name : path.basename(config.repo.path);
    repos.push({ name, configuredPath: config.repo.path, path: resolve(config.repo.path) });
  }
  return repos;
}

/** The project commands of a config, unifying the three Go spellings (snake_case first). */
export function configuredCommands(config: ProjectConfig): { build?: string; test?: string; lint?: string; format?: string } {
  const pick = (...values: unknown[]): string | undefined => values.find((value): value is string => typeof value === 'string' && value.trim() !== '');
  const commands: { build?: string; test?: string; lint?: string; format?: string } = {};
  const build = pick(config.build_command, config.buildCommand, isRecord(config.build) ? config.build.command : undefined);
  const test = pick(config.test_command, config.testCommand, isRecord(config.test) ? config.test.command : undefined);
  const lint = pick(config.lint_command, config.lintCommand);
  const format = pick(config.format_command);
  if (build) commands.build = build;
  if (test) commands.test = test;
  if (lint) commands.lint = lint;
  if (format) commands.format = format;
  return commands;
}

/**
 * Pure: the agents' sandbox settings of a config — `sandbox.network.allow` (hosts),
 * `sandbox.writable` (directories) and `sandbox.readable` (parts of the user's home put back
 * read-only in the sandbox's home view), keeping only non-empty strings. Default: all empty.
 */
export function configuredSandbox(config: ProjectConfig | undefined): { network: { allow: string[] }; writable: string[]; readable: string[] } {
  const strings = (list: unknown): string[] => (Array.isArray(list) ? list.filter((entry): entry is string => typeof entry === 'string' && entry.trim() !== '').map((entry) => entry.trim()) : []);
  const sandbox = config && isRecord(config.sandbox) ? config.sandbox : undefined;
  const network = sandbox && isRecord(sandbox.network) ? sandbox.network : undefined;
  return { network: { allow: strings(network?.allow) }, writable: strings(sandbox?.writable), readable: strings(sandbox?.readable) };
}

/** What a change of polywave.config.json does to the settings that decide what runs and where (see {@link securityConfigChanges}). */
export interface SecurityConfigChanges {
  /** Keys whose change widens every later sandbox: `sandbox.network.allow`, `sandbox.writable`, `sandbox.readable` (with the added entries). */
  widened: Array<{ key: string; added: string[] }>;
  /** Other changed keys that decide what runs or where (setup/teardown/copy, `agent_clis`, `worktree_setup`, `dispatch`, `repo`, a narrowed sandbox). */
  changed: string[];
}

/**
 * Pure: compares two versions of polywave.config.json (undefined: none) on the settings that decide
 * what polywave runs outside an agent's control and with which sandbox (issue 11, outside attack X8
 * #4: an agent that owned the config committed `sandbox.writable: [<home>]`, and the gates after its
 * merge ran with it). Widening `sandbox.network.allow` or `sandbox.writable` is `widened`; any other
 * change of `sandbox`, `setup`, `teardown`, `copy`, `worktree_setup`, `agent_clis`, `dispatch` (url,
 * remote, queue, gates, labels: where the next run-wave connects and pushes the code — outside
 * attack X9 #5), the legacy `repo` or of a `repos[]` entry's `setup`/`teardown`/`copy`/`path` is `changed`.
 */
export function securityConfigChanges(before: ProjectConfig | undefined, after: ProjectConfig | undefined): SecurityConfigChanges {
  const widened: SecurityConfigChanges['widened'] = [];
  const changed: string[] = [];
  const old = configuredSandbox(before);
  const now = configuredSandbox(after);
  const addedTo = (key: string, was: string[], is: string[]): void => {
    const added = is.filter((entry) => !was.includes(entry));
    if (added.length > 0) widened.push({ key, added });
  };
  addedTo('sandbox.network.allow', old.network.allow, now.network.allow);
  addedTo('sandbox.writable', old.writable, now.writable);
  addedTo('sandbox.readable', old.readable, now.readable);
  const same = (left: unknown, right: unknown): boolean => JSON.stringify(left ?? null) === JSON.stringify(right ?? null);
  if (widened.length === 0 && !same(before?.sandbox, after?.sandbox)) changed.push('sandbox');
  // autonomy and budget_usd: the daemon's level (without --autonomy) and the operator's cost cap (X25-11).
  for (const key of ['setup', 'teardown', 'copy', 'worktree_setup', 'agent_clis', 'dispatch', 'repo', 'autonomy', 'budget_usd'] as const) if (!same(before?.[key], after?.[key])) changed.push(key);
  const repoKeys = (config: ProjectConfig | undefined): unknown =>
    Array.isArray(config?.repos) ? config.repos.map((entry) => (isRecord(entry) ? { path: entry.path, setup: entry.setup, teardown: entry.teardown, copy: entry.copy } : entry)) : null;
  if (!same(repoKeys(before), repoKeys(after))) changed.push('repos[].setup/teardown/copy/path');
  return { widened, changed };
}

/**
 * Pure: the worktree setup of the repository at `repoRoot` — its `repos[]` entry (matched by
 * resolved path) wins key by key; the top-level `setup`/`teardown`/`copy` apply to the primary
 * repository. Nothing configured → built-in defaults (`setup` undefined) and no copies.
 */
export function configuredWorktreeSetup(config: ProjectConfig | undefined, options: { configDir: string; repoRoot: string; primary: boolean; homeDir?: string }): WorktreeSetupEntry {
  const commandOf = (value: unknown): SetupCommand | undefined =>
    typeof value === 'string' && value.trim() !== '' ? value : Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'string' && item !== '') ? (value as string[]) : undefined;
  const copyOf = (value: unknown): string[] | undefined => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && item.trim() !== '').map((item) => item.trim()) : undefined);
  const sources: Array<Record<string, unknown>> = [];
  if (config) {
    const root = path.resolve(options.repoRoot);
    const index = configuredRepos(config, options.configDir, options.homeDir).findIndex((repo) => path.resolve(repo.path) === root);
    const entries = Array.isArray(config.repos) ? config.repos.filter((entry) => isRecord(entry) && typeof entry.path === 'string' && entry.path.trim() !== '') : [];
    if (index >= 0 && isRecord(entries[index])) sources.push(entries[index]);
    if (options.primary) sources.push(config);
  }
  const pick = (key: 'setup' | 'teardown' | 'copy'): unknown => sources.map((source) => source[key]).find((value) => value !== undefined && value !== null);
  const setup = pick('setup');
  const teardown = commandOf(pick('teardown'));
  return { setup: setup === false ? false : commandOf(setup), ...(teardown ? { teardown } : {}), copy: copyOf(pick('copy')) ?? [] };
}

/** Pure: `worktree_setup` with its defaults (base port 41000, timeout 600 s, defaults on). */
export function configuredWorktreeSetupSettings(config: ProjectConfig | undefined): WorktreeSetupConfig {
  const settings = config && isRecord(config.worktree_setup) ? config.worktree_setup : {};
  const integer = (value: unknown, min: number, max: number): number | undefined => (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : undefined);
  return {
    basePort: integer(settings.base_port, 1024, 65_000) ?? 41_000,
    concurrency: integer(settings.concurrency, 1, 64),
    timeoutSeconds: integer(settings.timeout_seconds, 1, 86_400) ?? 600,
    defaults: settings.defaults !== false,
  };
}

/**
 * Why a config file on disk is not one this user may trust, or undefined when it is (POSIX only): it
 * belongs to another user than this one and root, or anyone may write it, or it lies in a directory
 * anyone may write without the sticky bit (anyone could put another there). Outside attack X25-21: a
 * repository under a shared directory (/tmp/proj) without a config of its own took its sandbox,
 * setup, dispatch and the daemon's autonomy from another local user's /tmp/polywave.config.json.
 *
 * Group write (the file, or its directory without the sticky bit) is trusted only when the group is
 * your private group — named as you, with no other member — and (Linux) no POSIX or NFSv4 ACL is on
 * it: X26-03 (another group), X27-07 (a shared primary group such as `users`, which is your own egid
 * too: membership of it says nothing about who else is in it), X27-08 (an ACL entry `user:bob:rw-`,
 * which shows in the mode only as the group bits, the ACL's mask).
 */
export async function untrustedConfigReason(file: string): Promise<string | undefined> {
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : undefined;
  if (uid === undefined) return undefined;
  const [link, target, directory] = await Promise.all([lstat(file), stat(file), stat(path.dirname(file))]);
  for (const [what, stats] of [['it', link], ['its target', target]] as const) {
    if (stats.uid !== uid && stats.uid !== 0) return `${what} belongs to uid ${stats.uid}, not to you (uid ${uid}) or root`;
  }
  if ((target.mode & 0o002) !== 0) return 'anyone may write it';
  if ((directory.mode & 0o002) !== 0 && (directory.mode & 0o1000) === 0) return 'its directory is writable by anyone, without the sticky bit';
  if ((target.mode & 0o020) !== 0) {
    const why = await groupWriteReason(file, target.gid);
    if (why) return `${why} may write it; to use it: ${why.includes('ACL') ? 'setfacl -b' : 'chmod g-w'} ${file}`;
  }
  if ((directory.mode & 0o020) !== 0 && (directory.mode & 0o1000) === 0) {
    const why = await groupWriteReason(path.dirname(file), directory.gid);
    if (why) return `${why} may write its directory`;
  }
  // X28-04: a link's target lies in another directory: whoever may write that one may swap the file between this
  // check and the read. Its directory is held to the same rules.
  if (link.isSymbolicLink()) {
    const real = await realpath(file);
    const realDirectory = await stat(path.dirname(real));
    if (realDirectory.uid !== uid && realDirectory.uid !== 0 && (realDirectory.mode & 0o1000) === 0) return `its target's directory ${path.dirname(real)} belongs to uid ${realDirectory.uid}`;
    if ((realDirectory.mode & 0o002) !== 0 && (realDirectory.mode & 0o1000) === 0) return `its target's directory ${path.dirname(real)} is writable by anyone, without the sticky bit`;
    if ((realDirectory.mode & 0o020) !== 0 && (realDirectory.mode & 0o1000) === 0) {
      const why = await groupWriteReason(path.dirname(real), realDirectory.gid);
      if (why) return `${why} may write its target's directory ${path.dirname(real)}`;
    }
  }
  return undefined;
}

/**
 * Who besides you may write `file`, whose mode has the group write bit (the group, or with an ACL the
 * ACL's mask), or undefined when nobody: the group is your private one and no ACL is on the file.
 */
async function groupWriteReason(file: string, gid: number): Promise<string | undefined> {
  if (!(await privateGroupOfMine(gid))) return `the members of group ${gid}`;
  const acl = extendedAcl(file);
  if (acl === undefined) return undefined;
  return acl === 'unknown' ? 'perhaps others (its ACL could not be read)' : `the users and groups of its ${acl}`;
}

const privateGroups = new Map<number, Promise<boolean>>();

/**
 * True when group `gid` is this user's private group (a user private group: the usual umask-002
 * setup): named as the user, listing no other member in /etc/group, and no other account in
 * /etc/passwd has it as its primary group. A group only the name service knows (LDAP…) is not
 * taken as private: its members cannot be listed from here.
 */
function privateGroupOfMine(gid: number): Promise<boolean> {
  let known = privateGroups.get(gid);
  if (!known) {
    known = (async () => {
      let user: string;
      try {
        user = os.userInfo().username;
      } catch {
        return false;
      }
      const [groups, passwd] = await Promise.all([readFile('/etc/group', 'utf8'), readFile('/etc/passwd', 'utf8')]).catch(() => ['', '']);
      return isPrivateGroup(user, gid, groups, passwd);
    })();
    privateGroups.set(gid, known);
  }
  return known;
}

/**
 * Pure: whether `gid` is `user`'s private group by the texts of /etc/group and /etc/passwd: exactly one group line
 * has that gid (X28-05: a second name on the same gid, with members of its own, shares it), it is named as the user
 * and lists no other member, and no other account has it as its primary group.
 */
export function isPrivateGroup(user: string, gid: number, groups: string, passwd: string): boolean {
  const entries = groups.split('\n').map((line) => line.split(':')).filter((fields) => fields.length >= 4 && fields[2] === String(gid));
  const entry = entries.length === 1 ? entries[0] : undefined;
  if (!entry || entry[0] !== user) return false;
  const members = (entry[3] ?? '').split(',').map((member) => member.trim()).filter((member) => member !== '');
  if (members.some((member) => member !== user)) return false;
  return !passwd.split('\n').map((line) => line.split(':')).some((fields) => fields.length >= 4 && fields[3] === String(gid) && fields[0] !== user);
}

/** fs-native-extensions (its prebuilt xattr calls), loaded once; null where it cannot load. */
let xattrs: { getAttrSync: (fd: number, name: string) => Buffer | null } | null | undefined;

/**
 * Linux: the kind of extended ACL on `file` ('POSIX ACL', 'NFSv4 ACL'), 'unknown' when it cannot be
 * read, undefined when there is none (or on another platform: macOS ACLs are not checked — docs/differences.md).
 */
function extendedAcl(file: string): string | undefined {
  if (process.platform !== 'linux') return undefined;
  if (xattrs === undefined) {
    try {
      xattrs = createRequire(import.meta.url)('fs-native-extensions') as NonNullable<typeof xattrs>;
    } catch {
      xattrs = null;
    }
  }
  if (!xattrs) return 'unknown';
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return 'unknown';
  }
  try {
    for (const [name, kind] of [['system.posix_acl_access', 'POSIX ACL'], ['system.nfs4_acl', 'NFSv4 ACL']] as const) {
      try {
        if (xattrs.getAttrSync(fd, name) !== null) return kind;
      } catch (error) {
        // A file system without extended attributes has no ACL either.
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') return 'unknown';
      }
    }
    return undefined;
  } finally {
    closeSync(fd);
  }
}

const untrustedWarned = new Set<string>();

/**
 * Finds polywave.config.json in `startDir` or one of its parents (at most `maxLevels`
 * directories, default 10 as in Go). Returns the absolute path or undefined. A file another
 * user controls ({@link untrustedConfigReason}) is skipped, with one warning on stderr naming it.
 */
export async function locateProjectConfig(startDir: string, options: { maxLevels?: number } = {}): Promise<string | undefined> {
  let directory = path.resolve(startDir);
  const maxLevels = options.maxLevels ?? defaultConfigSearchLevels;
  for (let level = 0; level < maxLevels; level += 1) {
    const candidate = path.join(directory, projectConfigFileName);
    try {
      if ((await stat(candidate)).isFile()) {
        const reason = await untrustedConfigReason(candidate);
        if (reason === undefined) return candidate;
        if (!untrustedWarned.has(candidate)) {
          untrustedWarned.add(candidate);
          process.stderr.write(`polywave: warning: ${JSON.stringify(candidate)} ignored (${reason})\n`);
        }
      }
    } catch {
      // not here
    }
    const parent = path.dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  return undefined;
}

/** A config read from disk. */
export interface LoadedProjectConfig extends ProjectConfigParse {
  path: string;
}

/**
 * Reads and checks polywave.config.json at `filePath`. Throws a PolywaveError (exit 2):
 * `N013_CONFIG_NOT_FOUND` when it does not exist; the read-text codes for a directory, binary or
 * oversize file (1 MiB cap). Invalid JSON or shape comes back as findings, not a throw.
 */
export async function readProjectConfig(filePath: string): Promise<LoadedProjectConfig> {
  let text: string;
  try {
    text = await readTextFile(filePath, { maxBytes: 1024 * 1024 });
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === codes.fileNotFound) {
      throw new PolywaveError({ code: configCodes.notFound, message: `${filePath} does not exist (run: polywave init)`, exitCode: 2, cause: error });
    }
    throw error;
  }
  return { path: filePath, ...parseProjectConfig(text) };
}

/** Pure: the file text for a config (2-space JSON and a final newline, as the Go tool writes it). */
export function serializeProjectConfig(config: ProjectConfig): string {
  return `${JSON.stringify(config, null, 2)}\n`;
}

/**
 * Writes a config atomically (temp file + rename). A new file gets mode 0600 as in Go (it may
 * hold API keys); an existing file keeps its mode.
 */
export async function writeProjectConfig(filePath: string, config: ProjectConfig): Promise<void> {
  const exists = await stat(filePath).then(
    (stats) => stats.isFile(),
    () => false,
  );
  await writeFileAtomic(filePath, serializeProjectConfig(config), exists ? {} : { mode: 0o600 });
}

/**
 * Pure: `updates` merged over `existing` at the top level — keys of `existing` keep their order
 * and every key `updates` does not set is kept (as the Go `config.Save` preserves unknown keys).
 */
export function mergeProjectConfig(existing: Record<string, unknown> | undefined, updates: ProjectConfig): ProjectConfig {
  return { ...(existing ?? {}), ...updates };
}
