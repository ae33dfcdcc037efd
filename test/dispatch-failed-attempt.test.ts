import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalPaths } from '../src/engine/journal.js';
import { binPath, runCli } from './support/cli.js';
import { createDispatchRepo, gitEnv, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig, reportOf, reportsEarly } from './dispatch-support.js';

// Outside round A20 (issue 17): a dispatched attempt whose job did not end with a complete result had the report its
// progress wrote early merged (A20-33 last worker killed, A20-28 Redis lost, A20-17 push refused), and a re-run whose
// Redis no longer knew the job took that report as final (A20-22 aged out, A20-39 Redis restarted). Now the early report
// is final only when the job ended with a complete result; else it is withdrawn and the agent runs again (or BLOCKED).
// Real parts: a redis-server on loopback, real `polywave worker` processes, `file://` remotes, run-wave through the CLI.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-failed-attempt-');



/** Waits until the manifest holds A's complete report (written early, from its job's progress). */
async function earlyReportOf(implPath: string, waitMs = 45_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (reportOf(implPath, 'A')?.status !== 'complete' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(reportOf(implPath, 'A')?.status).toBe('complete');
}

describe('a dispatched attempt without a complete result (A20-17/22/28/33/39)', () => {
  it('A20-17: the shared remote refuses the agent branch after the pack brought its commits — not merged, the early report withdrawn, BLOCKED', async () => {
    // (two agents: a one-agent wave runs solo, in-process)
    const target = await createDispatchRepo('refused', lettersScript(), { waves: [['A', 'B']] });
    // The remote's policy: agent branches refused (the wave's base ref passes).
    const hook = path.join(target.remoteDir, 'hooks', 'update');
    writeFileSync(hook, '#!/bin/sh\ncase "$1" in refs/heads/polywave/*) echo "POLICY: agent branches are frozen today" >&2; exit 1;; esac\nexit 0\n');
    chmodSync(hook, 0o755);
    workers.push(await startWorker({ id: 'ref1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-ref1') }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 100_000 });
    const result = waveResult(run);
    // Before the fix: rc 0, WAVE_VERIFIED, A complete and its commit merged though no remote ever held it.
    expect(result.success, JSON.stringify(result.agents)).toBe(false);
    expect(await target.repo.run(['log', '--format=%s', `${before}..HEAD`])).not.toMatch(/Merge|feat\(A\)/);
    const explanation = result.blocked?.agents.find((agent) => agent.agent === 'A')?.explanation ?? '';
    expect(explanation, JSON.stringify(result.blocked)).toMatch(/DISPATCH_REF_REFUSED/);
    expect(reportOf(target.implPath, 'A')).toMatchObject({ status: 'blocked' });
    expect(reportOf(target.implPath, 'A')?.notes).toMatch(/^withdrawn by the orchestrator: .*did not end with a complete result/);
  }, 150_000);

  it('A20-39/A20-22: a re-run whose Redis holds no job of an agent does not take its complete report as final — the agent runs again', async () => {
    // B always reports blocked: the wave BLOCKS with A complete; then Redis forgets every job (a non-persistent restart).
    const script = lettersScript().replace(/( {2}B:\n(?:.*\n)*?) {6}- report: \{ status: complete, verification: PASS, notes: "done" \}/, '$1      - report: { status: blocked, failure_type: escalate, notes: "needs a human" }');
    expect(script).toContain('needs a human');
    const target = await createDispatchRepo('forgot', script, { waves: [['A', 'B']] });
    workers.push(await startWorker({ id: 'fg1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-fg1') }));
    const first = waveResult(await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 100_000 }));
    expect(first.success).toBe(false);
    expect(first.agents.find((agent) => agent.agent === 'A')?.status).toBe('complete');
    expect(reportOf(target.implPath, 'A')?.status).toBe('complete');
    const { spawnSync } = await import('node:child_process');
    expect(spawnSync('redis-cli', ['-p', String(redis.port), 'FLUSHALL'], { encoding: 'utf8' }).status).toBe(0);
    const rerun = await runCli(['retry', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', target.remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 100_000 });
    // Before the fix: A "already complete (E9: not relaunched)" / "not relaunched (retry of B only)" on the report alone.
    expect(rerun.stdout, rerun.stderr.slice(-1500)).toMatch(/"step":"lost_run","status":"warning","detail":"agent A: its report is not taken as final — no job of it is on record in Redis/);
    // A ran again on the worker (its first run and this one).
    const runsOfA = workers.at(-1)!.log().split('\n').filter((line) => /job forgot\.w1\.A\.[^ ]+: agent A /.test(line));
    expect(runsOfA).toHaveLength(2);
  }, 200_000);
  it('A20-49: a killed dispatched run re-run in-process (--dispatch inprocess: as without --dispatch flags): the early report is withdrawn and the agent runs again here — never merged as complete', async () => {
    // (A works on for 20 s after its report: its job is still running when the orchestrator is killed, even on a loaded machine)
    const target = await createDispatchRepo('inproc49', reportsEarly(lettersScript(), 20_000), { waves: [['A', 'B']] });
    const worker = await startWorker({ id: 'ip49', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-ip49') });
    workers.push(worker);
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const { spawn } = await import('node:child_process');
    const first = spawn(process.execPath, [binPath, 'run-wave', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', target.remote], { cwd: target.repo.dir, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
    const exited = new Promise((resolve) => first.once('exit', resolve));
    try {
      // (a loaded machine — the dispatch suites at once — can take more than the 45 s of the other tests)
      await earlyReportOf(target.implPath, 150_000);
      // (and B's job ended, its result taken here — or it is run again by the re-run: either way B completes)
      const recordOfB = path.join(journalPaths(target.repo.dir, 'inproc49', 1, 'B').dir, 'attempt.json');
      const settled = () => existsSync(recordOfB) && !readFileSync(recordOfB, 'utf8').includes('dispatched');
      const deadline = Date.now() + 8000;
      while (!(reportOf(target.implPath, 'B')?.status === 'complete' && settled()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    } finally {
      first.kill('SIGKILL');
      await exited;
    }
    // A's job goes on on its worker; the re-run is made in-process.
    const rerun = await runWaveCli(target, 1, { extra: ['--dispatch', 'inprocess'], timeoutMs: 100_000 });
    const result = waveResult(rerun);
    // Before the fix: A "already complete (E9: not relaunched)", the wave merged with src/a.js = 'early' (the job's later commit lost).
    // (the recorded flags name the run's --model since A23-04)
    const agentA = result.agents.find((agent) => agent.agent === 'A')!;
    expect(agentA.status, JSON.stringify(agentA)).toBe('complete');
    expect(JSON.stringify(agentA)).not.toContain('already complete');
    expect(rerun.stdout).toMatch(/"step":"lost_run","status":"warning","detail":"agent A: its report is not taken as final — its attempt 1 ran as a job on a worker \(--dispatch redis:\/\/127\.0\.0\.1:\d+ --dispatch-remote file:\/\/\S+ --model script:\S+\) that may still run/);
    expect(result.success, JSON.stringify(result.blocked ?? rerun.stderr.slice(-1500))).toBe(true);
    // Merged once, with what A's run here committed after its report.
    expect(target.repo.read('src/a.js')).toContain('after report');
    expect((await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).split('\n').filter((subject) => subject.includes('agent-A'))).toHaveLength(1);
    expect(result.agents.find((agent) => agent.agent === 'B')?.status).toBe('complete');
  }, 360_000);

  it('A20-33: the only worker with the agent\'s label SIGKILLed after its early report — DISPATCH_NO_WORKER, nothing merged, the report withdrawn', async () => {
    const target = await createDispatchRepo('lastworker', reportsEarly(lettersScript()), { waves: [['A', 'B']], config: { dispatch: { labels: { A: ['solo33'] }, label_wait_seconds: 2 } } });
    const solo = await startWorker({ id: 'solo33', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-solo33'), labels: ['solo33'] });
    workers.push(solo, await startWorker({ id: 'any33', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-any33') }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 100_000 });
    await earlyReportOf(target.implPath);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    solo.child.kill('SIGKILL');
    const run = await running;
    const result = waveResult(run);
    // Before the fix: rc 0, the wave merged on the killed run's early report (src/a.js = 'early').
    expect(result.success, JSON.stringify(result.agents.find((agent) => agent.agent === 'A'))).toBe(false);
    expect(result.blocked?.agents.find((agent) => agent.agent === 'A')?.explanation).toMatch(/DISPATCH_NO_WORKER/);
    expect(await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).toBe('');
    expect(reportOf(target.implPath, 'A')?.status).toBe('blocked');
  }, 150_000);

  it('A20-28: Redis hung after the agent\'s early report — DISPATCH_REDIS_LOST, BLOCKED, nothing merged while Redis is down', async () => {
    const target = await createDispatchRepo('hung', reportsEarly(lettersScript()), { waves: [['A', 'B']], config: { dispatch: { outage_seconds: 2 } } });
    workers.push(await startWorker({ id: 'hung1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-hung1') }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const running = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 100_000 });
    await earlyReportOf(target.implPath);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    redis.pause();
    let run: Awaited<typeof running>;
    try {
      run = await running;
    } finally {
      redis.resume();
    }
    const result = waveResult(run);
    // Before the fix: rc 0, WAVE_VERIFIED during the outage, merged on the early report (the later commit lost).
    expect(result.success, JSON.stringify(result.agents.find((agent) => agent.agent === 'A'))).toBe(false);
    expect(result.blocked?.agents.find((agent) => agent.agent === 'A')?.explanation).toMatch(/DISPATCH_REDIS_LOST/);
    expect(await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).toBe('');
    expect(reportOf(target.implPath, 'A')?.status).toBe('blocked');
  }, 150_000);

  it('A23-04: a killed dispatched run re-run with ANOTHER model (the job in flight is not adopted) whose attempt fails: the early report was withdrawn first — finalize-wave merges nothing; the refusal named the run\'s --model', async () => {
    // (A works on for 45 s after its report: its job still runs when the orchestrator is killed, even on a loaded machine;
    // two slots: the re-run's job of A runs beside it)
    const target = await createDispatchRepo('othermodel', reportsEarly(lettersScript(), 45_000), { waves: [['A', 'B']] });
    workers.push(await startWorker({ id: 'om1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-om1'), extra: ['--concurrency', '2'] }));
    const before = (await target.repo.run(['rev-parse', 'HEAD'])).trim();
    const { spawn } = await import('node:child_process');
    const first = spawn(process.execPath, [binPath, 'run-wave', target.implPath, '--wave', '1', '--model', `script:${target.scriptPath}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', target.remote], { cwd: target.repo.dir, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
    const exited = new Promise((resolve) => first.once('exit', resolve));
    try {
      await earlyReportOf(target.implPath, 150_000);
      // (and B's job ended, its result taken here: the refusal below is about A alone)
      const recordOfB = path.join(journalPaths(target.repo.dir, 'othermodel', 1, 'B').dir, 'attempt.json');
      const deadline = Date.now() + 90_000;
      while (!(reportOf(target.implPath, 'B')?.status === 'complete' && existsSync(recordOfB) && !readFileSync(recordOfB, 'utf8').includes('dispatched')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    } finally {
      first.kill('SIGKILL');
      await exited;
    }
    // The refusal names the re-run WITH the run's --model (before: without it — another request, not the job in flight).
    const refused = await runCli(['finalize-wave', target.implPath, '--wave', '1'], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 60_000 });
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain('whose result no orchestrator collected');
    expect(refused.stdout).toContain(`--model script:${target.scriptPath}`);
    // The user re-runs with another model anyway: a script in which A files no report (its attempts fail).
    const other = path.join(scratch, 'othermodel-agents.yaml');
    writeFileSync(other, lettersScript().replace(/ {2}A:\n[\s\S]*?(?=\n {2}B:)/, '  A:\n    steps: []'));
    const rerun = await runCli(['run-wave', target.implPath, '--wave', '1', '--model', `script:${other}`, '--skip-critic', '--json', '--dispatch', redis.url, '--dispatch-remote', target.remote], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 150_000 });
    expect(waveResult(rerun).success).toBe(false);
    // Before the fix: A's report on record was still the killed run's early `complete` one — finalize-wave merged it
    // (src/a.js = 'early') while the job's later commit was lost.
    expect(reportOf(target.implPath, 'A')?.status).toBe('blocked');
    const finalized = await runCli(['finalize-wave', target.implPath, '--wave', '1'], { cwd: target.repo.dir, env: gitEnv, timeoutMs: 60_000 });
    expect(finalized.code, finalized.stdout).not.toBe(0);
    expect(await target.repo.run(['log', '--merges', '--format=%s', `${before}..HEAD`])).toBe('');
  }, 360_000);
});
