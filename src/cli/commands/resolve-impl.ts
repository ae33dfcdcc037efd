import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { implSlugFromPath } from '../../protocol/names.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { summarizeImpls } from './list-impls.js';

/** `resolve-impl [--impl REF]` — slug / file name / path, or auto-select the only pending IMPL. */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const { impls } = await summarizeImpls(path.join(io.cwd, 'docs', 'IMPL'), false);
  if (typeof options.impl === 'string' && options.impl.trim() !== '') {
    const resolved = resolveManifestPath(options.impl, { cwd: io.cwd, kind: 'impl' });
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
