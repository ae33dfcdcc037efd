import path from 'node:path';

const documentationExtensions = new Set(['.md', '.yaml', '.yml', '.txt', '.rst']);

/** The slice of an IMPL manifest that docs-only detection reads. */
export interface WavesLike {
  waves?: Array<{ number?: number; agents?: Array<{ files?: string[] }> }>;
}

/**
 * True when wave `waveNumber` only touches documentation (every file of its agents ends in
 * .md .yaml .yml .txt or .rst, and there is at least one): its build/test/lint/format gates are
 * then skipped as passed (reference §4.3 step 3). False when the wave does not exist.
 */
export function isDocsOnlyWave(manifest: WavesLike, waveNumber: number): boolean {
  const wave = manifest.waves?.find((candidate) => candidate.number === waveNumber);
  const files = (wave?.agents ?? []).flatMap((agent) => agent.files ?? []);
  return files.length > 0 && files.every((file) => documentationExtensions.has(path.extname(file).toLowerCase()));
}
