// Issue 11, outside attack X10 R1 and N2a–d: GIT_CONFIG_IN_WORKTREE decided from git itself. Any git
// config file that lies in a working tree agents write (reached from the user's ~/.gitconfig by an
// includeIf gitdir:, by a nested include, through a symlink in .git/, named by GIT_CONFIG_GLOBAL, or
// included in a solo wave) would let an agent name programs polywave's own git runs outside the
// sandbox. Each variant is refused before any git command runs a filter: the tree's .gitconfig
// defines a clean filter that appends to a canary file; the canary stays absent (and a control
// `git hash-object --path` with the same environment shows the filter would have run).
import { userInfo } from 'node:os';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareAgent, prepareWave } from '../src/engine/prepare-wave.js';
import { assertGitConfigOutsideWorkingTrees, configFilesInWorkingTrees } from '../src/git/config-origins.js';
import { createGit } from '../src/git/git-cli.js';
import { PolywaveError } from '../src/errors/polywave-error.js';
import { runScaffold } from '../src/orchestrator/run-scaffold.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture } from './support/wave-fixture.js';

type Env = Record<string, string | undefined>;

describe('GIT_CONFIG_IN_WORKTREE from git config --show-origin (X10 R1, N2a–d)', () => {
  it('prepare-wave, prepare-agent --no-worktree, finalize and the command check refuse every way git reaches a tree file; includes in .git/ or outside pass', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }]], state: 'WAVE_PENDING' });
    const repo = fixture.repo.dir;
    const canary = fixture.repo.sibling('canary.log');
    const filter = fixture.repo.sibling('canary-filter.sh');
    writeFileSync(filter, `#!/bin/sh\necho ran >> '${canary}'\ncat\n`);
    chmodSync(filter, 0o755);
    // What an agent would write (here: left untracked and ignored, so the tree stays clean).
    writeFileSync(path.join(repo, '.gitconfig'), `[filter "canary"]\n\tclean = ${filter}\n\tsmudge = ${filter}\n\trequired = true\n`);
    writeFileSync(path.join(repo, '.gitattributes'), '* filter=canary\n');
    writeFileSync(path.join(repo, '.git', 'info', 'exclude'), '/.claude/worktrees/\n/.polywave-state/\n/.gitconfig\n/.gitattributes\n');
    const home = fixture.repo.sibling('home');
    mkdirSync(home);
    const git = (args: string[], env: Env = fixture.repo.env) => execFileSync('git', args, { cwd: repo, env: env as NodeJS.ProcessEnv }).toString();
    const snapshot = () => ({ head: git(['rev-parse', 'HEAD']), branches: git(['branch', '--list']), worktrees: git(['worktree', 'list', '--porcelain']), state: existsSync(path.join(repo, '.polywave-state')) });
    const before = snapshot();
    const prepare = (env: Env) => prepareWave({ implPath: fixture.implPath, wave: 1, env, gitAt: (directory) => createGit(directory, { env }), now: () => new Date('2026-05-12T10:00:00Z') });
    const solo = (env: Env) => prepareAgent({ implPath: fixture.implPath, wave: 1, agent: 'A', noWorktree: true, env, gitAt: (directory) => createGit(directory, { env }), now: () => new Date('2026-05-12T10:00:00Z') });

    /** Refused at `step` naming `file` (and `via`), nothing changed, the canary filter never ran — yet it would have. */
    const expectRefused = async (name: string, env: Env, file: string, via: RegExp, setup: () => void, teardown: () => void, paths: 'both' | 'wave' = 'wave') => {
      setup();
      const runs = [[prepare, 'tamper_check'] as const, ...(paths === 'both' ? [[solo, 'git_config_check'] as const] : [])];
      for (const [run, step] of runs) {
        const result = await run(env);
        const failed = result.steps.find((item) => item.status === 'failed');
        expect(result.success, name).toBe(false);
        expect(failed?.step, `${name}: ${JSON.stringify(failed)}`).toBe(step);
        expect(failed?.detail, name).toContain(`GIT_CONFIG_IN_WORKTREE: the repository's git config includes ${file}, inside the working tree agents write (`);
        expect(failed?.detail, name).toMatch(via);
        expect((failed?.data as { code?: string }).code).toBe('GIT_CONFIG_IN_WORKTREE');
      }
      expect(existsSync(canary), `${name}: a filter ran`).toBe(false);
      expect(snapshot(), name).toEqual(before);
      // Control: with this environment git does run the agent's filter.
      if (existsSync(file)) {
        git(['hash-object', '--path=README.md', 'README.md'], env);
        expect(existsSync(canary), `${name}: control`).toBe(true);
        rmSync(canary);
      }
      teardown();
    };
    const gitconfig = path.join(repo, '.gitconfig');

    // N2a: the user's ~/.gitconfig (HOME, no GIT_CONFIG_GLOBAL) includes the tree file for this repository.
    const homeEnv: Env = { ...fixture.repo.env, GIT_CONFIG_GLOBAL: undefined, XDG_CONFIG_HOME: undefined, HOME: home };
    await expectRefused(
      'N2a includeIf gitdir in ~/.gitconfig',
      homeEnv,
      gitconfig,
      /via includeif\.gitdir:.*\.path in .*\/home\/\.gitconfig \(global\)/,
      () => writeFileSync(path.join(home, '.gitconfig'), `[includeIf "gitdir:${repo}/"]\n\tpath = ${gitconfig}\n`),
      () => rmSync(path.join(home, '.gitconfig')),
      'both',
    );
    // N2b: nested — .git/config includes .git/team.config (fine), which includes ../.gitconfig.
    await expectRefused(
      'N2b nested include',
      fixture.repo.env,
      gitconfig,
      /via include\.path in .*\/\.git\/team\.config \(local\) ← include\.path in .*\/\.git\/config \(local\)/,
      () => {
        writeFileSync(path.join(repo, '.git', 'team.config'), '[include]\n\tpath = ../.gitconfig\n');
        git(['config', '--add', 'include.path', 'team.config']);
      },
      () => git(['config', '--unset-all', 'include.path']),
    );
    // N2c: a symlink in .git/ pointing at the tree file.
    await expectRefused(
      'N2c symlinked include',
      fixture.repo.env,
      gitconfig,
      /via include\.path in .*\/\.git\/config \(local\)/,
      () => {
        symlinkSync('../.gitconfig', path.join(repo, '.git', 'shared.config'));
        git(['config', '--add', 'include.path', 'shared.config']);
      },
      () => {
        git(['config', '--unset-all', 'include.path']);
        rmSync(path.join(repo, '.git', 'shared.config'));
      },
    );
    // N2d: GIT_CONFIG_GLOBAL names the tree file (a direnv .envrc) — and one the agent has yet to write.
    await expectRefused('N2d GIT_CONFIG_GLOBAL', { ...fixture.repo.env, GIT_CONFIG_GLOBAL: gitconfig }, gitconfig, /via GIT_CONFIG_GLOBAL/, () => undefined, () => undefined);
    await expectRefused('N2d GIT_CONFIG_GLOBAL, not written yet', { ...fixture.repo.env, GIT_CONFIG_GLOBAL: path.join(repo, 'tools', 'git.cfg') }, path.join(repo, 'tools', 'git.cfg'), /via GIT_CONFIG_GLOBAL/, () => undefined, () => undefined);
    // R1: the solo path (prepare-agent --no-worktree, run-wave's solo/integration waves) with X9's include.
    await expectRefused(
      'R1 solo include.path',
      fixture.repo.env,
      gitconfig,
      /via include\.path in .*\/\.git\/config \(local\)/,
      () => git(['config', '--add', 'include.path', '../.gitconfig']),
      () => git(['config', '--unset-all', 'include.path']),
      'both',
    );

    // X13: `~user/…` (git's getpwnam): the current user's home, then up and into the repository.
    const me = userInfo();
    if (me.homedir.startsWith('/') && existsSync(me.homedir)) {
      const viaUser = `~${me.username}${path.relative(me.homedir, gitconfig).startsWith('/') ? '' : '/'}${path.relative(me.homedir, gitconfig)}`;
      await expectRefused(
        'X13 ~user include',
        fixture.repo.env,
        gitconfig,
        /via include\.path in .*\/\.git\/config \(local\)/,
        () => git(['config', '--add', 'include.path', viaUser]),
        () => git(['config', '--unset-all', 'include.path']),
        'both',
      );
    }

    // The command check (run-integration / run-scaffold): exit 2, coded.
    git(['config', '--add', 'include.path', '../.gitconfig']);
    const thrown = await assertGitConfigOutsideWorkingTrees(repo, fixture.repo.env).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(PolywaveError.isInstance(thrown) && thrown.code === 'GIT_CONFIG_IN_WORKTREE' && thrown.exitCode === 2, String(thrown)).toBe(true);
    git(['config', '--unset-all', 'include.path']);

    // Legitimate: includes inside .git/ (also a symlink there to a file outside the repository) and outside it pass.
    const outside = fixture.repo.sibling('team.gitconfig');
    writeFileSync(outside, '[alias]\n\tst = status\n');
    writeFileSync(path.join(repo, '.git', 'local.cfg'), '[alias]\n\tco = checkout\n');
    symlinkSync(outside, path.join(repo, '.git', 'linked.cfg'));
    git(['config', '--add', 'include.path', 'local.cfg']);
    git(['config', '--add', 'include.path', 'linked.cfg']);
    git(['config', '--add', 'include.path', outside]);
    writeFileSync(path.join(home, '.gitconfig'), `[includeIf "gitdir:${repo}/"]\n\tpath = ${outside}\n`);
    expect(await configFilesInWorkingTrees({ root: repo, commonDir: path.join(repo, '.git'), env: homeEnv })).toEqual([]);
    await assertGitConfigOutsideWorkingTrees(repo, homeEnv);
    const prepared = await prepare(homeEnv);
    expect(prepared.success, JSON.stringify(prepared.steps.filter((item) => item.status === 'failed'))).toBe(true);
    expect(existsSync(canary)).toBe(false);

    // finalize-wave, before its first merge: an include of the tree file added during the wave (agents worked and reported).
    await fixture.complete('A', { 'src/a.js': 'export const a = 1;\n' });
    await fixture.complete('B', { 'src/b.js': 'export const b = 1;\n' });
    git(['config', '--add', 'include.path', '../.gitconfig']);
    const head = await fixture.head();
    const finalized = await fixture.finalize(1);
    expect(finalized.failed_step, JSON.stringify(finalized.failed_step)).toMatchObject({ step: 'check-git-config', code: 'GIT_CONFIG_IN_WORKTREE' });
    expect(finalized.failed_step?.detail).toContain('Nothing was merged.');
    expect(finalized.steps.map((item) => item.step)).toEqual(['check-git-config']);
    git(['config', '--unset-all', 'include.path', '../.gitconfig']);
    // Only agent A's worktree sees it (its config.worktree includes the .gitconfig it wrote): the check with the worktrees refuses.
    const worktreeA = fixture.worktree('A');
    writeFileSync(path.join(worktreeA, '.gitconfig'), `[filter "canary"]\n\tclean = ${filter}\n\tsmudge = ${filter}\n\trequired = true\n`);
    writeFileSync(path.join(worktreeA, '.gitattributes'), '* filter=canary\n');
    git(['config', 'extensions.worktreeConfig', 'true']);
    const gitDirA = /^gitdir: (.+)$/m.exec(readFileSync(path.join(worktreeA, '.git'), 'utf8'))![1]!.trim();
    git(['config', '--file', path.join(gitDirA, 'config.worktree'), 'include.path', path.join(worktreeA, '.gitconfig')]);
    const again = await fixture.finalize(1);
    expect(again.failed_step, JSON.stringify(again.failed_step)).toMatchObject({ step: 'check-tamper', code: 'GIT_CONFIG_IN_WORKTREE' });
    expect(again.failed_step?.detail).toContain(`includes ${path.join(worktreeA, '.gitconfig')}, inside the working tree agents write (`);
    expect(again.failed_step?.detail).toMatch(/via include\.path in .*\/config\.worktree \(worktree\)/);
    expect(await fixture.head()).toBe(head);
    expect(existsSync(canary)).toBe(false);
  });
  it('run-scaffold (an agent in the main checkout) refuses before the state commit and the agent: exit 2, nothing changed', async () => {
    const yaml = ['title: Shapes', 'feature_slug: shapes', 'verdict: SUITABLE', 'state: REVIEWED', 'scaffolds:', '    - file_path: src/types.mjs', '      contents: |', '          export const a = 1;', '      status: pending', 'file_ownership:', '    - file: src/shape.mjs', '      agent: A', '      wave: 1', '      action: new', 'waves:', '    - number: 1', '      agents:', '        - id: A', '          task: Implement src/shape.mjs.', '          files:', '            - src/shape.mjs', ''].join('\n');
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-shapes.yaml': yaml } });
    await repo.run(['config', '--add', 'includeIf.onbranch:main.path', '../tools/team.gitconfig']);
    repo.write('docs/IMPL/IMPL-shapes.yaml', `${yaml}# a dirty IMPL (the run would commit it first)\n`);
    const head = await repo.git.headCommit();
    const refused = await runScaffold({ implPath: repo.path('docs/IMPL/IMPL-shapes.yaml'), repoDir: repo.dir, env: repo.env, model: 'script:/nonexistent.yaml' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ code: 'GIT_CONFIG_IN_WORKTREE', exitCode: 2 });
    expect((refused as Error).message).toContain(`${repo.dir}/tools/team.gitconfig, inside the working tree agents write (`);
    expect(await repo.git.headCommit()).toBe(head);
    expect(await repo.run(['status', '--porcelain'])).toBe(' M docs/IMPL/IMPL-shapes.yaml\n');
  });
});
