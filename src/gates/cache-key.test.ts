import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { computeWorkspaceFingerprint, gateCacheKey, gitRunnerFromPort } from './cache-key.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
}

function makeRepo(): string {
  const root = path.join(makeTempDir('polywave-key-'), 'repo');
  mkdirSync(path.join(root, 'pkg'), { recursive: true });
  git(root, 'init', '--quiet', '--initial-branch=main');
  git(root, 'config', 'user.name', 'Polywave Test');
  git(root, 'config', 'user.email', 'test@polywave.invalid');
  git(root, 'config', 'commit.gpgsign', 'false');
  writeFileSync(path.join(root, 'pkg', 'a.txt'), 'alpha\n');
  writeFileSync(path.join(root, 'run.sh'), 'echo hi\n');
  git(root, 'add', '.');
  git(root, 'commit', '--quiet', '-m', 'initial');
  return root;
}

async function digest(dir: string): Promise<string> {
  return (await computeWorkspaceFingerprint(dir)).digest;
}

describe('computeWorkspaceFingerprint', () => {
  it('is stable when nothing changes, and the same from a subdirectory', async () => {
    const repo = makeRepo();
    const first = await computeWorkspaceFingerprint(repo);
    expect(first.root).toBe(repo);
    expect(first.head).toBe(git(repo, 'rev-parse', 'HEAD').trim());
    expect(await digest(repo)).toBe(first.digest);
    const fromSub = await computeWorkspaceFingerprint(path.join(repo, 'pkg'));
    expect(fromSub).toEqual(first);
  });

  it('changes with every kind of change, and comes back when the change is undone', async () => {
    const repo = makeRepo();
    const seen = new Set<string>();
    const expectNew = async (): Promise<void> => {
      const value = await digest(repo);
      expect(seen.has(value)).toBe(false);
      seen.add(value);
    };
    await expectNew();
    const clean = [...seen][0]!;

    writeFileSync(path.join(repo, 'pkg', 'a.txt'), 'alphb\n'); // same size
    await expectNew();
    writeFileSync(path.join(repo, 'pkg', 'a.txt'), 'alpha\n'); // undone
    expect(await digest(repo)).toBe(clean);

    chmodSync(path.join(repo, 'run.sh'), 0o755); // mode only
    await expectNew();
    chmodSync(path.join(repo, 'run.sh'), 0o644);
    expect(await digest(repo)).toBe(clean);

    rmSync(path.join(repo, 'run.sh')); // unstaged deletion
    await expectNew();
    git(repo, 'checkout', '--', 'run.sh');
    expect(await digest(repo)).toBe(clean);

    writeFileSync(path.join(repo, 'pkg', 'a.txt'), 'staged\n');
    git(repo, 'add', 'pkg/a.txt');
    await expectNew();
    writeFileSync(path.join(repo, 'pkg', 'a.txt'), 'staged then edited\n');
    await expectNew();
    git(repo, 'reset', '--quiet', '--hard');
    expect(await digest(repo)).toBe(clean);

    writeFileSync(path.join(repo, 'pkg', 'new.txt'), 'n\n'); // untracked
    await expectNew();
    writeFileSync(path.join(repo, 'pkg', 'new.txt'), 'm\n'); // untracked, edited
    await expectNew();
    rmSync(path.join(repo, 'pkg', 'new.txt'));
    symlinkSync('a.txt', path.join(repo, 'pkg', 'link')); // untracked symlink
    await expectNew();
    rmSync(path.join(repo, 'pkg', 'link'));
    expect(await digest(repo)).toBe(clean);

    // Runtime state and ignored files do not count.
    mkdirSync(path.join(repo, '.polywave-state', 'gates'), { recursive: true });
    writeFileSync(path.join(repo, '.polywave-state', 'gate-cache.json'), '{}');
    writeFileSync(path.join(repo, '.polywave-state', 'gates', 'x.log'), 'log');
    writeFileSync(path.join(repo, '.gitignore'), 'dist/\n');
    git(repo, 'add', '.gitignore');
    git(repo, 'commit', '--quiet', '-m', 'ignore dist');
    const committed = await digest(repo);
    expect(committed).not.toBe(clean); // a new commit
    mkdirSync(path.join(repo, 'dist'));
    writeFileSync(path.join(repo, 'dist', 'bundle.js'), 'x');
    expect(await digest(repo)).toBe(committed);
  });

  it('works before the first commit and throws outside a repository', async () => {
    const root = path.join(makeTempDir('polywave-key-'), 'fresh');
    mkdirSync(root);
    git(root, 'init', '--quiet');
    writeFileSync(path.join(root, 'a'), 'a');
    const fingerprint = await computeWorkspaceFingerprint(root);
    expect(fingerprint.head).toBe('unborn');
    await expect(computeWorkspaceFingerprint(makeTempDir('polywave-not-git-'))).rejects.toThrow();
  });

  it('works in a linked worktree (.git is a file)', async () => {
    const repo = makeRepo();
    const linked = path.join(path.dirname(repo), 'linked');
    git(repo, 'worktree', 'add', '--quiet', '-b', 'side', linked);
    const fingerprint = await computeWorkspaceFingerprint(linked);
    expect(fingerprint.root).toBe(linked);
    writeFileSync(path.join(linked, 'pkg', 'a.txt'), 'changed in worktree\n');
    expect(await digest(linked)).not.toBe(fingerprint.digest);
  });
});

describe('gateCacheKey', () => {
  it('depends on the fingerprint, the command and the directory', () => {
    const fingerprint = { root: '/r', head: 'h', digest: 'd' };
    const key = gateCacheKey(fingerprint, 'npm test', '/r');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(gateCacheKey(fingerprint, 'npm test', '/r')).toBe(key);
    expect(gateCacheKey(fingerprint, 'npm test -- --ci', '/r')).not.toBe(key);
    expect(gateCacheKey(fingerprint, 'npm test', '/r/sub')).not.toBe(key);
    expect(gateCacheKey({ ...fingerprint, digest: 'e' }, 'npm test', '/r')).not.toBe(key);
  });
});

describe('gitRunnerFromPort', () => {
  it('computes the same fingerprint through the git port (createGit)', async () => {
    const { createGit } = await import('../git/git-cli.js');
    const repo = makeRepo();
    writeFileSync(path.join(repo, 'pkg', 'untracked.txt'), 'u\n');
    const viaPort = await computeWorkspaceFingerprint(repo, { git: gitRunnerFromPort((cwd) => createGit(cwd)) });
    expect(viaPort).toEqual(await computeWorkspaceFingerprint(repo));
  });
});
