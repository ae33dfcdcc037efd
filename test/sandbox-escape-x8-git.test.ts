/**
 * REGRESSION (issue 11, outside attack X8 #1 and #2, helper S1): polywave runs git OUTSIDE the
 * sandbox on trees agents write, and git ran programs those trees named.
 * - #1: with husky's in-tree `core.hooksPath=.husky/_`, polywave's wrapper hook delegated to
 *   `$(git rev-parse --show-toplevel)/.husky/_/pre-commit` — the agent's worktree — so the
 *   `git_commit` tool (and the cli backend's commit after a clean audit, which is the same code) ran
 *   a hook the agent wrote, as the user. Now polywave's commits on agent trees run no hook, and the
 *   wrapper delegates to the main checkout's hooks only.
 * - #2: an agent turned the empty submodule path `vendor/lib` of its worktree into a repository
 *   whose config sets `core.fsmonitor=<cmd>`; every `git status` polywave ran there (the jail
 *   audit, git_commit) recursed into it and ran `<cmd>`. Now polywave's git never enters submodules
 *   and has fsmonitor off, and the audit reports the planted repository (in a solo agent's main
 *   checkout it would outlive the run and fire on the user's own `git status`).
 * One real repository, one worktree, the real tools; the planted programs only append to a file.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import { attachWorktreeHooks, installIsolationHook } from '../src/engine/isolation-hook.js';
import { commitFiles } from '../src/git/commit-files.js';
import { createGit } from '../src/git/git-cli.js';
import { hardenGitArgs } from '../src/git/harden.js';
import { gitlinkRepoSignatures, quarantineGitlinkRepos } from '../src/git/nested-repos.js';
import { runGit } from '../src/git/run-git.js';
import { createTestRepo } from './support/git-repo.js';

const branch = 'polywave/x8/wave1-agent-A';

describe('X8: git run by polywave outside the sandbox executes nothing the agent wrote', () => {
  it('no agent hook (in-tree core.hooksPath) and no nested-repository fsmonitor runs; the planted repository is reported', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', '.husky/pre-commit': 'echo tracked husky config\n' } });
    const canary = repo.sibling('canary');
    mkdirSync(canary);
    const log = (name: string) => path.join(canary, name);
    const script = (name: string) => `#!/bin/sh\necho "$(pwd)" >> '${log(name)}'\nexit 0\n`;
    // The repository has a submodule at vendor/lib (a gitlink; not initialised in worktrees).
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    repo.write('.gitmodules', '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ./lib\n');
    await repo.run(['update-index', '--add', '--cacheinfo', `160000,${head},vendor/lib`]);
    await repo.run(['add', '.gitmodules']);
    await repo.run(['commit', '--quiet', '--no-verify', '-m', 'submodule']);
    // husky: core.hooksPath=.husky/_, generated and git-ignored; the main checkout's own hook.
    repo.write('.husky/_/.gitignore', '*\n');
    repo.write('.husky/_/pre-commit', script('main-hook'));
    chmodSync(repo.path('.husky/_/pre-commit'), 0o755);
    await repo.run(['config', 'core.hooksPath', '.husky/_']);
    const install = await installIsolationHook(repo.git);
    expect(install.mode).toBe('worktree-config');
    const wt = repo.sibling('wt-A');
    await repo.git.worktreeAdd({ path: wt, branch, base: 'HEAD', createBranch: true });
    await attachWorktreeHooks(createGit(wt, { env: repo.env }), install);
    const jail = await createJail({ root: wt, ownedFiles: ['src/a.ts'], branch }, { env: repo.env });
    const wtGit = createGit(wt, { env: repo.env });
    const before = await gitlinkRepoSignatures(wtGit, wt);

    // What the agent does inside its sandbox: its owned file, a hook in its tree, a repository in vendor/lib.
    writeFileSync(path.join(wt, 'src/a.ts'), 'export const a = 2;\n');
    mkdirSync(path.join(wt, '.husky/_'), { recursive: true });
    writeFileSync(path.join(wt, '.husky/_/.gitignore'), '*\n');
    writeFileSync(path.join(wt, '.husky/_/pre-commit'), script('agent-hook'), { mode: 0o755 });
    writeFileSync(path.join(wt, 'fsmon.sh'), script('fsmonitor'), { mode: 0o755 });
    const nested = path.join(wt, 'vendor/lib/.git');
    for (const sub of ['objects', 'refs/heads']) mkdirSync(path.join(nested, sub), { recursive: true });
    writeFileSync(path.join(nested, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(nested, 'config'), `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ${path.join(wt, 'fsmon.sh')}\n`);

    // Every git status polywave runs there: the port, runGit, the jail audit (+ its report of the planted repository).
    expect((await createGit(wt, { env: repo.env }).status()).map((entry) => entry.path).sort()).toEqual(['fsmon.sh', 'src/a.ts']);
    await runGit(['--no-optional-locks', 'status', '--porcelain'], { cwd: wt, env: repo.env });
    const audit = await jail.audit();
    expect(audit.violations).toContainEqual(expect.objectContaining({ code: 'JAIL_GIT_INTERNALS', path: 'vendor/lib/.git' }));
    expect(audit.changedFiles).not.toContain('vendor/lib');

    // git_commit (the cli backend's commit after a clean audit is this same tool).
    const context: ToolContext = { jail, env: repo.env, signal: new AbortController().signal, toolTimeoutMs: 20_000, maxToolOutputBytes: 30_000, branch };
    const tool = createAgentTools().find((candidate) => candidate.name === 'git_commit')!;
    const result = await runToolCall(tool, { message: 'feat: a' }, context, { onEvent: () => {} }, 'call-1');
    expect(result.output).toMatch(/^Committed [0-9a-f]{12} on polywave\/x8\/wave1-agent-A: 1 file \(src\/a\.ts\)/);
    expect(existsSync(log('agent-hook')), 'the agent-written hook ran outside the sandbox').toBe(false);
    expect(existsSync(log('fsmonitor')), 'the nested repository fsmonitor ran outside the sandbox').toBe(false);

    // polywave's bookkeeping commits (commitFiles) run no hook either, even the main checkout's.
    repo.write('notes.txt', 'x\n');
    await commitFiles({ cwd: repo.dir, files: ['notes.txt'], message: 'chore: notes', env: repo.env });
    expect(existsSync(log('main-hook'))).toBe(false);

    // A plain `git commit` in the worktree (the user's, or the agent's inside its sandbox) goes through
    // the wrapper: it runs the MAIN checkout's hook, never the worktree's copy.
    writeFileSync(path.join(wt, 'src/a.ts'), 'export const a = 3;\n');
    execFileSync('git', ['commit', '--quiet', '-m', 'by hand', '--', 'src/a.ts'], { cwd: wt, env: { ...process.env, ...repo.env }, stdio: 'ignore' });
    expect(readFileSync(log('main-hook'), 'utf8')).toBe(`${wt}\n`);
    expect(existsSync(log('agent-hook'))).toBe(false);
    expect(existsSync(log('fsmonitor'))).toBe(false);

    // After the agent (run-agent does this): the planted repository is moved out, so the user's own
    // plain `git status` (which enters submodules) runs nothing either.
    const moved = await quarantineGitlinkRepos({ git: wtGit, root: wt, before, agentId: 'A' });
    expect(moved).toEqual([{ path: 'vendor/lib/.git', movedTo: expect.stringContaining(path.join(repo.dir, '.git', 'polywave', 'quarantine', 'A-')) }]);
    expect(existsSync(nested)).toBe(false);
    expect(existsSync(path.join(moved[0]!.movedTo!, 'config.quarantined'))).toBe(true);
    execFileSync('git', ['status', '--porcelain', '--ignore-submodules=none'], { cwd: wt, env: repo.env as NodeJS.ProcessEnv });
    expect(existsSync(log('fsmonitor'))).toBe(false);
    expect(await quarantineGitlinkRepos({ git: wtGit, root: wt, before, agentId: 'A' })).toEqual([]);
  }, 60_000);

  it('hardenGitArgs: -c pins after the caller\'s global options, submodule options right after status/diff, an explicit choice kept', () => {
    // …and core.hooksPath=/dev/null last (it wins over a caller's pin; X25-01), except for the queries that read it.
    const pins = ['-c', 'core.fsmonitor=false', '-c', 'submodule.recurse=false', '-c', 'core.trustctime=true', '-c', 'core.checkStat=default', '-c', 'core.ignoreStat=false', '-c', 'core.hooksPath=/dev/null'];
    const queryPins = pins.slice(0, -2);
    expect(hardenGitArgs(['-C', '/w', '--no-optional-locks', 'status', '--porcelain'])).toEqual(['-C', '/w', '--no-optional-locks', ...pins, 'status', '--ignore-submodules=all', '--porcelain']);
    expect(hardenGitArgs(['-c', 'core.hooksPath=/snapshot', 'status', '--ignore-submodules=none'])).toEqual(['-c', 'core.hooksPath=/snapshot', ...pins, 'status', '--ignore-submodules=none']);
    expect(hardenGitArgs(['diff', '--name-only', '--end-of-options', 'a..b'])).toEqual([...pins, 'diff', '--ignore-submodules=dirty', '--no-ext-diff', '--no-textconv', '--name-only', '--end-of-options', 'a..b']);
    expect(hardenGitArgs(['diff-files', '--name-only'])).toEqual([...pins, 'diff-files', '--ignore-submodules=dirty', '--name-only']);
    expect(hardenGitArgs(['commit', '-m', 'status'])).toEqual([...pins, 'commit', '-m', 'status']);
    expect(hardenGitArgs(['add', '--', 'x'])).toEqual([...pins, 'add', '--', 'x']);
    expect(hardenGitArgs(['config', '--get', 'core.hooksPath'])).toEqual([...queryPins, 'config', '--get', 'core.hooksPath']);
    expect(hardenGitArgs(['rev-parse', '--git-path', 'hooks'])).toEqual([...queryPins, 'rev-parse', '--git-path', 'hooks']);
    expect(hardenGitArgs(['--version'])).toEqual(['--version']);
  });
});
