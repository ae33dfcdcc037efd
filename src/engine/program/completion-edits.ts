import { completionCounters, type CountableProgram, type ProgramCompletionCounters } from '../../protocol/program/tier-assignment.js';
import type { ProgramManifest } from '../../protocol/schema/program-schema.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';

/**
 * Edits of `completion` that bring its counters in line with `manifest` (program-manifest.txt §8:
 * "the orchestrator updates completion after each IMPL state transition"). Only the given keys,
 * only where they differ; nothing when the manifest has no `completion` mapping.
 */
export function completionEdits(manifest: CountableProgram & Pick<ProgramManifest, 'completion'>, keys: ReadonlyArray<keyof ProgramCompletionCounters>): YamlEdit[] {
  const current = manifest.completion as Partial<ProgramCompletionCounters> | undefined;
  if (current === undefined) return [];
  const wanted = completionCounters(manifest, current);
  return keys.filter((key) => current[key] !== wanted[key]).map((key) => ({ path: ['completion', key], value: wanted[key] }));
}
