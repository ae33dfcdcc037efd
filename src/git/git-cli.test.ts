import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../test/support/git-repo.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from './git-cli.js';
import { GitError } from './git-error.js';

const execFileAsync = promisify(execFile);

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-git-cli-')));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Resolves to the error a promise rejects with (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<PolywaveError> {
  try {
    await promise;
  } catch (error) {
    expect(PolywaveError.isInstance(error)).toBe(true);
    return error as PolywaveError;
  }
  throw new Error('expected the promise to reject');
}

/** main ← one commit; `feature` and `other` both change line 1 of f.txt. */
async function createDivergedRepo(): Promise<TestRepo> {
  const repo = await createTestRepo({ files: { 'f.txt': 'one\ntwo\nthree\n', 'g.txt': 'g\n' } });
  await repo.git.createBranch('feature', 'main');
  await repo.git.createBranch('other', 'main');
  await repo.git.checkout('feature');
  repo.write('f.txt', 'ONE\ntwo\nthree\n');
  repo.write('new file.txt', 'new\n');
  await repo.commitAll('feature');
  await repo.git.checkout('other');
  repo.write('f.txt', 'uno\ntwo\nthree\n');
  await repo.commitAll('other');
  await repo.git.checkout('main');
  return repo;
}

describe('version', () => {
  it('reads the real git version and accepts it', async () => {
    const repo = await createTestRepo();
    const version = await repo.git.version();
    expect(version.major).toBeGreaterThanOrEqual(2);
    expect(version.text).toMatch(/^git version /);
    await expect(repo.git.assertVersion()).resolves.toBeUndefined();
  });

  it('refuses a git older than 2.38 (fake git first on PATH)', async () => {
    const bin = path.join(scratch, 'old-git-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, 'git'), '#!/bin/sh\necho "git version 2.30.1"\n');
    chmodSync(path.join(bin, 'git'), 0o755);
    const git = createGit(scratch, { env: { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` } });
    expect(await git.version()).toMatchObject({ major: 2, minor: 30, patch: 1 });
    const error = await rejectionOf(git.assertVersion());
    expect(error.code).toBe('G000_GIT_TOO_OLD');
    expect(error.exitCode).toBe(2);
    expect(error.message).toBe('polywave needs git >= 2.38 (merge-tree --write-tree); found 2.30.1');
  });

  it('reports a missing git binary', async () => {
    const emptyBin = path.join(scratch, 'empty-bin');
    mkdirSync(emptyBin, { recursive: true });
    const error = await rejectionOf(createGit(scratch, { env: { PATH: emptyBin } }).version());
    expect(error.code).toBe('G000_GIT_MISSING');
    expect(error.exitCode).toBe(2);
  });
});

describe('repository layout', () => {
  it('answers isRepository and reports a non-repository with a clear coded error', async () => {
    const plain = path.join(scratch, 'plain');
    mkdirSync(plain, { recursive: true });
    const repo = await createTestRepo();
    expect(await repo.git.isRepository()).toBe(true);
    const git = createGit(plain, { env: { ...repo.env, GIT_CEILING_DIRECTORIES: scratch } });
    expect(await git.isRepository()).toBe(false);
    const error = await rejectionOf(git.headCommit());
    expect(error).toBeInstanceOf(GitError);
    expect(error.code).toBe('G000_NOT_A_REPOSITORY');
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain(`not a git repository: ${plain}`);
    const missing = createGit(path.join(scratch, 'does-not-exist'));
    expect(await missing.isRepository()).toBe(false);
    expect((await rejectionOf(missing.headCommit())).code).toBe('G000_NOT_A_REPOSITORY');
  });

  it('returns absolute top level, git dir and common dir for the main checkout and a linked worktree', async () => {
    const repo = await createTestRepo();
    expect(await repo.git.topLevel()).toBe(repo.dir);
    expect(await repo.git.gitDir()).toBe(path.join(repo.dir, '.git'));
    expect(await repo.git.commonDir()).toBe(path.join(repo.dir, '.git'));
    const worktree = repo.sibling('wt a');
    await repo.git.worktreeAdd({ path: worktree, branch: 'a', base: 'HEAD', createBranch: true });
    const linked = createGit(path.join(worktree), { env: repo.env });
    expect(await linked.topLevel()).toBe(worktree);
    expect(await linked.gitDir()).toBe(path.join(repo.dir, '.git', 'worktrees', 'wt-a')); // git sanitizes the name
    expect(await linked.commonDir()).toBe(path.join(repo.dir, '.git'));
    const fromSubdirectory = createGit(path.join(repo.dir, '.git'), { env: repo.env });
    expect(await fromSubdirectory.isRepository()).toBe(true);
  });
});

describe('refs', () => {
  it('resolves refs, answers undefined for missing ones, and names the current branch', async () => {
    const repo = await createTestRepo();
    const head = await repo.git.headCommit();
    expect(head).toMatch(/^[0-9a-f]{40}$/);
    expect(await repo.git.revParse('main')).toBe(head);
    expect(await repo.git.tryRevParse('main')).toBe(head);
    expect(await repo.git.tryRevParse('no-such-branch')).toBeUndefined();
    expect(await repo.git.revParse('HEAD^{tree}')).toMatch(/^[0-9a-f]{40}$/);
    const error = await rejectionOf(repo.git.revParse('no-such-branch'));
    expect(error).toBeInstanceOf(GitError);
    expect(error.code).toBe('G000_GIT_FAILED');
    expect((error as GitError).args).toContain('rev-parse');
    expect(await repo.git.currentBranch()).toBe('main');
    await repo.git.checkout(head);
    expect(await repo.git.currentBranch()).toBeUndefined();
    await expect(repo.git.revParse('--all')).rejects.toMatchObject({ code: 'X001_INVALID_INPUT' });
  });

  it('names an unborn branch', async () => {
    const repo = await createTestRepo({ initialCommit: false });
    expect(await repo.git.currentBranch()).toBe('main');
    expect(await repo.git.tryRevParse('HEAD')).toBeUndefined();
  });
});

describe('status and checkIgnore', () => {
  it('lists modified, staged, renamed and untracked files with awkward names, never ignored ones', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '*.log\nbuild/\n', 'tracked.txt': 'a\n', 'old name.txt': 'rename me\n' } });
    repo.write('tracked.txt', 'b\n');
    repo.write('with space.txt', 'x\n');
    repo.write('ünïcödé/日本.txt', 'x\n');
    repo.write('new\nline.txt', 'x\n');
    repo.write('debug.log', 'ignored\n');
    repo.write('build/out.js', 'ignored\n');
    repo.write('staged.txt', 'x\n');
    await repo.git.add(['staged.txt']);
    await repo.run(['mv', 'old name.txt', 'new name.txt']);
    const entries = await repo.git.status();
    const byPath = new Map(entries.map((entry) => [entry.path, entry]));
    expect(byPath.get('tracked.txt')?.code).toBe(' M');
    expect(byPath.get('staged.txt')?.code).toBe('A ');
    expect(byPath.get('with space.txt')?.code).toBe('??');
    expect(byPath.get('ünïcödé/日本.txt')?.code).toBe('??');
    expect(byPath.get('new\nline.txt')?.code).toBe('??');
    expect(byPath.get('new name.txt')).toEqual({ code: 'R ', path: 'new name.txt', from: 'old name.txt' });
    expect([...byPath.keys()].some((entryPath) => entryPath.endsWith('.log') || entryPath.startsWith('build'))).toBe(false);
    expect(entries).toHaveLength(6);
  });

  it('returns an empty status for a clean tree', async () => {
    const repo = await createTestRepo();
    expect(await repo.git.status()).toEqual([]);
  });

  it('returns the ignored subset of the given paths (none ignored is an answer)', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '*.log\nbuild/\n' } });
    expect(await repo.git.checkIgnore(['a.log', 'src/a.ts', 'build/x.js', 'dir with space/b.log', 'ü.log'])).toEqual(['a.log', 'build/x.js', 'dir with space/b.log', 'ü.log']);
    expect(await repo.git.checkIgnore(['src/a.ts'])).toEqual([]);
    expect(await repo.git.checkIgnore([])).toEqual([]);
  });
});

describe('worktrees', () => {
  it('adds, lists, removes and prunes worktrees', async () => {
    const repo = await createTestRepo();
    const head = await repo.git.headCommit();
    const first = repo.sibling('wave1 agent-A');
    const second = repo.sibling('wave1-agent-B');
    await repo.git.worktreeAdd({ path: first, branch: 'polywave/x/wave1-agent-A', base: 'HEAD', createBranch: true });
    await repo.git.createBranch('existing', 'HEAD');
    await repo.git.worktreeAdd({ path: second, branch: 'existing', base: 'unused', createBranch: false });
    const list = await repo.git.worktreeList();
    expect(list).toEqual([
      { path: repo.dir, head, branch: 'main', bare: false, detached: false, locked: false, prunable: false },
      { path: first, head, branch: 'polywave/x/wave1-agent-A', bare: false, detached: false, locked: false, prunable: false },
      { path: second, head, branch: 'existing', bare: false, detached: false, locked: false, prunable: false },
    ]);

    await repo.git.worktreeRemove(second);
    expect(existsSync(second)).toBe(false);

    rmSync(first, { recursive: true, force: true });
    expect((await repo.git.worktreeList()).find((entry) => entry.path === first)?.prunable).toBe(true);
    await repo.git.worktreePrune();
    expect((await repo.git.worktreeList()).map((entry) => entry.path)).toEqual([repo.dir]);
  });

  it('lists detached and locked worktrees', async () => {
    const repo = await createTestRepo();
    const detached = repo.sibling('detached');
    await repo.run(['worktree', 'add', '--detach', '--lock', detached, 'HEAD']);
    const entry = (await repo.git.worktreeList()).find((candidate) => candidate.path === detached);
    expect(entry).toMatchObject({ detached: true, locked: true });
    expect(entry?.branch).toBeUndefined();
  });

  it('refuses to remove a worktree with uncommitted changes unless forced', async () => {
    const repo = await createTestRepo();
    const worktree = repo.sibling('dirty');
    await repo.git.worktreeAdd({ path: worktree, branch: 'dirty', base: 'HEAD', createBranch: true });
    writeFileSync(path.join(worktree, 'README.md'), 'changed\n');
    const error = await rejectionOf(repo.git.worktreeRemove(worktree));
    expect(error).toBeInstanceOf(GitError);
    expect(error.code).toBe('G008_WORKTREE_REMOVE_FAILED');
    expect(existsSync(path.join(worktree, 'README.md'))).toBe(true);
    writeFileSync(path.join(worktree, 'untracked.txt'), 'x\n');
    await expect(repo.git.worktreeRemove(worktree)).rejects.toMatchObject({ code: 'G008_WORKTREE_REMOVE_FAILED' });
    await repo.git.worktreeRemove(worktree, { force: true });
    expect(existsSync(worktree)).toBe(false);
  });

  it('fails with G004 when the branch exists and G001 for other failures', async () => {
    const repo = await createTestRepo();
    await repo.git.createBranch('taken', 'HEAD');
    const branchError = await rejectionOf(repo.git.worktreeAdd({ path: repo.sibling('a'), branch: 'taken', base: 'HEAD', createBranch: true }));
    expect(branchError.code).toBe('G004_BRANCH_EXISTS');
    const occupied = repo.sibling('occupied');
    mkdirSync(occupied);
    writeFileSync(path.join(occupied, 'file'), 'x');
    const createError = await rejectionOf(repo.git.worktreeAdd({ path: occupied, branch: 'fresh', base: 'HEAD', createBranch: true }));
    expect(createError).toBeInstanceOf(GitError);
    expect(createError.code).toBe('G001_WORKTREE_CREATE_FAILED');
    expect((createError as GitError).stderr).toContain('already exists');
  });
});

describe('branches', () => {
  it('creates, finds, lists and deletes merged branches; refuses unmerged ones', async () => {
    const repo = await createTestRepo();
    const head = await repo.git.headCommit();
    await repo.git.createBranch('polywave/x/wave1-agent-A', 'main');
    await repo.git.createBranch('polywave/x/wave1-agent-B', 'main');
    await repo.git.createBranch('polywave/y/wave1-agent-A', 'main');
    expect(await repo.git.branchExists('polywave/x/wave1-agent-A')).toBe(true);
    expect(await repo.git.branchExists('polywave/x/wave1-agent-C')).toBe(false);
    expect(await repo.git.branchExists('HEAD')).toBe(false);
    await expect(repo.git.createBranch('polywave/x/wave1-agent-A', 'main')).rejects.toMatchObject({ code: 'G004_BRANCH_EXISTS' });

    expect(await repo.git.listBranches('polywave/x')).toEqual([
      { name: 'polywave/x/wave1-agent-A', commit: head },
      { name: 'polywave/x/wave1-agent-B', commit: head },
    ]);
    expect((await repo.git.listBranches('polywave/*/wave1-agent-A')).map((branch) => branch.name)).toEqual(['polywave/x/wave1-agent-A', 'polywave/y/wave1-agent-A']);
    expect((await repo.git.listBranches()).map((branch) => branch.name)).toEqual(['main', 'polywave/x/wave1-agent-A', 'polywave/x/wave1-agent-B', 'polywave/y/wave1-agent-A']);

    await repo.git.deleteMergedBranch('polywave/x/wave1-agent-B');
    expect(await repo.git.branchExists('polywave/x/wave1-agent-B')).toBe(false);

    await repo.git.checkout('polywave/x/wave1-agent-A');
    repo.write('agent.txt', 'work\n');
    const work = await repo.commitAll('agent work');
    await repo.git.checkout('main');
    const error = await rejectionOf(repo.git.deleteMergedBranch('polywave/x/wave1-agent-A'));
    expect(error).toBeInstanceOf(GitError);
    expect((error as GitError).stderr).toContain('not fully merged');
    expect(await repo.git.revParse('polywave/x/wave1-agent-A')).toBe(work);
  });
});

describe('history queries', () => {
  it('answers is-ancestor, merge-base and rev-list counts', async () => {
    const repo = await createDivergedRepo();
    const base = await repo.git.revParse('main');
    expect(await repo.git.isAncestor('main', 'feature')).toBe(true);
    expect(await repo.git.isAncestor('feature', 'main')).toBe(false);
    expect(await repo.git.mergeBase('feature', 'other')).toBe(base);
    expect(await repo.git.revListCount('main..feature')).toBe(1);
    expect(await repo.git.revListCount('feature..main')).toBe(0);
    expect(await repo.git.revListCount('main')).toBe(1);
    await expect(repo.git.isAncestor('main', 'no-such')).rejects.toBeInstanceOf(GitError);

    await repo.run(['checkout', '--quiet', '--orphan', 'unrelated']);
    await repo.commitAll('unrelated root');
    expect(await repo.git.mergeBase('unrelated', 'main')).toBeUndefined();
  });

  it('lists changed files by name and by status', async () => {
    const repo = await createTestRepo({ files: { 'keep.txt': 'k\n', 'gone.txt': 'g\n', 'move me.txt': 'a fairly long line so rename detection is sure\n', 'src/a.ts': 'a\n' } });
    const before = await repo.git.headCommit();
    repo.write('keep.txt', 'changed\n');
    repo.remove('gone.txt');
    repo.remove('move me.txt');
    repo.write('moved ü.txt', 'a fairly long line so rename detection is sure\n');
    repo.write('src/b c.ts', 'b\n');
    const after = await repo.commitAll('changes');

    expect(await repo.git.diffNameOnly(`${before}..${after}`)).toEqual(['gone.txt', 'keep.txt', 'move me.txt', 'moved ü.txt', 'src/b c.ts']);
    expect(await repo.git.diffNameOnly(`${before}..${after}`, { paths: ['src', 'keep.txt'] })).toEqual(['keep.txt', 'src/b c.ts']);
    expect(await repo.git.diffNameStatus(`${before}..${after}`)).toEqual([
      { status: 'D', path: 'gone.txt' },
      { status: 'M', path: 'keep.txt' },
      { status: 'R100', path: 'moved ü.txt', from: 'move me.txt' },
      { status: 'A', path: 'src/b c.ts' },
    ]);

    repo.write('keep.txt', 'uncommitted\n');
    expect(await repo.git.diffNameOnly('HEAD')).toEqual(['keep.txt']);
  });
});

describe('mergeTree', () => {
  it('reports a clean merge with its tree', async () => {
    const repo = await createDivergedRepo();
    const result = await repo.git.mergeTree(undefined, 'main', 'feature');
    expect(result).toEqual({ clean: true, tree: await repo.git.revParse('feature^{tree}'), conflictedPaths: [], messages: [] });
  });

  it('reports conflicts with paths and messages, and touches no working tree', async () => {
    const repo = await createDivergedRepo();
    const result = await repo.git.mergeTree(undefined, 'feature', 'other');
    expect(result.clean).toBe(false);
    expect(result.tree).toMatch(/^[0-9a-f]{40}$/);
    expect(result.conflictedPaths).toEqual(['f.txt']);
    expect(result.messages).toContain('CONFLICT (content): Merge conflict in f.txt');
    expect(await repo.git.status()).toEqual([]);
  });

  it('uses an explicit merge base', async () => {
    const repo = await createDivergedRepo();
    // With `feature` itself as the base, merging feature→other is "take other": clean.
    const withBase = await repo.git.mergeTree('feature', 'feature', 'other');
    expect(withBase.clean).toBe(true);
    expect(withBase.tree).toBe(await repo.git.revParse('other^{tree}'));
    const withNaturalBase = await repo.git.mergeTree('main', 'feature', 'other');
    expect(withNaturalBase.conflictedPaths).toEqual(['f.txt']);
  });
});

describe('mergeNoFf', () => {
  it('creates a merge commit and returns its SHA', async () => {
    const repo = await createDivergedRepo();
    const before = await repo.git.headCommit();
    const merged = await repo.git.mergeNoFf('feature', { message: 'Merge polywave/x/wave1-agent-A: feature', env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
    expect(merged).toBe(await repo.git.headCommit());
    expect(merged).not.toBe(before);
    const parents = (await repo.run(['log', '-1', '--format=%P%n%s', merged])).trim().split('\n');
    expect(parents[0]).toBe(`${before} ${await repo.git.revParse('feature')}`);
    expect(parents[1]).toBe('Merge polywave/x/wave1-agent-A: feature');
    expect(await repo.git.isAncestor('feature', 'HEAD')).toBe(true);
  });

  it('aborts a conflicting merge, leaves the target unchanged and reports G002 with the paths', async () => {
    const repo = await createDivergedRepo();
    await repo.git.mergeNoFf('feature', { message: 'merge feature' });
    const before = await repo.git.headCommit();
    const error = await rejectionOf(repo.git.mergeNoFf('other', { message: 'merge other' }));
    expect(error).toBeInstanceOf(GitError);
    expect(error.code).toBe('G002_MERGE_CONFLICT');
    expect(error.exitCode).toBe(1);
    expect(error.details.conflicted_paths).toEqual(['f.txt']);
    expect(error.details.messages).toEqual(['CONFLICT (content): Merge conflict in f.txt']);
    expect(await repo.git.headCommit()).toBe(before);
    expect(await repo.git.status()).toEqual([]);
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBeUndefined();
    expect(repo.read('f.txt')).toBe('ONE\ntwo\nthree\n');
  });

  it('fails without a conflict code when git refuses to start the merge', async () => {
    const repo = await createDivergedRepo();
    repo.write('f.txt', 'local edit\n');
    const error = await rejectionOf(repo.git.mergeNoFf('feature', { message: 'merge feature' }));
    expect(error.code).toBe('G000_GIT_FAILED');
    expect(repo.read('f.txt')).toBe('local edit\n');
  });

  it('mergeAbort fails when no merge is in progress', async () => {
    const repo = await createTestRepo();
    await expect(repo.git.mergeAbort()).rejects.toBeInstanceOf(GitError);
  });
});

describe('showFile', () => {
  it('returns file content at a ref, undefined for a missing path, and throws for a missing ref', async () => {
    const repo = await createTestRepo({ files: { 'dir/a file é.txt': 'content\n' } });
    const first = await repo.git.headCommit();
    repo.write('dir/a file é.txt', 'changed\n');
    repo.write('later.txt', 'later\n');
    await repo.commitAll('second');
    expect(await repo.git.showFile(first, 'dir/a file é.txt')).toBe('content\n');
    expect(await repo.git.showFile('HEAD', 'dir/a file é.txt')).toBe('changed\n');
    expect(await repo.git.showFile(first, 'later.txt')).toBeUndefined(); // exists on disk, not at ref
    expect(await repo.git.showFile('HEAD', 'nowhere/missing.txt')).toBeUndefined();
    await expect(repo.git.showFile('no-such-ref', 'later.txt')).rejects.toBeInstanceOf(GitError);
  });
});

describe('add, commit, checkout', () => {
  it('stages and commits with extra env, only the given paths; no repository hook ever runs (X25-03/04/06)', async () => {
    const repo = await createTestRepo();
    const hooks = await repo.git.hooksPath();
    mkdirSync(hooks, { recursive: true });
    const ran = repo.path('.git/hook-ran');
    for (const name of ['pre-commit', 'commit-msg', 'post-commit', 'post-index-change', 'reference-transaction']) {
      writeFileSync(path.join(hooks, name), `#!/bin/sh\necho ${name} >> ${JSON.stringify(ran)}\n[ "$POLYWAVE_ALLOW_MAIN_COMMIT" = "1" ] || exit 1\n`);
      chmodSync(path.join(hooks, name), 0o755);
    }

    repo.write('a b.txt', 'a\n');
    repo.write('ü.txt', 'u\n');
    repo.write('other.txt', 'o\n');
    await repo.git.add(['a b.txt', 'ü.txt', 'other.txt']);
    // The same commit with the user's own git: the hooks run (and refuse it).
    await expect(execFileAsync('git', ['commit', '-q', '-m', 'refused'], { cwd: repo.dir, env: { ...process.env, ...repo.env } })).rejects.toThrow();
    expect(readFileSync(ran, 'utf8')).toContain('pre-commit');
    rmSync(ran);

    const sha = await repo.git.commit({
      message: 'add two files\n\nbody line',
      paths: ['a b.txt', 'ü.txt'],
      env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1', GIT_AUTHOR_DATE: '2001-02-03T04:05:06Z' },
    });
    expect(sha).toBe(await repo.git.headCommit());
    expect(await repo.run(['log', '-1', '--format=%aI|%B', sha])).toBe('2001-02-03T04:05:06+00:00|add two files\n\nbody line\n\n');
    expect(await repo.git.diffNameOnly(`${sha}~1..${sha}`)).toEqual(['a b.txt', 'ü.txt']);
    expect(await repo.git.status()).toEqual([{ code: 'A ', path: 'other.txt' }]);

    const bookkeeping = await repo.git.commit({ message: 'bookkeeping', noVerify: true });
    expect(await repo.git.diffNameOnly(`${bookkeeping}~1..${bookkeeping}`)).toEqual(['other.txt']);
    const empty = await repo.git.commit({ message: 'empty', allowEmpty: true, noVerify: true });
    expect(await repo.git.revParse('HEAD~1')).toBe(bookkeeping);
    expect(empty).not.toBe(bookkeeping);
    await expect(repo.git.commit({ message: 'nothing', noVerify: true })).rejects.toBeInstanceOf(GitError);
    await repo.git.run(['branch', 'side']);
    await repo.git.run(['update-ref', 'refs/heads/side', 'HEAD~1']);
    expect(existsSync(ran), 'a hook ran in a git command of the port').toBe(false);
  });

  it('adds ignored files only with force, and treats paths literally', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '*.log\n' } });
    repo.write('x.log', 'x\n');
    await expect(repo.git.add(['x.log'])).rejects.toBeInstanceOf(GitError);
    await repo.git.add(['x.log'], { force: true });
    repo.write('[a].txt', 'literal\n');
    repo.write('a.txt', 'glob would match this\n');
    await repo.git.add(['[a].txt']);
    expect(await repo.git.status()).toEqual([
      { code: 'A ', path: '[a].txt' },
      { code: 'A ', path: 'x.log' },
      { code: '??', path: 'a.txt' },
    ]);
  });

  it('checks out a branch even when a file has the same name', async () => {
    const repo = await createTestRepo({ files: { feature: 'a file named like the branch\n' } });
    await repo.git.createBranch('feature', 'HEAD');
    await repo.git.checkout('feature');
    expect(await repo.git.currentBranch()).toBe('feature');
    await expect(repo.git.checkout('no-such-branch')).rejects.toBeInstanceOf(GitError);
  });
});

describe('hooksPath and config', () => {
  it('uses <common dir>/hooks by default, also from a linked worktree', async () => {
    const repo = await createTestRepo();
    expect(await repo.git.hooksPath()).toBe(path.join(repo.dir, '.git', 'hooks'));
    const worktree = repo.sibling('wt');
    await repo.git.worktreeAdd({ path: worktree, branch: 'wt', base: 'HEAD', createBranch: true });
    expect(await createGit(worktree, { env: repo.env }).hooksPath()).toBe(path.join(repo.dir, '.git', 'hooks'));
  });

  it('honours core.hooksPath, relative values against the worktree top level', async () => {
    const repo = await createTestRepo();
    await repo.git.configSet('core.hooksPath', '.githooks');
    expect(await repo.git.configGet('core.hooksPath')).toBe('.githooks');
    expect(await repo.git.hooksPath()).toBe(path.join(repo.dir, '.githooks'));
    const worktree = repo.sibling('wt');
    await repo.git.worktreeAdd({ path: worktree, branch: 'wt', base: 'HEAD', createBranch: true });
    expect(await createGit(worktree, { env: repo.env }).hooksPath()).toBe(path.join(worktree, '.githooks'));
    mkdirSync(path.join(worktree, 'sub'));
    expect(await createGit(path.join(worktree, 'sub'), { env: repo.env }).hooksPath()).toBe(path.join(worktree, '.githooks'));
    const absolute = path.join(repo.root, 'shared hooks');
    await repo.git.configSet('core.hooksPath', absolute);
    expect(await repo.git.hooksPath()).toBe(absolute);
  });

  it('reads and writes config; --worktree enables extensions.worktreeConfig when needed', async () => {
    const repo = await createTestRepo();
    expect(await repo.git.configGet('polywave.missing')).toBeUndefined();
    await repo.git.configSet('polywave.value', 'with space and ü');
    expect(await repo.git.configGet('polywave.value')).toBe('with space and ü');

    const worktree = repo.sibling('agent');
    await repo.git.worktreeAdd({ path: worktree, branch: 'agent', base: 'HEAD', createBranch: true });
    const linked = createGit(worktree, { env: repo.env });
    await linked.configSet('core.hooksPath', path.join(worktree, '.polywave-hooks'), { worktree: true });
    expect(await repo.git.configGet('extensions.worktreeConfig')).toBe('true');
    expect(await linked.configGet('core.hooksPath')).toBe(path.join(worktree, '.polywave-hooks'));
    expect(await linked.hooksPath()).toBe(path.join(worktree, '.polywave-hooks'));
    expect(await repo.git.configGet('core.hooksPath')).toBeUndefined();
    expect(await repo.git.hooksPath()).toBe(path.join(repo.dir, '.git', 'hooks'));
  });
});

describe('run', () => {
  it('returns stdout, stderr and exit code; allowed exit codes are answers', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '*.log\n' } });
    const result = await repo.git.run(['check-ignore', '--stdin'], { input: 'a.txt\n', allowExitCodes: [1] });
    expect(result).toEqual({ stdout: '', stderr: '', exitCode: 1 });
    const error = await rejectionOf(repo.git.run(['no-such-command']));
    expect(error).toBeInstanceOf(GitError);
    expect((error as GitError).gitExitCode).toBe(1);
    expect(error.details).toMatchObject({ args: ['no-such-command'], cwd: repo.dir });
  });

  it('stops when the signal aborts', async () => {
    const repo = await createTestRepo();
    const controller = new AbortController();
    controller.abort();
    await expect(repo.git.run(['status'], { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('withConfig (issue 11: pinned configuration)', () => {
  it('lays `-c key=value` over every command, read before each one, on top of the instance it came from', async () => {
    const repo = await createTestRepo();
    await repo.run(['config', 'core.hooksPath', '/from/the/repository']);
    let hooks = '/pinned/one';
    const pinned = repo.git.withConfig(() => ({ 'core.hooksPath': hooks }));
    expect(pinned.cwd).toBe(repo.git.cwd);
    expect(await pinned.configGet('core.hooksPath')).toBe('/pinned/one');
    hooks = '/pinned/two';
    expect(await pinned.configGet('core.hooksPath')).toBe('/pinned/two');
    const layered = pinned.withConfig(() => ({ 'core.fsmonitor': 'false' }));
    expect(await layered.configGet('core.hooksPath')).toBe('/pinned/two');
    expect(await layered.configGet('core.fsmonitor')).toBe('false');
    // The unpinned instance and the repository's config are untouched.
    expect(await repo.git.configGet('core.hooksPath')).toBe('/from/the/repository');
  });

  it('a pinned hooks path decides which hooks a merge runs', async () => {
    const repo = await createDivergedRepo();
    const marker = path.join(repo.root, 'hook-ran');
    writeFileSync(repo.path('.git/hooks/post-merge'), `#!/bin/sh\necho ran >> "${marker}"\n`, { mode: 0o755 });
    await repo.git.withConfig(() => ({ 'core.hooksPath': os.devNull })).mergeNoFf('feature', { message: 'merge feature' });
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a key that would be read as an option or an assignment (coded, exit 2)', async () => {
    const repo = await createTestRepo();
    const error = await rejectionOf(repo.git.withConfig(() => ({ '--exec-path': '/x' })).headCommit());
    expect(error.code).toBe('X001_INVALID_INPUT');
    expect(error.exitCode).toBe(2);
  });
});
