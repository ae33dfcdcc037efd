/**
 * Outside attack X21-13 (issue 11): the user's own git filter `python3 -m nbstripout` (what `nbstripout
 * --install` configures) runs whenever git cleans a notebook — also during polywave's host-side git in an
 * agent's worktree (git_commit's `git add`, the change audit's `status`/`diff`). git runs the filter with the
 * worktree as its directory, and `python3 -m` put that directory first on sys.path: the agent's ignored
 * `nbstripout.py` ran on the host instead of the tool. polywave's host git now runs Python tools without the
 * working directory on their path (PYTHONSAFEPATH); the user's installed tool, were it there, still runs.
 * Real git, a real python3 filter, both git ports polywave uses.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGit } from '../src/git/git-cli.js';
import { hostGitEnvironmentFor, hostGitProcessEnvironment } from '../src/git/harden.js';
import { runGit } from '../src/git/run-git.js';
import { addWorktreesBatch } from '../src/engine/prepare/add-worktrees-batch.js';
import { createTestRepo } from './support/git-repo.js';

const python = (() => {
  try {
    return execFileSync('python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
})();
const safePath = python !== undefined && Number(python.split('.')[1]) >= 11 && python.startsWith('3.');

describe('outside attack X21-13: a filter run as `python3 -m <tool>` never imports the worktree\'s module', () => {
  it.skipIf(!safePath)('polywave\'s git add and status in an agent worktree do not run the agent\'s nbstripout.py; a module installed for the user still would', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', '.gitignore': '*.pyc\nnbstripout.py\n' } });
    const worktree = repo.sibling('wt-A');
    await repo.git.worktreeAdd({ path: worktree, branch: 'a', base: 'HEAD', createBranch: true });
    await repo.run(['config', 'filter.nbstripout.clean', 'python3 -m nbstripout']);
    mkdirSync(path.join(repo.path('.git'), 'info'), { recursive: true });
    writeFileSync(repo.path('.git/info/attributes'), '*.ipynb filter=nbstripout\n');
    const marker = repo.sibling('RAN-ON-HOST');
    // the agent's module, ignored (no ownership check sees it)
    writeFileSync(path.join(worktree, 'nbstripout.py'), `import sys\nopen(${JSON.stringify(marker)}, 'a').write('ran\\n')\nsys.stdout.write(sys.stdin.read())\n`);
    writeFileSync(path.join(worktree, 'a.ipynb'), '{"cells": []}\n');
    const git = createGit(worktree, { env: repo.env });
    await git.run(['add', 'a.ipynb']).catch(() => undefined);
    await git.run(['status', '--porcelain']);
    await runGit(['diff', '--cached', '--stat'], { cwd: worktree, env: repo.env }).catch(() => undefined);
    expect(existsSync(marker)).toBe(false);
    // control: the same filter run by a plain git (no PYTHONSAFEPATH) does import it — the attack is real here
    execFileSync('git', ['-c', 'core.fsmonitor=false', 'add', '--renormalize', 'a.ipynb'], { cwd: worktree, env: { ...process.env, ...repo.env, PYTHONSAFEPATH: '' }, stdio: 'ignore' });
    expect(existsSync(marker)).toBe(true);
  });

  it('outside attack X22-03: a filter run by polywave\'s local git commands gets no credential variable of the orchestrator; commands that talk to a remote keep them', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const dump = repo.sibling('filter-env');
    await repo.run(['config', 'filter.envdump.clean', `sh -c 'env >> ${dump}; cat'`]);
    mkdirSync(repo.path('.git/info'), { recursive: true });
    writeFileSync(repo.path('.git/info/attributes'), '*.txt filter=envdump\n');
    writeFileSync(repo.path('a.txt'), 'x\n');
    const env = { ...repo.env, GITHUB_TOKEN: 'ghp_SECRETX22tokenaaaaaaaaaaaaaaaaaaaaaaaaa', ANTHROPIC_API_KEY: 'sk-ant-SECRET-X22', PLAIN_SETTING: 'kept-x22' };
    await createGit(repo.dir, { env }).run(['add', 'a.txt']);
    writeFileSync(repo.path('a.txt'), 'y\n');
    await runGit(['add', 'a.txt'], { cwd: repo.dir, env });
    const seen = readFileSync(dump, 'utf8');
    expect(seen).toContain('PLAIN_SETTING=kept-x22');
    expect(seen).not.toContain('SECRETX22');
    expect(seen).not.toContain('SECRET-X22');
    // a command that talks to a remote keeps them (a credential helper may need GITHUB_TOKEN)
    expect(hostGitEnvironmentFor(['-c', 'x=y', 'push', 'origin'], env).GITHUB_TOKEN).toBe(env.GITHUB_TOKEN);
    expect(hostGitEnvironmentFor(['commit', '-m', 'x'], env).GITHUB_TOKEN).toBeUndefined();
  });

  it('outside attack X23-08: prepare-wave\'s batched `git worktree add` (one shell, many worktrees) runs the user\'s checkout filter without the orchestrator\'s credentials too', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', 'notes.txt': 'tracked\n' } });
    const dump = repo.sibling('smudge-env');
    // a checkout (smudge) filter: runs for notes.txt in every new worktree
    await repo.run(['config', 'filter.envdump.smudge', `sh -c 'env >> ${dump}; cat'`]);
    await repo.run(['config', 'filter.envdump.clean', 'cat']);
    mkdirSync(repo.path('.git/info'), { recursive: true });
    writeFileSync(repo.path('.git/info/attributes'), '*.txt filter=envdump\n');
    await repo.run(['branch', 'wave1-a']);
    await repo.run(['branch', 'wave1-b']);
    const env = { ...repo.env, GITHUB_TOKEN: 'ghp_SECRETX23tokenaaaaaaaaaaaaaaaaaaaaaaaaa', ANTHROPIC_API_KEY: 'sk-ant-SECRET-X23', PLAIN_SETTING: 'kept-x23', GIT_DIR: '/nonexistent/elsewhere' };
    // (one add at a time in the one shell: two at once can meet git's own race between concurrent adds — "failed to
    // read .git/worktrees/wt-b/commondir" — which prepare-wave retries through the port (isLockContention))
    const outcomes = await addWorktreesBatch({ cwd: repo.dir, items: [{ path: repo.sibling('wt-a'), branch: 'wave1-a' }, { path: repo.sibling('wt-b'), branch: 'wave1-b' }], concurrency: 1, env });
    expect(outcomes).toEqual([undefined, undefined]);
    expect(readFileSync(path.join(repo.sibling('wt-a'), 'notes.txt'), 'utf8')).toBe('tracked\n');
    const seen = readFileSync(dump, 'utf8');
    expect(seen.match(/PLAIN_SETTING=kept-x23/g)).toHaveLength(2);
    expect(seen).not.toContain('SECRETX23');
    expect(seen).not.toContain('SECRET-X23');
    // the one builder every git polywave starts outside the port uses: the same rules as the port's
    const built = hostGitProcessEnvironment(['worktree', 'add'], env);
    expect(built.GITHUB_TOKEN).toBeUndefined();
    expect(built.GIT_DIR).toBeUndefined();
    expect(built.PYTHONSAFEPATH).toBe('1');
    expect(built.GIT_TERMINAL_PROMPT).toBe('0');
    expect(hostGitProcessEnvironment(['fetch', 'origin'], env).GITHUB_TOKEN).toBe(env.GITHUB_TOKEN);
  });
});
