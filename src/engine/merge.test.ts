import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../test/support/git-repo.js';
import { classifyConflict, mergeAgents, mergeLogPath, mergeMessage, readMergeLog, type MergeProgressEvent } from './merge.js';

/** main plus branches `a`, `b`, `c`, each with one commit on its own file (b and c may clash). */
async function repoWithBranches(options: { clash?: boolean } = {}): Promise<TestRepo> {
  const repo = await createTestRepo({ files: { 'shared.txt': 'line\n' } });
  for (const name of ['a', 'b', 'c']) {
    await repo.git.createBranch(name, 'main');
    await repo.git.checkout(name);
    repo.write(`${name}.txt`, `${name}\n`);
    if (options.clash && name !== 'a') repo.write('shared.txt', `changed by ${name}\n`);
    await repo.commitAll(`work ${name}`);
    await repo.git.checkout('main');
  }
  return repo;
}

const candidates = ['a', 'b', 'c'].map((name) => ({ agent: name.toUpperCase(), branch: name, task: `Task of ${name}\nsecond line` }));

describe('mergeAgents', () => {
  it('merges each branch with its own --no-ff merge commit, in order, and logs each one', async () => {
    const repo = await repoWithBranches();
    const before = await repo.git.headCommit();
    const logPath = mergeLogPath(repo.dir, 'demo', 1);
    const events: MergeProgressEvent[] = [];
    const result = await mergeAgents({ git: repo.git, targetBranch: 'main', wave: 1, agents: candidates, logPath, afterMerge: (event) => void events.push(event) });
    expect(result.success).toBe(true);
    expect(result.merged_count).toBe(3);
    expect(result.target_before).toBe(before);
    expect(result.target_after).toBe(await repo.git.headCommit());
    const subjects = (await repo.run(['log', '--merges', '--format=%s', '--reverse'])).trim().split('\n');
    expect(subjects).toEqual(['Merge a: Task of a', 'Merge b: Task of b', 'Merge c: Task of c']);
    const log = await readMergeLog(logPath);
    expect(log?.merges.map((entry) => entry.agent)).toEqual(['A', 'B', 'C']);
    for (const entry of log!.merges) {
      expect(await repo.run(['rev-parse', `${entry.merge_sha}^2`])).toBe(`${entry.tip}\n`);
    }
    expect(result.merges.every((item) => item.merge_sha && item.merge_sha.length === 40)).toBe(true);
    expect(events.map((event) => `${event.count}:${event.phase}`)).toEqual(['1:merged', '1:logged', '2:merged', '2:logged', '3:merged', '3:logged']);
  });

  it('E9: a re-run skips what is already in the target and merges only the rest', async () => {
    const repo = await repoWithBranches();
    await repo.run(['merge', '--no-ff', '-q', '-m', 'by hand', 'a']);
    const logPath = path.join(repo.root, 'log.json');
    const result = await mergeAgents({ git: repo.git, targetBranch: 'main', wave: 1, agents: candidates, logPath });
    expect(result.merges.map((item) => item.status)).toEqual(['already-merged', 'merged', 'merged']);
    expect(result.skipped_count).toBe(1);
    const log = JSON.parse(readFileSync(logPath, 'utf8')) as { merges: Array<{ agent: string; recovered?: boolean; merge_sha: string }> };
    expect(log.merges[0]).toMatchObject({ agent: 'A', recovered: true });
    expect(log.merges[0]!.merge_sha).toHaveLength(40);
    const again = await mergeAgents({ git: repo.git, targetBranch: 'main', wave: 1, agents: candidates, logPath });
    expect(again.merged_count).toBe(0);
    expect(again.target_after).toBe(again.target_before);
  });

  it('a conflict aborts that merge, leaves the target exactly as before it, stops, and explains (E12)', async () => {
    const repo = await repoWithBranches({ clash: true });
    const result = await mergeAgents({
      git: repo.git,
      targetBranch: 'main',
      wave: 1,
      agents: candidates,
      logPath: mergeLogPath(repo.dir, 'demo', 1),
      ownership: (file) => ({ agents: file === 'shared.txt' ? ['B'] : [], protocolOwned: false }),
    });
    expect(result.success).toBe(false);
    expect(result.merges.map((item) => item.status)).toEqual(['merged', 'merged', 'conflict']);
    const afterB = await repo.git.headCommit();
    expect(result.conflict).toMatchObject({ agent: 'C', branch: 'c', target_tip: afterB });
    expect(result.conflict?.paths).toEqual([expect.objectContaining({ path: 'shared.txt', kind: 'agent-owned', owners: ['B'] })]);
    expect(result.conflict?.explanation).toContain('exactly as before this merge');
    expect(result.conflict?.explanation).toContain('(A, B) stay merged');
    // Nothing half-merged: no MERGE_HEAD, clean tree, c's work not in main.
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBeUndefined();
    expect((await repo.git.status()).filter((entry) => !entry.path.startsWith('.polywave-state/'))).toEqual([]);
    expect(existsSync(repo.path('c.txt'))).toBe(false);
    expect(repo.read('shared.txt')).toBe('changed by b\n');
  });

  it('refuses a checkout that is not on the target, and a foreign merge in progress', async () => {
    const repo = await repoWithBranches({ clash: true });
    await repo.git.checkout('a');
    await expect(mergeAgents({ git: repo.git, targetBranch: 'main', wave: 1, agents: candidates, logPath: mergeLogPath(repo.dir, 'demo', 1) })).rejects.toThrow(/on a, not on the merge target main/);
    await repo.git.checkout('main');
    await repo.git.createBranch('foreign', 'main');
    await repo.git.checkout('foreign');
    repo.write('shared.txt', 'foreign\n');
    await repo.commitAll('foreign');
    await repo.git.checkout('main');
    await repo.run(['merge', '--no-ff', '-q', 'b']).catch(() => undefined);
    await repo.run(['merge', '--no-ff', 'foreign']).catch(() => undefined);
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBeDefined();
    await expect(mergeAgents({ git: repo.git, targetBranch: 'main', wave: 1, agents: candidates, logPath: mergeLogPath(repo.dir, 'demo', 1) })).rejects.toThrow(/a merge is already in progress/);
  });

  it('an interrupted merge of one of the wave branches is aborted and redone', async () => {
    const repo = await repoWithBranches();
    await repo.run(['merge', '--no-ff', '--no-commit', 'c']);
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBe(await repo.git.revParse('c'));
    const result = await mergeAgents({ git: repo.git, targetBranch: 'main', wave: 1, agents: candidates, logPath: mergeLogPath(repo.dir, 'demo', 1) });
    expect(result.success).toBe(true);
    expect(result.merged_count).toBe(3);
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBeUndefined();
  });

  it('messages and the E12 taxonomy', () => {
    expect(mergeMessage({ agent: 'A', branch: 'polywave/x/wave1-agent-A', task: `  ${'x'.repeat(80)}\nmore` })).toBe(`Merge polywave/x/wave1-agent-A: ${'x'.repeat(50)}`);
    expect(mergeMessage({ agent: 'A', branch: 'b' })).toBe('Merge b');
    expect(classifyConflict('docs/IMPL/IMPL-x.yaml', 'A', { agents: [], protocolOwned: true }).kind).toBe('orchestrator-owned');
    expect(classifyConflict('src/x.ts', 'A', { agents: ['B'], protocolOwned: false })).toMatchObject({ kind: 'agent-owned', owners: ['B'] });
    expect(classifyConflict('src/y.ts', 'A', { agents: [], protocolOwned: false }).kind).toBe('unowned');
  });
});
