/**
 * The repository of a directory found without `git rev-parse` (repo-files.ts `plainRepositoryAt`): every spawn
 * costs a long-lived process 7–15 ms of its main thread, so the analysis engine answers "top level and common git
 * dir" itself where git's answer is certain. These tests set up what changes git's answer, the way a user or an
 * attacker could, and check the shortcut either gives git's own answer or leaves the question to git.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { plainRepositoryAt, repoContext } from '../src/analysis/engine/repo-files.js';
import { analysisCall } from '../src/analysis/engine/scope.js';
import { createTestRepo } from './support/git-repo.js';

/** What git itself says in `dir` (with this process's environment, as repoContext's git runs). */
function gitAnswer(dir: string): { root: string; commonDir: string } | 'error' {
  const result = spawnSync('git', ['rev-parse', '--show-toplevel', '--git-common-dir'], { cwd: dir, encoding: 'utf8' });
  if (result.status !== 0) return 'error';
  const [top, common] = result.stdout.split('\n');
  return { root: path.resolve(top!.trim()), commonDir: path.resolve(dir, common!.trim()) };
}

const savedEnv: Record<string, string | undefined> = {};
function setEnv(name: string, value: string): void {
  if (!(name in savedEnv)) savedEnv[name] = process.env[name];
  process.env[name] = value;
}
afterEach(() => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
    delete savedEnv[name];
  }
});

describe('a directory\'s repository without git rev-parse', () => {
  it('a plain repository at its top level: answered, and the answer is git\'s', async () => {
    const repo = await createTestRepo();
    expect(plainRepositoryAt(repo.dir)).toEqual(gitAnswer(repo.dir));
    expect(plainRepositoryAt(repo.dir)).toEqual({ root: repo.dir, commonDir: path.join(repo.dir, '.git') });
    // Unborn branch (no commit yet): still a repository git accepts.
    const unborn = await createTestRepo({ initialCommit: false });
    expect(plainRepositoryAt(unborn.dir)).toEqual(gitAnswer(unborn.dir));
    // Identity, prompt and configuration-file variables change nothing about discovery.
    setEnv('GIT_AUTHOR_NAME', 'x');
    setEnv('GIT_CONFIG_NOSYSTEM', '1');
    setEnv('GIT_TERMINAL_PROMPT', '0');
    expect(plainRepositoryAt(repo.dir)).toEqual(gitAnswer(repo.dir));
  });

  it('everything that moves git\'s answer leaves the question to git (which answers otherwise)', async () => {
    const repo = await createTestRepo();
    const outer = repo.dir;
    // A subdirectory: the top level is above it.
    mkdirSync(path.join(outer, 'sub'));
    expect(plainRepositoryAt(path.join(outer, 'sub'))).toBeUndefined();
    // A path through a symbolic link: git prints the resolved one.
    symlinkSync(outer, repo.sibling('link'));
    expect(plainRepositoryAt(repo.sibling('link'))).toBeUndefined();
    expect(gitAnswer(repo.sibling('link'))).toMatchObject({ root: outer });

    // core.worktree in the repository's config: the top level is elsewhere.
    const moved = await createTestRepo();
    mkdirSync(moved.sibling('tree'));
    await moved.run(['config', 'core.worktree', moved.sibling('tree')]);
    expect(plainRepositoryAt(moved.dir)).toBeUndefined();
    // core.bare: no work tree at all.
    const bare = await createTestRepo();
    await bare.run(['config', 'core.bare', 'true']);
    expect(plainRepositoryAt(bare.dir)).toBeUndefined();
    expect(gitAnswer(bare.dir)).toBe('error');
    // A key on its section header's line, a format version or an extension git may not know: git decides (X55-01).
    for (const config of ['[core] bare = true\n', '[core]\n\trepositoryformatversion = 2\n', '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tnoop = true\n']) {
      const odd = await createTestRepo();
      writeFileSync(path.join(odd.dir, '.git', 'config'), config);
      expect(plainRepositoryAt(odd.dir), config).toBeUndefined();
    }
    // An include (it could set either).
    const included = await createTestRepo();
    writeFileSync(included.sibling('extra.cfg'), '[core]\n\tbare = false\n');
    await included.run(['config', 'include.path', included.sibling('extra.cfg')]);
    expect(plainRepositoryAt(included.dir)).toBeUndefined();

    // A linked worktree (.git is a file) and a directory git does not take for a repository (no objects/, a bad HEAD):
    // git walks up to the enclosing repository.
    await repo.git.worktreeAdd({ path: path.join(outer, 'wt'), branch: 'wt', base: 'HEAD', createBranch: true });
    expect(plainRepositoryAt(path.join(outer, 'wt'))).toBeUndefined();
    mkdirSync(path.join(outer, 'fake', '.git', 'refs'), { recursive: true });
    writeFileSync(path.join(outer, 'fake', '.git', 'HEAD'), 'ref: refs/heads/main\n');
    expect(plainRepositoryAt(path.join(outer, 'fake'))).toBeUndefined();
    expect(gitAnswer(path.join(outer, 'fake'))).toEqual({ root: outer, commonDir: path.join(outer, '.git') });
    mkdirSync(path.join(outer, 'fake', '.git', 'objects'));
    writeFileSync(path.join(outer, 'fake', '.git', 'HEAD'), 'not a ref\n');
    expect(plainRepositoryAt(path.join(outer, 'fake'))).toBeUndefined();
    expect(gitAnswer(path.join(outer, 'fake'))).toEqual({ root: outer, commonDir: path.join(outer, '.git') });

    // git's own variables that move the repository.
    const other = await createTestRepo();
    for (const [name, value] of [['GIT_DIR', path.join(other.dir, '.git')], ['GIT_WORK_TREE', other.dir], ['GIT_CEILING_DIRECTORIES', outer], ['GIT_CONFIG_COUNT', '0'], ['GIT_COMMON_DIR', path.join(other.dir, '.git')]] as const) {
      setEnv(name, value);
      expect(plainRepositoryAt(outer), name).toBeUndefined();
      delete process.env[name];
    }
    setEnv('GIT_DIR', path.join(other.dir, '.git'));
    // (git then answers with the other repository's git directory: the shortcut's answer would have been wrong)
    expect(gitAnswer(outer)).toMatchObject({ commonDir: path.join(other.dir, '.git') });
  });

  it.runIf(process.getuid?.() === 0)('a repository owned by another user (git\'s safe.directory refuses it): left to git', async () => {
    const repo = await createTestRepo();
    chownSync(path.join(repo.dir, '.git'), 65534, 65534);
    try {
      expect(plainRepositoryAt(repo.dir)).toBeUndefined();
    } finally {
      chownSync(path.join(repo.dir, '.git'), 0, 0);
    }
  });

  it('repoContext gives the same answer with and without the shortcut, and asks git when the shortcut does not apply', async () => {
    const repo = await createTestRepo();
    const moved = await createTestRepo();
    mkdirSync(moved.sibling('tree'));
    await moved.run(['config', 'core.worktree', moved.sibling('tree')]);
    const shortcut = await analysisCall(process.env, () => repoContext(repo.dir));
    expect({ root: shortcut.root, commonDir: shortcut.commonDir }).toEqual(gitAnswer(repo.dir));
    const asked = await analysisCall(process.env, () => repoContext(moved.dir));
    expect({ root: asked.root, commonDir: asked.commonDir }).toEqual(gitAnswer(moved.dir));
    expect(asked.root).toBe(moved.sibling('tree'));
    rmSync(moved.sibling('tree'), { recursive: true });
  });
});
