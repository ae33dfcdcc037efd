import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../../test/support/git-repo.js';
import { createGit as createTestRepoGit } from '../../git/git-cli.js';
import { buildAgentSandboxPlan, linkedWorktreeCommonDir } from './agent-sandbox.js';
import { createToolExecutor } from './tool-executor.js';
import { sandboxStatus } from '../../sandbox/index.js';
import { pinSandboxSettings } from '../../sandbox/sandbox-settings.js';

describe('buildAgentSandboxPlan (real git)', () => {
  it('other worktrees from git worktree list, the main checkout .env files, polywave.config.json sandbox settings', async () => {
    const repo = await createTestRepo();
    const a = repo.sibling('wt-A');
    const b = repo.sibling('wt-B');
    await repo.git.worktreeAdd({ path: a, branch: 'a', base: 'HEAD', createBranch: true });
    await repo.git.worktreeAdd({ path: b, branch: 'b', base: 'HEAD', createBranch: true });
    writeFileSync(repo.path('.env'), 'TOKEN=1\n');
    writeFileSync(repo.path('.env.local'), 'TOKEN=2\n');
    // The sandbox settings are read as committed (sandboxed code can write the main checkout: outside attack X4).
    writeFileSync(repo.path('polywave.config.json'), JSON.stringify({ repos: [{ name: 'repo', path: '.' }], sandbox: { network: { allow: ['registry.npmjs.org'] }, writable: ['~/.npm'] } }));
    await repo.run(['add', 'polywave.config.json']);
    await repo.run(['commit', '-q', '-m', 'config']);
    // An uncommitted widening is not trusted: HEAD's version is used.
    writeFileSync(repo.path('polywave.config.json'), JSON.stringify({ repos: [{ name: 'repo', path: '.' }], sandbox: { network: { allow: ['registry.npmjs.org', 'evil.example'] }, writable: ['~/.npm', '~'] } }));
    const plan = await buildAgentSandboxPlan({ root: a, home: repo.sibling('s/home'), tmp: repo.sibling('s/tmp'), env: repo.env, userHome: '/home/someone' });
    expect(plan.writable).toEqual([a, repo.sibling('s/home'), repo.sibling('s/tmp'), '/home/someone/.npm']);
    expect(plan.readOnlyWithin).toEqual([path.join(a, '.git')]);
    // the main checkout is hidden whole from a worktree agent (its .env files with it), its .git put back read-only
    expect(plan.unreadable).toEqual(expect.arrayContaining([b, repo.dir, '/home/someone/.ssh']));
    expect(plan.readable).toEqual(expect.arrayContaining([repo.path('.git')]));
    expect(plan.readable).not.toContain(repo.dir);
    expect(plan.unreadable).not.toContain(a);
    expect(plan.allowedHosts).toEqual(['registry.npmjs.org']);
  });

  it('a worktree of a bare clone (a dispatch worker\'s): the bare git directory is not hidden as if it were a worktree — git works in the agent\'s worktree, read-only; other jobs\' worktrees stay hidden', async () => {
    const repo = await createTestRepo();
    const workerDir = repo.sibling('worker');
    const clone = path.join(workerDir, 'repo.git');
    await repo.run(['clone', '--quiet', '--bare', repo.dir, clone]);
    const bare = createTestRepoGit(clone, { env: repo.env });
    const job = path.join(workerDir, 'work', 'job1');
    const other = path.join(workerDir, 'work', 'job2');
    await bare.run(['worktree', 'add', '--quiet', '-b', 'polywave/x/wave1-agent-A', job, 'HEAD']);
    await bare.run(['worktree', 'add', '--quiet', '-b', 'polywave/x/wave1-agent-B', other, 'HEAD']);
    const home = repo.sibling('bare-s/home');
    const tmp = repo.sibling('bare-s/tmp');
    mkdirSync(home, { recursive: true });
    mkdirSync(tmp, { recursive: true });
    const plan = await buildAgentSandboxPlan({ root: job, home, tmp, env: repo.env, userHome: '/home/someone' });
    expect(plan.unreadable).not.toContain(clone);
    expect(plan.unreadable).toContain(other);
    expect(plan.writable.some((entry) => clone.startsWith(entry))).toBe(false);
    // Sandbox settings: never another job's branch (job1 committed a widening), nor — pinned at the job's base, as the
    // worker does — the agent's own earlier commit (a retried job).
    const widen = async (worktree: string) => {
      writeFileSync(path.join(worktree, 'polywave.config.json'), JSON.stringify({ sandbox: { network: { allow: ['evil.example'] }, writable: ['~'] } }));
      const git = createTestRepoGit(worktree, { env: repo.env });
      await git.run(['add', 'polywave.config.json']);
      await git.run(['-c', 'user.name=agent', '-c', 'user.email=agent@example.invalid', 'commit', '-q', '--no-verify', '-m', 'widen']);
    };
    const base = (await bare.run(['rev-parse', 'HEAD'])).stdout.trim();
    await widen(job);
    const fromOther = await buildAgentSandboxPlan({ root: other, home, tmp, env: repo.env, userHome: '/home/someone' });
    expect(fromOther.allowedHosts).toEqual([]);
    expect(fromOther.writable).not.toContain('/home/someone');
    await widen(other);
    const release = pinSandboxSettings(other, base);
    try {
      const retried = await buildAgentSandboxPlan({ root: other, home, tmp, env: repo.env, userHome: '/home/someone' });
      expect(retried.allowedHosts).toEqual([]);
    } finally {
      release();
    }
    if (!(await sandboxStatus()).available) return;
    const executor = createToolExecutor(plan, { cwd: job, env: { PATH: process.env.PATH ?? '', HOME: home } });
    try {
      let output = '';
      const run = executor.run(`git status --short --branch 2>&1; echo x > ${JSON.stringify(path.join(clone, 'hooks', 'planted'))} 2>&1 || echo refused`, { cwd: job, env: { PATH: process.env.PATH ?? '', HOME: home }, onOutput: (chunk) => (output += chunk.toString()) });
      await run.done;
      expect(output).toContain('## polywave/x/wave1-agent-A');
      expect(output).not.toContain('not a git repository');
      expect(output).toContain('refused');
    } finally {
      await executor.stop();
    }
  });

  it('an agent in the main checkout: the common .git directory read-only, every linked worktree unreadable, its own .env readable', async () => {
    const repo = await createTestRepo();
    const a = repo.sibling('wt-A');
    await repo.git.worktreeAdd({ path: a, branch: 'a', base: 'HEAD', createBranch: true });
    writeFileSync(repo.path('.env'), 'TOKEN=1\n');
    const plan = await buildAgentSandboxPlan({ root: repo.dir, home: repo.sibling('s/home'), tmp: repo.sibling('s/tmp'), env: repo.env, readOnly: ['docs/IMPL/IMPL-x.yaml'] });
    expect(plan.readOnlyWithin).toEqual([repo.path('.git'), repo.path('docs/IMPL/IMPL-x.yaml')]);
    expect(plan.unreadable).toContain(a);
    expect(plan.unreadable).not.toContain(repo.path('.env'));
    expect(plan.allowedHosts).toEqual([]);
  });

  it('reads a linked worktree\'s common git directory as git does, and hides a worktree added after an earlier plan of the same wave (the list is asked again when the worktrees change)', async () => {
    const repo = await createTestRepo();
    const a = repo.sibling('wt-A');
    await repo.git.worktreeAdd({ path: a, branch: 'a', base: 'HEAD', createBranch: true });
    const fromGit = (await createTestRepoGit(a).run(['rev-parse', '--path-format=absolute', '--git-common-dir'])).stdout.trim();
    expect(linkedWorktreeCommonDir(a)).toBe(fromGit);
    // the main checkout and a subdirectory: git is asked
    expect(linkedWorktreeCommonDir(repo.dir)).toBeUndefined();
    expect(linkedWorktreeCommonDir(path.join(a, 'docs'))).toBeUndefined();
    const plan = (root: string) => buildAgentSandboxPlan({ root, home: repo.sibling('s/home'), tmp: repo.sibling('s/tmp'), env: repo.env });
    const first = await plan(a);
    // two worktrees added back to back (within one clock tick of the directory's mtime): both hidden from A's next plan
    const b = repo.sibling('wt-B');
    const c = repo.sibling('wt-C');
    await repo.git.worktreeAdd({ path: b, branch: 'b', base: 'HEAD', createBranch: true });
    await repo.git.worktreeAdd({ path: c, branch: 'c', base: 'HEAD', createBranch: true });
    expect(first.unreadable).not.toContain(b);
    const second = await plan(a);
    expect(second.unreadable).toEqual(expect.arrayContaining([b, c]));
    // moved: the new place is hidden
    const moved = repo.sibling('wt-C2');
    await repo.run(['worktree', 'move', c, moved]);
    expect((await plan(a)).unreadable).toEqual(expect.arrayContaining([b, moved]));
  });
});
