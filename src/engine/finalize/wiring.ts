import { validateWiring, type WiringReport } from '../../analysis/index.js';
import type { StepDefinition } from '../step.js';
import { listForDetail, manifestOf, type FinalizeContext } from './context.js';
import { waveReferenceIndex } from './integration.js';

/**
 * E35 Layer 3B (step 3.5b, non-fatal): each wiring declaration of this wave is checked in the
 * merged result (the same scratch merge commit and reference index as E25: built once per run).
 * Stored in `wiring_validation_reports.wave{N}`; gaps set `integration_action_required`.
 */
export const validateWiringStep: StepDefinition<FinalizeContext> = {
  name: 'check-wiring-declarations',
  advisory: true,
  background: (context) => !context.dryRun,
  async run(context) {
    const manifest = manifestOf(context);
    const declarations = (manifest.wiring ?? []).filter((declaration) => declaration.wave === context.wave);
    if (declarations.length === 0) return { status: 'skipped', detail: `E35: no wiring declarations for wave ${context.wave}` };
    const { ref, index } = await waveReferenceIndex(context);
    const report: WiringReport = await validateWiring({ manifest, git: context.primary.git, ref, index, wave: context.wave });
    context.result.wiring_report = report;
    let saved = '';
    if (!context.dryRun) {
      context.pendingEdits.push({ edit: { path: ['wiring_validation_reports', `wave${context.wave}`], value: report }, what: `wiring_validation_reports.wave${context.wave}` });
      saved = `; recorded in wiring_validation_reports.wave${context.wave}`;
    }
    if (report.valid) return { status: 'success', detail: `E35: ${report.summary}${saved}`, data: report };
    const gaps = report.gaps.map((gap) => `${gap.declaration.symbol ?? '?'} not called in ${gap.declaration.must_be_called_from ?? '?'}`);
    context.result.integration_action_required = true;
    context.result.wiring_gaps = gaps;
    return { status: 'warning', detail: `E35 (P007_WIRING_GAP): ${report.summary}: ${listForDetail(gaps, 8)}${saved}`, data: report };
  },
};
