import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// Outside round A23-41 (issue 17): a dispatched run-wave that BLOCKED on an orchestrator-side error while A's job was
// still out (A's local worktree removed mid-run: `not a git repository`) left A's attempt uncollected — and every
// command named another that refused: retry → "re-run run-wave", run-wave → prepare-wave refuses a BLOCKED IMPL,
// resume-detect → run-wave again, finalize-wave → I5. Only set-impl-state got out. Now resume-detect names `retry` with
// the run's flags, and retry resumes the wave and collects the job. The test follows the commands as a user would.
// Real parts: a redis-server on loopback, a real `polywave worker`, a `file://` remote, the CLI.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-collect-blocked-');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a dispatched run BLOCKED by an orchestrator error with a job still out (A23-41)', () => {
  it('resume-detect names retry with the run\'s flags; that retry collects the job and the wave merges once', async () => {
    const target = await createDispatchRepo('wd', lettersScript({ A: ['sleep_ms: 6000'] }), { waves: [['A', 'B']] });
    const worker = await startWorker({ id: 'wd1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-wd1') });
    workers.push(worker);
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    const deadline = Date.now() + 90_000;
    while (!/job wd\.w1\.A\.[^ ]+: agent A /.test(worker.log()) && Date.now() < deadline) await sleep(50);
    await sleep(1500);
    // A's local worktree removed while its job sleeps on the worker (an IDE's cleanup, a moved dir pruned).
    rmSync(path.join(target.repo.dir, '.claude', 'worktrees', 'polywave', 'wd', 'wave1-agent-A'), { recursive: true, force: true });
    const first = waveResult(await running);
    expect(first.success).toBe(false);
    const state = () => (parse(readFileSync(target.implPath, 'utf8')) as { state?: string }).state;
    expect(state()).toBe('BLOCKED');
    await target.repo.run(['worktree', 'prune']);

    const env = { ...gitEnv };
    const detect = await runCli(['resume-detect'], { cwd: target.repo.dir, env, timeoutMs: 60_000 });
    expect(detect.code, detect.stderr).toBe(0);
    const candidate = (JSON.parse(detect.stdout) as Array<{ resume_command: string; suggested_action: string }>)[0]!;
    // Before the fix: `polywave run-wave … --dispatch …`, which refuses a BLOCKED IMPL (prepare-wave [state_check]).
    expect(candidate.resume_command).toMatch(/^polywave retry \S+ --wave 1 .*--dispatch redis:\/\/127\.0\.0\.1:\d+ --dispatch-remote file:\/\/\S+/);
    const [, ...args] = candidate.resume_command.split(' ');
    const retry = await runCli([...args, '--skip-critic', '--json'], { cwd: target.repo.dir, env, timeoutMs: 150_000 });
    expect(retry.code, retry.stderr.slice(-2000) + retry.stdout.slice(-2000)).toBe(0);
    expect(state()).not.toBe('BLOCKED');
    // A's work (its job's commit on the remote) and B's merged once each.
    const merges = (await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n');
    expect(merges.filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
    expect(merges.filter((subject) => subject.includes('agent-B'))).toHaveLength(1);
    expect(target.repo.read('src/a.js')).toContain("'a'");
  }, 360_000);
});
