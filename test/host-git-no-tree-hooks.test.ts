/**
 * Outside attack X24-01/02 (issue 11): with `core.hooksPath` in the tracked tree (`.githooks`, husky), the hooks are
 * content an agent of an earlier wave may have rewritten and merged. polywave's own host-side git must not run them:
 * prepare-wave's worktree adds (post-checkout), ref updates (reference-transaction), the dispatcher's and worker's
 * push (pre-push — with the credentials a push keeps), checkouts. Real git, real hooks; a plain git run beside it
 * shows each hook is live.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addWorktreesBatch } from '../src/engine/prepare/add-worktrees-batch.js';
import { createGit } from '../src/git/git-cli.js';
import { runGit } from '../src/git/run-git.js';
import { createTestRepo } from './support/git-repo.js';

describe('outside attack X24-01/02: polywave\'s host git runs no hook kept in the tracked tree', () => {
  it('worktree add (port and batch), branch, update-ref, checkout and push run none of .githooks; plain git does', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const log = repo.sibling('HOOKS-RAN');
    mkdirSync(repo.path('.githooks'), { recursive: true });
    for (const hook of ['post-checkout', 'reference-transaction', 'pre-push']) {
      writeFileSync(repo.path(`.githooks/${hook}`), `#!/bin/sh\necho "${hook} GITHUB_TOKEN=$GITHUB_TOKEN" >> ${JSON.stringify(log)}\ncat > /dev/null\nexit 0\n`);
      chmodSync(repo.path(`.githooks/${hook}`), 0o755);
    }
    await repo.run(['add', '.githooks']);
    await repo.run(['commit', '-q', '-m', 'tracked hooks']);
    await repo.run(['config', 'core.hooksPath', '.githooks']);
    const remote = repo.sibling('remote.git');
    execFileSync('git', ['init', '-q', '--bare', remote]);
    await repo.run(['remote', 'add', 'shared', remote]);
    const env = { ...repo.env, GITHUB_TOKEN: 'ghp_SECRETX24aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' };
    const git = createGit(repo.dir, { env });
    await git.run(['branch', 'wave1-a']);
    await git.run(['branch', 'wave1-b']);
    await git.run(['branch', 'wave1-c']);
    await git.run(['update-ref', 'refs/heads/wave1-d', 'HEAD']);
    await git.run(['worktree', 'add', '--quiet', repo.sibling('wt-a'), 'wave1-a']);
    expect(await addWorktreesBatch({ cwd: repo.dir, items: [{ path: repo.sibling('wt-b'), branch: 'wave1-b' }], concurrency: 1, env })).toEqual([undefined]);
    await runGit(['worktree', 'add', '--quiet', repo.sibling('wt-c'), 'wave1-c'], { cwd: repo.dir, env });
    await createGit(repo.sibling('wt-a'), { env }).run(['checkout', '-q', '-b', 'other']);
    await createGit(repo.sibling('wt-a'), { env }).run(['push', '--quiet', 'shared', 'HEAD:refs/heads/polywave/x/wave1-agent-A']);
    expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    expect(execFileSync('git', ['--git-dir', remote, 'rev-parse', 'refs/heads/polywave/x/wave1-agent-A'], { encoding: 'utf8' }).trim()).toMatch(/^[0-9a-f]{40}$/);
    // control: the same hooks do run for a plain git (the setup is live)
    execFileSync('git', ['-C', repo.sibling('wt-a'), 'push', '--quiet', 'shared', 'HEAD:refs/heads/control'], { env: { ...process.env, ...env }, stdio: 'ignore' });
    const ran = readFileSync(path.join(log), 'utf8');
    expect(ran).toContain('pre-push GITHUB_TOKEN=ghp_SECRETX24');
  });

  it('polywave\'s own commits and merges run hooks kept in the tracked tree never, the repository\'s own .git/hooks still', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const log = repo.sibling('COMMIT-HOOKS-RAN');
    mkdirSync(repo.path('.githooks'), { recursive: true });
    for (const hook of ['pre-commit', 'post-merge', 'post-commit']) {
      writeFileSync(repo.path(`.githooks/${hook}`), `#!/bin/sh\necho "tree ${hook}" >> ${JSON.stringify(log)}\n`);
      chmodSync(repo.path(`.githooks/${hook}`), 0o755);
    }
    await repo.run(['add', '.githooks']);
    await repo.run(['commit', '-q', '-m', 'tracked hooks']);
    await repo.run(['branch', 'side']);
    const git = createGit(repo.dir, { env: repo.env });
    // relative, then absolute in-tree core.hooksPath
    for (const hooksPath of ['.githooks', repo.path('.githooks')]) {
      await repo.run(['config', 'core.hooksPath', hooksPath]);
      const fresh = createGit(repo.dir, { env: repo.env });
      writeFileSync(repo.path('src/a.ts'), `export const a = '${hooksPath}';\n`);
      await fresh.run(['add', 'src/a.ts']);
      await fresh.commit({ message: `change ${hooksPath}` });
    }
    await git.run(['merge', '--no-ff', '--no-edit', '-q', 'side']);
    expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    // the repository's own hooks directory (not agent-writable) is the user's: its pre-commit still runs
    await repo.run(['config', '--unset', 'core.hooksPath']);
    writeFileSync(repo.path('.git/hooks/pre-commit'), `#!/bin/sh\necho "git-dir pre-commit" >> ${JSON.stringify(log)}\n`);
    chmodSync(repo.path('.git/hooks/pre-commit'), 0o755);
    writeFileSync(repo.path('src/a.ts'), 'export const a = 3;\n');
    const plain = createGit(repo.dir, { env: repo.env });
    await plain.run(['add', 'src/a.ts']);
    await plain.commit({ message: 'user hooks' });
    expect(readFileSync(log, 'utf8')).toBe('git-dir pre-commit\n');
  });
});
