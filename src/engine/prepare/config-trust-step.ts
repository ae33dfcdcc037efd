import { editImpl } from '../../store/manifest-file.js';
import { assertConfigAccepted } from '../../store/trusted-config.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import type { StepDefinition } from '../step.js';
import { errorText, manifestOf, type PrepareContext } from './context.js';

function short(commit: string): string {
  return commit.slice(0, 12);
}

/**
 * X10 N9/R4/R5: while a config change finalize-wave BLOCKED (SANDBOX_CONFIG_CHANGED) is on a
 * repository of the wave and no one accepted it, preparing any wave there is refused — before
 * anything is written or committed (prepare-wave's state commit would otherwise carry the blocked
 * IMPL's state silently, and the wave's agents and gates would run with the unaccepted settings).
 */
export function configTrustStep(command: string): StepDefinition<PrepareContext> {
  return {
  name: 'config_trust',
  async run(context) {
    try {
      await assertConfigAccepted(
        context.repos.map((repo) => repo.root),
        command,
      );
    } catch (error) {
      if (PolywaveError.isInstance(error)) return { status: 'failed', detail: `${error.code}: ${error.message}`, data: { code: error.code } };
      return { status: 'failed', detail: `could not check the repository's config record: ${errorText(error)}` };
    }
    return { status: 'success', detail: 'no blocked polywave.config.json change in effect' };
  },
  };
}

/**
 * X10 N3: a solo wave (one agent in the main checkout, `prepare-agent --no-worktree`) gets a base
 * too — HEAD before the agent starts, recorded as the wave's `base_commit` — so finalize-wave pins
 * its gates' sandbox settings to it and check-config-change compares the agent's merged config with
 * it. A recorded base that HEAD still descends from is kept (the agent was prepared again).
 */
export const soloBaseStep: StepDefinition<PrepareContext> = {
  name: 'solo_base',
  async run(context) {
    const git = context.primary.git;
    const head = (await git.run(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { allowExitCodes: [1, 128] })).stdout.trim();
    if (head === '') return { status: 'failed', detail: `${context.primary.root} has no commit yet: a solo wave needs one to start from` };
    const manifest = manifestOf(context);
    const recorded = manifest.waves?.find((wave) => wave.number === context.wave)?.base_commit?.trim();
    if (recorded) {
      const ancestor = await git.run(['merge-base', '--is-ancestor', recorded, head], { allowExitCodes: [1, 128] });
      if (ancestor.exitCode === 0) {
        context.primary.base = recorded;
        return { status: 'skipped', detail: `wave ${context.wave} base_commit ${short(recorded)} already recorded` };
      }
    }
    if (context.readOnly) return { status: 'skipped', detail: 'not recorded (read only)' };
    await editImpl(context.implPath, (parsed) => {
      const waves = (parsed.data as { waves?: Array<{ number?: unknown }> } | null)?.waves ?? [];
      const index = waves.findIndex((wave) => wave?.number === context.wave);
      if (index < 0) throw new Error(`wave ${context.wave} disappeared from ${context.implPath}`);
      return { edits: [{ path: ['waves', index, 'base_commit'], value: head }], outcome: undefined };
    });
    const wave = manifest.waves?.find((item) => item.number === context.wave);
    if (wave) wave.base_commit = head;
    context.primary.base = head;
    return { status: 'success', detail: `solo wave ${context.wave} base_commit ${short(head)} recorded (HEAD before the agent)`, data: { base_commit: head } };
  },
};
