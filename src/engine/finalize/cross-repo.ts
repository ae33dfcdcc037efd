import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { repoKey } from '../../protocol/waves.js';
import { resolveRepoRoot } from '../prepare/preflight-steps.js';
import { canonicalPath } from '../worktrees.js';

/** What E51 decided about the repository finalize-wave runs from. */
export interface RepoSelection {
  /** The repository to finalize from (the given one, or the one E51 picked). */
  repoDir?: string;
  /** The line to log on stderr when E51 picked the repository. */
  note?: string;
}

export interface SelectRepoOptions {
  manifest: ImplManifest;
  implPath: string;
  wave: number;
  /** `--repo-dir` when the user gave one. */
  repoDir?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * E51, finalize-wave on a cross-repo wave (ownership rows of the wave name a `repo:`).
 *
 * - Without `--repo-dir`: the repository owning the most files of the wave becomes the primary
 *   one (ties: the first named), resolved through polywave.config.json (`repos[]`), then the
 *   manifest's `repositories`, then a sibling of the manifest's repository. Logged via `note`.
 * - With `--repo-dir` naming a repository that owns no file of the wave: fatal (exit 1,
 *   `D012_WRONG_REPO_DIR`) — finalizing from it would misroute the merge — with the right one.
 *
 * Rows without `repo:` belong to the repository holding the manifest. A single-repo wave is left
 * alone.
 */
export async function selectFinalizeRepo(options: SelectRepoOptions): Promise<RepoSelection> {
  const rows = (options.manifest.file_ownership ?? []).filter((row) => row.wave === options.wave && (row.file ?? '').trim() !== '');
  if (!rows.some((row) => repoKey(row.repo) !== '')) return options.repoDir ? { repoDir: options.repoDir } : {};
  const home = await topLevel(path.dirname(options.implPath), options.env);
  const homeName = home ? path.basename(home) : '';
  // Files per repository name (case-insensitive, first spelling kept), in manifest order.
  const owned = new Map<string, { name: string; files: number }>();
  for (const row of rows) {
    const name = repoKey(row.repo) || homeName;
    if (name === '') continue;
    const entry = owned.get(name.toLowerCase()) ?? { name, files: 0 };
    entry.files += 1;
    owned.set(name.toLowerCase(), entry);
  }
  const ranked = [...owned.values()].sort((left, right) => right.files - left.files);
  const best = ranked[0];
  // Every file in the manifest's own repository: nothing to choose.
  if (best === undefined || (owned.size === 1 && best.name.toLowerCase() === homeName.toLowerCase())) return options.repoDir ? { repoDir: options.repoDir } : {};
  const anchor = home ?? path.dirname(options.implPath);
  const locate = (name: string) => resolveRepoRoot(options.manifest, name, anchor, path.dirname(options.implPath));
  const bestPath = await locate(best.name);

  if (options.repoDir !== undefined) {
    // A repository owns files of the wave when its name or its location is one the rows name.
    const given = (await topLevel(options.repoDir, options.env)) ?? path.resolve(options.repoDir);
    if ((owned.get(path.basename(given).toLowerCase())?.files ?? 0) > 0) return { repoDir: options.repoDir };
    for (const entry of ranked) if ((await locate(entry.name)) === given) return { repoDir: options.repoDir };
    throw new PolywaveError({
      code: 'D012_WRONG_REPO_DIR',
      message: `IMPL is cross-repo but --repo-dir ${options.repoDir} owns 0 files for wave ${options.wave} -- did you mean --repo-dir ${bestPath ?? best.name}? (E51: ${ranked.map((entry) => `${entry.name} owns ${entry.files}`).join(', ')})`,
      exitCode: 1,
    });
  }
  if (bestPath === undefined) {
    return { note: `E51: cross-repo wave ${options.wave}: ${best.name} owns the most files (${best.files}) but cannot be found (polywave.config.json repos[], the manifest's repositories, or a sibling directory); finalizing from the manifest's repository` };
  }
  const total = ranked.reduce((sum, entry) => sum + entry.files, 0);
  return {
    repoDir: bestPath,
    note: `E51: cross-repo wave ${options.wave}: primary repository ${best.name} (${bestPath}) owns ${best.files} of ${total} file(s)`,
  };
}

/** The git top level of `directory`, canonical; undefined outside a repository. */
async function topLevel(directory: string, env: SelectRepoOptions['env']): Promise<string | undefined> {
  try {
    return await canonicalPath(await createGit(directory, env ? { env } : {}).topLevel());
  } catch {
    return undefined;
  }
}
