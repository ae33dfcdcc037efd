import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Agent, ImplManifest } from '../protocol/schema/impl-schema.js';
import { normalizeReportedPath } from '../protocol/conflicts.js';
import { writeTextAtomic } from './prepare/write-text.js';

/** Brief file written into each agent worktree. */
export const briefFileName = '.polywave-agent-brief.md';
/** Ownership file the E42 hooks read (next to the brief). */
export const ownershipFileName = '.polywave-ownership.json';
/** E43 environment file (`POLYWAVE_WORKTREE_ROOT=…`, read by the worktree-boundary hook). */
export const worktreeEnvFileName = '.polywave-worktree-env';

/** Everything the E23 payload is built from. */
export interface BriefInput {
  manifest: ImplManifest;
  /** Absolute path of the IMPL doc (the agent writes its completion report there, I4/I5). */
  implPath: string;
  wave: number;
  agent: Agent;
  /** The agent's worktree and branch; absent for a solo agent prepared without a worktree. */
  worktreePath?: string;
  branch?: string;
  /** P5: the branch the wave merges into, when not the repository's current branch. */
  mergeTarget?: string;
  /** E23A: the recovered session context (markdown), when the agent's journal has history. */
  recoveredContext?: string;
}

/**
 * The files an agent owns in a wave: its `files` list plus its `file_ownership` rows for the
 * wave, de-duplicated in first-seen order.
 */
export function ownedFiles(manifest: ImplManifest, wave: number, agentId: string): string[] {
  const agent = (manifest.waves ?? []).find((item) => item.number === wave)?.agents?.find((item) => item.id === agentId);
  const files = [...(agent?.files ?? [])];
  for (const row of manifest.file_ownership ?? []) if (row.agent === agentId && row.wave === wave && row.file) files.push(row.file);
  const seen = new Set<string>();
  const result: string[] = [];
  for (const file of files) {
    const key = normalizeReportedPath(file);
    if (key === '' || seen.has(key)) continue;
    seen.add(key);
    result.push(key);
  }
  return result;
}

function cell(value: unknown): string {
  const text = value === undefined || value === null ? '' : String(value);
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|').trim();
}

function fenced(text: string, language = ''): string {
  let fence = '```';
  while (text.includes(fence)) fence += '`';
  return `${fence}${language}\n${text.replace(/\n+$/, '')}\n${fence}\n`;
}

/** The one-line summary for the front matter: the `**Role:**` line, else the first prose line; ≤ 60 chars. */
export function taskSummary(task: string): string {
  const lines = task.split('\n').map((line) => line.trim());
  const role = lines.find((line) => /^\*\*Role:\*\*/i.test(line));
  const source = role !== undefined ? role.replace(/^\*\*Role:\*\*\s*/i, '') : (lines.find((line) => line !== '' && !line.startsWith('#')) ?? '');
  const plain = source.replace(/\*\*/g, '').replace(/\s+/g, ' ').trim();
  return plain.length > 60 ? `${plain.slice(0, 57)}...` : plain;
}

/**
 * E23: the per-agent context payload, exactly — the agent's own task and owned files, ALL
 * interface contracts, the full file ownership table, the scaffolds, the quality gates, the
 * agent's E35 wiring obligations (Layer 3C), the merge target and the absolute IMPL path. Other
 * agents' tasks, suitability, pre-mortem, known issues and earlier reports are left out.
 * Deterministic: the same manifest gives the same bytes.
 */
export function renderAgentBrief(input: BriefInput): string {
  const { manifest, wave, agent } = input;
  const agentId = agent.id ?? '';
  const out: string[] = [];
  out.push('---\n', `polywave_name: ${JSON.stringify(`[polywave:wave${wave}:agent-${agentId}] ${taskSummary(agent.task ?? '')}`.trim())}\n`, '---\n\n');
  out.push(`# Agent ${agentId} Brief - Wave ${wave}\n\n`);
  out.push(`**IMPL Doc:** ${input.implPath}\n`);
  if (input.worktreePath !== undefined) out.push(`**Worktree:** ${input.worktreePath}\n`);
  if (input.branch !== undefined) out.push(`**Branch:** ${input.branch}\n`);
  out.push('\nWrite your completion report to the IMPL doc above (I4/I5); commit only on your own branch, inside your worktree.\n');

  if (input.recoveredContext) out.push('\n## Session Context (Recovered from Tool Journal)\n\n', input.recoveredContext.replace(/\n*$/, '\n'));

  out.push('\n## Files Owned\n\n');
  const files = ownedFiles(manifest, wave, agentId);
  const rows = new Map((manifest.file_ownership ?? []).filter((row) => row.agent === agentId && row.wave === wave && row.file).map((row) => [normalizeReportedPath(row.file!), row]));
  if (files.length === 0) out.push('(none)\n');
  for (const file of files) {
    const row = rows.get(file);
    const tags = [row?.action, row?.repo ? `repo: ${row.repo}` : undefined].filter((item): item is string => item !== undefined && item !== '');
    out.push(`- \`${file}\`${tags.length > 0 ? ` (${tags.join(', ')})` : ''}\n`);
  }

  out.push('\n## Task\n\n', (agent.task ?? '').replace(/\n*$/, '\n'));

  if (input.mergeTarget) {
    out.push('\n## Merge Target\n\n', `This wave merges into \`${input.mergeTarget}\`, not the repository's default branch (P5). Commit on your own branch; the orchestrator merges it into \`${input.mergeTarget}\`.\n`);
  }

  out.push('\n## Interface Contracts\n\n');
  const contracts = manifest.interface_contracts ?? [];
  if (contracts.length === 0) out.push('(none)\n');
  contracts.forEach((contract, index) => {
    out.push(`${index === 0 ? '' : '\n'}### ${contract.name ?? '(unnamed)'}\n\n`);
    if (contract.description) out.push(`${contract.description.replace(/\n*$/, '')}\n\n`);
    if (contract.location) out.push(`Location: \`${contract.location}\`\n\n`);
    if (contract.definition) out.push(fenced(contract.definition));
  });

  out.push('\n## File Ownership\n\n');
  const ownership = manifest.file_ownership ?? [];
  if (ownership.length === 0) out.push('(none)\n');
  else {
    out.push('| File | Agent | Wave | Action | Repo | Depends On |\n', '|------|-------|------|--------|------|------------|\n');
    for (const row of ownership) {
      out.push(`| ${cell(row.file)} | ${cell(row.agent)} | ${cell(row.wave)} | ${cell(row.action)} | ${cell(row.repo)} | ${cell((row.depends_on ?? []).join(', '))} |\n`);
    }
  }

  out.push('\n## Scaffolds\n\n');
  const scaffolds = manifest.scaffolds ?? [];
  if (scaffolds.length === 0) out.push('(none)\n');
  scaffolds.forEach((scaffold, index) => {
    const file = scaffold.file_path || scaffold.file || '(no path)';
    out.push(`${index === 0 ? '' : '\n'}### \`${file}\`\n\n`);
    if (scaffold.import_path) out.push(`Import path: \`${scaffold.import_path}\`\n`);
    out.push(`Status: ${scaffold.status ?? 'pending'}${scaffold.commit ? ` (${scaffold.commit})` : ''}\n`);
    if (scaffold.contents) out.push('\n', fenced(scaffold.contents));
  });

  const wiring = (manifest.wiring ?? []).filter((entry) => entry.agent === agentId && entry.wave === wave);
  if (wiring.length > 0) {
    out.push('\n## Wiring Obligations (E35)\n\n');
    out.push('You must wire the following exports into existing aggregation points.\n');
    out.push('These declarations are specified in the IMPL doc `wiring:` block and will be\n');
    out.push('validated post-merge by `validate-integration` (severity: error if missing).\n\n');
    out.push('| Symbol | Defined In | Must Be Called From | Pattern |\n', '|--------|------------|---------------------|--------|\n');
    for (const entry of wiring) out.push(`| ${cell(entry.symbol)} | ${cell(entry.defined_in)} | ${cell(entry.must_be_called_from)} | ${cell(entry.integration_pattern)} |\n`);
  }

  out.push('\n## Quality Gates\n\n');
  const gates = manifest.quality_gates?.gates ?? [];
  if (manifest.quality_gates?.level) out.push(`Level: ${manifest.quality_gates.level}\n\n`);
  if (gates.length === 0) out.push('(none)\n');
  for (const gate of gates) {
    const extras = [`required: ${gate.required !== false}`, gate.timing ? `timing: ${gate.timing}` : '', gate.repo ? `repo: ${gate.repo}` : ''].filter((item) => item !== '');
    out.push(`- **${gate.type ?? 'custom'}**: \`${gate.command ?? ''}\` (${extras.join(', ')})${gate.description ? ` — ${gate.description.replace(/\s+/g, ' ').trim()}` : ''}\n`);
  }
  return out.join('');
}

/** `.polywave-ownership.json` (read by the E42 SubagentStop hook). */
export interface OwnershipRecord {
  agent: string;
  wave: number;
  impl_doc: string;
  owned_files: string[];
  repo_root: string;
  worktree?: string;
  branch?: string;
}

/** E43: the `.polywave-worktree-env` content (`KEY=value` lines). */
export function worktreeEnvText(values: { worktreeRoot: string; agentId: string; wave: number; implPath: string; branch: string }): string {
  return [
    `POLYWAVE_WORKTREE_ROOT=${values.worktreeRoot}`,
    `POLYWAVE_AGENT_ID=${values.agentId}`,
    `POLYWAVE_WAVE=${values.wave}`,
    `POLYWAVE_IMPL=${values.implPath}`,
    `POLYWAVE_BRANCH=${values.branch}`,
    '',
  ].join('\n');
}

function writeAtomic(filePath: string, content: string): Promise<void> {
  return writeTextAtomic(filePath, content);
}

/** Paths written by {@link writeAgentFiles}. */
export interface AgentFilePaths {
  brief_path: string;
  brief_length: number;
  ownership_path: string;
  worktree_env_path?: string;
}

/**
 * Writes the brief, the ownership record and (when `env` is given) the E43 env file into `dir`
 * (an agent worktree, or the journal dir for a solo agent). Each file is replaced atomically.
 */
export async function writeAgentFiles(options: { dir: string; briefName?: string; brief: string; ownership: OwnershipRecord; env?: string }): Promise<AgentFilePaths> {
  await mkdir(options.dir, { recursive: true });
  const briefPath = path.join(options.dir, options.briefName ?? briefFileName);
  const ownershipPath = path.join(options.dir, ownershipFileName);
  const writes = [writeAtomic(briefPath, options.brief), writeAtomic(ownershipPath, `${JSON.stringify(options.ownership, null, 2)}\n`)];
  let envPath: string | undefined;
  if (options.env !== undefined) {
    envPath = path.join(options.dir, worktreeEnvFileName);
    writes.push(writeAtomic(envPath, options.env));
  }
  await Promise.all(writes);
  return { brief_path: briefPath, brief_length: Buffer.byteLength(options.brief, 'utf8'), ownership_path: ownershipPath, ...(envPath ? { worktree_env_path: envPath } : {}) };
}
