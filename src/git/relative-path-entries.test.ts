import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { createGit } from './git-cli.js';
import { absolutePathEntries } from './harden.js';
import { runGit } from './run-git.js';
import { endGitSpawnHelper, offloadGitSpawns } from './spawn-server.js';

// Outside round X40-02: polywave runs git on the host with cwd = an agent's worktree. An empty or relative PATH entry
// (`PATH=:$PATH`, `PATH=$EXTRA:$PATH` with EXTRA unset, `node_modules/.bin`, `.`) is searched relative to that cwd,
// so an executable `git` the agent left at the top of its worktree (or in its node_modules/.bin) ran on the host,
// outside the sandbox, instead of git. Every git command gets PATH with its absolute entries only.
afterEach(() => {
  offloadGitSpawns(false);
  endGitSpawnHelper();
});

async function worktreeWithPlantedGit() {
  const repo = await createTestRepo({ files: { 'README.md': '# x\n' } });
  const marker = repo.sibling('planted-git-ran');
  const planted = `#!/bin/sh\necho "$@" >> ${marker}\nexec /usr/bin/env -u PATH git "$@"\n`;
  for (const dir of [repo.dir, path.join(repo.dir, 'node_modules', '.bin')]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'git'), planted);
    chmodSync(path.join(dir, 'git'), 0o755);
  }
  return { repo, marker };
}

describe('git never runs a program found through a relative PATH entry (X40-02)', () => {
  const hostPath = process.env.PATH ?? '/usr/bin:/bin';
  for (const [label, searchPath] of [
    ['an empty entry first', `:${hostPath}`],
    ['an empty entry last', `${hostPath}:`],
    ['node_modules/.bin first', `node_modules/.bin:${hostPath}`],
    ['. first', `.:${hostPath}`],
  ] as const) {
    for (const mode of ['in-process', 'helper'] as const) {
      it(`${label} (${mode})`, async () => {
        const { repo, marker } = await worktreeWithPlantedGit();
        if (mode === 'helper') offloadGitSpawns();
        const env = { ...repo.env, PATH: searchPath };
        const git = createGit(repo.dir, { env });
        expect((await git.run(['status', '--porcelain'])).exitCode).toBe(0);
        expect(await git.run(['rev-parse', 'HEAD'], { env: { PATH: searchPath } }).then((result) => result.stdout.trim())).toMatch(/^[0-9a-f]{40}$/);
        expect((await runGit(['rev-parse', 'HEAD'], { cwd: repo.dir, env })).trim()).toMatch(/^[0-9a-f]{40}$/);
        expect(existsSync(marker)).toBe(false);
      });
    }
  }

  it('absolutePathEntries keeps absolute entries, never gives an empty PATH', () => {
    expect(absolutePathEntries(':/usr/bin::bin:./x:/bin:')).toBe('/usr/bin:/bin');
    expect(absolutePathEntries('')).toBe('/usr/local/bin:/usr/bin:/bin');
    expect(absolutePathEntries('.:node_modules/.bin')).toBe('/usr/local/bin:/usr/bin:/bin');
    expect(absolutePathEntries(undefined)).toBeUndefined();
  });
});
