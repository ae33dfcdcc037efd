import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../../test/support/git-repo.js';
import { branchesMergedInto, countCommitsBeyond, diffKey, diffPairs, virtualMergeCommit } from './git-batch.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe('batched git questions', () => {
  it('diffs, commit counts, merged branches and a virtual merge — one process each for all agents', async () => {
    const repo = await createTestRepo({ files: { 'gone.txt': 'x\n', 'keep.txt': 'k\n' } });
    const base = await repo.git.headCommit();
    const tips: Record<string, string> = {};
    for (const [name, files] of Object.entries({ a: { 'a.txt': 'a\n', 'dir/deep.txt': 'd\n' }, b: { 'b.txt': 'b\n' }, c: {} as Record<string, string> })) {
      await repo.git.createBranch(name, base);
      await repo.git.checkout(name);
      for (const [file, text] of Object.entries(files)) repo.write(file, text);
      if (name === 'b') repo.remove('gone.txt');
      tips[name] = name === 'c' ? base : await repo.commitAll(name);
      if (name === 'b') tips[name] = await repo.commitAll('b again');
      await repo.git.checkout('main');
    }
    const diffs = await diffPairs(repo.git, Object.values(tips).map((tip) => ({ base, tip })));
    expect(diffs.get(diffKey(base, tips.a!))?.map((entry) => [entry.path, entry.status])).toEqual([
      ['a.txt', 'A'],
      ['dir/deep.txt', 'A'],
    ]);
    expect(diffs.get(diffKey(base, tips.b!))?.map((entry) => [entry.path, entry.status, entry.blob])).toEqual([
      ['b.txt', 'A', expect.stringMatching(/^[0-9a-f]{40}$/)],
      ['gone.txt', 'D', ''],
    ]);
    expect(diffs.get(diffKey(base, base))).toEqual([]);

    const counts = await countCommitsBeyond(repo.git, base, Object.values(tips));
    expect([counts.get(tips.a!), counts.get(tips.b!), counts.get(base)]).toEqual([1, 2, 0]);

    await repo.run(['merge', '--no-ff', '-q', '-m', 'a', 'a']);
    expect([...(await branchesMergedInto(repo.git, 'HEAD', ['a', 'b', 'c', 'missing']))].sort()).toEqual(['a', 'c']);

    const indexPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'polywave-index-')), 'index');
    const head = await repo.git.headCommit();
    const virtual = await virtualMergeCommit(repo.git, { targetTip: head, tips: [tips.b!], diffs: [diffs.get(diffKey(base, tips.b!))!], indexPath });
    const files = (await repo.run(['ls-tree', '-r', '--name-only', virtual])).trim().split('\n');
    expect(files).toEqual(['README.md', 'a.txt', 'b.txt', 'dir/deep.txt', 'keep.txt']);
    expect(await repo.git.status()).toEqual([]);
    expect(await repo.git.headCommit()).toBe(head);
  });
});
