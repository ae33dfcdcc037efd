import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { implSlugFromPath } from '../../protocol/names.js';
import type { ProgramSourceImpl } from '../../protocol/program/tier-assignment.js';
import { loadImpl } from '../../store/manifest-file.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { requireParsedManifest } from '../reconcile-state.js';

/** An IMPL doc read for create-program / import-impls. */
export interface LoadedSource extends ProgramSourceImpl {
  /** Absolute path of the IMPL doc. */
  path: string;
}

/** True when `implPath` is `<repoRoot>/docs/IMPL[/complete]/…` (found by slug; no `abs_path` needed). */
export function isInImplDocs(repoRoot: string, implPath: string): boolean {
  const relative = path.relative(path.join(repoRoot, 'docs', 'IMPL'), implPath);
  return !relative.startsWith('..') && !path.isAbsolute(relative) && path.dirname(relative) !== '..' && (path.dirname(relative) === '.' || path.dirname(relative) === 'complete');
}

/**
 * Reads the IMPL docs named by `references` (slugs looked up in `<repoRoot>/docs/IMPL/` and
 * `complete/`, file names, relative or absolute paths). Coded errors (exit 2): not found,
 * unreadable, structurally broken, or two references with the same slug.
 */
export async function loadSourceImpls(references: readonly string[], repoRoot: string): Promise<LoadedSource[]> {
  const sources: LoadedSource[] = [];
  for (const reference of references) {
    const implPath = path.isAbsolute(reference) ? reference : resolveManifestPath(reference, { cwd: repoRoot, kind: 'impl' }).path;
    sources.push(await loadSourceImpl(implPath, repoRoot));
  }
  const seen = new Map<string, string>();
  for (const source of sources) {
    const earlier = seen.get(source.slug);
    if (earlier !== undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `IMPL slug "${source.slug}" given twice (${earlier} and ${source.path})` });
    seen.set(source.slug, source.path);
  }
  return sources;
}

/** Reads one IMPL doc as a program source (coded errors, exit 2). */
export async function loadSourceImpl(implPath: string, repoRoot: string): Promise<LoadedSource> {
  const manifest = requireParsedManifest((await loadImpl(implPath)).parsed.manifest, implPath);
  const slug = implSlugFromPath(implPath, manifest);
  return { slug, manifest, path: implPath, ...(isInImplDocs(repoRoot, implPath) ? {} : { absPath: implPath }) };
}
