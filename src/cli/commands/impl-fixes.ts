import { planImplFixes } from '../../protocol/fix-impl.js';
import { editImpl } from '../../store/manifest-file.js';

/**
 * `--fix` of `validate` and `pre-wave-validate`: the mechanical fixes of `planImplFixes` (gate
 * types, action aliases) written through the locked, format-preserving writer. Nothing is
 * written when there is nothing to fix or the manifest's structure is broken.
 */
export async function applyImplFixes(filePath: string): Promise<{ fixed: number; descriptions: string[] }> {
  return editImpl(filePath, (parsed) => {
    if (!parsed.manifest) return { edits: [], outcome: { fixed: 0, descriptions: [] as string[] } };
    const plan = planImplFixes(parsed.manifest);
    return { edits: plan.edits.map(({ path: editPath, value }) => ({ path: editPath, value })), outcome: { fixed: plan.fixed, descriptions: plan.edits.map((edit) => edit.description) } };
  });
}
