import { existsSync, mkdirSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../../test/support/git-repo.js';
import { agentSandboxPlan } from '../../sandbox/sandbox-plan.js';
import { guardIgnoredPaths } from './ignored-paths.js';

describe('guardIgnoredPaths (real git, no sandbox needed)', () => {
  it('read-only (or throwaway, for build outputs) mounts for the shallow entries (owned and polywave paths left out), past the mount limit a fingerprint: a changed deep entry and a new one are moved to the quarantine', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '.polywave-state/\n__pycache__/\n.envrc\ndist/\ngen.txt\n', 'src/owned/keep.txt': 'x\n' } });
    writeFileSync(repo.path('.envrc'), 'user\n');
    mkdirSync(repo.path('.polywave-state'), { recursive: true });
    writeFileSync(repo.path('src/owned/gen.txt'), 'ignored but owned\n');
    for (let index = 0; index < 12; index += 1) {
      mkdirSync(repo.path(`pkg/p${index}/__pycache__`), { recursive: true });
      // A tracked file beside each: git lists every __pycache__/ on its own (else one `pkg/` stands for all).
      writeFileSync(repo.path(`pkg/p${index}/m.py`), 'x = 1\n');
      writeFileSync(repo.path(`pkg/p${index}/__pycache__/m.pyc`), 'user bytecode\n');
    }
    await repo.commitAll('python sources');
    const plan = agentSandboxPlan({ root: repo.dir, home: repo.sibling('h'), tmp: repo.sibling('t'), gitCommonDir: repo.path('.git'), otherWorktrees: [], scratchDirs: [] });
    const guard = await guardIgnoredPaths({ root: repo.dir, plan, ownedFiles: ['src/owned/gen.txt'], gitCommonDir: repo.path('.git'), agentId: 'A', env: repo.env, mountLimit: 8, now: () => new Date('2026-12-03T00:00:00Z') });
    // .envrc read-only; the __pycache__/ directories (build output) throwaway tmpfs mounts, 8 mounts in all (256 in use).
    expect(guard.readOnly).toEqual([repo.path('.envrc')]);
    expect(guard.throwaway).toHaveLength(7);
    expect(plan.unreadable).toContain(repo.path('pkg/p0/__pycache__'));
    expect(guard.throwaway).not.toContain(repo.path('pkg/p9/__pycache__'));
    expect(plan.readOnlyWithin).toContain(repo.path('.envrc'));
    expect(guard.readOnly).not.toContain(repo.path('.polywave-state'));
    expect(guard.readOnly).not.toContain(repo.path('src/owned/gen.txt'));
    // What the agent does: a new dist/, a deep entry past the mounts rewritten, one untouched, its owned file.
    mkdirSync(repo.path('dist'));
    writeFileSync(repo.path('dist/x.js'), 'agent\n');
    writeFileSync(repo.path('pkg/p9/__pycache__/m.pyc'), 'agent bytecode\n');
    writeFileSync(repo.path('src/owned/gen.txt'), 'changed by its owner\n');
    writeFileSync(repo.path('.polywave-state/journal.jsonl'), '{}\n');
    const moved = await guard.quarantineNew();
    const batch = repo.path('.git/polywave/quarantine/A-2026-12-03T00-00-00-000Z');
    expect(moved.map((entry) => entry.path).sort()).toEqual(['dist/', 'pkg/p9/__pycache__/']);
    expect(readFileSync(path.join(batch, 'pkg/p9/__pycache__/m.pyc.quarantined'), 'utf8')).toBe('agent bytecode\n');
    expect(existsSync(repo.path('dist'))).toBe(false);
    expect(readFileSync(repo.path('pkg/p8/__pycache__/m.pyc'), 'utf8')).toBe('user bytecode\n');
    expect(readFileSync(repo.path('src/owned/gen.txt'), 'utf8')).toBe('changed by its owner\n');
    expect(existsSync(repo.path('.polywave-state/journal.jsonl'))).toBe(true);
  });

  it('X30-11: a watched entry past the read-only mounts that the agent deleted is reported (no copy was kept), never passed over in silence; one it owns is not', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '*.log\nzz-data/\nmine.cache\n', 'src/a.ts': 'x\n' } });
    for (let index = 0; index < 4; index += 1) writeFileSync(repo.path(`a${index}.log`), 'log\n');
    mkdirSync(repo.path('zz-data'));
    writeFileSync(repo.path('zz-data/db.sqlite'), 'the user\'s data\n');
    writeFileSync(repo.path('mine.cache'), 'owned\n');
    const plan = agentSandboxPlan({ root: repo.dir, home: repo.sibling('h'), tmp: repo.sibling('t'), gitCommonDir: repo.path('.git'), otherWorktrees: [], scratchDirs: [] });
    const guard = await guardIgnoredPaths({ root: repo.dir, plan, ownedFiles: ['mine.cache'], gitCommonDir: repo.path('.git'), agentId: 'A', env: repo.env, mountLimit: 2, now: () => new Date('2026-12-03T00:00:00Z') });
    rmSync(repo.path('zz-data'), { recursive: true });
    rmSync(repo.path('mine.cache'));
    const moved = await guard.quarantineNew();
    expect(moved.filter((entry) => entry.deleted).map((entry) => entry.path)).toEqual(['zz-data/']);
    expect(moved.find((entry) => entry.deleted)?.error).toContain('could not be put back');
  });

  it('a new ignored directory is moved out whole, except a worktree git made in it meanwhile (a PROGRAM tier), and an owned file in it stays (outside attack X8 #3)', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '.polywave-state/\n.claude/\ngen/\n', 'src/a.ts': 'x\n' } });
    const plan = agentSandboxPlan({ root: repo.dir, home: repo.sibling('h'), tmp: repo.sibling('t'), gitCommonDir: repo.path('.git'), otherWorktrees: [], scratchDirs: [] });
    const guard = await guardIgnoredPaths({ root: repo.dir, plan, ownedFiles: ['gen/out.js'], gitCommonDir: repo.path('.git'), agentId: 'A', env: repo.env, now: () => new Date('2026-12-03T00:00:00Z') });
    // While the agent runs: polywave makes another IMPL's worktree under .claude/worktrees/; the agent
    // plants Claude Code settings beside it, writes its owned gen/out.js and a file next to it.
    await repo.git.worktreeAdd({ path: repo.path('.claude/worktrees/tier'), branch: 'tier-work', base: 'HEAD', createBranch: true });
    writeFileSync(repo.path('.claude/settings.local.json'), '{"hooks":{}}\n');
    mkdirSync(repo.path('.claude/worktrees/plant'), { recursive: true });
    writeFileSync(repo.path('.claude/worktrees/plant/x'), 'pwn\n');
    mkdirSync(repo.path('gen'));
    writeFileSync(repo.path('gen/out.js'), 'owned\n');
    writeFileSync(repo.path('gen/evil.sh'), 'pwn\n');
    const moved = await guard.quarantineNew();
    expect(moved.map((entry) => entry.path).sort()).toEqual(['.claude/settings.local.json', '.claude/worktrees/plant/', 'gen/evil.sh']);
    expect(existsSync(repo.path('.claude/worktrees/tier/src/a.ts'))).toBe(true);
    expect(readFileSync(repo.path('gen/out.js'), 'utf8')).toBe('owned\n');
    expect(readFileSync(repo.path('.git/polywave/quarantine/A-2026-12-03T00-00-00-000Z/.claude/settings.local.json.quarantined'), 'utf8')).toBe('{"hooks":{}}\n');
  });

  it('fails closed past the watch budget: an entry that does not fit is mounted read-only after all, one gone through child by child or too many mounts stop the launch (outside attack X9 #3)', async () => {
    const repo = await createTestRepo({ files: { '.gitignore': '.polywave-state/\nnode_modules/\n.envrc\ngen/\n*.log\n', 'pkg/a/package.json': '{}\n', 'pkg/b/package.json': '{}\n', 'logs/README': 'x\n' } });
    writeFileSync(repo.path('.envrc'), 'user\n');
    mkdirSync(repo.path('pkg/a/node_modules'), { recursive: true });
    writeFileSync(repo.path('pkg/a/node_modules/small.js'), 'user\n');
    mkdirSync(repo.path('pkg/b/node_modules/.bin'), { recursive: true });
    for (const name of ['tsc', 'x', 'y', 'z']) writeFileSync(repo.path(`pkg/b/node_modules/.bin/${name}`), 'user\n');
    const planOf = () => agentSandboxPlan({ root: repo.dir, home: repo.sibling('h'), tmp: repo.sibling('t'), gitCommonDir: repo.path('.git'), otherWorktrees: [], scratchDirs: [] });
    const base = { root: repo.dir, gitCommonDir: repo.path('.git'), agentId: 'A', env: repo.env, mountLimit: 1, watchBudget: 5, now: () => new Date('2026-12-03T00:00:00Z') };
    // One mount (.envrc); pkg/a/node_modules/ fits in the 5-file budget (watched), pkg/b's does not: read-only, never unwatched.
    const plan = planOf();
    const guard = await guardIgnoredPaths({ ...base, plan, ownedFiles: [] });
    expect(guard.overBudget).toEqual([repo.path('pkg/b/node_modules')]);
    expect(guard.readOnly).toEqual([repo.path('.envrc'), repo.path('pkg/b/node_modules')]);
    expect(plan.readOnlyWithin).toContain(repo.path('pkg/b/node_modules'));
    expect(plan.readOnlyWithin).not.toContain(repo.path('pkg/a/node_modules'));
    writeFileSync(repo.path('pkg/a/node_modules/small.js'), 'agent\n');
    expect((await guard.quarantineNew()).map((entry) => entry.path)).toEqual(['pkg/a/node_modules/']);
    // An ignored directory holding an owned file is gone through child by child: over the budget, no launch.
    mkdirSync(repo.path('gen'));
    for (let index = 0; index < 6; index += 1) writeFileSync(repo.path(`gen/${index}.js`), 'user\n');
    await expect(guardIgnoredPaths({ ...base, plan: planOf(), ownedFiles: ['gen/out.js'] })).rejects.toMatchObject({ code: 'SANDBOX_IGNORED_TOO_MANY', message: expect.stringContaining('gen') as unknown });
    // More entries past the budget than mounts can take (8 × the mount limit): no launch either.
    for (let index = 0; index < 9; index += 1) writeFileSync(repo.path(`logs/${index}.log`), 'x\n');
    await expect(guardIgnoredPaths({ ...base, plan: planOf(), ownedFiles: [], watchBudget: 0 })).rejects.toMatchObject({ code: 'SANDBOX_IGNORED_TOO_MANY', message: expect.stringContaining('run this wave with worktrees') as unknown });
  });
});
