import type { ImplManifest } from './schema/impl-schema.js';
import { normalizeRelativePath } from './program/program-rules.js';
import { repoKey } from './waves.js';

/** A file owned by more than one IMPL (P1). */
export interface ImplFileConflict {
  file: string;
  /** IMPL slugs owning it, sorted. */
  impls: string[];
  /** The repository the file is in, when the ownership rows name one. */
  repos?: string[];
}

/** The `check-impl-conflicts` JSON (Go's `ConflictReport`). */
export interface ImplConflictReport {
  conflicts: ImplFileConflict[];
  /** Groups of IMPLs linked by shared files (connected components), each sorted; singletons included. */
  disjoint_sets: string[][];
  /** A tier per IMPL so that IMPLs of one tier own disjoint files (greedy colouring in input order). */
  tier_suggestion: Record<string, number>;
}

/**
 * P1 across IMPLs: files claimed by two or more of the given IMPLs (per repository: a row's
 * `repo`, compared by its last path segment), the groups of IMPLs that transitively share files,
 * and the earliest tier for each IMPL in which it conflicts with no IMPL already placed there.
 * Paths are compared normalised (`./`, `//`, `/./` dropped, as V029 does). Pure, deterministic (conflicts sorted by file).
 */
export function checkImplConflicts(impls: ReadonlyArray<{ slug: string; manifest: ImplManifest }>): ImplConflictReport {
  const owners = new Map<string, { file: string; repo: string; slugs: string[] }>();
  const slugs: string[] = [];
  for (const { slug, manifest } of impls) {
    if (!slugs.includes(slug)) slugs.push(slug);
    for (const row of manifest.file_ownership) {
      // Outside round P17 (P17-09a): compared as the loop's V029 compares them — `./src/x`, `src//x`, `src/./x` are
      // `src/x` (normalizeRelativePath); unnormalised, check-program-conflicts called such a tier disjoint.
      const file = row.file ? normalizeRelativePath(row.file) : '';
      if (!file) continue;
      const repo = repoKey(row.repo);
      const key = `${repo}\0${file}`;
      const entry = owners.get(key) ?? { file, repo, slugs: [] };
      if (!entry.slugs.includes(slug)) entry.slugs.push(slug);
      owners.set(key, entry);
    }
  }
  const conflicts: ImplFileConflict[] = [...owners.values()]
    .filter((entry) => entry.slugs.length > 1)
    .map((entry) => ({ file: entry.file, impls: [...entry.slugs].sort(), ...(entry.repo !== '' ? { repos: [entry.repo] } : {}) }))
    .sort((a, b) => a.file.localeCompare(b.file) || (a.repos?.[0] ?? '').localeCompare(b.repos?.[0] ?? ''));

  const overlaps = new Map<string, Set<string>>(slugs.map((slug) => [slug, new Set<string>()]));
  for (const conflict of conflicts) for (const a of conflict.impls) for (const b of conflict.impls) if (a !== b) overlaps.get(a)!.add(b);

  const visited = new Set<string>();
  const disjointSets: string[][] = [];
  for (const slug of slugs) {
    if (visited.has(slug)) continue;
    const component: string[] = [];
    const queue = [slug];
    visited.add(slug);
    while (queue.length > 0) {
      const current = queue.shift()!;
      component.push(current);
      for (const neighbour of [...overlaps.get(current)!].sort()) {
        if (visited.has(neighbour)) continue;
        visited.add(neighbour);
        queue.push(neighbour);
      }
    }
    disjointSets.push(component.sort());
  }
  disjointSets.sort((a, b) => a[0]!.localeCompare(b[0]!));

  const tiers = new Map<number, string[]>();
  const tierSuggestion: Record<string, number> = {};
  for (const slug of slugs) {
    let tier = 1;
    while ((tiers.get(tier) ?? []).some((member) => overlaps.get(slug)!.has(member))) tier += 1;
    tiers.set(tier, [...(tiers.get(tier) ?? []), slug]);
    tierSuggestion[slug] = tier;
  }
  return { conflicts, disjoint_sets: disjointSets, tier_suggestion: tierSuggestion };
}
