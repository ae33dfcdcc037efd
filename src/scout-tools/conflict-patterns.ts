import path from 'node:path';
import type { ConflictPattern, ImplManifest } from '../protocol/schema/impl-schema.js';
import { agentFacts } from './changed-symbols.js';
import { isTestPath } from './references.js';

/** A file several agents touch, with the E11b pattern recorded and the one the tasks suggest. */
export interface SharedFile {
  file: string;
  repo?: string;
  agents: Array<{ id: string; wave: number; change: 'append' | 'edit' }>;
  /** `conflict_pattern` the Scout recorded (when all rows agree). */
  recorded?: ConflictPattern;
  suggested: ConflictPattern;
  /** Patterns 1–2 permit one wave (E11b; polywave still enforces I1), 3–4 must be sequenced. */
  decision: 'same-wave-permitted' | 'sequence';
}

const editWords = /\b(?:change|changes|modify|modifies|update|updates|rename|renames|remove|removes|delete|deletes|refactor|refactors|replace|replaces|migrate|migrates|rewrite|rewrites|fix|fixes|edit|edits)\b/i;

/** What one agent's task says it does to `file`: the sentences naming the file (else the whole task) — any edit verb → edit, else append. */
export function changeKindOf(task: string, file: string): 'append' | 'edit' {
  const base = path.posix.basename(file);
  const sentences = task.split(/(?<=[.!?])\s+|\n+/).filter((sentence) => sentence.includes(base));
  return editWords.test((sentences.length > 0 ? sentences : [task]).join(' ')) ? 'edit' : 'append';
}

/** E11b patterns 1–4 from the agents' change kinds. */
export function classifyOverlap(file: string, changes: ReadonlyArray<'append' | 'edit'>): ConflictPattern {
  if (changes.every((change) => change === 'append')) return isTestPath(file) ? 'test-append' : 'registry-append';
  if (changes.every((change) => change === 'edit')) return 'line-edit';
  return 'mixed';
}

/**
 * E11b for the Scout: every file (per repo) that two or more agents own, with the pattern the
 * tasks suggest (append-only tests → 1, append-only registry → 2, edits → 3, both → 4) and the
 * decision it implies. Sorted by file.
 */
export function sharedFiles(manifest: ImplManifest): SharedFile[] {
  const tasks = new Map(agentFacts(manifest).map((fact) => [fact.id, fact.task]));
  const groups = new Map<string, Array<{ id: string; wave: number; pattern?: ConflictPattern }>>();
  for (const row of manifest.file_ownership) {
    const key = JSON.stringify([row.repo ?? '', row.file ?? '']);
    const rows = groups.get(key) ?? [];
    if (!rows.some((existing) => existing.id === row.agent)) rows.push({ id: row.agent ?? '', wave: row.wave ?? 0, ...(row.conflict_pattern ? { pattern: row.conflict_pattern as ConflictPattern } : {}) });
    groups.set(key, rows);
  }
  const shared: SharedFile[] = [];
  for (const [key, rows] of groups) {
    if (rows.length < 2) continue;
    const [repo, file] = JSON.parse(key) as [string, string];
    const agents = rows.map((row) => ({ id: row.id, wave: row.wave, change: changeKindOf(tasks.get(row.id) ?? '', file) }));
    const suggested = classifyOverlap(file, agents.map((agent) => agent.change));
    const recorded = [...new Set(rows.map((row) => row.pattern).filter((pattern) => pattern !== undefined))];
    shared.push({
      file,
      ...(repo ? { repo } : {}),
      agents,
      ...(recorded.length === 1 ? { recorded: recorded[0]! } : {}),
      suggested,
      decision: suggested === 'test-append' || suggested === 'registry-append' ? 'same-wave-permitted' : 'sequence',
    });
  }
  return shared.sort((a, b) => a.file.localeCompare(b.file));
}
