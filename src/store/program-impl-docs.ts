import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseImpl } from '../protocol/parse-impl.js';
import type { ProgramImplDoc } from '../protocol/program/import-mode.js';
import type { WaveProgress } from '../protocol/program/status.js';
import { isWaveComplete } from '../protocol/waves.js';
import type { ProgramManifest } from '../protocol/schema/program-schema.js';
import { readTextFile } from './read-text.js';

/**
 * The project root for a manifest path: `<root>/docs/IMPL/…`, `<root>/docs/PROGRAM/…` or
 * `<root>/docs/PROGRAM-x.yaml` → `<root>`; otherwise `fallback`.
 */
export function projectRootOf(manifestPath: string, fallback: string): string {
  const parts = path.resolve(manifestPath).split(path.sep);
  const docsIndex = parts.lastIndexOf('docs');
  if (docsIndex > 0) return parts.slice(0, docsIndex).join(path.sep) || path.sep;
  return fallback;
}

/** Where the IMPL doc of a program IMPL lives: `abs_path`, else docs/IMPL/, else docs/IMPL/complete/. */
export function implDocCandidates(repoRoot: string, slug: string, absPath?: string): string[] {
  const candidates: string[] = [];
  if (absPath) candidates.push(path.isAbsolute(absPath) ? absPath : path.join(repoRoot, absPath));
  for (const directory of ['', 'complete', 'in-progress', 'pending', 'blocked', 'not-suitable']) {
    for (const extension of ['yaml', 'yml']) candidates.push(path.join(repoRoot, 'docs', 'IMPL', directory, `IMPL-${slug}.${extension}`));
  }
  return candidates;
}

/**
 * Reads the IMPL docs a PROGRAM refers to (E28A import mode, E32 status). Missing docs are
 * absent from the map; unreadable ones carry `parseError`.
 */
export async function readProgramImplDocs(repoRoot: string, manifest: ProgramManifest): Promise<Map<string, ProgramImplDoc>> {
  const docs = new Map<string, ProgramImplDoc>();
  for (const impl of manifest.impls ?? []) {
    const slug = impl.slug;
    if (!slug || docs.has(slug)) continue;
    const found = implDocCandidates(repoRoot, slug, impl.abs_path).find((candidate) => existsSync(candidate));
    if (!found) continue;
    try {
      const parsed = parseImpl(await readTextFile(found));
      docs.set(slug, parsed.manifest ? { path: found, manifest: parsed.manifest } : { path: found, manifest: null, parseError: parsed.findings[0]?.message ?? 'not a manifest' });
    } catch (error) {
      docs.set(slug, { path: found, manifest: null, parseError: (error as Error).message });
    }
  }
  return docs;
}

/** Live wave progress of each IMPL doc read by {@link readProgramImplDocs} (E32 program-status). */
export function waveProgressOf(docs: ReadonlyMap<string, ProgramImplDoc>): Map<string, WaveProgress> {
  const progress = new Map<string, WaveProgress>();
  for (const [slug, doc] of docs) {
    if (!doc.manifest) continue;
    const waves = doc.manifest.waves ?? [];
    progress.set(slug, { total: waves.length, complete: waves.filter((wave) => isWaveComplete(doc.manifest!, wave)).length });
  }
  return progress;
}
