import { lstat, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../git/git-port.js';
import { removeStaleIndexLock } from '../git/stale-index-lock.js';

/** Paths of the main checkout that are the orchestrator's, never a torn merge's leftovers. */
function isOrchestratorPath(file: string): boolean {
  return file.startsWith('docs/IMPL/') || file.startsWith('docs/PROGRAM/') || file === 'docs/CONTEXT.md' || file.startsWith('.polywave-state/') || file.startsWith('.claude/');
}

/**
 * A `git merge` killed before it wrote MERGE_HEAD (a SIGKILL of the whole process group) leaves
 * the incoming branch's files in the checkout it merged into (the main checkout, or an IMPL branch's worktree for a PROGRAM's waves), modified or untracked, with no merge to abort;
 * the next merge then refuses ("local changes would be overwritten"). When EVERY such file holds
 * exactly the content one of `tips` has for it — a committed blob, so nothing can be lost — or the start of it (the
 * file git was writing when it was killed: created, then cut off or still empty), they are put back as HEAD has them
 * (removed when HEAD has none). Anything else is left for a human. Returns the paths restored.
 */
export async function restoreTornMerge(checkout: { git: Git; root: string }, tips: ReadonlySet<string>): Promise<string[]> {
  if (tips.size === 0) return [];
  // The killed git may also have left index.lock: the restore (and every merge after it) needs the index.
  await removeStaleIndexLock(path.resolve(checkout.root, (await checkout.git.run(['rev-parse', '--git-dir'])).stdout.trim()));
  const status = await checkout.git.status();
  const dirty = [...new Set(status.flatMap((entry) => (entry.from !== undefined ? [entry.path, entry.from] : [entry.path])))].filter((file) => !isOrchestratorPath(file) && !file.endsWith('/'));
  if (dirty.length === 0) return [];
  const { stdout: hashed } = await checkout.git.run(['hash-object', '--no-filters', '--', ...dirty], { allowExitCodes: [128] }).catch(() => ({ stdout: '' }));
  const hashes = hashed.split('\n').filter((line) => line.trim() !== '');
  if (hashes.length !== dirty.length) return [];
  for (const [index, file] of dirty.entries()) {
    let matched = false;
    for (const tip of tips) {
      const blob = await checkout.git.run(['rev-parse', '--verify', '--quiet', `${tip}:${file}`], { allowExitCodes: [1, 128] }).then(
        (result) => result.stdout.trim(),
        () => '',
      );
      if (blob !== '' && (blob === hashes[index] || (await tornWriteOf(checkout, file, blob)))) {
        matched = true;
        break;
      }
    }
    if (!matched) return [];
  }
  const inHead = new Set(
    (await checkout.git.run(['ls-tree', '-r', '--name-only', 'HEAD', '--', ...dirty])).stdout
      .split('\n')
      .filter((line) => line !== ''),
  );
  const tracked = dirty.filter((file) => inHead.has(file));
  const added = dirty.filter((file) => !inHead.has(file));
  if (added.length > 0) {
    await checkout.git.run(['rm', '-q', '--cached', '--ignore-unmatch', '--', ...added]);
    for (const file of added) await rm(path.join(checkout.root, file), { force: true });
  }
  if (tracked.length > 0) await checkout.git.run(['checkout', 'HEAD', '--', ...tracked]);
  return dirty;
}

/**
 * Whether `file` is a write of `blob` that git did not finish: a regular file shorter than the blob whose bytes are its
 * first ones (empty included). A SIGKILL inside `git merge` leaves one — git creates a file, then writes it — and the
 * CI's kill-and-resume run of a PROGRAM saw it (src/checkout.js of size 0 in the IMPL worktree, TAMPER_DETECTED on the
 * re-run). Its content is part of a committed blob: nothing can be lost by putting it back.
 */
async function tornWriteOf(checkout: { git: Git; root: string }, file: string, blob: string): Promise<boolean> {
  const absolute = path.join(checkout.root, file);
  const info = await lstat(absolute).catch(() => undefined);
  if (!info?.isFile()) return false;
  const size = Number((await checkout.git.run(['cat-file', '-s', blob])).stdout.trim());
  if (!(info.size < size)) return false;
  if (info.size === 0) return true;
  const [content, committed] = await Promise.all([readFile(absolute), checkout.git.run(['cat-file', 'blob', blob]).then((result) => Buffer.from(result.stdout, 'utf8'))]);
  return content.length < committed.length && committed.subarray(0, content.length).equals(content);
}
