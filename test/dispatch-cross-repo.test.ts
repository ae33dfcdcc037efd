import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createDispatchRepo, gitEnv, lettersScript, runWaveCli, useDispatchRig } from './dispatch-support.js';

// Outside round A20-34 (issue 17): a cross-repo wave (E51: agents in two repositories) run through --dispatch pushed both
// repositories' wave bases to the one `refs/polywave/base/<slug>/wave<N>` of the shared remote; the pushes raced, the
// loser failed as DISPATCH_REMOTE_UNREACHABLE (a config error), the wave BLOCKED at random. Such a wave is now refused
// before anything starts, with a coded line. Real parts: a redis-server on loopback, a `file://` remote, the CLI.

const { redis } = useDispatchRig('pw-dispatch-cross-repo-');

describe('a cross-repo wave through the Redis dispatcher (A20-34)', () => {
  it('is refused up front with DISPATCH_CROSS_REPO (exit 2): no worktree, no base pushed, the manifest unchanged', async () => {
    const target = await createDispatchRepo('xrepo', lettersScript(), {
      waves: [['A', 'B']],
      config: { repos: [{ name: 'repo', path: '.' }, { name: 'other', path: '../other' }], dispatch: { label_wait_seconds: 1 } },
    });
    // B's files live in the sibling repository `other` (its own history).
    const impl = readFileSync(target.implPath, 'utf8');
    const routed = impl.replace(/( {6}agent: B\n {6}wave: 1\n {6}action: new)/g, '$1\n      repo: other');
    expect(routed).toContain('repo: other');
    target.repo.write('docs/IMPL/IMPL-xrepo.yaml', routed);
    await target.repo.run(['commit', '-qam', 'route B to other']);
    const other = target.repo.sibling('other');
    const { spawnSync } = await import('node:child_process');
    for (const args of [['init', '-q', '-b', 'main', other], ['-C', other, 'commit', '-q', '--allow-empty', '-m', 'other initial']]) {
      const done = spawnSync('git', args, { env: { ...process.env, ...gitEnv }, encoding: 'utf8' });
      expect(done.status, done.stderr).toBe(0);
    }
    const before = readFileSync(target.implPath, 'utf8');
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 60_000 });
    // Before the fix: the run started (worktrees in both repositories, the bases pushed to the one ref, jobs enqueued).
    expect(run.code, run.stderr.slice(-1500)).toBe(2);
    expect(run.stderr).toMatch(/DISPATCH_CROSS_REPO.*wave 1 of IMPL-xrepo\.yaml is a cross-repo wave \(E51: its agents work in repo, other\).*run it in-process \(--dispatch inprocess\)/);
    expect(readFileSync(target.implPath, 'utf8')).toBe(before);
    expect((parse(before) as { state?: string }).state).toBe('WAVE_PENDING');
    expect((await target.repo.run(['worktree', 'list'])).trim().split('\n')).toHaveLength(1);
    expect((await target.repo.run(['ls-remote', target.remote, 'refs/polywave/*'])).trim()).toBe('');
  }, 120_000);
});
