import { preWaveValidate } from '../../engine/prepare-wave.js';
import { checksStillToCome } from '../../protocol/pre-wave-phases.js';
import { currentWave } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { applyImplFixes } from './impl-fixes.js';
import { repoDirOption } from './repo-dir-option.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `pre-wave-validate <impl> [--wave N] [--fix]` — manifest validation plus every read-only
 * pre-flight check of prepare-wave (state, repositories, I1, I3, E37, I2, E35, E2, dirty tree,
 * stale worktrees), all reported. Default wave: the first incomplete one. `--fix` first applies
 * `validate --fix`'s mechanical fixes (the E42 hook runs `pre-wave-validate <impl> --wave 1
 * --fix` at every Scout completion). Checks a later protocol step satisfies (the E37 critic
 * before REVIEWED, pending E22 scaffolds) are reported `pending`, not failed: `ready` stays
 * false, the exit code is 0. Exit 1 when a check failed or the manifest is invalid.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const fixes = options.fix ? await applyImplFixes(implPath) : undefined;
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const wave = typeof options.wave === 'number' && options.wave > 0 ? options.wave : (currentWave(manifest)?.number ?? 1);
  const repoDir = repoDirOption(options, io);
  const result = await preWaveValidate({ implPath, wave, ...(repoDir ? { repoDir } : {}), env: io.env, now: io.now });
  const stillToCome = checksStillToCome(manifest);
  const checks = result.checks.map((check) => {
    const reason = check.status === 'failed' ? stillToCome.get(check.name) : undefined;
    return reason === undefined ? check : { ...check, status: 'pending' as const, message: `${check.message} — ${reason}` };
  });
  const failed = checks.some((check) => check.status === 'failed') || !result.validation.valid;
  const pending = checks.filter((check) => check.status === 'pending').map((check) => check.name);
  printJson(io, {
    ...result,
    validation: { ...result.validation, ...(fixes ? { fixed: fixes.fixed, ...(fixes.descriptions.length > 0 ? { fixes: fixes.descriptions } : {}) } : {}) },
    checks,
    ...(pending.length > 0 ? { pending } : {}),
  });
  return failed ? 1 : 0;
}
