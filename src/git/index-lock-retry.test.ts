import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commitManifest } from '../orchestrator/run-critic.js';
import { createGit } from './git-cli.js';
import { runGit } from './run-git.js';
import { clearDeadHalfWrittenWorktree, retriableIndexLockFailure } from './index-lock-retry.js';

const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e', GIT_CONFIG_NOSYSTEM: '1' };

function repo(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pw-index-retry-'));
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  execFileSync('git', ['add', 'a.txt'], { cwd: dir, env });
  execFileSync('git', ['commit', '-q', '-m', 'base'], { cwd: dir, env });
  return dir;
}

describe('git commands that meet another process’s index.lock', () => {
  it('wait for it and succeed (runGit and the git port, also with exit 128 allowed); a lock that stays fails with git’s own message; stash is never retried', async () => {
    const dir = repo();
    try {
      const lock = path.join(dir, '.git', 'index.lock');
      // Another process holds the index for 150 ms (an editor's git status, a parallel Scout's commit).
      const holdFor = (ms: number) => {
        writeFileSync(lock, '');
        setTimeout(() => rmSync(lock, { force: true }), ms);
      };
      writeFileSync(path.join(dir, 'b.txt'), 'b\n');
      holdFor(150);
      await runGit(['add', 'b.txt'], { cwd: dir, env });
      writeFileSync(path.join(dir, 'c.txt'), 'c\n');
      holdFor(150);
      const git = createGit(dir, { env });
      expect((await git.run(['add', 'c.txt'], { allowExitCodes: [128] })).exitCode).toBe(0);
      holdFor(150);
      await git.run(['commit', '-q', '-m', 'b and c']);
      expect(execFileSync('git', ['show', '--name-only', '--format=', 'HEAD'], { cwd: dir, encoding: 'utf8' }).split('\n').filter(Boolean).sort()).toEqual(['b.txt', 'c.txt']);

      // A lock nobody releases (a killed git): retried ~1.6 s, then git's error as before.
      writeFileSync(lock, '');
      writeFileSync(path.join(dir, 'd.txt'), 'd\n');
      const started = Date.now();
      await expect(runGit(['add', 'd.txt'], { cwd: dir, env })).rejects.toThrow(/index\.lock': File exists/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
      const stash = Date.now();
      await expect(git.run(['stash', 'push', '--include-untracked'])).rejects.toThrow();
      expect(Date.now() - stash).toBeLessThan(1_500);
      expect(existsSync(lock)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parallel manifest commits in one checkout (a PROGRAM tier’s Scouts) all land', async () => {
    const dir = repo();
    try {
      // Tracked manifests, each rewritten by its Scout (the state line), as in a tier: a `git status`
      // then refreshes the index and takes index.lock to write it back.
      const files = Array.from({ length: 8 }, (_, index) => `IMPL-${index}.yaml`);
      for (const file of files) writeFileSync(path.join(dir, file), 'state: SCOUT_PENDING\n');
      execFileSync('git', ['add', ...files], { cwd: dir, env });
      execFileSync('git', ['commit', '-q', '-m', 'scouting'], { cwd: dir, env });
      for (const file of files) writeFileSync(path.join(dir, file), 'state: REVIEWED\n');
      // Plus a user's plain `git status` (optional locks on) in the same checkout meanwhile.
      const user = Promise.all(Array.from({ length: 6 }, () => runGit(['status', '--porcelain'], { cwd: dir, env })));
      const shas = await Promise.all(files.map((file) => commitManifest(dir, path.join(dir, file), `chore: ${file}`, env)));
      await user;
      expect(shas.every((sha) => typeof sha === 'string' && /^[0-9a-f]{40}$/.test(sha))).toBe(true);
      expect(execFileSync('git', ['rev-list', '--count', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim()).toBe('10');
      expect(execFileSync('git', ['status', '--porcelain'], { cwd: dir, encoding: 'utf8' })).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a worktree list that meets a worktree entry another `git worktree add` is still writing waits for it (bench:program’s rare BLOCKED IMPL)', async () => {
    const dir = repo();
    try {
      execFileSync('git', ['worktree', 'add', '-q', '-b', 'other', path.join(dir, 'wt')], { cwd: dir, env });
      // The moment git's own `worktree add` has created commondir and not yet written it.
      const commondir = path.join(dir, '.git', 'worktrees', 'wt', 'commondir');
      writeFileSync(commondir, '');
      expect(() => execFileSync('git', ['worktree', 'list', '--porcelain'], { cwd: dir, stdio: 'pipe' })).toThrow(/failed to read .*commondir/);
      setTimeout(() => writeFileSync(commondir, '../..\n'), 150);
      const entries = await createGit(dir, { env }).worktreeList();
      expect(entries.map((entry) => path.basename(entry.path))).toEqual([path.basename(dir), 'wt']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an entry a killed `git worktree add` left with an empty commondir (locked initializing, untouched for 10 s) is removed and the list succeeds; a fresh one, or one with files beside .git, is left', async () => {
    const dir = repo();
    try {
      const killedAdd = (name: string, ageMs: number, extra?: string) => {
        const admin = path.join(dir, '.git', 'worktrees', name);
        const worktree = path.join(dir, 'wt', name);
        mkdirSync(admin, { recursive: true });
        mkdirSync(worktree, { recursive: true });
        writeFileSync(path.join(admin, 'locked'), 'initializing');
        writeFileSync(path.join(admin, 'gitdir'), `${path.join(worktree, '.git')}\n`);
        writeFileSync(path.join(worktree, '.git'), `gitdir: ${admin}\n`);
        writeFileSync(path.join(admin, 'HEAD'), `${'0'.repeat(40)}\n`);
        // Created, never written: git was killed between its open and its write.
        writeFileSync(path.join(admin, 'commondir'), '');
        if (extra) writeFileSync(path.join(worktree, extra), 'work\n');
        const then = new Date(Date.now() - ageMs);
        for (const file of ['locked', 'gitdir', 'HEAD', 'commondir']) utimesSync(path.join(admin, file), then, then);
        utimesSync(admin, then, then);
        return { admin, worktree };
      };
      const dead = killedAdd('dead', 60_000);
      expect(() => execFileSync('git', ['worktree', 'list', '--porcelain'], { cwd: dir, stdio: 'pipe' })).toThrow(/failed to read .*commondir/);
      const entries = await createGit(dir, { env }).worktreeList();
      expect(entries.map((entry) => path.basename(entry.path))).toEqual([path.basename(dir)]);
      expect(existsSync(dead.admin) || existsSync(dead.worktree)).toBe(false);
      await runGit(['worktree', 'list'], { cwd: dir, env });
      // Files beside the .git file: not what a killed add leaves — kept for a human (the list keeps failing).
      const kept = killedAdd('kept', 60_000, 'notes.txt');
      await expect(runGit(['worktree', 'list'], { cwd: dir, env })).rejects.toThrow(/commondir/);
      expect(existsSync(path.join(kept.worktree, 'notes.txt')) && existsSync(kept.admin)).toBe(true);
      rmSync(kept.admin, { recursive: true, force: true });
      // A fresh one may be an add in flight: waited for, never removed.
      const fresh = killedAdd('fresh', 0);
      expect(clearDeadHalfWrittenWorktree(`fatal: failed to read ${fresh.admin}/commondir: Success\n`, dir)).toBe(false);
      expect(existsSync(fresh.admin)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a worktree remove (or list) that meets an entry another `git worktree remove` just deleted is re-run; other commands are not (a CI cleanup of a wave)', async () => {
    const vanished = "fatal: Invalid path '/r/.git/worktrees/wave1-agent-A': No such file or directory\n";
    expect(retriableIndexLockFailure(['worktree', 'remove', '--force', '/r/wt-B'], 128, vanished)).toBe(true);
    expect(retriableIndexLockFailure(['worktree', 'list', '--porcelain'], 128, vanished)).toBe(true);
    expect(retriableIndexLockFailure(['worktree', 'add', '/r/wt-C'], 128, vanished)).toBe(false);
    expect(retriableIndexLockFailure(['merge', 'x'], 128, vanished)).toBe(false);
    expect(retriableIndexLockFailure(['worktree', 'remove', '/r/wt-B'], 1, vanished)).toBe(false);
    // For real: eight worktrees of one repository removed at once all go.
    const dir = repo();
    try {
      const names = Array.from({ length: 8 }, (_, index) => `wt${index}`);
      for (const name of names) execFileSync('git', ['worktree', 'add', '-q', '-b', name, path.join(dir, name)], { cwd: dir, env });
      const git = createGit(dir, { env });
      await Promise.all(names.map((name) => git.worktreeRemove(path.join(dir, name), { force: true })));
      expect((await git.worktreeList()).map((entry) => path.basename(entry.path))).toEqual([path.basename(dir)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
