import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { classifyCallerCascade, verifyBuild, verifyBuildCommands } from '../../engine/verify-build.js';
import { assertConfigAccepted } from '../../store/trusted-config.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { pinIgnoreRules } from '../../gates/throwaway-checkout.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { createGit } from '../../git/git-cli.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal, repoDirOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `verify-build <impl> [--repo-dir D] [--wave N] [--timeout <seconds>]` — E10/E13: the IMPL's
 * test_command then lint_command (else its first test/lint gate), unscoped, in the repository
 * (default: the one holding the IMPL), each with a timeout. Prints `{test_command, lint_command,
 * test_passed, lint_passed, test_output?, lint_output?, …}`; with --wave a failure is classified
 * by E47 (`caller_cascade_only`, `caller_cascade_errors`). Exit 1 when either failed.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const start = repoDirOption(options, io) ?? path.dirname(implPath);
  const git = createGit(start, { env: io.env });
  if (!(await git.isRepository())) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${start} is not inside a git repository (pass --repo-dir)` });
  const repoDir = await git.topLevel();
  // X10 N9: a blocked, unaccepted polywave.config.json change is refused (exit 1, nothing run).
  await assertConfigAccepted([repoDir], 'verify-build');
  const { testCommand, lintCommand } = verifyBuildCommands(manifest);
  // The throwaway checkout judges the user's untracked files by the ignore rules of the wave's base as well (outside
  // attack X20-10): `--wave N`'s, else the last wave's that prepare-wave recorded — an agent's merged `.gitignore`
  // cannot un-ignore them into the tree the merged code runs in.
  // And by every wave base any plan of the repository recorded (outside attack X21-05: a plan not prepared yet has
  // none, and the same test command runs the code an earlier plan's wave merged): a file ignored at any of them stays out.
  const base = waveBaseOf(manifest, typeof options.wave === 'number' && options.wave > 0 ? options.wave : undefined);
  const candidates = [...new Set([...(base !== undefined ? [base] : []), ...recordedWaveBases(repoDir)])];
  const existing = (
    await Promise.all(candidates.map(async (commit) => ((await git.run(['cat-file', '-e', `${commit}^{commit}`], { allowExitCodes: [1, 128] })).exitCode === 0 ? commit : undefined)))
  ).filter((commit): commit is string => commit !== undefined);
  const releases = existing.map((commit) => pinIgnoreRules(repoDir, commit));
  const releaseIgnorePin = () => {
    for (const release of releases) release();
  };
  const interrupt = interruptSignal();
  try {
    const data = await verifyBuild({
      repoDir,
      testCommand,
      lintCommand,
      env: io.env,
      now: io.now,
      signal: interrupt.signal,
      ...(typeof options.timeout === 'number' && options.timeout > 0 ? { timeoutMs: options.timeout * 1000 } : {}),
    });
    const passed = data.test_passed && data.lint_passed;
    const wave = typeof options.wave === 'number' && options.wave > 0 ? options.wave : undefined;
    const cascade = !passed && wave !== undefined ? classifyCallerCascade({ output: `${data.test_output ?? ''}\n${data.lint_output ?? ''}`, manifest, wave, repoDir }) : undefined;
    printJson(io, { ...data, ...(cascade ? { caller_cascade_only: cascade.caller_cascade_only, caller_cascade_errors: cascade.errors, caller_cascade_files: cascade.files } : {}) });
    return passed ? 0 : 1;
  } finally {
    interrupt.dispose();
    releaseIgnorePin();
  }
}

/** `waves[N].base_commit` of wave `wave`, or of the last wave that has one. */
function waveBaseOf(manifest: ImplManifest, wave: number | undefined): string | undefined {
  const waves = [...(manifest.waves ?? [])].filter((item) => (wave === undefined || item.number === wave) && typeof item.base_commit === 'string' && /^[0-9a-f]{7,64}$/.test(item.base_commit));
  waves.sort((left, right) => (left.number ?? 0) - (right.number ?? 0));
  return waves.at(-1)?.base_commit;
}

/** The `base_commit` of every wave of every plan in `<repo>/docs/IMPL` (and its `complete/`), newest files first, at most 64. */
function recordedWaveBases(repoDir: string): string[] {
  const found: Array<{ commit: string; mtime: number }> = [];
  for (const directory of [path.join(repoDir, 'docs', 'IMPL'), path.join(repoDir, 'docs', 'IMPL', 'complete')]) {
    let names: string[];
    try {
      names = readdirSync(directory).filter((name) => /^IMPL-.+\.ya?ml$/.test(name));
    } catch {
      continue;
    }
    for (const name of names) {
      try {
        const file = path.join(directory, name);
        const stats = statSync(file);
        if (!stats.isFile() || stats.size > 4 * 1024 * 1024) continue;
        for (const match of readFileSync(file, 'utf8').matchAll(/^\s*base_commit:\s*["']?([0-9a-f]{7,64})["']?\s*$/gm)) found.push({ commit: match[1]!, mtime: stats.mtimeMs });
      } catch {
        // unreadable: skipped
      }
    }
  }
  found.sort((left, right) => right.mtime - left.mtime);
  return [...new Set(found.map((entry) => entry.commit))].slice(0, 64);
}
