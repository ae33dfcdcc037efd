import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { commitText } from './commit-files.js';

// X29-01: run-scout commits the exact text it checked, never what the file holds by the time `git add` reads it.
describe('commitText (real git)', () => {
  it('commits the given bytes whatever the working tree holds; new nested paths; an unchanged text is no commit', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-a.yaml': 'state: SCOUT_PENDING\n', 'src/x.ts': 'x\n' } });
    const before = await repo.git.headCommit();
    repo.write('docs/IMPL/IMPL-a.yaml', 'task: PLANTED by another process\n');
    const commit = await commitText({ cwd: repo.dir, file: 'docs/IMPL/IMPL-a.yaml', text: 'state: REVIEWED\n', message: 'chore: the checked plan', env: repo.env });
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(await repo.git.headCommit()).toBe(commit);
    expect((await repo.run(['show', 'HEAD:docs/IMPL/IMPL-a.yaml']))).toBe('state: REVIEWED\n');
    expect((await repo.run(['rev-parse', 'HEAD^'])).trim()).toBe(before);
    expect((await repo.run(['show', '--name-only', '--format=%s', 'HEAD'])).trim().split('\n')).toEqual(['chore: the checked plan', '', 'docs/IMPL/IMPL-a.yaml']);
    // The working tree is the caller's to put right; the index holds the committed blob.
    expect(repo.read('docs/IMPL/IMPL-a.yaml')).toBe('task: PLANTED by another process\n');
    expect((await repo.run(['diff', '--cached', '--name-only'])).trim()).toBe('');
    // A path in directories HEAD does not have yet.
    await commitText({ cwd: repo.dir, file: 'docs/PROGRAM/deep/PROGRAM-x.yaml', text: 'title: x\n', message: 'new', env: repo.env });
    expect(await repo.run(['show', 'HEAD:docs/PROGRAM/deep/PROGRAM-x.yaml'])).toBe('title: x\n');
    expect(await repo.run(['show', 'HEAD:src/x.ts'])).toBe('x\n');
    expect(await commitText({ cwd: repo.dir, file: 'docs/PROGRAM/deep/PROGRAM-x.yaml', text: 'title: x\n', message: 'again', env: repo.env })).toBeUndefined();
  });
});
