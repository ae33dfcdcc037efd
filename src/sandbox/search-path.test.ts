import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { absolutePathEntries, distrustSearchRoot, sandboxSearchPath } from './search-path.js';

describe('sandboxSearchPath (follow-up of X42-11/12)', () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-search-path-')));
  const main = path.join(root, 'main');
  const worktree = path.join(main, '.claude', 'worktrees', 'w');
  mkdirSync(path.join(main, '.git', 'worktrees', 'w'), { recursive: true });
  writeFileSync(path.join(main, '.git', 'worktrees', 'w', 'commondir'), '../..\n');
  mkdirSync(worktree, { recursive: true });
  writeFileSync(path.join(worktree, '.git'), `gitdir: ${path.join(main, '.git', 'worktrees', 'w')}\n`);
  distrustSearchRoot(worktree);
  const given = [`${main}/bin`, 'node_modules/.bin', '', `${main}/node_modules/.bin`, '/usr/bin'].join(':');

  it('host side: no entry inside the checkout or the worktree, nor a relative or empty one, is searched', () => {
    expect(absolutePathEntries(given)).toBe('/usr/bin');
    expect(absolutePathEntries(`${worktree}/bin:/bin`)).toBe('/bin');
  });

  it("sandbox side: the checkout's entries come back at their place, mapped into the agent's worktree first; relative ones stay out", () => {
    expect(sandboxSearchPath('/usr/bin', worktree, given)).toBe([`${worktree}/bin`, `${main}/bin`, `${worktree}/node_modules/.bin`, `${main}/node_modules/.bin`, '/usr/bin'].join(':'));
    // In the main checkout itself (a solo agent, a gate there): as given.
    expect(sandboxSearchPath('/usr/bin', main, given)).toBe([`${main}/bin`, `${main}/node_modules/.bin`, '/usr/bin'].join(':'));
    // Entries of the command's own PATH are kept; nothing when PATH is unset.
    expect(sandboxSearchPath('/opt/x/bin:/usr/bin', worktree, `/usr/bin:${main}/bin`)).toBe(`/opt/x/bin:/usr/bin:${worktree}/bin:${main}/bin`);
    expect(sandboxSearchPath('/opt/x/bin:/usr/bin', worktree, `${main}/bin:/usr/bin`)).toBe(`/opt/x/bin:${worktree}/bin:${main}/bin:/usr/bin`);
    expect(sandboxSearchPath(undefined, worktree, given)).toBeUndefined();
  });

  it('an entry is judged as the kernel resolves it: `..` after a symlink physically (X44-16), nothing through /proc (X44-02)', () => {
    const deep = path.join(root, 'deep');
    mkdirSync(deep);
    symlinkSync(deep, path.join(root, 'lnk'));
    symlinkSync('/proc/self/cwd', path.join(root, 'here'));
    // (lexically `<root>/lnk/../main/bin` is `<root>/main/bin` too; through `lnk2 -> <root>/deep/x` it is `<root>/deep/main/bin`)
    mkdirSync(path.join(deep, 'x'));
    symlinkSync(path.join(deep, 'x'), path.join(root, 'lnk2'));
    expect(absolutePathEntries(`${root}/lnk/../main/bin:/usr/bin`)).toBe('/usr/bin');
    expect(absolutePathEntries(`${root}/deep/x/y/../../../main/node_modules/.bin:/usr/bin`)).toBe('/usr/bin');
    expect(absolutePathEntries(`${root}/lnk2/../../main/bin:/usr/bin`)).toBe('/usr/bin');
    expect(absolutePathEntries(`/proc/self/cwd/bin:/proc/thread-self/cwd:/dev/fd/3:${root}/here/bin:/usr/bin`)).toBe('/usr/bin');
    // An entry whose `..` leads outside every repository stays.
    expect(absolutePathEntries(`${root}/lnk/../deep:/usr/local/../bin`)).toBe(`${root}/lnk/../deep:/usr/local/../bin`);
  });
});

describe('a distrusted root removed since (CI51: its inode number handed to a new directory)', () => {
  it('a directory made later with the removed root\'s inode number is not judged inside it', () => {
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-search-reuse-')));
    const root = path.join(scratch, 'gone-checkout');
    mkdirSync(path.join(root, '.git'), { recursive: true });
    const inode = statSync(root).ino;
    distrustSearchRoot(root);
    expect(absolutePathEntries(path.join(root, 'bin'))).toBe('/usr/local/bin:/usr/bin:/bin');
    rmSync(root, { recursive: true });
    // ext4 and tmpfs hand a freed inode number to the next directory made (measured: the first one here)
    let reused: string | undefined;
    for (let index = 0; index < 200 && reused === undefined; index++) {
      const dir = path.join(scratch, `bin-${index}`);
      mkdirSync(dir);
      if (statSync(dir).ino === inode) reused = dir;
    }
    expect(reused, 'no directory got the inode number back: the case cannot be made on this file system').toBeDefined();
    expect(absolutePathEntries(reused)).toBe(reused);
  });
});

describe('entries the agent can redirect after they were judged (outside round X45)', () => {
  it('X45-01: an entry through a symlink IN the checkout (`<repo>/.venv -> ../venv`) is the checkout\'s, wherever the link points now', () => {
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-search-x4501-')));
    const repo = path.join(scratch, 'repo');
    mkdirSync(path.join(repo, '.git'), { recursive: true });
    mkdirSync(path.join(scratch, 'venv', 'bin'), { recursive: true });
    symlinkSync('../venv', path.join(repo, '.venv'));
    const outside = path.join(scratch, 'venv', 'bin');
    distrustSearchRoot(repo);
    // the agent swaps `.venv` for a directory of its own after the entry was judged: it is dropped before that
    expect(absolutePathEntries(`${path.join(repo, '.venv', 'bin')}:${outside}`)).toBe(outside);
  });

  const canUnshare = spawnSync('unshare', ['-m', '--propagation', 'private', 'true']).status === 0;
  const built = path.resolve(import.meta.dirname, '../../dist/sandbox/search-path.js');
  it.skipIf(!canUnshare || !existsSync(built))('X45-02: a bind mount of a directory INSIDE the checkout (`<repo>/tools` at `<elsewhere>/mnt`) is the checkout\'s', () => {
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-search-x4502-')));
    const repo = path.join(scratch, 'repo');
    mkdirSync(path.join(repo, '.git'), { recursive: true });
    mkdirSync(path.join(repo, 'tools'), { recursive: true });
    mkdirSync(path.join(scratch, 'mnt'));
    mkdirSync(path.join(scratch, 'other'));
    const probe = `import(${JSON.stringify(built)}).then((m) => { m.distrustSearchRoot(${JSON.stringify(repo)}); console.log(m.absolutePathEntries(${JSON.stringify(`${scratch}/mnt:${scratch}/other`)})); })`;
    const run = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', `mount --bind "$1/repo/tools" "$1/mnt" && exec "$2" -e "$3"`, 'sh', scratch, process.execPath, probe], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe(`${scratch}/other`);
  });
});
