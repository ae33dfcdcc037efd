import { existsSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { closeReadiness, closeRefusedCode, insertCompletionMarker } from '../../engine/close-impl.js';
import { requireParsedManifest } from '../../engine/reconcile-state.js';
import { cleanStaleWorktrees, detectStaleWorktrees } from '../../engine/stale-worktrees.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { describeUnmerged, unmergedAgents } from '../../engine/wave-merged.js';
import { codes } from '../../errors/codes.js';
import { createGit } from '../../git/git-cli.js';
import { implSlugFromPath } from '../../protocol/names.js';
import { updateFileLocked, withFileLock } from '../../store/locked-write.js';
import { editImpl, loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { dateOption } from './close-impl.js';
import { implRepoRoot } from './impl-repo.js';
import { implPathFrom } from './shared.js';
import { acquireRunLock } from '../run-lock.js';

/** The manifest path relative to the project root for the advice (absolute when outside it). */
function shownPath(root: string, implPath: string): string {
  const relative = path.relative(root, implPath);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? implPath : relative;
}

/**
 * `mark-complete <impl> [--date YYYY-MM-DD] [--force]` — E15 without E18 and without a commit
 * (close-impl does all three): state COMPLETE, `completion_date`, the `# polywave:complete`
 * marker, archive to `docs/IMPL/complete/`, then the E4a cleanup of this IMPL's stale worktrees
 * (never a dirty or unmerged one). Refuses an IMPL whose agents are not all complete or whose
 * state cannot become COMPLETE, or whose agents' reported work is not reachable from HEAD
 * (WAVE_NOT_MERGED, as close-impl), unless `--force`. Prints compact `{marked, date, path, archived,
 * worktrees_cleaned}`; warnings on stderr. Exit 0 marked (or already marked), 1 not finished
 * (nothing changed), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  dateOption(options, io);
  const implPath = implPathFrom(args, io);
  requireParsedManifest((await loadImpl(implPath)).parsed.manifest, implPath);
  // P14-40: the plan's run lock (the one `run`, run-wave and the tier loop hold while they run it), --force or not: a
  // mark-complete during a live run removed the running agent's worktree and archived the doc under its wave.
  const releaseLock = acquireRunLock(await implRepoRoot(implPath, options, io), implPath);
  try {
    return await markComplete(args, options, io);
  } finally {
    releaseLock();
  }
}

async function markComplete(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const date = dateOption(options, io);
  const implPath = implPathFrom(args, io);
  const manifest = requireParsedManifest((await loadImpl(implPath)).parsed.manifest, implPath);
  const slug = implSlugFromPath(implPath, manifest);
  const alreadyArchived = path.basename(path.dirname(implPath)) === 'complete';
  const archivedPath = alreadyArchived ? implPath : path.join(path.dirname(implPath), 'complete', `IMPL-${slug}.yaml`);
  if (!alreadyArchived && existsSync(archivedPath)) {
    throw new PolywaveError({ code: closeRefusedCode, message: `both ${implPath} and the archived ${archivedPath} exist; remove the stale one and re-run`, exitCode: 1 });
  }
  const root = await implRepoRoot(implPath, options, io);
  const git = createGit(root, { env: io.env });
  const inRepository = await git.isRepository();
  if ((manifest.state ?? '').trim() !== 'COMPLETE') {
    const force = options.force === true;
    const readiness = closeReadiness(manifest);
    if (!readiness.finished && !force) throw new PolywaveError({ code: closeRefusedCode, message: `IMPL ${slug} is not finished: ${readiness.reasons.join('; ')} (use --force to mark it anyway)`, exitCode: 1 });
    // Issue 13 (N2): reports are not merges — as close-impl, every agent's reported work must be
    // reachable from HEAD, or marking COMPLETE (and archiving) would bury unmerged commits.
    if (inRepository) {
      const unmerged = await unmergedAgents(git, manifest, slug, (manifest.waves ?? []).map((wave) => wave.number ?? 0), 'HEAD');
      if (unmerged.length > 0) {
        const branch = await git.currentBranch();
        const reason = `${codes.waveNotMerged}: agent work not merged into ${branch ?? 'HEAD'}: ${describeUnmerged(unmerged)} — run \`polywave finalize-wave ${shownPath(root, implPath)} --wave ${unmerged[0]!.wave}\` first`;
        if (!force) throw new PolywaveError({ code: closeRefusedCode, message: `IMPL ${slug} is not finished: ${reason} (use --force to mark it anyway)`, exitCode: 1 });
        io.stderr(`mark-complete: forced: ${reason}\n`);
      }
    }
  }

  // E15: state, completion_date (an existing one is kept), then the marker comment.
  const written = await editImpl(implPath, (current) => {
    const now = requireParsedManifest(current.manifest, implPath);
    const existing = (now.completion_date ?? '').trim();
    const edits: Array<{ path: string[]; value: string }> = [];
    if ((now.state ?? '').trim() !== 'COMPLETE') edits.push({ path: ['state'], value: 'COMPLETE' });
    if (existing === '') edits.push({ path: ['completion_date'], value: date });
    return { edits, outcome: existing === '' ? date : existing };
  });
  await updateFileLocked(implPath, (text) => insertCompletionMarker(text, written));
  if (written !== date) io.stderr(`mark-complete: completion_date already set to ${written}; kept (E15: the marker is not overwritten)\n`);

  if (!alreadyArchived) {
    await mkdir(path.dirname(archivedPath), { recursive: true });
    await withFileLock(implPath, () => rename(implPath, archivedPath));
  }

  // E4a: this IMPL's stale worktrees (the IMPL is archived now); dirty or unmerged ones are kept.
  let cleaned = 0;
  if (inRepository) {
    const stale = await detectStaleWorktrees({ git, slug });
    if (stale.length > 0) {
      const bases = ['HEAD'];
      for (const name of ['main', 'master']) if (await git.branchExists(name)) bases.push(`refs/heads/${name}`);
      const result = await cleanStaleWorktrees(stale, { git, gitAt: (directory) => createGit(directory, { env: io.env }), bases });
      cleaned = result.cleaned.length;
      for (const skipped of result.skipped) io.stderr(`mark-complete: worktree ${skipped.worktree_path} kept: ${skipped.detail}\n`);
      for (const failure of result.errors) io.stderr(`mark-complete: worktree ${failure.worktree}: ${failure.error}\n`);
      if (cleaned > 0) io.stderr(`mark-complete: cleaned ${cleaned} stale worktree(s) for ${slug}\n`);
    }
  }
  printJson(io, { marked: true, date: written, path: archivedPath, archived: true, worktrees_cleaned: cleaned }, { compact: true });
  return 0;
}
