/**
 * Outside attack X18-20 (2026-12-03): git_commit checked an owned path with the jail, then ran `git add`; a bash call
 * beside it swapped the file for a symbolic link to ~/.ssh/id_rsa in between, and the link was committed on the agent
 * branch (1 of 4 runs). git_commit now reads what was STAGED (`git ls-files -s`, the link's target from its blob) and
 * takes a link pointing outside the worktree or into .git out of the index before any commit. Real git.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stagedLinksOutside } from '../src/agents/tools/report-tools.js';
import { createTestRepo } from './support/git-repo.js';

describe('git_commit judges the index, not the checked path (X18-20)', () => {
  it('staged links to outside the worktree or into .git are found; links inside and regular files are not', async () => {
    const repo = await createTestRepo({ files: { 'src/index.ts': 'export {};\n' } });
    const outside = repo.sibling('home/.ssh');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'id_rsa'), 'KEY\n');
    symlinkSync(path.join(outside, 'id_rsa'), repo.path('src/a.ts'));
    symlinkSync('../../home/.ssh/id_rsa', repo.path('src/rel.ts'));
    symlinkSync('../.git/config', repo.path('src/git.ts'));
    symlinkSync('index.ts', repo.path('src/inside.ts'));
    writeFileSync(repo.path('src/plain.ts'), 'export const p = 1;\n');
    const files = ['src/a.ts', 'src/rel.ts', 'src/git.ts', 'src/inside.ts', 'src/plain.ts'];
    await repo.run(['add', '--', ...files]);
    expect((await stagedLinksOutside(repo.git, repo.dir, files)).sort()).toEqual(['src/a.ts', 'src/git.ts', 'src/rel.ts']);
    expect(await stagedLinksOutside(repo.git, repo.dir, ['src/inside.ts', 'src/plain.ts'])).toEqual([]);
    expect(await stagedLinksOutside(repo.git, repo.dir, [])).toEqual([]);
    // what git_commit does with them: out of the index again, nothing else touched
    await repo.run(['reset', '-q', '--', 'src/a.ts', 'src/rel.ts', 'src/git.ts']);
    expect((await repo.run(['diff', '--cached', '--name-only'])).trim().split('\n').sort()).toEqual(['src/inside.ts', 'src/plain.ts']);
  });
  it('X19-12: a link inside the worktree to a path the repository does not hold (../.env: the main checkout\'s secret once merged) is found; a link to a tracked or staged file is not', async () => {
    const repo = await createTestRepo({ files: { 'src/index.ts': 'export {};\n', '.gitignore': '.env\nlocal/\n' } });
    writeFileSync(repo.path('.env'), 'SECRET\n');
    symlinkSync('../.env', repo.path('src/env.ts'));
    symlinkSync('../local/settings.json', repo.path('src/settings.ts'));
    symlinkSync('../.git/../.env', repo.path('src/dotdot.ts'));
    symlinkSync('new.ts', repo.path('src/to-new.ts'));
    writeFileSync(repo.path('src/new.ts'), 'export const n = 1;\n');
    // X20-04: a tracked directory, or a tracked link (a monorepo's packages/web/.env -> ../../.env), leads on to what the repository does not hold
    symlinkSync('../src', repo.path('src/dir.ts'));
    mkdirSync(repo.path('packages/web'), { recursive: true });
    symlinkSync('../../.env', repo.path('packages/web/.env'));
    await repo.run(['add', '-f', 'packages/web/.env']);
    await repo.run(['commit', '-q', '-m', 'tracked link']);
    symlinkSync('../packages/web/.env', repo.path('src/chain.ts'));
    const files = ['src/env.ts', 'src/settings.ts', 'src/dotdot.ts', 'src/to-new.ts', 'src/new.ts', 'src/dir.ts', 'src/chain.ts'];
    await repo.run(['add', '--', ...files]);
    expect((await stagedLinksOutside(repo.git, repo.dir, files)).sort()).toEqual(['src/chain.ts', 'src/dir.ts', 'src/dotdot.ts', 'src/env.ts', 'src/settings.ts']);
  });
});
