import type { Finding } from '../errors/finding.js';
import type { FileOwnership, ImplManifest, Wave } from './schema/impl-schema.js';
import { dedupePaths } from './completion-report.js';
import { findWave, repoKey } from './waves.js';

/** Why a file is reported: claimed by several agents of a wave, or touched by a non-owner. */
export type ConflictKind = 'multiple_agents' | 'undeclared_modification';

/**
 * One ownership conflict (the `check-conflicts` JSON item). `wave_number` repeats `wave` under
 * the Go key so scripts written against `polywave-tools` keep working.
 */
export interface OwnershipConflict {
  file: string;
  /** `multiple_agents`: every agent claiming the file; `undeclared_modification`: the agents that touched a file they do not own. */
  agents: string[];
  wave: number;
  wave_number: number;
  /** Repository key (last path segment) when the manifest or report names one. */
  repo?: string;
  kind: ConflictKind;
  /** `undeclared_modification` only: the file's declared owners in any wave (`[]` when nobody owns it). */
  owners?: string[];
}

/** The `check-conflicts` JSON. */
export interface ConflictReport {
  conflict_count: number;
  conflicts: OwnershipConflict[];
}

/** Repository-relative path as compared here: trimmed, leading `./` and one leading `/` removed. */
export function normalizeReportedPath(path: string): string {
  let result = path.trim();
  while (result.startsWith('./')) result = result.slice(2);
  if (result.startsWith('/')) result = result.slice(1);
  return result;
}

/**
 * E11: files the protocol itself writes (the IMPL docs and orchestrator state), which agents
 * may list without owning them: paths under `docs/IMPL/` or `.polywave-state/`. The trailing
 * slash matters — `docs/IMPLEMENTATION.md` is an ordinary file (Go's bare `docs/IMPL` prefix
 * ignores it).
 */
export function isProtocolOwnedPath(path: string): boolean {
  const normalized = normalizeReportedPath(path);
  return normalized.startsWith('docs/IMPL/') || normalized.startsWith('.polywave-state/');
}

function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

function compareLists(left: readonly string[], right: readonly string[]): number {
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    const order = compareStrings(left[index]!, right[index]!);
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

/** Deterministic order: file, then agents, then wave, repo and kind. */
export function compareConflicts(left: OwnershipConflict, right: OwnershipConflict): number {
  return (
    compareStrings(left.file, right.file) ||
    compareLists(left.agents, right.agents) ||
    left.wave - right.wave ||
    compareStrings(left.repo ?? '', right.repo ?? '') ||
    compareStrings(left.kind, right.kind)
  );
}

function makeConflict(kind: ConflictKind, file: string, agents: Iterable<string>, wave: number, repo: string, owners?: Iterable<string>): OwnershipConflict {
  const sortedAgents = [...new Set(agents)].sort(compareStrings);
  const conflict: OwnershipConflict =
    repo === '' ? { file, agents: sortedAgents, wave, wave_number: wave, kind } : { file, agents: sortedAgents, wave, wave_number: wave, repo, kind };
  if (owners !== undefined) conflict.owners = [...new Set(owners)].sort(compareStrings);
  return conflict;
}

/** Groups values under a `(repo, file)` key, in first-seen order. */
class FileGroups<Value> {
  private readonly groups = new Map<string, { repo: string; file: string; values: Value[] }>();

  add(repo: string, file: string, value: Value): void {
    const key = `${repo}\u0000${file}`;
    const group = this.groups.get(key) ?? { repo, file, values: [] };
    group.values.push(value);
    this.groups.set(key, group);
  }

  entries(): Array<{ repo: string; file: string; values: Value[] }> {
    return [...this.groups.values()];
  }
}

/**
 * I1/E3 on the ownership table, for one wave: every `(repo, file)` declared by two or more
 * distinct agents of `wave` (per repository: the same path in two repositories is no conflict;
 * repositories compare by {@link repoKey}). One agent listed twice is not a conflict with itself.
 * Sorted by file then agents; `[]` for an unknown wave.
 */
export function ownershipConflictsInWave(manifest: ImplManifest, wave: number): OwnershipConflict[] {
  const groups = new FileGroups<string>();
  for (const row of manifest.file_ownership ?? []) {
    if (row.wave !== wave || row.file === undefined || row.agent === undefined) continue;
    groups.add(repoKey(row.repo), normalizeReportedPath(row.file), row.agent);
  }
  return groups
    .entries()
    .filter((group) => new Set(group.values).size > 1)
    .map((group) => makeConflict('multiple_agents', group.file, group.values, wave, group.repo))
    .sort(compareConflicts);
}

/**
 * Pre-merge ownership consistency for one wave (reference §8.5 `PreMergeValidation`), as
 * findings: `P011_WAVE_NOT_FOUND` when the wave is missing; `P012_UNKNOWN_AGENT_IN_OWNERSHIP` for
 * an ownership row of the wave whose agent is not in the wave; `V002_DISJOINT_OWNERSHIP` (I1) for
 * a file owned by two agents of the wave in the same repository.
 */
export function preMergeOwnershipFindings(manifest: ImplManifest, wave: number): Finding[] {
  const target = findWave(manifest, wave);
  if (target === undefined) {
    return [{ code: 'P011_WAVE_NOT_FOUND', severity: 'error', field: 'waves', message: `wave ${wave} not found in manifest` }];
  }
  const members = new Set((target.agents ?? []).map((agent) => agent.id));
  const findings: Finding[] = [];
  const firstOwner = new Map<string, string>();
  (manifest.file_ownership ?? []).forEach((row, index) => {
    if (row.wave !== wave) return;
    const file = row.file ?? '';
    const agent = row.agent ?? '';
    if (!members.has(agent)) {
      findings.push({
        code: 'P012_UNKNOWN_AGENT_IN_OWNERSHIP',
        severity: 'error',
        field: `file_ownership[${index}].agent`,
        message: `file_ownership entry for wave ${wave} references unknown agent ${JSON.stringify(agent)} (file: ${file})`,
      });
    }
    const key = `${repoKey(row.repo)}\u0000${normalizeReportedPath(file)}`;
    const owner = firstOwner.get(key);
    if (owner === undefined) {
      firstOwner.set(key, agent);
    } else if (owner !== agent) {
      // I1: no two agents in the same wave own the same file (per repository).
      findings.push({
        code: 'V002_DISJOINT_OWNERSHIP',
        severity: 'error',
        field: `file_ownership[${index}]`,
        message: `file "${file}" is owned by both agent "${owner}" and agent "${agent}" in wave ${wave} (I1 violation)`,
      });
    }
  });
  return findings;
}

interface Touch {
  agent: string;
  owned: boolean;
  owners: string[];
}

function wavesToCheck(manifest: ImplManifest, wave: number | undefined): Wave[] {
  if (wave === undefined) return manifest.waves ?? [];
  const found = findWave(manifest, wave);
  return found === undefined ? [] : [found];
}

/**
 * E11 + the I1 amendment "post-hoc undeclared-modification detection", from the completion
 * reports' `files_changed` + `files_created` (pure; no git):
 * - `multiple_agents`: a `(repo, file)` listed by two or more agents of the same wave. An agent
 *   listing a file in both of its lists is one claim (Go reports it against itself).
 * - `undeclared_modification`: an agent listed a file it has no ownership row for — whether
 *   nobody owns it, another agent of the wave owns it, or the owner is in another wave (which Go
 *   silently ignores). `owners` names the declared owners.
 * Paths under `docs/IMPL/` and `.polywave-state/` are ignored ({@link isProtocolOwnedPath});
 * agents without a report are skipped; the same file in different waves is fine.
 * Repository: the report's `repo` (by {@link repoKey}); without one, the repository of the
 * agent's own ownership row, or of the file's only owning repository. `wave` restricts the check
 * to one wave (an unknown wave gives `[]`). Sorted by file, then agents.
 */
export function reportConflicts(manifest: ImplManifest, wave?: number): OwnershipConflict[] {
  const reports = manifest.completion_reports ?? {};
  const rowsByFile = new Map<string, FileOwnership[]>();
  for (const row of manifest.file_ownership ?? []) {
    if (row.file === undefined) continue;
    const file = normalizeReportedPath(row.file);
    rowsByFile.set(file, [...(rowsByFile.get(file) ?? []), row]);
  }

  const conflicts: OwnershipConflict[] = [];
  for (const current of wavesToCheck(manifest, wave)) {
    const number = current.number ?? 0;
    const touches = new FileGroups<Touch>();
    for (const agent of current.agents ?? []) {
      const report = agent.id === undefined ? undefined : reports[agent.id];
      if (report === undefined || agent.id === undefined) continue;
      const reportRepo = repoKey(report.repo);
      const files = dedupePaths([...(report.files_changed ?? []), ...(report.files_created ?? [])].map(normalizeReportedPath));
      for (const file of files) {
        if (isProtocolOwnedPath(file)) continue;
        const rows = (rowsByFile.get(file) ?? []).filter((row) => {
          const rowRepo = repoKey(row.repo);
          return reportRepo === '' || rowRepo === '' || rowRepo === reportRepo;
        });
        const ownRow = rows.find((row) => row.agent === agent.id);
        const rowRepos = new Set(rows.map((row) => repoKey(row.repo)));
        const repo = reportRepo !== '' ? reportRepo : ownRow !== undefined ? repoKey(ownRow.repo) : rowRepos.size === 1 ? [...rowRepos][0]! : '';
        touches.add(repo, file, {
          agent: agent.id,
          owned: ownRow !== undefined,
          owners: rows.map((row) => row.agent ?? '').filter((owner) => owner !== ''),
        });
      }
    }
    for (const group of touches.entries()) {
      const agents = group.values.map((touch) => touch.agent);
      if (new Set(agents).size > 1) conflicts.push(makeConflict('multiple_agents', group.file, agents, number, group.repo));
      const strangers = group.values.filter((touch) => !touch.owned);
      if (strangers.length > 0) {
        conflicts.push(
          makeConflict(
            'undeclared_modification',
            group.file,
            strangers.map((touch) => touch.agent),
            number,
            group.repo,
            strangers.flatMap((touch) => touch.owners),
          ),
        );
      }
    }
  }
  return conflicts.sort(compareConflicts);
}

/** `check-conflicts`: {@link reportConflicts} over every wave (or one), with the count. */
export function checkConflicts(manifest: ImplManifest, wave?: number): ConflictReport {
  const conflicts = reportConflicts(manifest, wave);
  return { conflict_count: conflicts.length, conflicts };
}
