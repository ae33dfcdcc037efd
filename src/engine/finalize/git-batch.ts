import type { Git } from '../../git/git-port.js';
import { branchTips } from '../worktrees.js';

/**
 * Batched git questions for finalize-wave: each answers for every agent of a wave with ONE git
 * process (10.3: no per-agent spawns where git can answer for all at once).
 */

/** One path changed between a wave's base and an agent's tip (`diff-tree --raw --no-renames`). */
export interface DiffEntry {
  path: string;
  /** A added, M modified, D deleted, T type change. */
  status: string;
  /** Blob id at the tip ('' for a deletion): equal ids = byte-identical content (I1 amendment). */
  blob: string;
  /** File mode at the tip ('000000' for a deletion). */
  mode: string;
}

const hexId = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * `git diff base..tip` (tree to tree, renames off) for many (base, tip) pairs in one
 * `git diff-tree --stdin` process. Returns the entries per `tip@base` key (see {@link diffKey});
 * a pair without changes maps to `[]`.
 */
export async function diffPairs(git: Git, pairs: ReadonlyArray<{ base: string; tip: string }>): Promise<Map<string, DiffEntry[]>> {
  const result = new Map<string, DiffEntry[]>();
  const unique = new Map<string, { base: string; tip: string }>();
  for (const pair of pairs) {
    const key = diffKey(pair.base, pair.tip);
    result.set(key, []);
    if (pair.base !== pair.tip) unique.set(key, pair);
  }
  if (unique.size === 0) return result;
  // Each input line `<tip> <base>` is "commit tip with parent base": its diff is base..tip.
  const input = `${[...unique.values()].map((pair) => `${pair.tip} ${pair.base}`).join('\n')}\n`;
  const { stdout } = await git.run(['diff-tree', '-r', '--raw', '-z', '--no-renames', '--no-ext-diff', '--full-index', '--stdin'], { input });
  // Output: `<tip>\0` header, then `:<old mode> <new mode> <old blob> <new blob> <status>\0<path>\0` entries.
  // The same tip may appear with several bases: headers come in input order.
  const order = [...unique.values()];
  let current: DiffEntry[] | undefined;
  let position = 0;
  const fields = stdout.split('\0');
  for (let index = 0; index < fields.length; index += 1) {
    const field = fields[index]!;
    if (field === '') continue;
    if (field.startsWith(':')) {
      const [, newMode = '', , newBlob = '', status = ''] = field.slice(1).split(' ');
      const filePath = fields[index + 1] ?? '';
      index += 1;
      current?.push({ path: filePath, status: status.charAt(0), blob: /^0+$/.test(newBlob) ? '' : newBlob, mode: newMode });
      continue;
    }
    const header = field.trim();
    if (!hexId.test(header)) continue;
    // Headers appear only for pairs with differences; advance to the next input pair with this tip.
    while (position < order.length && order[position]!.tip !== header) position += 1;
    const pair = order[position];
    position += 1;
    current = pair ? result.get(diffKey(pair.base, pair.tip)) : undefined;
  }
  return result;
}

/** Key of a (base, tip) pair in {@link diffPairs}. */
export function diffKey(base: string, tip: string): string {
  return `${tip}@${base}`;
}

/**
 * For each tip, the number of commits in `base..tip`, from one `git rev-list --parents` over
 * all tips at once (then counted per tip in memory: the commits reachable from the tip that the
 * base cannot reach).
 */
export async function countCommitsBeyond(git: Git, base: string, tips: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const wanted = [...new Set(tips)];
  if (wanted.length === 0) return counts;
  const { stdout } = await git.run(['rev-list', '--parents', ...wanted, '--not', base, '--']);
  const parents = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    const [commit, ...rest] = line.trim().split(' ');
    if (commit) parents.set(commit, rest);
  }
  for (const tip of wanted) {
    const seen = new Set<string>();
    const stack = parents.has(tip) ? [tip] : [];
    while (stack.length > 0) {
      const commit = stack.pop()!;
      if (seen.has(commit)) continue;
      seen.add(commit);
      for (const parent of parents.get(commit) ?? []) if (parents.has(parent) && !seen.has(parent)) stack.push(parent);
    }
    counts.set(tip, seen.size);
  }
  return counts;
}

/** Local branches (of those named) whose tips are reachable from `target`, in one `for-each-ref --merged`. */
export async function branchesMergedInto(git: Git, target: string, branches: readonly string[]): Promise<Set<string>> {
  return new Set((await branchTips(git, branches, { mergedInto: target })).keys());
}


/** Fixed identity and date for scratch commits: the same input gives the same commit id. */
const scratchCommitEnvironment = {
  GIT_AUTHOR_NAME: 'polywave',
  GIT_AUTHOR_EMAIL: 'polywave@localhost',
  GIT_AUTHOR_DATE: '@0 +0000',
  GIT_COMMITTER_NAME: 'polywave',
  GIT_COMMITTER_EMAIL: 'polywave@localhost',
  GIT_COMMITTER_DATE: '@0 +0000',
};

/**
 * The tree the wave's merges will produce, as an unreferenced scratch commit — without touching
 * any working tree or the real index, in four git processes whatever the number of agents: the
 * target's tree is read into a temporary index, every agent's changed paths are set to their
 * tip blobs (deletions removed) with one `update-index --index-info`, then `write-tree` and
 * `commit-tree` (parents: the target and every tip). Exact when the agents' changes are disjoint
 * from each other and from the target's (what E11 established); gc removes it later.
 */
export async function virtualMergeCommit(git: Git, options: { targetTip: string; tips: readonly string[]; diffs: ReadonlyArray<readonly DiffEntry[]>; indexPath: string }): Promise<string> {
  const env = { GIT_INDEX_FILE: options.indexPath };
  await git.run(['read-tree', options.targetTip], { env });
  const lines: string[] = [];
  for (const diff of options.diffs) {
    for (const entry of diff) {
      lines.push(entry.blob === '' ? `0 ${'0'.repeat(options.targetTip.length)}\t${entry.path}` : `${entry.mode} ${entry.blob}\t${entry.path}`);
    }
  }
  if (lines.length > 0) await git.run(['update-index', '-z', '--index-info'], { env, input: `${lines.join('\0')}\0` });
  const tree = (await git.run(['write-tree'], { env })).stdout.trim();
  const parents = [options.targetTip, ...new Set(options.tips)].flatMap((parent) => ['-p', parent]);
  return (await git.run(['commit-tree', tree, ...parents, '-m', 'polywave: virtual merge of the wave (scratch)'], { env: scratchCommitEnvironment })).stdout.trim();
}
