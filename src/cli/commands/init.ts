import { appendFile, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { combineCommands, detectToolchain, type Toolchain, type ToolchainCommands } from '../../analysis/toolchain.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { writeFileAtomic } from '../../store/locked-write.js';
import { readTextFile } from '../../store/read-text.js';
import { mergeProjectConfig, projectConfigFileName, writeProjectConfig, type ProjectConfig, type ProjectRepoEntry } from '../../store/project-config.js';
import { installAgentsSnippet, installClaudePlugin, type ClaudeInstallResult, type ClaudeScope, type CodexInstallResult } from '../init-claude.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/** The line `init` adds to .gitignore: runtime state (gate cache, active IMPL, journals, merge logs) at any depth. */
export const stateIgnoreLine = '.polywave-state/';

/** Config keys `init` writes for the detected project commands. */
const commandKeys = { build: 'build_command', test: 'test_command', lint: 'lint_command', format: 'format_command' } as const;

/** The JSON `init` prints on stdout. */
export interface InitOutput {
  config_path: string;
  toolchains: Array<{ kind: string; directory: string; markers: string[]; package_manager?: string; commands: ToolchainCommands }>;
  /** The project commands written to the config (build, test, lint, format). */
  commands: { build?: string; test?: string; lint?: string; format?: string };
  gitignore_updated: boolean;
}

async function statOrUndefined(filePath: string) {
  try {
    return await stat(filePath);
  } catch {
    return undefined;
  }
}

/**
 * True when a .gitignore line already ignores `.polywave-state/` everywhere or at the root
 * (`.polywave-state`, `/.polywave-state/`, `**\/.polywave-state/**`, …).
 */
export function ignoresStateDirectory(gitignoreText: string): boolean {
  return gitignoreText.split(/\r?\n/).some((raw) => {
    const line = raw.trim().replace(/^\*\*\//, '').replace(/^\//, '').replace(/\/\*\*?$/, '').replace(/\/$/, '');
    return line === '.polywave-state';
  });
}

/**
 * Adds `.polywave-state/` to `<repoDir>/.gitignore` (created when missing). Existing bytes are
 * kept exactly — the line is appended (after a newline when the file lacks a final one; CRLF
 * files get CRLF); nothing is written when a line already ignores it. Returns whether the
 * file changed.
 */
export async function ensureStateIgnored(repoDir: string): Promise<boolean> {
  const filePath = path.join(repoDir, '.gitignore');
  const stats = await statOrUndefined(filePath);
  if (!stats) {
    await writeFileAtomic(filePath, `${stateIgnoreLine}\n`);
    return true;
  }
  if (!stats.isFile()) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${filePath} is not a regular file` });
  if (stats.size > maxGitignoreBytes) throw new PolywaveError({ code: 'RESOURCE_EXHAUSTION', message: `${filePath} is larger than ${maxGitignoreBytes} bytes` });
  // latin1 maps every byte to one character: the check works whatever the encoding.
  const text = (await readFile(filePath)).toString('latin1');
  if (ignoresStateDirectory(text)) return false;
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  const separator = text === '' || text.endsWith('\n') ? '' : newline;
  // Appending (not rewriting) is what keeps every existing byte, in any encoding.
  await appendFile(filePath, `${separator}${stateIgnoreLine}${newline}`);
  return true;
}

const maxGitignoreBytes = 10 * 1024 * 1024;

function readExistingObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps other configured repositories; this one is updated in place or added. */
function mergeRepos(existing: unknown, entry: ProjectRepoEntry, configDir: string): ProjectRepoEntry[] {
  if (!Array.isArray(existing)) return [entry];
  const repos: ProjectRepoEntry[] = [];
  let found = false;
  for (const item of existing as unknown[]) {
    if (item !== null && typeof item === 'object' && !Array.isArray(item)) {
      const repo = item as ProjectRepoEntry;
      if (typeof repo.path === 'string' && path.resolve(configDir, repo.path) === entry.path) {
        if (!found) repos.push({ ...repo, name: entry.name, path: entry.path });
        found = true;
        continue;
      }
      repos.push(repo);
    }
  }
  if (!found) repos.unshift(entry);
  return repos;
}

/**
 * The config `init` writes: the repository, the detected project commands under the keys both
 * tools read (`build_command`, `test_command`, `lint_command` — Go gate discovery and our gates —
 * plus `format_command`), and the Go `init` keys `build`/`test` `{command, detected: true}`.
 */
export function buildInitConfig(repoDir: string, commands: ToolchainCommands, existing?: Record<string, unknown>): ProjectConfig {
  const entry: ProjectRepoEntry = { name: path.basename(repoDir), path: repoDir };
  const updates: ProjectConfig = { repos: mergeRepos(existing?.repos, entry, repoDir) };
  for (const [kind, key] of Object.entries(commandKeys) as Array<[keyof typeof commandKeys, string]>) {
    const command = commands[kind];
    if (command) updates[key] = command;
  }
  if (commands.build) updates.build = { command: commands.build, detected: true };
  if (commands.test) updates.test = { command: commands.test, detected: true };
  return mergeProjectConfig(existing, updates);
}

function toolchainJson(toolchain: Toolchain): InitOutput['toolchains'][number] {
  return {
    kind: toolchain.kind,
    directory: toolchain.directory,
    markers: toolchain.markers,
    ...(toolchain.packageManager ? { package_manager: toolchain.packageManager } : {}),
    commands: toolchain.commands,
  };
}

/**
 * `init [--repo DIR] [--force]` — detects the toolchains, writes polywave.config.json and adds
 * `.polywave-state/` to .gitignore. Refuses (exit 1, nothing written) when the config exists and
 * `--force` is not given; with `--force` the detected keys are rewritten and every other key
 * (providers, agent models, other repos, …) is kept. Exit 2 when DIR is not a directory.
 * Human summary on stderr; JSON `{config_path, toolchains[], commands{}, gitignore_updated}` on stdout.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const repoDir = path.resolve(io.cwd, typeof options.repo === 'string' && options.repo !== '' ? options.repo : '.');
  const repoStats = await statOrUndefined(repoDir);
  if (!repoStats?.isDirectory()) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${repoDir} ${repoStats ? 'is not a directory' : 'does not exist'}` });
  }
  if (options.claude || options.codex) return await runIntegrations(repoDir, options, io);
  if (options.scope !== undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--scope goes with --claude (nothing was written)' });
  const configPath = path.join(repoDir, projectConfigFileName);
  const configStats = await statOrUndefined(configPath);
  let existing: Record<string, unknown> | undefined;
  if (configStats) {
    if (!options.force) {
      throw new PolywaveError({ code: 'N092_ENGINE_ALREADY_INITIALIZED', message: `${configPath} already exists; use --force to overwrite (nothing was written)`, exitCode: 1 });
    }
        // A config that is not a JSON object is replaced, as the Go tool does.
    existing = readExistingObject(await readTextFile(configPath, { maxBytes: 1024 * 1024 }));
  }

  // Check .gitignore before writing anything, so a failure leaves nothing half done.
  const gitignorePath = path.join(repoDir, '.gitignore');
  const gitignoreStats = await statOrUndefined(gitignorePath);
  if (gitignoreStats && !gitignoreStats.isFile()) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${gitignorePath} is not a regular file (nothing was written)` });

  const toolchains = await detectToolchain(repoDir);
  const combined = combineCommands(toolchains);
  const commands: InitOutput['commands'] = {};
  for (const kind of Object.keys(commandKeys) as Array<keyof typeof commandKeys>) if (combined[kind]) commands[kind] = combined[kind];

  await writeProjectConfig(configPath, buildInitConfig(repoDir, commands, existing));
  const gitignoreUpdated = await ensureStateIgnored(repoDir);

  const lines = [`polywave init: wrote ${configPath}${configStats ? ' (replaced the detected keys, kept the others)' : ''}`];
  if (toolchains.length === 0) lines.push('  no toolchain detected: set build_command / test_command / lint_command by hand');
  else {
    const described = toolchains.map((toolchain) => `${toolchain.kind}${toolchain.packageManager ? `/${toolchain.packageManager}` : ''} (${toolchain.directory})`);
    lines.push(`  toolchains: ${described.join(', ')}`);
  }
  for (const [kind, command] of Object.entries(commands)) lines.push(`  ${kind}: ${command}`);
  lines.push(`  .gitignore: ${gitignoreUpdated ? `added ${stateIgnoreLine}` : `already ignores ${stateIgnoreLine}`}`);
  lines.push('  next: polywave verify-install');
  io.stderr(`${lines.join('\n')}\n`);

  const output: InitOutput = { config_path: configPath, toolchains: toolchains.map(toolchainJson), commands, gitignore_updated: gitignoreUpdated };
  printJson(io, output);
  return 0;
}

function scopeFrom(options: Record<string, unknown>): ClaudeScope {
  const value = options.scope === undefined ? 'project' : options.scope;
  if (value === 'project' || value === 'user') return value;
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--scope must be project or user, not ${JSON.stringify(value)} (nothing was written)` });
}

/**
 * `init --claude [--scope project|user] [--force]` and/or `init --codex`: the Claude Code plugin
 * and the AGENTS.md section (src/cli/init-claude.ts). No polywave.config.json is written.
 */
async function runIntegrations(repoDir: string, options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  if (options.scope !== undefined && !options.claude) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--scope goes with --claude (nothing was written)' });
  const scope = options.claude ? scopeFrom(options) : undefined;
  const output: { claude?: ClaudeInstallResult; codex?: CodexInstallResult } = {};
  const lines: string[] = [];
  if (scope !== undefined) {
    const claude = await installClaudePlugin({ scope, repoDir, env: io.env, force: options.force === true });
    output.claude = claude;
    lines.push(`polywave init --claude: the polywave plugin ${claude.plugin_version} for Claude Code (${scope} scope) in ${claude.directory}`);
    for (const file of claude.files) lines.push(`  ${file.action.padEnd(9)} ${path.relative(claude.directory, file.path)}`);
    lines.push(`  ${claude.settings_action.padEnd(9)} settings.json (PreToolUse, PostToolUse, SubagentStop hooks → polywave hook)`);
    lines.push('  in Claude Code: /polywave scout "<feature>", /polywave wave, /polywave status (restart Claude Code to load it)');
    lines.push('  the hooks need the polywave CLI: this project\'s node_modules/.bin/polywave, polywave on PATH, or POLYWAVE_BIN');
  }
  if (options.codex) {
    const codex = await installAgentsSnippet(repoDir);
    output.codex = codex;
    lines.push(`polywave init --codex: ${codex.action} the polywave section of ${codex.path}`);
  }
  io.stderr(`${lines.join('\n')}\n`);
  printJson(io, output);
  return 0;
}
