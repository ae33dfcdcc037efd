/**
 * `polywave init --claude` and `polywave init --codex`.
 *
 * --claude installs the plugin shipped in the package (claude-plugin/) the way Claude Code loads
 * a project's or a user's own configuration, without a marketplace:
 *   <dir>/skills/polywave/SKILL.md, <dir>/agents/polywave-*.md, <dir>/hooks/polywave-hook.sh,
 *   and the plugin's hooks merged into <dir>/settings.json (our entries recognised by the
 *   launcher's name; every other key and hook of the file is kept as it is).
 * <dir> is `<repo>/.claude` (project scope) or `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude` (user).
 * What was installed is recorded with a SHA-256 per file in <dir>/polywave-plugin.json: a later
 * run updates files that still hold what we wrote, leaves identical ones alone, and refuses
 * (nothing written, the files listed) when the user changed one — unless --force.
 *
 * --codex writes a delimited section into AGENTS.md (created when missing); everything outside
 * the markers stays byte for byte.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PolywaveError } from '../errors/polywave-error.js';
import { writeTextAtomic } from '../engine/prepare/write-text.js';

/** Where `init --claude` installs. */
export type ClaudeScope = 'project' | 'user';

/** One installed file and what happened to it. */
export interface InstalledFile {
  path: string;
  action: 'created' | 'updated' | 'unchanged';
}

/** The `claude` part of the `init --claude` JSON. */
export interface ClaudeInstallResult {
  scope: ClaudeScope;
  directory: string;
  plugin_version: string;
  files: InstalledFile[];
  settings_path: string;
  settings_action: 'created' | 'updated' | 'unchanged';
  record_path: string;
}

/** The `codex` part of the `init --codex` JSON. */
export interface CodexInstallResult {
  path: string;
  action: 'created' | 'updated' | 'unchanged';
}

const launcherName = 'polywave-hook.sh';
const recordName = 'polywave-plugin.json';
const maxSettingsBytes = 4 * 1024 * 1024;

/** The plugin directory shipped with this package (claude-plugin/ at the package root). */
export function pluginDirectory(): string {
  let current = path.dirname(fileURLToPath(import.meta.url));
  for (let step = 0; step < 5; step += 1) {
    const candidate = path.join(current, 'claude-plugin');
    if (existsSync(path.join(candidate, '.claude-plugin', 'plugin.json'))) return candidate;
    current = path.dirname(current);
  }
  throw new PolywaveError({ code: 'X002_FILE_READ', message: 'the Claude Code plugin (claude-plugin/) is missing from this polywave installation' });
}

/** The configuration directory of a scope. */
export function claudeDirectory(scope: ClaudeScope, repoDir: string, env: Readonly<Record<string, string | undefined>>): string {
  if (scope === 'project') return path.join(repoDir, '.claude');
  const configured = env.CLAUDE_CONFIG_DIR?.trim();
  if (configured) return path.resolve(configured);
  const home = env.HOME?.trim() || env.USERPROFILE?.trim();
  if (!home) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'init --claude --scope user: neither CLAUDE_CONFIG_DIR nor HOME is set' });
  return path.join(home, '.claude');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function readIfFile(filePath: string): string | undefined {
  try {
    const stats = statSync(filePath);
    if (!stats.isFile()) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${filePath} exists and is not a regular file (nothing was written)` });
    return readFileSync(filePath, 'utf8');
  } catch (error) {
    if (PolywaveError.isInstance(error)) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PolywaveError({ code: 'X002_FILE_READ', message: `${filePath} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}; nothing was written)` });
  }
}

/** The hook command for one event in a scope's settings.json. */
function hookCommand(scope: ClaudeScope, directory: string, event: string): string {
  const launcher = scope === 'project' ? `"$CLAUDE_PROJECT_DIR"/.claude/hooks/${launcherName}` : JSON.stringify(path.join(directory, 'hooks', launcherName));
  return `sh ${launcher} ${event}`;
}

interface HookEntry {
  matcher?: string;
  hooks: Array<{ type: string; command: string; timeout?: number }>;
}

/** The plugin's hooks.json with each command rewritten for the installed launcher. */
function installedHooks(pluginDir: string, scope: ClaudeScope, directory: string): Record<string, HookEntry[]> {
  const parsed = JSON.parse(readFileSync(path.join(pluginDir, 'hooks', 'hooks.json'), 'utf8')) as { hooks: Record<string, HookEntry[]> };
  const result: Record<string, HookEntry[]> = {};
  for (const [event, entries] of Object.entries(parsed.hooks)) {
    result[event] = entries.map((entry) => ({
      ...entry,
      hooks: entry.hooks.map((hook) => ({ ...hook, command: hookCommand(scope, directory, /(\S+)$/.exec(hook.command)![1]!) })),
    }));
  }
  return result;
}

const isOurs = (entry: unknown): boolean => JSON.stringify(entry).includes(launcherName);

/** settings.json with our hook entries replaced (others kept, in order); undefined = unchanged. */
export function mergeSettings(existingText: string | undefined, hooks: Record<string, HookEntry[]>, settingsPath: string): string | undefined {
  let settings: Record<string, unknown> = {};
  if (existingText !== undefined && existingText.trim() !== '') {
    let value: unknown;
    try {
      value = JSON.parse(existingText);
    } catch (error) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${settingsPath} is not valid JSON (${error instanceof Error ? error.message : String(error)}); fix it first (nothing was written)` });
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${settingsPath} is not a JSON object (nothing was written)` });
    settings = value as Record<string, unknown>;
  }
  const currentHooks = settings.hooks === undefined ? {} : settings.hooks;
  if (currentHooks === null || typeof currentHooks !== 'object' || Array.isArray(currentHooks)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${settingsPath}: "hooks" is not an object (nothing was written)` });
  const merged: Record<string, unknown> = { ...(currentHooks as Record<string, unknown>) };
  for (const [event, entries] of Object.entries(hooks)) {
    const existing = merged[event];
    if (existing !== undefined && !Array.isArray(existing)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${settingsPath}: hooks.${event} is not an array (nothing was written)` });
    merged[event] = [...((existing as unknown[] | undefined) ?? []).filter((entry) => !isOurs(entry)), ...entries];
  }
  const next = `${JSON.stringify({ ...settings, hooks: merged }, null, 2)}\n`;
  return existingText !== undefined && (next === existingText || JSON.stringify(JSON.parse(existingText)) === JSON.stringify(JSON.parse(next))) ? undefined : next;
}

interface InstallRecord {
  plugin_version?: string;
  files?: Record<string, string>;
}

function readRecord(recordPath: string): InstallRecord {
  const text = readIfFile(recordPath);
  if (text === undefined) return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as InstallRecord) : {};
  } catch {
    return {};
  }
}

/** Installs (or refreshes) the plugin for Claude Code; see the file comment. */
export async function installClaudePlugin(options: { scope: ClaudeScope; repoDir: string; env: Readonly<Record<string, string | undefined>>; force: boolean }): Promise<ClaudeInstallResult> {
  const pluginDir = pluginDirectory();
  const directory = claudeDirectory(options.scope, options.repoDir, options.env);
  const version = (JSON.parse(readFileSync(path.join(pluginDir, '.claude-plugin', 'plugin.json'), 'utf8')) as { version?: string }).version ?? '';

  const wanted = new Map<string, { text: string; mode?: number }>();
  wanted.set('skills/polywave/SKILL.md', { text: readFileSync(path.join(pluginDir, 'skills', 'polywave', 'SKILL.md'), 'utf8') });
  for (const name of readdirSync(path.join(pluginDir, 'agents')).filter((file) => file.endsWith('.md')).sort()) {
    wanted.set(`agents/${name}`, { text: readFileSync(path.join(pluginDir, 'agents', name), 'utf8') });
  }
  wanted.set(`hooks/${launcherName}`, { text: readFileSync(path.join(pluginDir, 'hooks', launcherName), 'utf8'), mode: 0o755 });

  const recordPath = path.join(directory, recordName);
  const record = readRecord(recordPath);
  const plan: Array<{ relative: string; text: string; mode?: number; action: InstalledFile['action'] }> = [];
  const modified: string[] = [];
  for (const [relative, file] of wanted) {
    const current = readIfFile(path.join(directory, relative));
    if (current === undefined) plan.push({ relative, ...file, action: 'created' });
    else if (current === file.text) plan.push({ relative, ...file, action: 'unchanged' });
    else {
      // Ours when it still holds exactly what we installed last time; otherwise the user changed it.
      if (record.files?.[relative] !== sha256(current) && !options.force) modified.push(path.join(directory, relative));
      plan.push({ relative, ...file, action: 'updated' });
    }
  }
  const settingsPath = path.join(directory, 'settings.json');
  const settingsText = readIfFile(settingsPath);
  if (settingsText !== undefined && Buffer.byteLength(settingsText) > maxSettingsBytes) throw new PolywaveError({ code: 'RESOURCE_EXHAUSTION', message: `${settingsPath} is larger than ${maxSettingsBytes} bytes (nothing was written)` });
  const nextSettings = mergeSettings(settingsText, installedHooks(pluginDir, options.scope, directory), settingsPath);
  if (modified.length > 0) {
    throw new PolywaveError({
      code: 'INIT_PLUGIN_FILES_MODIFIED',
      exitCode: 1,
      message: `you changed ${modified.length} installed polywave plugin file${modified.length === 1 ? '' : 's'}: ${modified.join(', ')}; re-run with --force to replace ${modified.length === 1 ? 'it' : 'them'} (nothing was written)`,
      details: { files: modified },
    });
  }

  for (const item of plan) {
    if (item.action === 'unchanged') continue;
    const target = path.join(directory, item.relative);
    await mkdir(path.dirname(target), { recursive: true });
    await writeTextAtomic(target, item.text, item.mode !== undefined ? { mode: item.mode } : undefined);
  }
  if (nextSettings !== undefined) {
    await mkdir(directory, { recursive: true });
    await writeTextAtomic(settingsPath, nextSettings);
  }
  const nextRecord = `${JSON.stringify({ plugin_version: version, files: Object.fromEntries(plan.map((item) => [item.relative, sha256(item.text)])) }, null, 2)}\n`;
  if (readIfFile(recordPath) !== nextRecord) await writeTextAtomic(recordPath, nextRecord);

  return {
    scope: options.scope,
    directory,
    plugin_version: version,
    files: plan.map((item) => ({ path: path.join(directory, item.relative), action: item.action })),
    settings_path: settingsPath,
    settings_action: nextSettings === undefined ? 'unchanged' : settingsText === undefined ? 'created' : 'updated',
    record_path: recordPath,
  };
}

export const agentsBeginMarker = '<!-- polywave:begin (managed by `polywave init --codex`; edits inside are replaced) -->';
export const agentsEndMarker = '<!-- polywave:end -->';

/** The AGENTS.md section for Codex (and any agent that reads AGENTS.md). */
export function agentsSection(): string {
  return `${agentsBeginMarker}
## Polywave (parallel agents on this repository)

This repository uses [polywave](https://www.npmjs.com/package/polywave): features are planned into
waves of agents that own disjoint files, and each agent works in its own git worktree.

- Planning or running a feature: \`npx polywave run "<feature>"\` (Scout → approval → waves →
  merge), or step by step: \`polywave run-scout "<feature>"\`, \`polywave run-wave <impl>\`.
  Status: \`polywave list-impls\`, \`polywave agent-status <impl>\`, \`polywave resume-detect\`.
- Plans live in \`docs/IMPL/IMPL-<slug>.yaml\`. Never edit a plan's \`file_ownership\`,
  \`waves\` or \`completion_reports\` by hand: use \`polywave amend-impl\`, \`polywave set-completion\`.
  After editing a plan, run \`polywave validate <impl>\` and fix every error.

If you are a **wave agent** (your prompt names a worktree under \`.claude/worktrees/polywave/\`
and a \`.polywave-agent-brief.md\`):
1. Work only inside your worktree, on your branch (\`polywave verify-isolation --branch <branch>\`).
2. Create, change or delete only the files your brief lists as owned (I1). Anything else you need
   goes into \`out_of_scope_deps\` in your report.
3. Run the verification commands of your brief; commit your files on your branch (I5).
4. Report once with \`polywave set-completion <impl> --agent <ID> --status complete|partial|blocked
   --commit <sha> --verification "PASS|FAIL (reason)" …\`. Do not merge, rebase, push or stash.
${agentsEndMarker}
`;
}

/** Adds or replaces the polywave section of `<repoDir>/AGENTS.md`; see the file comment. */
export async function installAgentsSnippet(repoDir: string): Promise<CodexInstallResult> {
  const filePath = path.join(repoDir, 'AGENTS.md');
  const current = readIfFile(filePath);
  const section = agentsSection();
  let next: string;
  if (current === undefined) next = section;
  else {
    const begin = current.indexOf('<!-- polywave:begin');
    const end = begin < 0 ? -1 : current.indexOf(agentsEndMarker, begin);
    if (begin >= 0 && end < 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${filePath} has a polywave:begin marker without ${agentsEndMarker}; fix the file first (nothing was written)` });
    if (begin >= 0) {
      let stop = end + agentsEndMarker.length;
      if (current[stop] === '\n') stop += 1;
      next = `${current.slice(0, begin)}${section}${current.slice(stop)}`;
    } else {
      // Appended after one blank line; the existing bytes stay as they are.
      const separator = current === '' || /\n\r?\n$/.test(current) ? '' : current.endsWith('\n') ? '\n' : '\n\n';
      next = `${current}${separator}${section}`;
    }
  }
  if (next === current) return { path: filePath, action: 'unchanged' };
  await writeTextAtomic(filePath, next);
  return { path: filePath, action: current === undefined ? 'created' : 'updated' };
}
