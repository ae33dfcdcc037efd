// The caches of src/store/trusted-config.ts (issue 12 item 5: fewer git processes per tier): a
// directory's repository (and "not a repository") by the `.git` identity / the chain of directories
// up to /, and a committed config by its commit id (HEAD read from the ref files). Each cache must
// give the new answer as soon as the thing it depends on changes; PATH emptied shows an answer came
// from the cache (no git could have been started).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrustedConfigText, repositoryOf } from '../src/store/trusted-config.js';

const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-trusted-cache-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

/** Runs `read` with no git reachable: it must answer from the caches. */
async function withoutGit<T>(read: () => Promise<T>): Promise<T> {
  const saved = process.env.PATH;
  process.env.PATH = path.join(root, 'no-bin');
  try {
    return await read();
  } finally {
    process.env.PATH = saved;
  }
}

describe('trusted-config caches', () => {
  it('a new commit, a rewritten ref, a replace ref, a new repository above and a new .git each give the new answer', async () => {
    const repo = path.join(root, 'repo');
    mkdirSync(repo);
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, 'polywave.config.json'), '{"dispatch":{"a":1}}\n');
    git(repo, 'add', 'polywave.config.json');
    git(repo, 'commit', '-q', '-m', 'a');
    const first = git(repo, 'rev-parse', 'HEAD');

    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"a":1}}\n');
    // Cached: same answer with no git at all (location by the .git identity, text by HEAD's commit id).
    expect((await withoutGit(() => readTrustedConfigText(repo))).text).toBe('{"dispatch":{"a":1}}\n');

    // Commit a new config: HEAD's ref file names a new commit.
    writeFileSync(path.join(repo, 'polywave.config.json'), '{"dispatch":{"b":2}}\n');
    git(repo, 'commit', '-q', '-am', 'b');
    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"b":2}}\n');

    // Rewrite the ref back (update-ref): the old commit's config again.
    git(repo, 'update-ref', 'refs/heads/main', first);
    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"a":1}}\n');

    // Packed refs and a detached HEAD: git is asked (and answers right).
    git(repo, 'reset', '-q', '--hard');
    git(repo, 'pack-refs', '--all');
    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"a":1}}\n');
    git(repo, 'checkout', '-q', '--detach', 'main');
    git(repo, 'commit', '-q', '--allow-empty', '-m', 'c');
    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"a":1}}\n');
    git(repo, 'checkout', '-q', 'main');

    // A replace ref changes what the same commit id shows: nothing is kept while one exists.
    const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo, env: gitEnv, input: '{"dispatch":{"replaced":3}}\n', encoding: 'utf8' }).trim();
    git(repo, 'replace', git(repo, 'rev-parse', `${first}:polywave.config.json`), blob);
    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"replaced":3}}\n');
    git(repo, 'replace', '-d', git(repo, 'rev-parse', `${first}:polywave.config.json`));
    expect((await readTrustedConfigText(repo)).text).toBe('{"dispatch":{"a":1}}\n');

    // "Not a repository", kept by the chain of directories up to /: a repository made above, then a .git in it.
    const outer = path.join(root, 'outer');
    const inner = path.join(outer, 'inner');
    mkdirSync(inner, { recursive: true });
    expect(await repositoryOf(inner)).toBeUndefined();
    expect(await withoutGit(() => repositoryOf(inner))).toBeUndefined();
    git(outer, 'init', '-q', '-b', 'main');
    expect((await repositoryOf(inner))?.toplevel).toBe(outer);
    // A repository of its own, cached by its .git identity; the .git removed, then made again (a new identity).
    const solo = path.join(root, 'solo');
    mkdirSync(solo);
    git(solo, 'init', '-q', '-b', 'main');
    expect((await repositoryOf(solo))?.toplevel).toBe(solo);
    expect((await withoutGit(() => repositoryOf(solo)))?.toplevel).toBe(solo);
    rmSync(path.join(solo, '.git'), { recursive: true });
    expect(await repositoryOf(solo)).toBeUndefined();
    git(solo, 'init', '-q', '-b', 'main');
    expect((await repositoryOf(solo))?.commonDir).toBe(path.join(solo, '.git'));
    // A worktree: its `.git` file; removed and the directory made plain, the answer follows.
    const worktree = path.join(root, 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'wt', worktree);
    expect((await repositoryOf(worktree))?.toplevel).toBe(worktree);
    expect((await withoutGit(() => repositoryOf(worktree)))?.commonDir).toBe(path.join(repo, '.git'));
    git(repo, 'worktree', 'remove', '--force', worktree);
    mkdirSync(worktree);
    expect(await repositoryOf(worktree)).toBeUndefined();
  });
});
