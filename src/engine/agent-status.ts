import { implSlugFromPath } from '../protocol/names.js';
import type { ImplManifest, Wave } from '../protocol/schema/impl-schema.js';
import { loadImpl } from '../store/manifest-file.js';
import { ownershipDenials, readDenials } from './jail-denials.js';
import { journalPaths } from './journal.js';
import { reportedDeviations, type ReportedDeviation } from './update-agent-prompt.js';
import { observeAgents, requireParsedManifest, resolveAgentRepos, type AgentGitOptions, type AgentObservation, type AgentRepos } from './reconcile-state.js';

/** E50 agent status. */
export type AgentStatus = 'not_started' | 'in_progress' | 'complete' | 'blocked';

/** One row of the agent-status table (the Go `AgentStatusRow` keys). */
export interface AgentStatusRow {
  /** Agent ID, or `critic` for the critic row. */
  id: string;
  /** `wave<N>`, or `critic`. */
  role: string;
  /** The agent branch (the existing one, slug-scoped preferred), or `(main)` for the critic. */
  branch: string;
  /** Commits on the branch since the wave's base commit; -1 when unknown (critic without a base). */
  commit_count: number;
  has_report: boolean;
  status: AgentStatus;
}

/** The agent-status JSON (the Go `AgentStatusResult` keys). */
export interface AgentStatusResult {
  impl_slug: string;
  state: string;
  agents: AgentStatusRow[];
  /** E6/E8: the `interface_deviations` of the completion reports (only when there are some). */
  interface_deviations?: ReportedDeviation[];
  /** Issue 13: writes the jail refused, per agent (only when there are some): the merge may lack them. */
  refused_writes?: RefusedWrite[];
}

/** A write the jail refused an agent (its journal's denials.jsonl). */
export interface RefusedWrite {
  agent: string;
  wave: number;
  target: string;
  code: string;
  reason: string;
}

/** Options of {@link agentStatus}. */
export type AgentStatusOptions = AgentGitOptions;

/**
 * E50 status of one agent: a partial/blocked report → blocked; a complete report → complete
 * (I4: the report is the authority; Go additionally wants commits or a deleted branch, and so
 * shows a merged agent whose branch was kept as `not_started`); no report but commits on the
 * branch → in_progress; otherwise not_started.
 */
export function agentStatusOf(observation: Pick<AgentObservation, 'has_report' | 'report_status' | 'branch_exists' | 'commit_count'>): AgentStatus {
  if (observation.has_report && (observation.report_status === 'partial' || observation.report_status === 'blocked')) return 'blocked';
  if (observation.has_report && observation.report_status === 'complete') return 'complete';
  if (observation.branch_exists && observation.commit_count > 0) return 'in_progress';
  return 'not_started';
}

async function criticRow(manifest: ImplManifest, slug: string, firstWave: Wave | undefined, repos: AgentRepos): Promise<AgentStatusRow> {
  let commitCount = -1;
  const base = firstWave?.base_commit?.trim();
  if (base && !base.startsWith('-')) {
    const git = repos.gitAt(repos.primaryRoot);
    try {
      const { stdout } = await git.run(['log', '--format=%s', '--end-of-options', `${base}..HEAD`]);
      // The tag is `[Polywave:critic:<slug>]` (E48); older tools wrote it in lower case.
      const marker = `[polywave:critic:${slug}]`;
      commitCount = stdout.split('\n').filter((line) => line.toLowerCase().includes(marker)).length;
    } catch {
      commitCount = -1; // base not in this repository
    }
  }
  return { id: 'critic', role: 'critic', branch: '(main)', commit_count: commitCount, has_report: true, status: 'complete' };
}

/**
 * E50 agent-status: one row per agent of EVERY wave (Go drops waves ≥ 2 when a critic report
 * exists), plus a `critic` row after wave 1's agents when the IMPL has a critic verdict.
 */
export async function agentStatus(options: AgentStatusOptions): Promise<AgentStatusResult> {
  const { parsed } = await loadImpl(options.implPath);
  const manifest = requireParsedManifest(parsed.manifest, options.implPath);
  const slug = implSlugFromPath(options.implPath, manifest);
  const repos = await resolveAgentRepos(manifest, options);
  const hasCritic = (manifest.critic_report?.verdict ?? '').trim() !== '';
  const waves = manifest.waves ?? [];
  const observations = new Map((await observeAgents(manifest, { slug, repos })).map((observation) => [`${observation.wave}/${observation.id}`, observation]));
  const rows: AgentStatusRow[] = [];
  let criticAdded = false;
  for (const wave of waves) {
    for (const agent of wave.agents ?? []) {
      if (!agent.id) continue;
      const observation = observations.get(`${wave.number ?? 0}/${agent.id}`)!;
      rows.push({
        id: agent.id,
        role: `wave${wave.number ?? 0}`,
        branch: observation.branch,
        commit_count: observation.commit_count,
        has_report: observation.has_report,
        status: agentStatusOf(observation),
      });
    }
    if (hasCritic && !criticAdded) {
      rows.push(await criticRow(manifest, slug, wave, repos));
      criticAdded = true;
    }
  }
  if (hasCritic && !criticAdded) rows.push(await criticRow(manifest, slug, undefined, repos));
  const deviations = reportedDeviations(manifest);
  const refused = (
    await Promise.all(
      waves.flatMap((wave) =>
        (wave.agents ?? []).flatMap((agent) =>
          agent.id
            ? [
                (async () => {
                  const root = (await repos.rootFor(wave.number ?? 0, agent.id!)) ?? repos.primaryRoot;
                  return ownershipDenials(await readDenials(journalPaths(root, slug, wave.number ?? 0, agent.id!).dir)).map((record) => ({ agent: agent.id!, wave: wave.number ?? 0, target: record.target ?? '', code: record.code, reason: record.reason }));
                })(),
              ]
            : [],
        ),
      ),
    )
  ).flat();
  return { impl_slug: manifest.feature_slug ?? slug, state: manifest.state ?? '', agents: rows, ...(deviations.length > 0 ? { interface_deviations: deviations } : {}), ...(refused.length > 0 ? { refused_writes: refused } : {}) };
}

/**
 * The text form (Go: header, blank line, tabwriter table with 2 spaces of padding; `-` for an
 * unknown commit count; `(no agents)` when there are none).
 */
export function formatAgentStatusTable(result: AgentStatusResult): string {
  const header = `IMPL: ${result.impl_slug}  State: ${result.state}\n\n`;
  if (result.agents.length === 0) return `${header}(no agents)\n`;
  const rows = [
    ['Agent', 'Role', 'Branch', 'Commits', 'Report', 'Status'],
    ...result.agents.map((row) => [row.id, row.role, row.branch, row.commit_count === -1 ? '-' : String(row.commit_count), row.has_report ? 'yes' : 'no', row.status]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]! + 2))).join(''));
  const deviations = (result.interface_deviations ?? []).map(
    (deviation) => `  ${deviation.agent} (wave ${deviation.wave}): ${deviation.description}${deviation.affects.length > 0 ? ` — affects ${deviation.affects.join(', ')}` : ''}${deviation.downstream_action_required ? ' [downstream action required]' : ''}\n`,
  );
  const tail = deviations.length > 0 ? `\nInterface deviations (E6/E8: update the affected agents with polywave update-agent-prompt):\n${deviations.join('')}` : '';
  const refused = (result.refused_writes ?? []).map((write) => `  ${write.agent} (wave ${write.wave}): ${write.target} — ${write.code}: ${write.reason}\n`);
  const refusedTail = refused.length > 0 ? `\nWrites refused by the jail (the merged tree lacks them; finalize-wave --strict-ownership blocks such a merge):\n${refused.join('')}` : '';
  return `${header}${lines.join('\n')}\n${tail}${refusedTail}`;
}
