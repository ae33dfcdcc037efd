import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { checkTransition, e15CompletionGuard, isProtocolState } from '../../protocol/state-machine.js';
import { protocolStates, type ProtocolState } from '../../protocol/schema/impl-schema.js';
import { editImpl } from '../../store/manifest-file.js';
import { commitFiles } from '../../git/commit-files.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `set-impl-state <impl> --state S [--commit] [--commit-msg M]` — the state machine's only
 * writer from the CLI: refuses illegal transitions (exit 1) listing the legal targets, and
 * (E15, issue 13) REVIEWED/BLOCKED → COMPLETE, which would skip the WAVE_VERIFIED guard.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = implPathFrom(args, io);
  const target = requireOption(options, 'state', '--state').toUpperCase();
  if (!isProtocolState(target)) {
    throw new PolywaveError({ code: 'V008_INVALID_STATE', message: `unknown state "${target}" — must be one of: ${protocolStates.join(', ')}` });
  }
  // P14-16: the plan's run lock (the one `run`, run-wave and the tier loop hold while they run it) — a human's BLOCKED
  // written while the loop ran the IMPL was overwritten by the loop without a word. RUN_IN_PROGRESS, nothing written.
  const { withRunLock } = await import('../run-lock.js');
  const { projectRootOf } = await import('../../store/program-impl-docs.js');
  // P16-01: and the run lock of the PROGRAM listing it (the tier loop holds that one while it scouts and reviews the tier).
  const { withProgramsOfImpl } = await import('../program-impl-guard.js');
  return withRunLock(projectRootOf(filePath, io.cwd), filePath, () => withProgramsOfImpl(filePath, io.cwd, () => setState(filePath, target, options, io)));
}

async function setState(filePath: string, target: ProtocolState, options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  if (target === 'COMPLETE') await refuseUnmergedWork(filePath, options, io);
  const outcome = await editImpl(filePath, (parsed) => {
    const manifest = requireManifest(parsed, filePath);
    const check = checkTransition(manifest.state, target, manifest);
    if (!check.ok) throw new PolywaveError({ code: check.finding.code, message: check.finding.message, exitCode: 1 });
    const guard = e15CompletionGuard(manifest.state, target);
    if (guard) throw new PolywaveError({ code: guard.code, message: `${guard.message}; ${guard.suggestion ?? ''}`.replace(/; $/, ''), exitCode: 1 });
    return { edits: [{ path: ['state'], value: target }], outcome: { previous: manifest.state ?? '', warnings: check.warnings } };
  });
  for (const warning of outcome.warnings) io.stderr(`polywave: warning[${warning.code}]: ${warning.message}\n`);
  let commitSha: string | undefined;
  if (options.commit) {
    const message = typeof options.commitMsg === 'string' && options.commitMsg.trim() !== '' ? options.commitMsg : `chore: set IMPL state to ${target}`;
    commitSha = await commitFiles({ cwd: path.dirname(filePath), files: [filePath], message, env: io.env });
  }
  printJson(io, { previous_state: outcome.previous, new_state: target, committed: commitSha !== undefined, ...(commitSha ? { commit_sha: commitSha } : {}) });
  return 0;
}

/**
 * Reports are not merges (issue 13, N2): COMPLETE is refused while an agent's reported work — its
 * report commit or its branch tip — is not reachable from HEAD, as close-impl and mark-complete
 * refuse it (their --force is the way to close anyway). Loaded only for this target.
 */
async function refuseUnmergedWork(filePath: string, options: Record<string, unknown>, io: CommandIo): Promise<void> {
  const [{ loadImpl }, { implRepoRoot }, { createGit }, { describeUnmerged, unmergedAgents }, { implSlugFromPath }, { codes }] = await Promise.all([
    import('../../store/manifest-file.js'),
    import('./impl-repo.js'),
    import('../../git/git-cli.js'),
    import('../../engine/wave-merged.js'),
    import('../../protocol/names.js'),
    import('../../errors/codes.js'),
  ]);
  const { parsed } = await loadImpl(filePath);
  const manifest = requireManifest(parsed, filePath);
  if ((manifest.state ?? '').trim() === 'COMPLETE') return;
  const root = await implRepoRoot(filePath, options, io);
  const git = createGit(root, { env: io.env });
  if (!(await git.isRepository())) return;
  const slug = implSlugFromPath(filePath, manifest);
  const unmerged = await unmergedAgents(git, manifest, slug, (manifest.waves ?? []).map((wave) => wave.number ?? 0), 'HEAD');
  if (unmerged.length === 0) return;
  const branch = (await git.currentBranch()) ?? 'HEAD';
  throw new PolywaveError({
    code: codes.waveNotMerged,
    message: `IMPL ${slug} cannot be COMPLETE: agent work not merged into ${branch}: ${describeUnmerged(unmerged)} — run \`polywave finalize-wave ${path.relative(io.cwd, filePath) || filePath} --wave ${unmerged[0]!.wave}\` first (or \`polywave mark-complete --force\` to close it anyway)`,
    exitCode: 1,
  });
}
