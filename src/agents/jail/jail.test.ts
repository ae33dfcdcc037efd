import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../../test/support/git-repo.js';
import { createGit } from '../../git/git-cli.js';
import { checkGlobPattern, createJail, globLiteralBase, isAgentSupportPath, resolvePhysicalPath } from './jail.js';
import type { Jail, JailPolicy } from './types.js';

const branch = 'polywave/demo/wave1-agent-A';

interface Setup {
  repo: TestRepo;
  /** The worktree (real path). */
  wt: string;
  outside: string;
  jail: (overrides?: Partial<JailPolicy>) => Promise<Jail>;
}

/** main checkout + worktree on the agent branch; symlinks to the main checkout and to a directory outside. */
async function setup(): Promise<Setup> {
  const repo = await createTestRepo({
    files: { 'src/a.ts': 'export const a = 1;\n', 'src/b.ts': 'export const b = 2;\n', 'src/frozen.ts': 'export type T = 1;\n', 'docs/IMPL/IMPL-demo.yaml': 'title: demo\n' },
  });
  const outside = repo.sibling('outside');
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
  symlinkSync(repo.dir, repo.path('link-main'));
  symlinkSync(outside, repo.path('link-outside'));
  symlinkSync('b.ts', repo.path('src/link-to-b'));
  await repo.commitAll('symlinks');
  const wt = repo.sibling('wt');
  await repo.git.worktreeAdd({ path: wt, branch, base: 'HEAD', createBranch: true });
  const jail = (overrides: Partial<JailPolicy> = {}) =>
    createJail({ root: wt, ownedFiles: ['src/a.ts', 'src/new/c.ts'], branch, frozenPaths: ['src/frozen.ts'], ...overrides }, { env: repo.env });
  return { repo, wt, outside, jail };
}

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-jail-')));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('resolvePhysicalPath', () => {
  mkdirSync(path.join(scratch, 'root', 'deep', 'er'), { recursive: true });
  symlinkSync(path.join(scratch, 'root'), path.join(scratch, 'root', 'deep', 'er', 'to-root'));
  symlinkSync('/nonexistent-polywave-target/x', path.join(scratch, 'root', 'dangling'));
  symlinkSync('loop-b', path.join(scratch, 'root', 'loop-a'));
  symlinkSync('loop-a', path.join(scratch, 'root', 'loop-b'));
  const root = path.join(scratch, 'root');

  it('applies .. to the real directory reached, like the kernel', () => {
    expect(resolvePhysicalPath(root, 'deep/er/to-root/../x')).toBe(path.join(scratch, 'x'));
    expect(resolvePhysicalPath(root, 'deep/er/../x')).toBe(path.join(root, 'deep', 'x'));
    expect(resolvePhysicalPath(root, '/etc/../tmp')).toBe('/tmp');
    expect(resolvePhysicalPath(root, 'missing/../../y')).toBe(path.join(scratch, 'y'));
  });

  it('follows dangling links (a write would create the target) and refuses loops', () => {
    expect(resolvePhysicalPath(root, 'dangling')).toBe('/nonexistent-polywave-target/x');
    expect(() => resolvePhysicalPath(root, 'loop-a')).toThrow(/symbolic links/);
  });
});

describe('checkRead / checkWrite', () => {
  it('accepts relative and absolute paths inside the root', async () => {
    const { wt, jail } = await setup();
    const j = await jail();
    expect(j.root).toBe(realpathSync(wt));
    expect(await j.checkRead('src/b.ts')).toEqual({ allowed: true, absolute: path.join(wt, 'src/b.ts'), relative: 'src/b.ts' });
    expect(await j.checkRead(path.join(wt, 'src/b.ts'))).toMatchObject({ allowed: true, relative: 'src/b.ts' });
    expect(await j.checkRead('.')).toMatchObject({ allowed: true, relative: '' });
    expect(await j.checkRead('')).toMatchObject({ allowed: true, relative: '' });
    expect(await j.checkRead('./src/../README.md')).toMatchObject({ allowed: true, relative: 'README.md' });
    expect(await j.checkWrite('src/a.ts')).toMatchObject({ allowed: true, relative: 'src/a.ts' });
    expect(await j.checkWrite(path.join(wt, 'src/a.ts'))).toMatchObject({ allowed: true });
    expect(await j.checkWrite('src/new/c.ts')).toMatchObject({ allowed: true, relative: 'src/new/c.ts' });
  });

  it('refuses .., absolute paths elsewhere, ~ and $VAR', async () => {
    const { repo, jail } = await setup();
    const j = await jail();
    for (const requested of ['../repo/README.md', 'src/../../repo/README.md', '/etc/passwd', repo.path('README.md'), '/']) {
      const read = await j.checkRead(requested);
      expect(read, requested).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
      expect((await j.checkWrite(requested)).allowed, requested).toBe(false);
    }
    for (const requested of ['~/.ssh/id_rsa', '~', '$HOME/.bashrc', '${TMPDIR}/x', 'src/$(whoami)']) {
      expect(await j.checkRead(requested), requested).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
      expect(await j.checkWrite(requested), requested).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    }
    const decision = await j.checkRead('/etc/passwd');
    if (!decision.allowed) expect(decision.reason).toMatch(/^cannot read "\/etc\/passwd": it resolves to \/etc\/passwd, outside the worktree root .* \(worktree isolation E4\/E43\)\.$/);
  });

  it('refuses symbolic links that lead outside, and checks ownership on the link target', async () => {
    const { wt, outside, jail } = await setup();
    const j = await jail({ ownedFiles: ['src/a.ts', 'src/link-to-b'] });
    for (const requested of ['link-main/README.md', 'link-main', 'link-outside/secret.txt']) {
      const decision = await j.checkRead(requested);
      expect(decision, requested).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
      if (!decision.allowed) expect(decision.reason).toContain('through a symbolic link');
    }
    expect(await j.checkWrite('link-outside/new.txt')).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    // owning the link does not make its (unowned) target writable
    expect(await j.checkWrite('src/link-to-b')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await j.checkRead('src/link-to-b')).toMatchObject({ allowed: true, relative: 'src/b.ts' });
    // a dangling link pointing outside: writing through it would create the target
    symlinkSync(path.join(outside, 'created-by-write.txt'), path.join(wt, 'src', 'dangling'));
    const j2 = await jail({ ownedFiles: ['src/dangling'] });
    expect(await j2.checkWrite('src/dangling')).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
  });

  it('keeps agents out of .git (directory and worktree file), for reads too', async () => {
    const { repo, jail } = await setup();
    const j = await jail({ ownedFiles: ['.git', '.git/hooks/pre-commit'] });
    for (const requested of ['.git', '.git/HEAD', '.git/hooks/pre-commit', 'src/../.git', './.GIT/config']) {
      expect(await j.checkWrite(requested), requested).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
      expect(await j.checkRead(requested), requested).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
    }
    // a solo agent in the main checkout
    const solo = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts'] });
    expect(await solo.checkRead('.git/config')).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
    symlinkSync('.git', repo.path('git-link'));
    expect(await solo.checkRead('git-link/config')).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
  });

  it('applies read-only, frozen, owned and writable prefixes in that order', async () => {
    const { jail } = await setup();
    const j = await jail({ ownedFiles: ['src/a.ts', 'src/frozen.ts'], writablePrefixes: ['docs/IMPL/', 'notes.md'] });
    expect(await j.checkWrite('src/frozen.ts')).toMatchObject({ allowed: false, code: 'JAIL_FROZEN' });
    expect(await j.checkWrite('src/b.ts')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await j.checkWrite('docs/IMPL/IMPL-demo.yaml')).toMatchObject({ allowed: true });
    expect(await j.checkWrite('docs/IMPL/new/x.md')).toMatchObject({ allowed: true });
    expect(await j.checkWrite('docs/IMPLEMENTATION.md')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await j.checkWrite('docs/IMPL')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await j.checkWrite('notes.md')).toMatchObject({ allowed: true });
    expect(await j.checkWrite('src')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await j.checkWrite('.')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    const notOwned = await j.checkWrite('src/b.ts');
    if (!notOwned.allowed) expect(notOwned.reason).toBe('"src/b.ts" is not owned by this agent, which may write only its own files (I1 ownership; owned: src/a.ts, src/frozen.ts, docs/IMPL/, notes.md).');
    const readOnly = await jail({ readOnly: true });
    expect(await readOnly.checkWrite('src/a.ts')).toMatchObject({ allowed: false, code: 'JAIL_READ_ONLY' });
    expect(await readOnly.checkRead('src/a.ts')).toMatchObject({ allowed: true });
  });

  it('lets readablePaths be read, never written', async () => {
    const { repo, jail } = await setup();
    const manifest = repo.path('docs/IMPL/IMPL-demo.yaml');
    const j = await jail({ readablePaths: [manifest] });
    expect(await j.checkRead(manifest)).toMatchObject({ allowed: true, absolute: manifest });
    expect(await j.checkWrite(manifest)).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await j.checkRead(repo.path('README.md'))).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
  });

  it("never opens a readable root's .git, even through a link that resolves into it (S11 after X16)", async () => {
    const { repo, wt, jail } = await setup();
    symlinkSync(repo.path('.git/config'), path.join(wt, 'cfg'));
    symlinkSync(repo.path('.git'), path.join(wt, 'gitdir'));
    const j = await jail({ readablePaths: [repo.dir] });
    expect(await j.checkRead(repo.path('src/b.ts'))).toMatchObject({ allowed: true });
    expect(await j.checkRead('cfg')).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
    expect(await j.checkRead('gitdir/HEAD')).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
    expect(await j.checkRead(repo.path('.git/config'))).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
  });
});

describe('checkToolUse (Claude Code tools)', () => {
  it('maps each tool to the right check', async () => {
    const { jail } = await setup();
    const j = await jail();
    const denied = async (tool: string, input: Record<string, unknown>) => j.checkToolUse(tool, input);
    expect(await denied('Write', { file_path: 'src/a.ts', content: 'x' })).toEqual({ allowed: true });
    expect(await denied('Write', { file_path: 'src/b.ts', content: 'x' })).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await denied('Edit', { file_path: '../repo/src/a.ts' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('MultiEdit', { file_path: '.git/config' })).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
    expect(await denied('NotebookEdit', { notebook_path: 'src/b.ipynb' })).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await denied('Write', {})).toMatchObject({ allowed: false });
    expect(await denied('Read', { file_path: 'src/b.ts' })).toEqual({ allowed: true });
    expect(await denied('Read', { file_path: '/etc/passwd' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('Glob', { pattern: 'src/**/*.ts' })).toEqual({ allowed: true });
    expect(await denied('Glob', { pattern: '/etc/*' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('Glob', { pattern: '../**/*.ts' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('Glob', { pattern: '*.ts', path: '/' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('Grep', { pattern: 'x' })).toEqual({ allowed: true });
    expect(await denied('Grep', { pattern: 'x', path: '/' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('LS', { path: 'src' })).toEqual({ allowed: true });
    expect(await denied('LS', { path: '..' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('Bash', { command: 'ls src' })).toEqual({ allowed: true });
    expect(await denied('Bash', { command: 'cd / && ls' })).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    expect(await denied('Bash', { command: 'echo x > src/b.ts' })).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await denied('Bash', { command: 'git -c user.name=x commit -m msg' })).toEqual({ allowed: true });
    expect(await denied('Bash', { command: 'git -c core.hooksPath=/x commit -m msg' })).toMatchObject({ allowed: false, code: 'JAIL_BASH_FORBIDDEN_GIT' });
    expect(await denied('Bash', { command: "echo 'unterminated" })).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE', reason: expect.stringContaining('is not valid bash') });
    expect(await denied('Bash', {})).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE' });
    expect(await denied('Task', { prompt: 'x' })).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE', reason: 'Task: subagents are disabled for wave agents (their tool calls could not be confined).' });
    expect(await denied('Agent', {})).toMatchObject({ allowed: false });
    for (const tool of ['WebFetch', 'WebSearch', 'TodoWrite']) expect(await denied(tool, { url: 'https://x', path: '/etc/passwd' })).toEqual({ allowed: true });
    expect(await denied('mcp__files__write', { path: '/etc/x' })).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(await denied('mcp__files__write', { path: 'src/b.ts' })).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await denied('mcp__thing', { query: 'x' })).toEqual({ allowed: true });
  });

  it('checkBash follows real symlinks and the ownership policy', async () => {
    const { jail } = await setup();
    const j = await jail();
    expect(await j.checkBash('cat link-outside/secret.txt')).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    expect(await j.checkBash('ls link-main/')).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    expect(await j.checkBash('echo x > src/a.ts && cat src/link-to-b')).toEqual({ allowed: true });
    expect(await j.checkBash('echo x > src/link-to-b')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
    expect(await j.checkBash('mkdir -p src/new && echo x > src/new/c.ts')).toEqual({ allowed: true });
    expect(await j.checkBash('echo x > src/frozen.ts')).toMatchObject({ allowed: false, code: 'JAIL_FROZEN' });
  });
});

describe('glob helpers', () => {
  it('checks patterns and finds their literal base', () => {
    expect(checkGlobPattern('src/**/*.ts')).toEqual({ allowed: true });
    expect(checkGlobPattern('../*.ts')).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(checkGlobPattern('~/x')).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(checkGlobPattern('$HOME/*')).toMatchObject({ allowed: false, code: 'JAIL_OUTSIDE_ROOT' });
    expect(checkGlobPattern('.git/**')).toMatchObject({ allowed: false, code: 'JAIL_GIT_INTERNALS' });
    expect(globLiteralBase('/a/b/*.ts')).toBe('/a/b');
    expect(globLiteralBase('/etc/*')).toBe('/etc');
    expect(globLiteralBase('*.ts')).toBe('.');
    expect(globLiteralBase('/*')).toBe('/');
    expect(globLiteralBase('src/a.ts')).toBe('src');
  });

  it('knows the agent support files', () => {
    expect(isAgentSupportPath('.polywave-agent-brief.md')).toBe(true);
    expect(isAgentSupportPath('.polywave-state/wave1/x.json')).toBe(true);
    expect(isAgentSupportPath('docs/IMPL/IMPL-x.yaml')).toBe(false);
  });
});

describe('audit', () => {
  it('is ok for owned changes and ignores the agent support files', async () => {
    const { wt, jail } = await setup();
    const j = await jail();
    expect(await j.audit()).toMatchObject({ ok: true, violations: [], changedFiles: [], uncommittedFiles: [], head: expect.stringMatching(/^[0-9a-f]{40}$/) });
    writeFileSync(path.join(wt, 'src/a.ts'), 'export const a = 2;\n');
    mkdirSync(path.join(wt, 'src/new'));
    writeFileSync(path.join(wt, 'src/new/c.ts'), 'export const c = 3;\n');
    writeFileSync(path.join(wt, '.polywave-agent-brief.md'), '# brief\n');
    writeFileSync(path.join(wt, '.polywave-ownership.json'), '{}\n');
    writeFileSync(path.join(wt, '.polywave-worktree-env'), 'POLYWAVE_BRANCH=x\n');
    mkdirSync(path.join(wt, '.polywave-state'));
    writeFileSync(path.join(wt, '.polywave-state/x.json'), '{}\n');
    expect(await j.audit()).toMatchObject({ ok: true, violations: [], changedFiles: ['src/a.ts', 'src/new/c.ts'], uncommittedFiles: ['src/a.ts', 'src/new/c.ts'] });
  });

  // The x28 sibling-Scout test under load: the orchestrator's atomic write of the PROGRAM (an orchestrator path of the
  // Scout's policy) had its temp file there for a moment — the Scout's stop listed it as its leftover, which was gone
  // before it could be moved out: SANDBOX_LEFTOVER_STAYED, the Scout failed.
  it("an orchestrator path's atomic-write temp file is the orchestrator's, not the agent's; another dot file is not", async () => {
    const { wt, jail } = await setup();
    const j = await jail({ orchestratorPaths: ['docs/IMPL/IMPL-demo.yaml'] });
    writeFileSync(path.join(wt, 'docs/IMPL/.IMPL-demo.yaml.745.339dc52c8b11.tmp'), 'title: demo\n');
    expect(await j.audit()).toMatchObject({ ok: true, violations: [], changedFiles: [] });
    writeFileSync(path.join(wt, 'docs/IMPL/.IMPL-other.yaml.745.339dc52c8b11.tmp'), 'x\n');
    writeFileSync(path.join(wt, 'docs/IMPL/.IMPL-demo.yaml.745.339dc52c8b11.tmp.x'), 'x\n');
    expect((await j.audit()).violations.map((violation) => violation.path)).toEqual(['docs/IMPL/.IMPL-demo.yaml.745.339dc52c8b11.tmp.x', 'docs/IMPL/.IMPL-other.yaml.745.339dc52c8b11.tmp']);
  });

  it('detects unowned changes: modified, untracked, staged, deleted, renamed (both sides), committed', async () => {
    const { repo, wt, jail } = await setup();
    const j = await jail();
    const git = createGit(wt, { env: repo.env });
    const base = await git.headCommit();
    writeFileSync(path.join(wt, 'src/b.ts'), 'changed\n');
    writeFileSync(path.join(wt, 'stray.txt'), 'x\n');
    const first = await j.audit({ baseCommit: base });
    expect(first.ok).toBe(false);
    expect(first.violations.map((violation) => violation.path)).toEqual(['src/b.ts', 'stray.txt']);
    expect(first.violations[0]).toEqual({ code: 'JAIL_UNOWNED_CHANGE', path: 'src/b.ts', reason: '"src/b.ts" changed in the worktree, but the agent does not own it (I1 ownership).' });

    await git.run(['checkout', '--', 'src/b.ts']);
    rmSync(path.join(wt, 'stray.txt'));
    await git.run(['mv', 'src/a.ts', 'src/renamed.ts']);
    const renamed = await j.audit();
    expect(renamed.changedFiles).toEqual(['src/a.ts', 'src/renamed.ts']);
    expect(renamed.violations.map((violation) => violation.path)).toEqual(['src/renamed.ts']);
    await git.run(['mv', 'src/renamed.ts', 'src/a.ts']);

    // a commit on the agent branch that touches an unowned file: only visible with the base commit
    writeFileSync(path.join(wt, 'src/b.ts'), 'committed change\n');
    await git.run(['commit', '-qam', 'touch b']);
    expect((await j.audit()).ok).toBe(true);
    const committed = await j.audit({ baseCommit: base });
    expect(committed.violations).toEqual([expect.objectContaining({ code: 'JAIL_UNOWNED_CHANGE', path: 'src/b.ts' })]);

    // frozen and read-only policies name their rule
    writeFileSync(path.join(wt, 'src/frozen.ts'), 'changed\n');
    const frozen = await (await jail({ ownedFiles: ['src/frozen.ts'] })).audit();
    expect(frozen.violations[0]?.reason).toContain('frozen (I2)');
    const readOnly = await (await jail({ readOnly: true })).audit();
    expect(readOnly.violations[0]?.reason).toContain('read-only');
  });

  it('detects a moved branch: another branch, detached HEAD, branch reset away from the base', async () => {
    const { repo, wt, jail } = await setup();
    const j = await jail();
    const git = createGit(wt, { env: repo.env });
    const base = await git.headCommit();
    await git.run(['checkout', '--quiet', '--ignore-other-worktrees', 'main']);
    const moved = await j.audit();
    expect(moved.ok).toBe(false);
    expect(moved.violations).toEqual([{ code: 'JAIL_BRANCH_MOVED', reason: `HEAD is on "main", not on the agent branch "${branch}" (worktree isolation E4/E43).` }]);
    await git.run(['checkout', '--quiet', '--detach', branch]);
    expect((await j.audit()).violations[0]?.reason).toMatch(/^HEAD is detached/);
    await git.run(['checkout', '--quiet', branch]);
    expect((await j.audit({ baseCommit: base })).ok).toBe(true);
    // the branch rewound before the base commit (the files it drops are unowned changes too)
    await git.run(['reset', '--quiet', '--hard', `${base}~1`]);
    const rewound = await j.audit({ baseCommit: base });
    expect(rewound.violations).toContainEqual(expect.objectContaining({ code: 'JAIL_BRANCH_MOVED', reason: expect.stringContaining('no longer contains the base commit') }));
  });

  it('fails closed when git cannot read the root', async () => {
    const plain = path.join(scratch, 'not-a-repo');
    mkdirSync(plain, { recursive: true });
    const j = await createJail({ root: plain, ownedFiles: [] }, { env: { ...process.env, GIT_CEILING_DIRECTORIES: scratch } });
    const audit = await j.audit();
    expect(audit.ok).toBe(false);
    expect(audit.violations[0]?.reason).toMatch(/fail closed/);
  });

  it('uses the injected git factory', async () => {
    const { repo, wt } = await setup();
    const seen: string[] = [];
    const j = await createJail({ root: wt, ownedFiles: [] }, { gitAt: (dir) => (seen.push(dir), createGit(dir, { env: repo.env })) });
    await j.audit();
    // Once for the submodule-path baseline at creation (X8 #2c), once for the audit: always the worktree.
    expect(seen).toEqual([realpathSync(wt), realpathSync(wt)]);
  });
});
