import path from 'node:path';

/**
 * Where Polywave keeps per-wave runtime state in a repository's main checkout. Everything that
 * belongs to one wave of one IMPL — the merge log, `prepare-result.json`, the agents' journals
 * and retry counters — lives under `.polywave-state/<slug>/wave<N>/`, so IMPLs that run at once
 * (the IMPLs of a PROGRAM tier) never share or overwrite each other's records. The Go reference
 * keys this directory by wave only (`.polywave-state/wave<N>/`); see docs/differences.md.
 */
export const stateDirName = '.polywave-state';

/** A slug as a single safe path segment (slugs are validated elsewhere; this is belt and braces). */
function slugSegment(slug: string): string {
  const cleaned = slug.replace(/[^A-Za-z0-9._-]/g, '_');
  return cleaned === '' || cleaned === '.' || cleaned === '..' ? '_' : cleaned;
}

/** `<root>/.polywave-state/<slug>/wave<N>`. */
export function waveStateDir(repoRoot: string, slug: string, wave: number): string {
  return path.join(repoRoot, stateDirName, slugSegment(slug), `wave${wave}`);
}

/** The layout before state was IMPL-scoped (and the Go reference's): `<root>/.polywave-state/wave<N>`. */
export function legacyWaveStateDir(repoRoot: string, wave: number): string {
  return path.join(repoRoot, stateDirName, `wave${wave}`);
}
