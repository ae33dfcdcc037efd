import { parseProjectConfig, projectConfigFileName, securityConfigChanges, type ProjectConfig, type SecurityConfigChanges } from '../../store/project-config.js';
import path from 'node:path';
import { acceptedByHuman, changedKeys, clearConfigBlock, configBlockInEffect, configChangedCode, readTrustedConfigText, recordConfigBlock } from '../../store/trusted-config.js';
import type { StepDefinition } from '../step.js';
import { errorText, short, type FinalizeContext, type FinalizeRepo } from './context.js';

/** The code of a wave blocked because its merge changed what runs outside the agents' control. */
export { configChangedCode };

async function configAt(repo: FinalizeRepo, ref: string): Promise<{ exists: boolean; config: ProjectConfig | undefined }> {
  const text = await repo.targetGit.showFile(ref, projectConfigFileName);
  return { exists: text !== undefined, config: text === undefined ? undefined : parseProjectConfig(text).config };
}

/**
 * The repository's own config was deleted by the merge while a config above the repository would take its place
 * (outside attack X25-25: an agent deleted it, finalize saw "no change" in the watched keys, and wave 2 ran with the
 * config above, `sandbox.writable: ["~"]`). The path of that config, or undefined.
 */
async function configAboveTakingOver(repo: FinalizeRepo): Promise<string | undefined> {
  const trusted = await readTrustedConfigText(path.dirname(repo.root));
  return trusted.path;
}

/**
 * After the merge (issue 11, outside attack X8 #4): an agent that owns polywave.config.json can
 * commit `sandbox.writable: [<home>]`, a wider `sandbox.network.allow`, or a new `setup`/`teardown`
 * command. The gates of this finalize already read the sandbox settings of the wave's base commit
 * (see pinSandboxSettings), but the merged file is what every LATER wave, gate and teardown would
 * run with — and no human wrote it. So a merged change to those keys blocks the wave
 * (`SANDBOX_CONFIG_CHANGED`, naming the keys and what was added) until a human reviews it and
 * re-runs finalize-wave with `--accept-changes`. Every repository of a cross-repo wave is checked
 * against its own wave base, not only the primary (outside attack X9 #4).
 *
 * A block is recorded persistently (X10 N9): `<git common dir>/polywave/config-block.json` keeps the
 * base's config as the accepted one, so every later command of ANY IMPL in that repository refuses
 * (or reads the accepted settings) until a human accepts — `polywave accept-config`, or this
 * finalize with `--accept-changes`, which removes the record. A record left by another wave is
 * checked here too: this wave's base may already hold the unaccepted change. Solo waves have a base
 * too (prepare-agent records HEAD before the agent starts; X10 N3).
 */
export const configChangeStep: StepDefinition<FinalizeContext> = {
  name: 'check-config-change',
  async run(context) {
    if (context.dryRun) return { status: 'skipped', detail: 'dry run: nothing was merged' };
    const details: string[] = [];
    const accepted: string[] = [];
    const blocked: string[] = [];
    const data: Record<string, SecurityConfigChanges> = {};
    // Every repository of the wave: a sibling's config widens the sandboxes of its own later waves (X9 #4).
    for (const repo of context.repos.length > 0 ? context.repos : [context.primary]) {
      const where = repo.primary ? projectConfigFileName : `${repo.key}: ${projectConfigFileName}`;
      const base = repo.base;
      if (base === undefined) {
        if (repo.primary) details.push('no wave base commit known to compare polywave.config.json with');
        continue;
      }
      let before: ProjectConfig | undefined;
      let after: ProjectConfig | undefined;
      let takingOver: string | undefined;
      try {
        const [atBase, atHead] = [await configAt(repo, base), await configAt(repo, 'HEAD')];
        before = atBase.config;
        after = atHead.config;
        if (atBase.exists && !atHead.exists) takingOver = await configAboveTakingOver(repo);
      } catch (error) {
        context.block = { reason: `${configChangedCode}: ${where} could not be compared with the wave base: ${errorText(error)}`, mergeState: 'failed' };
        return { status: 'failed', detail: context.block.reason };
      }
      const changes = securityConfigChanges(before, after);
      if (takingOver !== undefined) changes.changed.push(`${projectConfigFileName} deleted: ${takingOver} (above the repository) would set its settings`);
      const keys = changedKeys(changes);
      // A change blocked earlier (another IMPL or wave) and not accepted: this wave's base may already hold it.
      // No catch-to-undefined: a block record or HEAD config that cannot be read is not "no earlier block" (fail closed).
      let earlier: Awaited<ReturnType<typeof configBlockInEffect>>;
      try {
        earlier = await configBlockInEffect(repo.root);
      } catch (error) {
        context.block = { reason: `${configChangedCode}: ${where}: the recorded block of an earlier change could not be checked: ${errorText(error)}`, mergeState: 'failed' };
        return { status: 'failed', detail: context.block.reason };
      }
      if (earlier !== undefined && keys.length === 0) {
        const what = `${where} at HEAD still changes ${earlier.keys.join('; ')} against the config accepted before ${earlier.record.impl === '?' ? 'an earlier block' : `${earlier.record.impl.split('/').pop()} wave ${earlier.record.wave}`} (blocked, not accepted)`;
        if (context.options.acceptChanges === true) {
          await clearConfigBlock(repo.root);
          accepted.push(what);
        } else blocked.push(what);
        continue;
      }
      if (keys.length === 0) {
        details.push(`${where}: no change to sandbox, setup, teardown, dispatch or agent CLI settings since the wave base ${short(base)}`);
        continue;
      }
      data[repo.key] = changes;
      const what = `${where} changed since the wave base ${short(base)} in ${keys.join('; ')}${changes.widened.length > 0 ? ' — this WIDENS every later sandbox' : ''}`;
      // Accepted already with `polywave accept-config` (HEAD's config is the one accepted): not blocked again.
      const human = context.options.acceptChanges === true ? undefined : await acceptedByHuman(repo.root, after, { impl: context.implPath, wave: context.wave }).catch(() => undefined);
      if (context.options.acceptChanges === true || human !== undefined) {
        await clearConfigBlock(repo.root);
        accepted.push(human ? `${what} (accepted with polywave accept-config at ${human.accepted_at})` : what);
      } else {
        blocked.push(what);
        // Persistent (X10 N9): later commands of any IMPL refuse, or read the accepted (base) config, until accepted.
        // (P13-03: a target checked out elsewhere — a PROGRAM's IMPL branch — is where accept-config reads the change)
        const elsewhere = repo.targetBranch !== '' && (repo.scratchTarget !== undefined || (repo.targetDir !== '' && path.resolve(repo.targetDir) !== path.resolve(repo.root)));
        await recordConfigBlock(repo.root, { impl: context.implPath, wave: context.wave, acceptedCommit: base, changed: what, now: context.now(), ...(elsewhere ? { targetBranch: repo.targetBranch } : {}) }).catch(() => undefined);
      }
    }
    const only = Object.keys(data).length === 1 ? Object.values(data)[0] : undefined;
    const payload = only ?? (Object.keys(data).length > 0 ? data : undefined);
    if (blocked.length > 0) {
      context.block = { reason: `${configChangedCode}: ${blocked.join('; ')}`, mergeState: 'failed' };
      return {
        status: 'failed',
        detail: `${configChangedCode}: ${blocked.join('; ')}. Nothing ran with it (this finalize used the base's settings); every later command in the repository refuses until you accept it. Review the change yourself, then re-run finalize-wave with --accept-changes (or run polywave accept-config) to accept it, or revert it on the target`,
        ...(payload ? { data: payload } : {}),
      };
    }
    if (accepted.length > 0) return { status: 'warning', detail: `${configChangedCode}: ${accepted.join('; ')}; accepted${context.options.acceptChanges === true ? ' (--accept-changes)' : ''}`, ...(payload ? { data: payload } : {}) };
    if (details.length === 1 && details[0]!.startsWith('no wave base')) return { status: 'skipped', detail: details[0]! };
    return { status: 'success', detail: details.join('; ') };
  },
};
