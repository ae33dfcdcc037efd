import type { ImplManifest } from './schema/impl-schema.js';
import { isScaffoldCommitted } from './waves.js';

/** States before the E37 critic review: "after E16 validation passes and before entering REVIEWED". */
const beforeCritic = new Set(['INTERVIEWING', 'SCOUT_PENDING', 'SCOUT_VALIDATING']);
/** States before the E22 Scaffold Agent has run: scaffolds are created after REVIEWED, before WAVE_PENDING. */
const beforeScaffolds = new Set([...beforeCritic, 'REVIEWED', 'SCAFFOLD_PENDING']);

/**
 * Pre-wave checks that a later step of the protocol flow will satisfy, given where the IMPL
 * stands (keyed by prepare-wave's step names, with the reason). `pre-wave-validate` runs at
 * Scout completion (the E42 SubagentStop hook calls it with `--wave 1`): at that point the
 * E37 critic (runs before REVIEWED) and the E22 scaffolds (created after REVIEWED) cannot exist
 * yet, so their absence is "still to come", not a defect of the plan. A critic report with
 * ISSUES, or a scaffold marked FAILED, is never "to come".
 */
export function checksStillToCome(manifest: ImplManifest): Map<string, string> {
  const state = (manifest.state ?? '').trim();
  const pending = new Map<string, string>();
  if (beforeCritic.has(state) && manifest.critic_report === undefined) {
    pending.set('critic_verdict', `E37: the critic reviews the briefs after E16 validation, before REVIEWED (state is ${state})`);
  }
  const uncommitted = (manifest.scaffolds ?? []).filter((scaffold) => !isScaffoldCommitted(scaffold.status));
  const allPending = uncommitted.every((scaffold) => ['', 'pending'].includes((scaffold.status ?? '').trim().toLowerCase()));
  if (beforeScaffolds.has(state) && uncommitted.length > 0 && allPending) {
    pending.set('scaffold_validation', `E22: the Scaffold Agent commits the ${uncommitted.length} pending scaffold(s) after REVIEWED (state is ${state})`);
  }
  return pending;
}
