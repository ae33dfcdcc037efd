import { parseProjectConfig, projectConfigFileName, securityConfigChanges, type ProjectConfig } from '../../store/project-config.js';
import type { StepDefinition } from '../step.js';
import { errorText, short, type FinalizeContext, type FinalizeRepo } from './context.js';

/** The code of a wave blocked because its merge changed what runs outside the agents' control. */
export const configChangedCode = 'SANDBOX_CONFIG_CHANGED';

async function configAt(repo: FinalizeRepo, ref: string): Promise<ProjectConfig | undefined> {
  const text = await repo.targetGit.showFile(ref, projectConfigFileName);
  return text === undefined ? undefined : parseProjectConfig(text).config;
}

/**
 * After the merge (issue 11, outside attack X8 #4): an agent that owns polywave.config.json can
 * commit `sandbox.writable: [<home>]`, a wider `sandbox.network.allow`, or a new `setup`/`teardown`
 * command. The gates of this finalize already read the sandbox settings of the wave's base commit
 * (see pinSandboxSettings), but the merged file is what every LATER wave, gate and teardown would
 * run with — and no human wrote it. So a merged change to those keys blocks the wave
 * (`SANDBOX_CONFIG_CHANGED`, naming the keys and what was added) until a human reviews it and
 * re-runs finalize-wave with `--accept-changes`.
 */
export const configChangeStep: StepDefinition<FinalizeContext> = {
  name: 'check-config-change',
  async run(context) {
    if (context.dryRun) return { status: 'skipped', detail: 'dry run: nothing was merged' };
    const repo = context.primary;
    if (repo.base === undefined) return { status: 'skipped', detail: 'no wave base commit known to compare polywave.config.json with' };
    let before: ProjectConfig | undefined;
    let after: ProjectConfig | undefined;
    try {
      before = await configAt(repo, repo.base);
      after = await configAt(repo, 'HEAD');
    } catch (error) {
      context.block = { reason: `${configChangedCode}: polywave.config.json could not be compared with the wave base: ${errorText(error)}`, mergeState: 'failed' };
      return { status: 'failed', detail: context.block.reason };
    }
    const changes = securityConfigChanges(before, after);
    const keys = [...changes.widened.map((entry) => `${entry.key} (+ ${entry.added.join(', ')})`), ...changes.changed];
    if (keys.length === 0) return { status: 'success', detail: `${projectConfigFileName}: no change to sandbox, setup, teardown, dispatch or agent CLI settings since the wave base ${short(repo.base)}` };
    const what = `${projectConfigFileName} changed since the wave base ${short(repo.base)} in ${keys.join('; ')}${changes.widened.length > 0 ? ' — this WIDENS every later sandbox' : ''}`;
    if (context.options.acceptChanges === true) return { status: 'warning', detail: `${configChangedCode}: ${what}; accepted (--accept-changes)`, data: changes };
    context.block = { reason: `${configChangedCode}: ${what}`, mergeState: 'failed' };
    return {
      status: 'failed',
      detail: `${configChangedCode}: ${what}. Nothing ran with it (this finalize used the base's settings); review the change yourself, then re-run finalize-wave with --accept-changes to accept it (or revert it on the target)`,
      data: changes,
    };
  },
};
