// The listing cache of src/git/config-origins.ts (issue 12 item 5): a checkout's `git config --list
// --show-origin` is reused while every file it depends on is unchanged. Each change below — the
// repository's config, an include target that did not exist, HEAD for an `onbranch:` include —
// must give the new answer; a counting `git` first on PATH shows which checks asked git.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configFilesInWorkingTrees, setConfigListingSettleNsForTests } from '../src/git/config-origins.js';

const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-origins-cache-')));
afterAll(() => {
  setConfigListingSettleNsForTests(1_000_000_000n);
  rmSync(root, { recursive: true, force: true });
});

describe('config listing cache', () => {
  it('a config edit, a new include target and a HEAD switch (onbranch) each list again and give the new findings', async () => {
    // Files changed in this same second must count as settled here (the real window is 1 s; no sleeps in tests).
    setConfigListingSettleNsForTests(0n);
    const bin = path.join(root, 'bin');
    const log = path.join(root, 'git.log');
    mkdirSync(bin);
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(path.join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${realGit}' "$@"\n`);
    chmodSync(path.join(bin, 'git'), 0o755);
    const home = path.join(root, 'home');
    mkdirSync(home);
    const env = { PATH: `${bin}:${process.env.PATH}`, HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: path.join(home, 'gitconfig') };
    const repo = path.join(root, 'repo');
    mkdirSync(repo);
    const git = (...args: string[]) => execFileSync(realGit, args, { cwd: repo, env: { ...env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' }, encoding: 'utf8' });
    git('init', '-q', '-b', 'main');
    git('commit', '-q', '--allow-empty', '-m', 'first');
    const commonDir = path.join(repo, '.git');
    const listings = () => readFileSync(log, 'utf8').split('\n').filter((line) => line.includes('config --list')).length;
    const check = async () => (await configFilesInWorkingTrees({ root: repo, commonDir, env })).map((finding) => finding.file);

    expect(await check()).toEqual([]);
    expect(await check()).toEqual([]);
    expect(listings()).toBe(1); // the second check used the kept listing

    // The repository's config gains an include of a file outside the tree that does not exist yet.
    const outside = path.join(root, 'outside.cfg');
    git('config', 'include.path', outside);
    expect(await check()).toEqual([]);
    expect(listings()).toBe(2);
    // The include target is written, including a tree file: found at once.
    writeFileSync(outside, `[include]\n\tpath = ${path.join(repo, '.evil')}\n`);
    expect(await check()).toEqual([path.join(repo, '.evil')]);
    expect(listings()).toBe(3);
    rmSync(outside);
    expect(await check()).toEqual([]);

    // onbranch: the include of a file outside that includes a tree file matters only on `feature`.
    const branchFile = path.join(root, 'branch.cfg');
    writeFileSync(branchFile, `[include]\n\tpath = ${path.join(repo, '.branch-evil')}\n`);
    git('config', 'includeIf.onbranch:feature.path', branchFile);
    expect(await check()).toEqual([]);
    const before = listings();
    expect(await check()).toEqual([]);
    expect(listings()).toBe(before);
    git('checkout', '-q', '-b', 'feature');
    expect(await check()).toEqual([path.join(repo, '.branch-evil')]);
    // The global file git reads (GIT_CONFIG_GLOBAL), missing until now.
    git('checkout', '-q', 'main');
    expect(await check()).toEqual([]);
    appendFileSync(env.GIT_CONFIG_GLOBAL, `[include]\n\tpath = ${path.join(repo, '.global-evil')}\n`);
    expect(await check()).toEqual([path.join(repo, '.global-evil')]);
  });
});
