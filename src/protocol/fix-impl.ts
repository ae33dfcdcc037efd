import type { ImplManifest } from './schema/impl-schema.js';
import { canonicalAction, canonicalGateType } from './rules/aliases.js';
import { formatFieldPath } from './rules/rule-helpers.js';

/** One mechanical fix: set the scalar at `path` to `value`. */
export interface ImplFixEdit {
  /** Path of the scalar to set, e.g. `['file_ownership', 3, 'action']`. */
  path: (string | number)[];
  value: unknown;
  /** Human-readable, e.g. `file_ownership[3].action: 'update' → 'modify'`. */
  description: string;
}

/** The fixes `validate --fix` would make, in manifest order. */
export interface ImplFixPlan {
  edits: ImplFixEdit[];
  /** Number of edits (Go's `fixed`). */
  fixed: number;
}

/**
 * Plans the mechanical fixes of `validate --fix` (§3.7) without touching anything: gate types
 * that are not one of the six become `custom` (case variants become the type: `Build` →
 * `build`); ownership actions `edit|update|change` → `modify`, `create|add` → `new`,
 * `remove` → `delete`, case variants (`Modify`) → the canonical value. Each edit names one
 * scalar for a format-preserving writer; nothing is ever deleted (unlike Go, which re-marshals
 * and strips keys).
 */
export function planImplFixes(manifest: ImplManifest): ImplFixPlan {
  const edits: ImplFixEdit[] = [];
  (manifest.quality_gates?.gates ?? []).forEach((gate, index) => {
    const type = gate.type ?? '';
    const fixed = canonicalGateType(type);
    if (fixed === undefined) return;
    const path = ['quality_gates', 'gates', index, 'type'];
    edits.push({ path, value: fixed, description: `${formatFieldPath(path)}: '${type}' → '${fixed}'` });
  });
  manifest.file_ownership.forEach((row, index) => {
    const action = row.action ?? '';
    if (action === '') return;
    const fixed = canonicalAction(action);
    if (fixed === undefined) return;
    const path = ['file_ownership', index, 'action'];
    edits.push({ path, value: fixed, description: `${formatFieldPath(path)}: '${action}' → '${fixed}'` });
  });
  return { edits, fixed: edits.length };
}
