import { extractCommands, type CommandSet } from '../analysis/extract-commands.js';
import type { Finding } from '../errors/finding.js';
import { planImplFixes } from '../protocol/fix-impl.js';
import { parseImpl } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { summarizeFindings, validateImpl, type FindingSummary } from '../protocol/validate-impl.js';
import { applyEdits, type YamlEdit } from '../protocol/yaml/index.js';
import { editImpl } from '../store/manifest-file.js';

/** Options of {@link finalizeImplGates}. */
export interface FinalizeImplOptions {
  implPath: string;
  /** Repository whose build/test/lint commands are extracted (H2). */
  repoRoot: string;
}

/** A gate finalize-impl added. */
export interface AddedGate {
  type: 'build' | 'lint' | 'test';
  command: string;
  required: boolean;
}

/** The finalize-impl JSON. */
export interface FinalizeImplResult {
  success: boolean;
  /** Validation of the IMPL as it was (after the mechanical E16 fixes). */
  validation_before: FindingSummary;
  /** Mechanical fixes applied (validate --fix). */
  fixed: number;
  /** The H2 commands found in the repository (null when no toolchain was detected). */
  commands: { toolchain: string; build: string; test: string; lint: string; sources: string[] } | null;
  gates_added: AddedGate[];
  /** Validation of the result; when invalid, nothing was written. */
  validation: FindingSummary;
  /** True when the manifest was written. */
  saved: boolean;
  failed_step?: 'validation' | 'final_validation';
}

function findingsOf(text: string): Finding[] {
  const parsed = parseImpl(text);
  return parsed.manifest ? [...parsed.findings, ...validateImpl({ manifest: parsed.manifest, locate: parsed.locate })] : parsed.findings;
}

/**
 * The gates E21 asks for at minimum (build and lint) plus tests, from the repository's commands,
 * for each type the IMPL does not have yet; existing gates are never changed.
 */
export function missingGates(manifest: ImplManifest, commands: CommandSet | undefined): AddedGate[] {
  if (!commands) return [];
  const have = new Set((manifest.quality_gates?.gates ?? []).map((gate) => gate.type));
  const wanted: AddedGate[] = [
    { type: 'build', command: commands.build, required: true },
    { type: 'lint', command: commands.lint.check, required: true },
    { type: 'test', command: commands.test.full, required: true },
  ];
  return wanted.filter((gate) => gate.command.trim() !== '' && !have.has(gate.type));
}

/**
 * finalize-impl (after the Scout, before the critic/review): validate with the mechanical E16
 * fixes → extract the repository's commands (H2) → add the verification gates the IMPL lacks
 * (`quality_gates.gates`; each agent's brief lists them) → validate the result. Transactional:
 * one locked write of the whole result, and none when either validation fails.
 */
export async function finalizeImplGates(options: FinalizeImplOptions): Promise<FinalizeImplResult> {
  const commands = await extractCommands(options.repoRoot).catch(() => undefined);
  return editImpl<FinalizeImplResult>(options.implPath, (parsed, text) => {
    const fixEdits: YamlEdit[] = parsed.manifest ? planImplFixes(parsed.manifest).edits.map(({ path, value }) => ({ path, value })) : [];
    const fixedText = applyEdits(text, fixEdits);
    const before = summarizeFindings(findingsOf(fixedText));
    const summary = commands
      ? { toolchain: commands.toolchain, build: commands.build, test: commands.test.full, lint: commands.lint.check, sources: [...commands.detectionSources] }
      : null;
    const base: Omit<FinalizeImplResult, 'validation' | 'saved' | 'success'> = { validation_before: before, fixed: fixEdits.length, commands: summary, gates_added: [] };
    if (!before.valid) return { edits: [], outcome: { ...base, success: false, validation: before, saved: false, failed_step: 'validation' } };
    const fixedManifest = parseImpl(fixedText).manifest!;
    const added = missingGates(fixedManifest, commands);
    const gateEdits: YamlEdit[] = [];
    if (added.length > 0) {
      const existing = fixedManifest.quality_gates?.gates ?? [];
      // Appended one by one: the existing gates keep their formatting and comments.
      if (fixedManifest.quality_gates && existing.length > 0) added.forEach((gate, index) => gateEdits.push({ path: ['quality_gates', 'gates', existing.length + index], value: gate }));
      else if (fixedManifest.quality_gates) gateEdits.push({ path: ['quality_gates', 'gates'], value: added });
      else gateEdits.push({ path: ['quality_gates'], value: { level: 'standard', gates: added } });
    }
    const edits = [...fixEdits, ...gateEdits];
    const after = summarizeFindings(findingsOf(applyEdits(text, edits)));
    if (!after.valid) return { edits: [], outcome: { ...base, gates_added: added, success: false, validation: after, saved: false, failed_step: 'final_validation' } };
    return { edits, outcome: { ...base, gates_added: added, success: true, validation: after, saved: edits.length > 0 } };
  });
}
