import type { Finding } from '../../errors/finding.js';
import { gatePhases, gateTimings, gateTypes } from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { goQuote, report } from './rule-helpers.js';
import { canonicalGateType } from './aliases.js';

/**
 * E21 (quality gates): gate `type` is one of the six types (empty is invalid), `timing` is
 * empty/pre-merge/post-merge, `phase` is empty/PRE_VALIDATION/VALIDATION/POST_VALIDATION.
 */
export const gateFieldValues: ImplRule = {
  name: 'gate-field-values',
  reference: 'E21',
  codes: ['V010_INVALID_GATE_TYPE'],
  check(context) {
    const gates = context.manifest.quality_gates?.gates ?? [];
    const findings: Finding[] = [];
    gates.forEach((gate, index) => {
      const type = gate.type ?? '';
      if (!(gateTypes as readonly string[]).includes(type)) {
        findings.push(
          report(context, {
            code: 'V010_INVALID_GATE_TYPE',
            message: `quality gate type ${goQuote(type)} is invalid — must be one of: ${gateTypes.join(', ')}`,
            path: ['quality_gates', 'gates', index, 'type'],
            suggestion: `use '${canonicalGateType(type) ?? 'custom'}' (\`polywave validate --fix\` rewrites it)`,
          }),
        );
      }
      const timing = gate.timing ?? '';
      if (timing !== '' && !(gateTimings as readonly string[]).includes(timing)) {
        findings.push(
          report(context, {
            code: 'V010_INVALID_GATE_TYPE',
            message: `quality gate timing ${goQuote(timing)} is invalid — must be one of: pre-merge, post-merge (or empty for pre-merge default)`,
            path: ['quality_gates', 'gates', index, 'timing'],
          }),
        );
      }
      const phase = gate.phase ?? '';
      if (phase !== '' && !(gatePhases as readonly string[]).includes(phase)) {
        findings.push(
          report(context, {
            code: 'V010_INVALID_GATE_TYPE',
            message: `quality gate phase ${goQuote(phase)} is invalid — must be one of: PRE_VALIDATION, VALIDATION, POST_VALIDATION (or empty for VALIDATION default)`,
            path: ['quality_gates', 'gates', index, 'phase'],
          }),
        );
      }
    });
    return findings;
  },
};

/**
 * V048: a `required: true` gate whose command mentions the path of an `action: new` file
 * always fails on the baseline (the file does not exist yet). One finding per gate, naming the
 * first such file in table order (Go picks one in map order).
 */
export const gateTargetsNewFile: ImplRule = {
  name: 'gate-targets-new-file',
  reference: 'E21',
  codes: ['V048_GATE_TARGETS_NEW_FILE'],
  check(context) {
    const { manifest } = context;
    const newFiles = manifest.file_ownership.filter((row) => row.action === 'new' && (row.file ?? '') !== '').map((row) => row.file ?? '');
    if (newFiles.length === 0) return [];
    const findings: Finding[] = [];
    (manifest.quality_gates?.gates ?? []).forEach((gate, index) => {
      if (gate.required !== true) return;
      const command = gate.command ?? '';
      const target = newFiles.find((file) => command.includes(file));
      if (target === undefined) return;
      findings.push(
        report(context, {
          code: 'V048_GATE_TARGETS_NEW_FILE',
          message:
            `quality_gates.gates[${index}]: required gate references action:new file ${goQuote(target)} — ` +
            'this gate will always fail on baseline (file does not exist yet); ' +
            "use required:false or move the check to the agent's verification gate",
          path: ['quality_gates', 'gates', index, 'command'],
        }),
      );
    });
    return findings;
  },
};

/**
 * E21 gate phases: a gate with `fix: true` rewrites files, so it must run alone in
 * PRE_VALIDATION before the parallel VALIDATION phase (an empty phase means VALIDATION).
 * Go checks this only when gates run with a cache (fatal B009); we report it at validation,
 * for every gate type, as an error.
 */
export const fixGatesRunFirst: ImplRule = {
  name: 'fix-gates-run-first',
  reference: 'E21',
  codes: ['B009_GATE_VALIDATION_FAILED'],
  check(context) {
    const findings: Finding[] = [];
    (context.manifest.quality_gates?.gates ?? []).forEach((gate, index) => {
      if (gate.fix !== true) return;
      const phase = gate.phase ?? '';
      if (phase === 'PRE_VALIDATION') return;
      const got = phase === '' ? 'got empty, which defaults to VALIDATION' : `got ${phase}`;
      findings.push(
        report(context, {
          code: 'B009_GATE_VALIDATION_FAILED',
          message: `quality_gates.gates[${index}]: gates with fix=true must be in PRE_VALIDATION phase (${got})`,
          path: phase === '' ? ['quality_gates', 'gates', index, 'fix'] : ['quality_gates', 'gates', index, 'phase'],
          suggestion: 'add `phase: PRE_VALIDATION` to the gate',
        }),
      );
    });
    return findings;
  },
};
