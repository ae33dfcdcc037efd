import { preWaveValidate } from '../../engine/prepare-wave.js';
import { checksStillToCome } from '../../protocol/pre-wave-phases.js';
import { currentWave } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import { createGit } from '../../git/git-cli.js';
import { checkTestCascade, type TestCascadeError } from '../../scout-tools/test-cascade.js';
import { suggestWaveStructure, type WaveStructureProblem } from '../../scout-tools/wave-structure.js';
import path from 'node:path';
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
 * Go's step 3 (E46 `test_cascade`, check-test-cascade) and step 4 (`wave_structure`,
 * suggest-wave-structure) run on the repository too; either failing is exit 1.
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
  const scout = await scoutChecks(manifest, repoDir ?? (await repositoryOf(implPath)), io);
  const failed = checks.some((check) => check.status === 'failed') || !result.validation.valid || !scout.test_cascade.passed || !scout.wave_structure.passed;
  const pending = checks.filter((check) => check.status === 'pending').map((check) => check.name);
  printJson(io, {
    ...result,
    validation: { ...result.validation, ...(fixes ? { fixed: fixes.fixed, ...(fixes.descriptions.length > 0 ? { fixes: fixes.descriptions } : {}) } : {}) },
    test_cascade: scout.test_cascade,
    wave_structure: scout.wave_structure,
    checks,
    ...(pending.length > 0 ? { pending } : {}),
  });
  return failed ? 1 : 0;
}

/** The repository holding the IMPL (git top level of its directory), if any. */
async function repositoryOf(implPath: string): Promise<string | undefined> {
  const result = await createGit(path.dirname(implPath))
    .run(['rev-parse', '--show-toplevel'], { allowExitCodes: [128] })
    .catch(() => undefined);
  return result && result.exitCode === 0 ? result.stdout.trim() : undefined;
}

/**
 * Steps 3 and 4 of Go's pre-wave-validate: E46 test cascade and the wave-structure check. Like
 * Go, a check that cannot run (no repository) passes with a note on stderr.
 */
async function scoutChecks(
  manifest: Parameters<typeof checkTestCascade>[0]['manifest'],
  repoRoot: string | undefined,
  io: CommandIo,
): Promise<{ test_cascade: { passed: boolean; errors: TestCascadeError[] }; wave_structure: { passed: boolean; problems: WaveStructureProblem[] } }> {
  if (repoRoot === undefined) {
    io.stderr('pre-wave-validate: test cascade and wave structure checks skipped: the IMPL is not in a git repository (pass --repo-dir)\n');
    return { test_cascade: { passed: true, errors: [] }, wave_structure: { passed: true, problems: [] } };
  }
  const [errors, problems] = await Promise.all([checkTestCascade({ manifest, repoRoot }), suggestWaveStructure({ manifest, repoRoot })]);
  return { test_cascade: { passed: errors.length === 0, errors }, wave_structure: { passed: problems.length === 0, problems } };
}
