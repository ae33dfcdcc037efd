/**
 * REGRESSION (issue 11, helper S9): isolation leftovers after X13.
 * - The nested-repository check failed OPEN: when git could not read the repository around the
 *   plan's (a broken `.git` above it), the error was taken for "not nested" — prepare-wave went on
 *   and the trusted config reader fell back to reading configs from the disk. Now a coded refusal
 *   (NESTED_REPOSITORY_UNCHECKED, exit 2, nothing changed) naming the path and git's message; an
 *   empty `.git` directory (git itself ignores it) still passes.
 * - An include target polywave cannot resolve (an unknown `%(prefix)`) was skipped: now a
 *   GIT_CONFIG_IN_WORKTREE finding (`%(prefix)/` is resolved from git's exec path). A committed polywave.config.json git cannot read was "no
 *   config" (the defaults, or a config found above): now CONFIG_REPOSITORY_UNREADABLE.
 * - accept-config listed the changed keys, not what they now say: each watched key's committed
 *   value before and now is shown (secret-shaped parts redacted).
 * - finalize-wave listed the main checkout's git config twice (check-git-config before
 *   load-manifest, then again before check-tamper): once per checkout now.
 * Real git (a PATH wrapper around the real git counts the listings), the CLI in-process.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { valueChanges } from '../src/cli/commands/accept-config.js';
import { checkGitConfigOrigins } from '../src/git/config-origins.js';
import { assertNotNestedRepository } from '../src/git/nested-repos.js';
import type { ProjectConfig } from '../src/store/project-config.js';
import { readTrustedConfigText, repositoryOf } from '../src/store/trusted-config.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture } from './support/wave-fixture.js';

describe('isolation leftovers (issue 11, S9)', () => {
  it('nested-repository and config checks fail closed; finalize lists each checkout\'s git config once', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }]], state: 'WAVE_PENDING' });
    const { repo } = fixture;
    const env = repo.env as Record<string, string>;
    const outer = path.dirname(repo.dir);
    const head = await fixture.head();
    const manifest = readFileSync(fixture.implPath, 'utf8');

    // 1. A repository around the plan's that git cannot read: refused, naming it and git's message.
    writeFileSync(path.join(outer, '.git'), `gitdir: ${path.join(outer, 'gone')}\n`);
    await expect(assertNotNestedRepository(repo.dir, env)).rejects.toMatchObject({ code: 'NESTED_REPOSITORY_UNCHECKED', exitCode: 2, message: expect.stringContaining(`git could not read ${outer}, a repository around ${repo.dir} (fatal: not a git repository`) as unknown });
    await expect(repositoryOf(repo.path('docs/IMPL'))).rejects.toMatchObject({ code: 'NESTED_REPOSITORY_UNCHECKED' });
    const refused = await runCliInProcess(['prepare-wave', fixture.implPath, '--wave', '1'], { cwd: repo.dir, env });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/error\[NESTED_REPOSITORY_UNCHECKED\]: git could not read .*Nothing was changed/);
    expect(readFileSync(fixture.implPath, 'utf8')).toBe(manifest);
    expect(await fixture.head()).toBe(head);
    expect(existsSync(repo.path('.polywave-state'))).toBe(false);
    // An empty `.git` directory is no repository for git either: not a refusal.
    rmSync(path.join(outer, '.git'));
    mkdirSync(path.join(outer, '.git'));
    await expect(assertNotNestedRepository(repo.dir, env)).resolves.toBeUndefined();
    expect((await repositoryOf(repo.dir))?.toplevel).toBe(repo.dir);
    rmSync(path.join(outer, '.git'), { recursive: true });

    // 2. Includes: git itself refuses `~user/` of an unknown user (the listing fails: refused, git's message named);
    //    `%(prefix)/` is resolved from git's install prefix (outside the tree: passes) instead of being skipped.
    const config = readFileSync(repo.path('.git/config'), 'utf8');
    writeFileSync(repo.path('.git/config'), `${config}[include]\n\tpath = ~nosuch-s9-user/team.gitconfig\n`);
    const unknownUser = await checkGitConfigOrigins([{ label: '', root: repo.dir, commonDir: repo.path('.git') }], env);
    expect(unknownUser.refused && unknownUser.detail).toMatch(/^GIT_CONFIG_IN_WORKTREE: git could not list its configuration in .*could not expand include path '~nosuch-s9-user/);
    writeFileSync(repo.path('.git/config'), `${config}[include]\n\tpath = %(prefix)/etc/s9-none.gitconfig\n`);
    expect(await checkGitConfigOrigins([{ label: '', root: repo.dir, commonDir: repo.path('.git') }], env)).toMatchObject({ refused: false });
    writeFileSync(repo.path('.git/config'), config);

    // 3. A committed config git cannot read is an error, not "no config".
    const broken = await createTestRepo({ files: { 'polywave.config.json': '{"sandbox":{"network":{"allow":[]}}}\n' } });
    const blob = (await broken.run(['rev-parse', 'HEAD:polywave.config.json'])).trim();
    rmSync(broken.path(`.git/objects/${blob.slice(0, 2)}/${blob.slice(2)}`));
    await expect(readTrustedConfigText(broken.dir)).rejects.toMatchObject({ code: 'CONFIG_REPOSITORY_UNREADABLE', exitCode: 2 });

    // accept-config's values: secret-shaped parts redacted, unchanged keys left out.
    expect(valueChanges({ dispatch: { url: 'redis://:hunter2pass@10.0.0.1:6379' }, setup: 'npm ci' } as ProjectConfig, { dispatch: { url: 'redis://:s3cretpass99@evil.example:6379' }, setup: 'npm ci', sandbox: { writable: ['/home/u'] } } as ProjectConfig)).toEqual([
      { key: 'sandbox', now: { writable: ['/home/u'] } },
      { key: 'dispatch', before: { url: 'redis://:[redacted]@10.0.0.1:6379' }, now: { url: 'redis://:[redacted]@evil.example:6379' } },
    ]);

    // 4. finalize-wave: one `git config --list --show-origin` per checkout (the main checkout was listed twice).
    await fixture.complete('A', { 'src/a.js': 'export const a = 1;\n' });
    await fixture.complete('B', { 'src/b.js': 'export const b = 1;\n' });
    const bin = repo.sibling('git-wrapper');
    const log = repo.sibling('config-listings.log');
    mkdirSync(bin);
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(path.join(bin, 'git'), `#!/bin/sh\ncase "$*" in *"config --list --show-origin"*) pwd >> '${log}';; esac\nexec '${realGit}' "$@"\n`);
    chmodSync(path.join(bin, 'git'), 0o755);
    const finalized = await fixture.finalize(1, { env: { ...env, PATH: `${bin}:${env.PATH ?? process.env.PATH ?? ''}` } });
    expect(finalized.steps.map((step) => step.step)).toEqual(expect.arrayContaining(['check-git-config', 'check-tamper']));
    const listed = readFileSync(log, 'utf8').trim().split('\n');
    expect(listed.filter((cwd) => cwd === repo.dir)).toHaveLength(1);
    expect(new Set(listed).size).toBe(listed.length);
  }, 120_000);
});
