import { createHash } from 'node:crypto';
import { readFile, realpath, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureDirectory, gitCommonDirOf } from './lock-location.js';
import { tempPathFor } from './atomic-file.js';

/**
 * Removal markers: "a cleanup started removing this worktree (branch, tip)". `git worktree
 * remove` deletes a worktree's files one by one and its `.git` file somewhere among them; killed
 * half way it leaves a worktree whose only changes are deletions, or a directory that is no
 * working tree any more. The marker, written before git starts and removed once the worktree is
 * gone, lets the next cleanup tell that wreck from a worktree holding someone's work. Markers
 * live in `<git common dir>/polywave/removing/`, never in the working tree.
 */
export interface RemovalMarker {
  worktree: string;
  branch: string;
  /** The branch tip when the removal started (the worktree's checked-out commit). */
  tip: string;
  started_at: string;
  pid: number;
}

async function canonical(filePath: string): Promise<string> {
  const absolute = path.resolve(filePath);
  try {
    return await realpath(absolute);
  } catch {
    const parent = path.dirname(absolute);
    return parent === absolute ? absolute : path.join(await canonical(parent), path.basename(absolute));
  }
}

async function markerPath(worktree: string): Promise<string | undefined> {
  const resolved = await canonical(worktree);
  const common = await gitCommonDirOf(path.dirname(resolved));
  if (common === undefined) return undefined;
  return path.join(common, 'polywave', 'removing', `${createHash('sha256').update(resolved).digest('hex').slice(0, 24)}.json`);
}

/** Records that a removal of `worktree` starts now (written completely or not at all). */
export async function recordRemoval(worktree: string, what: { branch: string; tip: string }): Promise<void> {
  const file = await markerPath(worktree);
  if (file === undefined) return;
  await ensureDirectory(path.dirname(file));
  const marker: RemovalMarker = { worktree: await canonical(worktree), branch: what.branch, tip: what.tip, started_at: new Date().toISOString(), pid: process.pid };
  // The shared temp name (atomic-file.ts): unique per write, known to the cleanups of dead writers' temps.
  const temporary = tempPathFor(file);
  await writeFile(temporary, `${JSON.stringify(marker)}\n`);
  await rename(temporary, file);
}

/** Forgets the removal of `worktree` (it is gone, or git refused before deleting anything). */
export async function forgetRemoval(worktree: string): Promise<void> {
  const file = await markerPath(worktree);
  if (file !== undefined) await unlink(file).catch(() => undefined);
}

/** The markers of the given worktrees that exist, by canonical worktree path. */
export async function readRemovalMarkers(worktrees: readonly string[]): Promise<Map<string, RemovalMarker>> {
  const found = new Map<string, RemovalMarker>();
  await Promise.all(
    worktrees.map(async (worktree) => {
      const file = await markerPath(worktree);
      if (file === undefined) return;
      try {
        const marker = JSON.parse(await readFile(file, 'utf8')) as RemovalMarker;
        if (typeof marker.tip === 'string' && typeof marker.branch === 'string') found.set(await canonical(worktree), marker);
      } catch {
        // none (or unreadable: treated as none — nothing is forced without a marker)
      }
    }),
  );
  return found;
}
