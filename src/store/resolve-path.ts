import { existsSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';

export type ResolutionMethod = 'explicit-path' | 'explicit-filename' | 'explicit-slug';

export interface ResolvedManifest {
  path: string;
  method: ResolutionMethod;
}

/**
 * Resolves an IMPL or PROGRAM reference the way `polywave-tools` does: an existing path
 * (absolute or relative to `cwd`), a file name inside the docs directory, or a slug
 * (`docs/IMPL/IMPL-<slug>.yaml`, then `docs/IMPL/complete/…`). The docs directory is under `root`
 * (the `--repo-dir`, as Go's resolve-impl; default `cwd`). Throws N005 (exit 2) when nothing
 * matches, listing the places it looked.
 *
 * Outside round P17 (P17-01a, P17-12): the path found is the manifest's REAL path (symbolic links resolved). A link to
 * an IMPL doc given to set-impl-state, amend-impl or update-agent-prompt was read through, but the PROGRAM run-lock
 * lookup (docs/PROGRAM of the link's repository) missed it and the atomic save replaced the link by a regular file:
 * "success", the real doc untouched, no RUN_IN_PROGRESS. Every command now locks, checks and writes the file the link
 * points to (the link stays a link), as program-execute and program-replan already did (P14-06).
 */
export function resolveManifestPath(reference: string, options: { cwd: string; root?: string; kind: 'impl' | 'program' }): ResolvedManifest {
  const trimmed = reference.trim();
  if (trimmed.length === 0) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `a manifest path or slug is required` });
  }
  const direct = path.resolve(options.cwd, trimmed);
  if (existsSync(direct) || trimmed.includes('/') || trimmed.includes(path.sep) || /\.(ya?ml|md)$/.test(trimmed)) {
    if (existsSync(direct)) return { path: realPath(direct), method: trimmed.includes('/') ? 'explicit-path' : 'explicit-filename' };
    if (trimmed.includes('/') || trimmed.includes(path.sep)) {
      throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `file not found: ${direct}` });
    }
  }
  const prefix = options.kind === 'impl' ? 'IMPL' : 'PROGRAM';
  const docsDirectories = options.kind === 'impl' ? [path.join('docs', 'IMPL')] : [path.join('docs', 'PROGRAM'), 'docs'];
  const stem = trimmed.replace(/\.(ya?ml)$/, '');
  const fileName = stem.startsWith(`${prefix}-`) ? `${stem}.yaml` : `${prefix}-${stem}.yaml`;
  const root = options.root ?? options.cwd;
  const candidates: string[] = [];
  for (const directory of docsDirectories) {
    candidates.push(path.join(root, directory, fileName), path.join(root, directory, 'complete', fileName));
  }
  for (const candidate of candidates) {
    if (existsSync(candidate) && statSync(candidate).isFile()) {
      return { path: realPath(candidate), method: stem.startsWith(`${prefix}-`) ? 'explicit-filename' : 'explicit-slug' };
    }
  }
  throw new PolywaveError({
    code: 'N005_IMPL_NOT_FOUND',
    message: `${prefix} doc not found for "${trimmed}" (checked ${candidates.map((candidate) => path.relative(options.cwd, candidate)).join(', ')})`,
  });
}

/** `file` with every symbolic link resolved (P17-01a); `file` itself when it cannot be resolved. */
function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}
