import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../../test/support/git-repo.js';
import { buildAgentSandboxPlan } from './agent-sandbox.js';

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
});
