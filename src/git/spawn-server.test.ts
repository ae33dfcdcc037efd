// vitest: own process — checks that git spawns are not offloaded before it turns offloading on (a shared worker may have done both already).
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { createGit } from './git-cli.js';
import { runGit } from './run-git.js';
import { execFileBinaryOffloaded, gitSpawnsOffloaded, offloadGitSpawns } from './spawn-server.js';

// Git commands started by the helper process give git-cli exactly what its own execFile gave:
// output, exit codes that are answers, failures with their codes, stdin, a per-call environment, abort.
describe('git commands offloaded to the helper process', () => {
  it('same answers as in-process, for success, answers, failures, stdin, env and abort', async () => {
    const repo = await createTestRepo();
    repo.write('a.txt', 'a\n');
    const head = await repo.commitAll('a');
    const questions = async () => {
      const git = createGit(repo.dir, { env: repo.env });
      const missing = createGit(repo.sibling('nowhere'), { env: repo.env });
      const aborted = new AbortController();
      aborted.abort();
      const outcome = (promise: Promise<unknown>) => promise.then((value) => ({ value }), (error: { code?: unknown; name?: string }) => ({ error: error.name === 'AbortError' ? 'AbortError' : error.code }));
      return Promise.all([
        git.headCommit(),
        git.currentBranch(),
        git.tryRevParse('refs/heads/no-such-branch'),
        outcome(git.run(['rev-parse', '--verify', 'no-such-ref'])),
        outcome(missing.headCommit()),
        git.run(['hash-object', '--stdin'], { input: 'hello\n' }).then((result) => result.stdout.trim()),
        git.run(['var', 'GIT_AUTHOR_IDENT'], { env: { GIT_AUTHOR_NAME: 'Other' } }).then((result) => result.stdout.split(' <')[0]),
        outcome(git.run(['status'], { signal: aborted.signal })),
        // runGit (the issue-11 checks' git) goes through the helper too: same output, errors, stdin.
        runGit(['rev-parse', 'HEAD'], { cwd: repo.dir, env: repo.env }).then((stdout) => stdout.trim()),
        outcome(runGit(['rev-parse', '--verify', 'no-such-ref'], { cwd: repo.dir, env: repo.env }).catch((error: { gitExitCode?: unknown; stderr?: string }) => Promise.reject({ code: `${String(error.gitExitCode)} ${error.stderr?.trim()}` }))),
        outcome(runGit(['status'], { cwd: repo.sibling('nowhere'), env: repo.env })),
        runGit(['hash-object', '--stdin'], { cwd: repo.dir, env: repo.env, input: 'hello\n' }).then((stdout) => stdout.trim()),
      ]);
    };
    const inProcess = await questions();
    expect(gitSpawnsOffloaded()).toBe(false);
    offloadGitSpawns();
    expect(gitSpawnsOffloaded()).toBe(true);
    const offloaded = await questions();
    expect(offloaded).toEqual(inProcess);
    expect(offloaded[0]).toBe(head);
    expect(offloaded.slice(1, 3)).toEqual(['main', undefined]);
    expect(offloaded[5]).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
    expect(offloaded[6]).toBe('Other');
    expect(offloaded[7]).toEqual({ error: 'AbortError' });
    expect(offloaded[8]).toBe(head);
    expect(offloaded[9]).toEqual({ error: '128 fatal: Needed a single revision' });
    expect(offloaded[10]).toEqual({ error: 'G000_NOT_A_REPOSITORY' });
    expect(offloaded[11]).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
  });

  it('binary in and out (a git pack): every byte value survives the trip through the helper', async () => {
    const repo = await createTestRepo();
    const bytes = Buffer.from(Array.from({ length: 4096 }, (_, index) => (index * 7) % 256));
    const run = (args: string[], input: Buffer | string) =>
      new Promise<{ stdout: Buffer; code: unknown }>((resolve) => execFileBinaryOffloaded('git', args, { cwd: repo.dir, env: repo.env as Record<string, string>, maxBuffer: 1024 * 1024, input }, (error, stdout) => resolve({ stdout, code: error?.code })));
    offloadGitSpawns();
    try {
      const id = (await run(['hash-object', '-w', '--stdin'], bytes)).stdout.toString().trim();
      expect(id).toMatch(/^[0-9a-f]{40}$/);
      const back = await run(['cat-file', 'blob', id], '');
      expect(Buffer.compare(back.stdout, bytes)).toBe(0);
      expect((await run(['cat-file', 'blob', 'no-such-object'], '')).code).toBe(128);
    } finally {
      offloadGitSpawns(false);
    }
  });
});
