import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGit } from '../git/git-cli.js';
import { createTestRepo } from '../../test/support/git-repo.js';
import { ensureInfoExclude, ensureWorktrees, polywaveExcludePatterns, verifyWorktrees } from './worktrees.js';

describe('ensureWorktrees', () => {
  it('creates, reuses, fast-forwards a lagging branch without own commits, and refuses to touch foreign state', async () => {
    const repo = await createTestRepo();
    const old = await repo.git.headCommit();
    repo.write('next.txt', 'n\n');
    const base = await repo.commitAll('next');
    await repo.git.createBranch('lagging', old);
    await repo.git.createBranch('elsewhere', base);
    await repo.git.worktreeAdd({ path: repo.sibling('other-place'), branch: 'elsewhere', base, createBranch: false });
    mkdirSync(repo.sibling('occupied'), { recursive: true });
    writeFileSync(path.join(repo.sibling('occupied'), 'keep.txt'), 'mine\n');

    const targets = [
      { agent: 'A', path: repo.sibling('wt-a'), branch: 'fresh-a' },
      { agent: 'B', path: repo.sibling('wt-b'), branch: 'lagging' },
      { agent: 'C', path: repo.sibling('wt-c'), branch: 'elsewhere' },
      { agent: 'D', path: repo.sibling('occupied'), branch: 'fresh-d' },
    ];
    const first = await ensureWorktrees({ git: repo.git, targets, base, concurrency: 4 });
    expect(first.worktrees.map((item) => [item.agent, item.action])).toEqual([['A', 'created'], ['B', 'attached']]);
    expect(first.worktrees[1]?.note).toContain('fast-forwarded');
    expect((await repo.run(['rev-parse', 'lagging'])).trim()).toBe(base);
    expect(first.failures.map((item) => item.agent)).toEqual(['C', 'D']);
    expect(first.failures[0]?.error).toContain('already checked out');
    expect(first.failures[1]?.error).toContain('exists and is not a registered worktree');
    expect(readFileSync(path.join(repo.sibling('occupied'), 'keep.txt'), 'utf8')).toBe('mine\n');
    // D's branch was not created either (the failure happened before any change).
    expect(await repo.git.branchExists('fresh-d')).toBe(false);

    const again = await ensureWorktrees({ git: repo.git, targets: targets.slice(0, 2), base });
    expect(again.worktrees.map((item) => item.action)).toEqual(['reused', 'reused']);
    expect(await verifyWorktrees(repo.git, targets.slice(0, 2))).toEqual({ ok: true, found: 2, expected: 2, problems: [] });
    expect((await verifyWorktrees(repo.git, targets)).problems).toHaveLength(2);
  });
});

describe('ensureWorktrees in parallel', () => {
  it('adds 10 worktrees 8 at a time through the port and through the one-shell batch, all verified', async () => {
    for (const batch of [false, true]) {
      const repo = await createTestRepo({ files: Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`src/f${index}.ts`, `export const f${index} = ${index};\n`])) });
      const base = await repo.git.headCommit();
      // X8 #2: every `git worktree add` (the one-shell batch's too) runs with core.fsmonitor=false —
      // a configured fsmonitor hook (git runs it during the add's checkout) never runs.
      const marker = repo.sibling('fsmonitor-ran');
      const hook = repo.sibling('fsmonitor-hook.sh');
      writeFileSync(hook, `#!/bin/sh\necho ran >> '${marker}'\nexit 1\n`, { mode: 0o755 });
      await repo.run(['config', 'core.fsmonitor', hook]);
      const targets = Array.from({ length: 10 }, (_, index) => ({ agent: `A${index}`, path: repo.path(`.claude/worktrees/polywave/p/wave1-agent-${String.fromCharCode(65 + index)}`), branch: `polywave/p/wave1-agent-${String.fromCharCode(65 + index)}` }));
      const result = await ensureWorktrees({ git: repo.git, targets, base, concurrency: 8, batch, ...(batch ? { env: repo.env } : {}) });
      expect(result.failures, `batch=${batch}`).toEqual([]);
      expect(result.worktrees.map((item) => item.action)).toEqual(Array(10).fill('created'));
      expect(await verifyWorktrees(repo.git, targets)).toMatchObject({ ok: true, found: 10 });
      expect(existsSync(marker), `batch=${batch}: the fsmonitor hook ran`).toBe(false);
    }
  });
});

describe('ensureWorktrees with vanished directories', () => {
  it('re-attaches a target branch whose worktree directory was deleted, and leaves other stale registrations alone', async () => {
    const repo = await createTestRepo();
    const base = await repo.git.headCommit();
    const target = { agent: 'A', path: repo.sibling('wt-a'), branch: 'agent-a' };
    await ensureWorktrees({ git: repo.git, targets: [target], base });
    writeFileSync(path.join(target.path, 'work.txt'), 'w\n');
    const gitA = createGit(target.path, { env: repo.env });
    await gitA.add(['work.txt']);
    const commit = await gitA.commit({ message: 'work', noVerify: true });
    rmSync(target.path, { recursive: true, force: true });
    // Someone else's detached registration with a vanished directory.
    await repo.run(['worktree', 'add', '--quiet', '--detach', repo.sibling('detached'), base]);
    rmSync(repo.sibling('detached'), { recursive: true, force: true });

    const again = await ensureWorktrees({ git: repo.git, targets: [target], base });
    expect(again.worktrees.map((item) => item.action)).toEqual(['attached']);
    expect(readFileSync(path.join(target.path, 'work.txt'), 'utf8')).toBe('w\n');
    expect((await repo.run(['rev-parse', 'agent-a'])).trim()).toBe(commit);
    expect((await repo.git.worktreeList()).some((entry) => entry.path === repo.sibling('detached') && entry.prunable)).toBe(true);
  });
});

describe('ensureWorktrees after a killed `git worktree add`', () => {
  it('removes what a killed add left at its target paths (locked "initializing": no HEAD, the null placeholder HEAD, on the branch with no index, commondir unwritten) and adds the worktrees again; an add in flight elsewhere, a real detached or a user-locked worktree stay as they are', async () => {
    const repo = await createTestRepo();
    const base = await repo.git.headCommit();
    // The states a SIGKILL inside `git worktree add` leaves (git 2.x: lock "initializing", gitdir, the
    // worktree's .git file, HEAD = null id, commondir, `symbolic-ref HEAD <branch>`, `reset --hard`,
    // unlock), each made from a real add.
    const targets = [
      { agent: 'G', path: repo.sibling('wt-nodotgit'), branch: 'agent-nodotgit' },
      { agent: 'A', path: repo.sibling('wt-killed'), branch: 'agent-killed' },
      { agent: 'E', path: repo.sibling('wt-nocommondir'), branch: 'agent-nocommondir' },
      { agent: 'K', path: repo.sibling('wt-unchecked'), branch: 'agent-unchecked' },
    ];
    const inFlight = { agent: 'F', path: repo.sibling('wt-in-flight'), branch: 'agent-in-flight' };
    await ensureWorktrees({ git: repo.git, targets: [...targets, inFlight], base });
    const admin = (target: { path: string }) => path.join(repo.dir, '.git', 'worktrees', path.basename(target.path));
    for (const target of [...targets, inFlight]) writeFileSync(path.join(admin(target), 'locked'), 'initializing');
    const [noDotGit, placeholder, noCommonDir, unchecked] = targets as [(typeof targets)[0], (typeof targets)[0], (typeof targets)[0], (typeof targets)[0]];
    rmSync(path.join(noDotGit.path, '.git'));
    rmSync(path.join(admin(noDotGit), 'HEAD'));
    writeFileSync(path.join(admin(placeholder), 'HEAD'), `${'0'.repeat(40)}\n`);
    rmSync(path.join(placeholder.path, 'README.md'), { force: true });
    rmSync(path.join(admin(unchecked), 'index'));
    rmSync(path.join(unchecked.path, 'README.md'));
    const listed = await repo.git.worktreeList();
    expect(listed.find((entry) => entry.path === placeholder.path)).toMatchObject({ detached: true, head: expect.stringMatching(/^0*$/), locked: true, lockReason: 'initializing' });
    expect(listed.find((entry) => entry.path === unchecked.path)).toMatchObject({ branch: 'agent-unchecked', head: base, locked: true, lockReason: 'initializing' });
    // What an agent started there would see: every tracked file deleted.
    expect((await createGit(unchecked.path, { env: repo.env }).status()).map((entry) => entry.code)).toContain('D ');
    // Killed between creating commondir and writing it: every `git worktree list` fails.
    writeFileSync(path.join(admin(noCommonDir), 'commondir'), '');
    await expect(repo.run(['worktree', 'list'])).rejects.toThrow(/commondir/);

    const again = await ensureWorktrees({ git: repo.git, targets, base });
    expect(again.failures).toEqual([]);
    expect(again.worktrees.map((item) => [item.agent, item.action])).toEqual(targets.map((target) => [target.agent, 'attached']));
    for (const target of targets) {
      const worktreeGit = createGit(target.path, { env: repo.env });
      expect(await worktreeGit.currentBranch()).toBe(target.branch);
      expect(await worktreeGit.status()).toEqual([]);
      expect(readFileSync(path.join(target.path, 'README.md'), 'utf8')).not.toBe('');
    }
    // Not a target: an add someone else may still be running is left alone.
    expect((await repo.git.worktreeList()).filter((entry) => entry.locked).map((entry) => entry.path)).toEqual([inFlight.path]);

    // A worktree someone detached on purpose (a real commit), and one locked for another reason, are not touched.
    const other = { agent: 'B', path: repo.sibling('wt-detached'), branch: 'agent-b' };
    await repo.run(['worktree', 'add', '--quiet', '--detach', other.path, base]);
    const refused = await ensureWorktrees({ git: repo.git, targets: [other], base });
    expect(refused.failures[0]?.error).toMatch(/detached HEAD.*left untouched/);
    const kept = { agent: 'L', path: repo.sibling('wt-locked'), branch: 'agent-locked' };
    await ensureWorktrees({ git: repo.git, targets: [kept], base });
    await repo.run(['worktree', 'lock', '--reason', 'on a USB disk', kept.path]);
    const reused = await ensureWorktrees({ git: repo.git, targets: [kept], base });
    expect(reused.worktrees.map((item) => item.action)).toEqual(['reused']);
    expect((await repo.git.worktreeList()).find((entry) => entry.path === kept.path)).toMatchObject({ locked: true, lockReason: 'on a USB disk' });
  });
});

describe('ensureInfoExclude', () => {
  it('adds one managed block to the common info/exclude, keeping the user lines, idempotently', async () => {
    const repo = await createTestRepo();
    writeFileSync(repo.path('.git/info/exclude'), '# mine\n*.log');
    expect((await ensureInfoExclude(repo.git)).changed).toBe(true);
    const text = readFileSync(repo.path('.git/info/exclude'), 'utf8');
    expect(text.startsWith('# mine\n*.log\n# >>> polywave')).toBe(true);
    for (const pattern of polywaveExcludePatterns) expect(text).toContain(`\n${pattern}\n`);
    expect((await ensureInfoExclude(repo.git)).changed).toBe(false);
    expect(readFileSync(repo.path('.git/info/exclude'), 'utf8')).toBe(text);
    // The agent files and what a killed atomic write of one leaves are not changes (the jail audits `git status`).
    for (const file of ['.polywave-agent-brief.md', '..polywave-agent-brief.md.20980.16e91877.tmp', '..polywave-ownership.json.1.ab.tmp', '..polywave-worktree-env.2.cd.tmp']) writeFileSync(repo.path(file), 'x\n');
    writeFileSync(repo.path('.other.tmp'), 'x\n');
    expect((await repo.git.status()).map((entry) => entry.path)).toEqual(['.other.tmp']);
  });
});
