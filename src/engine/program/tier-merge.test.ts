import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../../test/support/git-repo.js';
import { openMainCheckout } from './tier-common.js';
import { abortInterruptedTierMerge, mergeTierBranches, readTierMergeRecord, restoreTornTierMerge, tierMergeMessage, tierMergeRecordPath } from './tier-merge.js';

describe('tier merge record and loop', () => {
  it('the Go merge message; a torn or foreign record reads as empty', async () => {
    expect(tierMergeMessage(2, 'auth', 'polywave/program/p/tier2-impl-auth')).toBe('Merge program tier 2 impl auth: polywave/program/p/tier2-impl-auth');
    const repo = await createTestRepo();
    const file = repo.sibling('record.json');
    expect(await readTierMergeRecord(file)).toEqual([]);
    writeFileSync(file, '{"merges": [{"impl_slug": "a"');
    expect(await readTierMergeRecord(file)).toEqual([]);
    writeFileSync(file, '{"merges": [{"impl_slug": "a", "branch": "b", "tip": "c"}, {"nope": 1}]}');
    expect((await readTierMergeRecord(file)).map((entry) => entry.impl_slug)).toEqual(['a']);
  });

  it('merges in the given order by tip, skips merged tips (recorded as recovered) and no-branch IMPLs', async () => {
    const repo = await createTestRepo();
    const tips: string[] = [];
    for (const name of ['a', 'b']) {
      await repo.run(['branch', name]);
      await repo.run(['switch', '-q', name]);
      repo.write(`${name}.txt`, `${name}\n`);
      tips.push(await repo.commitAll(name));
      await repo.run(['switch', '-q', 'main']);
    }
    // b is already in main's history (a crashed run merged it).
    await repo.run(['merge', '-q', '--no-ff', '-m', 'earlier', 'b']);
    const checkout = await openMainCheckout(repo.dir, repo.env);
    const recordPath = tierMergeRecordPath(checkout.commonDir, 'p', 1);
    const result = await mergeTierBranches({
      checkout,
      programSlug: 'p',
      tier: 1,
      plan: [
        { implSlug: 'a', branch: 'a', action: 'merge', tip: tips[0]! },
        { implSlug: 'b', branch: 'b', action: 'already-merged', tip: tips[1]! },
        { implSlug: 'c', branch: 'c', action: 'no-branch', note: 'complete without one' },
      ],
      recordPath,
      now: () => new Date('2026-01-01T00:00:00Z'),
    });
    expect(result.success).toBe(true);
    expect(result.outcomes.map((outcome) => outcome.status)).toEqual(['merged', 'already-merged', 'no-branch']);
    expect((await repo.run(['log', '-1', '--format=%s'])).trim()).toBe('Merge program tier 1 impl a: a');
    const record = await readTierMergeRecord(recordPath);
    expect(record.map((entry) => [entry.impl_slug, entry.recovered ?? false])).toEqual([
      ['a', false],
      ['b', true],
    ]);
    // The recovered entry's merge commit is found by its second parent.
    for (const entry of record) expect(entry.merge_sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it('an interrupted merge is aborted only when it merges one of our tips', async () => {
    const repo = await createTestRepo();
    await repo.run(['branch', 'side']);
    await repo.run(['switch', '-q', 'side']);
    mkdirSync(repo.path('x'), { recursive: true });
    writeFileSync(path.join(repo.path('x'), 'f.txt'), 'f\n');
    const tip = await repo.commitAll('side');
    await repo.run(['switch', '-q', 'main']);
    await repo.run(['merge', '--no-ff', '--no-commit', 'side']);
    const checkout = await openMainCheckout(repo.dir, repo.env);
    expect(await abortInterruptedTierMerge(checkout, new Set(['0'.repeat(40)]))).toEqual({ aborted: false, foreign: tip });
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBe(tip);
    expect(await abortInterruptedTierMerge(checkout, new Set([tip]))).toEqual({ aborted: true });
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBeUndefined();
    expect(await repo.git.status()).toEqual([]);
  });

  it('a merge killed before MERGE_HEAD: its files (each an IMPL tip\'s committed content) are put back; a user\'s change never is', async () => {
    const repo = await createTestRepo({ files: { 'src/shared.js': 'export const v = 1;\n' } });
    await repo.run(['switch', '-q', '-c', 'impl']);
    repo.write('src/new.js', 'export const n = 1;\n');
    repo.write('src/shared.js', 'export const v = 2;\n');
    const tip = await repo.commitAll('impl work');
    await repo.run(['switch', '-q', 'main']);
    const checkout = await openMainCheckout(repo.dir, repo.env);
    // What `git merge impl` had written when it was killed: the branch's files, no MERGE_HEAD.
    repo.write('src/new.js', 'export const n = 1;\n');
    repo.write('src/shared.js', 'export const v = 2;\n');
    expect((await restoreTornTierMerge(checkout, new Set([tip]))).sort()).toEqual(['src/new.js', 'src/shared.js']);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
    expect(repo.read('src/shared.js')).toBe('export const v = 1;\n');
    // A change that is not an IMPL tip's content: nothing is touched.
    repo.write('src/new.js', 'export const n = 1;\n');
    repo.write('src/shared.js', 'export const v = 3; // mine\n');
    expect(await restoreTornTierMerge(checkout, new Set([tip]))).toEqual([]);
    expect(repo.read('src/shared.js')).toBe('export const v = 3; // mine\n');
    expect(repo.read('src/new.js')).toBe('export const n = 1;\n');
  });
});
