/**
 * Outside attack X24-01/02 (issue 11): with `core.hooksPath` in the tracked tree (`.githooks`, husky), the hooks are
 * content an agent of an earlier wave may have rewritten and merged. polywave's own host-side git must not run them:
 * prepare-wave's worktree adds (post-checkout), ref updates (reference-transaction), the dispatcher's and worker's
 * push (pre-push — with the credentials a push keeps), checkouts. Real git, real hooks; a plain git run beside it
 * shows each hook is live.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('polywave\'s own commits, merges and index writes run no hook: neither the tracked tree\'s nor .git/hooks that lead into it (X25-03/04/06)', async () => {
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
    // X25-03: a .git/hooks entry symlinked to a tracked script; X25-04: one that runs tree content (the shape of the
    // pre-commit framework, lefthook, `exec ./scripts/…`); X25-06: `git add` writes the index (post-index-change).
    await repo.run(['config', '--unset', 'core.hooksPath']);
    mkdirSync(repo.path('scripts'), { recursive: true });
    writeFileSync(repo.path('scripts/pre-commit'), `#!/bin/sh\necho "tracked pre-commit via symlink" >> ${JSON.stringify(log)}\n`);
    writeFileSync(repo.path('scripts/on-index.sh'), `#!/bin/sh\necho "tree content via post-index-change" >> ${JSON.stringify(log)}\n`);
    chmodSync(repo.path('scripts/pre-commit'), 0o755);
    chmodSync(repo.path('scripts/on-index.sh'), 0o755);
    symlinkSync('../../scripts/pre-commit', repo.path('.git/hooks/pre-commit'));
    for (const hook of ['post-index-change', 'post-merge', 'reference-transaction']) {
      writeFileSync(repo.path(`.git/hooks/${hook}`), `#!/bin/sh\ncat > /dev/null 2>&1\nexec "$(git rev-parse --show-toplevel)/scripts/on-index.sh"\n`);
      chmodSync(repo.path(`.git/hooks/${hook}`), 0o755);
    }
    writeFileSync(repo.path('src/a.ts'), 'export const a = 3;\n');
    const plain = createGit(repo.dir, { env: repo.env });
    await plain.run(['add', 'src/a.ts', 'scripts']);
    await plain.commit({ message: 'user hooks' });
    await runGit(['add', '--', 'src/a.ts'], { cwd: repo.dir, env: repo.env });
    await plain.run(['branch', 'side2', 'side']);
    await plain.run(['merge', '--no-ff', '--no-edit', '-q', 'side2']);
    expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    // control: the user's own git runs them
    writeFileSync(repo.path('src/a.ts'), 'export const a = 4;\n');
    execFileSync('git', ['commit', '-q', '-am', 'by hand'], { cwd: repo.dir, env: { ...process.env, ...repo.env }, stdio: 'ignore' });
    expect(readFileSync(log, 'utf8')).toContain('tracked pre-commit via symlink');
    expect(readFileSync(log, 'utf8')).toContain('tree content via post-index-change');
  });
});
