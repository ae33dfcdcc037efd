import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { implSlugFromPath } from '../../protocol/names.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { summarizeImpls } from './list-impls.js';
import { repoDirOption } from './repo-dir-option.js';

/**
 * `resolve-impl [--impl REF] [--repo-dir R]` — slug / file name / path, or auto-select the only
 * pending IMPL. As Go: a slug or file name is looked up in R/docs/IMPL (R = --repo-dir, else the
 * current directory), a relative path is taken from the current directory.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const root = repoDirOption(options, io) ?? io.cwd;
  const { impls } = await summarizeImpls(path.join(root, 'docs', 'IMPL'), false);
  if (typeof options.impl === 'string' && options.impl.trim() !== '') {
    const resolved = resolveManifestPath(options.impl, { cwd: io.cwd, root, kind: 'impl' });
    printJson(io, { impl_path: resolved.path, slug: implSlugFromPath(resolved.path), resolution_method: resolved.method, pending_count: impls.length });
    return 0;
  }
  if (impls.length === 1) {
    const only = impls[0]!;
    printJson(io, { impl_path: only.path, slug: only.feature_slug || implSlugFromPath(only.path), resolution_method: 'auto-select', pending_count: 1 });
    return 0;
  }
  throw new PolywaveError({
    code: 'N005_IMPL_NOT_FOUND',
    exitCode: 1,
    message:
      impls.length === 0
        ? 'no pending IMPL in docs/IMPL (pass --impl <slug|path>)'
        : `${impls.length} pending IMPLs, pass --impl: ${impls.map((impl) => impl.feature_slug || path.basename(impl.path)).join(', ')}`,
  });
}
