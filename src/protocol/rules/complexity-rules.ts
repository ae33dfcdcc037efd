import type { Finding } from '../../errors/finding.js';
import type { ImplRule } from './rule.js';
import { compareText, report } from './rule-helpers.js';

/**
 * Suitability (E16, Go V047, an error): a SUITABLE IMPL with one agent owning one file gains
 * nothing from parallel agents. Retry IMPLs (slug contains `-retry-`) are exempt.
 */
export const nonTrivialScope: ImplRule = {
  name: 'non-trivial-scope',
  reference: 'E16',
  codes: ['V047_TRIVIAL_SCOPE'],
  check(context) {
    const { manifest } = context;
    if ((manifest.feature_slug ?? '').includes('-retry-')) return [];
    if (manifest.verdict !== 'SUITABLE' && manifest.verdict !== 'SUITABLE_WITH_CAVEATS') return [];
    const agentCount = manifest.waves.reduce((total, wave) => total + wave.agents.length, 0);
    if (agentCount !== 1 || manifest.file_ownership.length !== 1) return [];
    return [
      report(context, {
        code: 'V047_TRIVIAL_SCOPE',
        message: 'IMPL has 1 agent owning 1 file — Polywave adds no parallelization value at this scope; make the change directly instead',
        path: ['file_ownership'],
      }),
    ];
  },
};

const maxFilesPerAgent = 8;
const maxNewFilesPerAgent = 5;

/**
 * Agent scope (warning W001): an agent owning more than 8 files, or creating more than 5,
 * should probably be split. Agents in ID order (Go iterated a map), all "owns" warnings first.
 */
export const agentScopeSize: ImplRule = {
  name: 'agent-scope-size',
  reference: 'E16',
  codes: ['W001_AGENT_SCOPE_LARGE'],
  check(context) {
    const total = new Map<string, number>();
    const created = new Map<string, number>();
    for (const row of context.manifest.file_ownership) {
      const agent = row.agent ?? '';
      total.set(agent, (total.get(agent) ?? 0) + 1);
      if (row.action === 'new') created.set(agent, (created.get(agent) ?? 0) + 1);
    }
    const findings: Finding[] = [];
    const warn = (message: string) =>
      findings.push(report(context, { code: 'W001_AGENT_SCOPE_LARGE', message, severity: 'warning', path: ['file_ownership'] }));
    for (const agent of [...total.keys()].sort(compareText)) {
      const count = total.get(agent)!;
      if (count > maxFilesPerAgent) warn(`agent ${agent} owns ${count} files (threshold: ${maxFilesPerAgent}) — consider splitting into two agents`);
    }
    for (const agent of [...created.keys()].sort(compareText)) {
      const count = created.get(agent)!;
      if (count > maxNewFilesPerAgent) {
        warn(`agent ${agent} creates ${count} new files (threshold: ${maxNewFilesPerAgent}) — consider splitting into two agents`);
      }
    }
    return findings;
  },
};

/** Line budget per agent over the `action: modify` files it owns (Go `CheckAgentLOCBudget`). */
export const agentLineBudget = 2000;

/** Documentation, configuration and data files: their length says nothing about the work. */
const nonCodeExtensions = new Set([
  '.md', '.markdown', '.txt', '.rst', '.adoc', '.yaml', '.yml', '.json', '.toml', '.xml', '.csv', '.svg', '.html', '.css', '.lock', '.sum', '.mod',
]);

function extensionOf(file: string): string {
  const base = file.slice(file.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot < 0 ? '' : base.slice(dot).toLowerCase();
}

/**
 * V048 LOC budget (error): the existing code files an agent modifies total at most 2000 lines.
 * Runs only when the caller passes `countLines`; skips `v048_exempt` rows, non-code files and
 * unreadable files; with `context.wave` only that wave's agents are checked (earlier agents'
 * files grow after merge). Agents in ID order; files by lines descending, then path.
 */
export const agentLocBudget: ImplRule = {
  name: 'agent-loc-budget',
  reference: 'V048',
  codes: ['V048_AGENT_LOC_BUDGET'],
  check(context) {
    const { manifest, countLines, wave } = context;
    if (!countLines) return [];
    let waveAgents: Set<string> | undefined;
    if (wave !== undefined && wave > 0) {
      const target = manifest.waves.find((candidate) => candidate.number === wave);
      waveAgents = new Set((target?.agents ?? []).map((agent) => agent.id ?? ''));
    }
    const perAgent = new Map<string, Array<{ file: string; lines: number }>>();
    for (const row of manifest.file_ownership) {
      const file = row.file ?? '';
      const agent = row.agent ?? '';
      if (row.action !== 'modify' || row.v048_exempt === true || file === '' || nonCodeExtensions.has(extensionOf(file))) continue;
      if (waveAgents && !waveAgents.has(agent)) continue;
      const lines = countLines(file, row.repo === undefined || row.repo === '' ? undefined : row.repo);
      if (lines === undefined) continue;
      const entries = perAgent.get(agent) ?? [];
      entries.push({ file, lines });
      perAgent.set(agent, entries);
    }
    const findings: Finding[] = [];
    for (const agent of [...perAgent.keys()].sort(compareText)) {
      const entries = perAgent.get(agent)!;
      const total = entries.reduce((sum, entry) => sum + entry.lines, 0);
      if (total <= agentLineBudget) continue;
      entries.sort((left, right) => right.lines - left.lines || compareText(left.file, right.file));
      const details = entries.map((entry) => `\n  ${entry.file}: ${entry.lines} lines`).join('');
      findings.push(
        report(context, {
          code: 'V048_AGENT_LOC_BUDGET',
          message: `agent ${agent} owns ${total} lines across ${entries.length} files (limit: ${agentLineBudget}) — split the agent or reduce scope${details}`,
          path: ['file_ownership'],
          suggestion: 'split the agent, or mark generated/mechanical files with v048_exempt: true',
        }),
      );
    }
    return findings;
  },
};
