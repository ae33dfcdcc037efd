import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// Outside round A23-02: a worker given its dispatch key in a file (`--dispatch-key-file`, mode 600, outside the home)
// let every job's agent `cat` it — the agents run as the worker's user, so the file mode protects nothing — and with
// the key an agent signs jobs for every worker and results for every orchestrator. Every sandbox a process makes now
// hides the key file it was given (the worker's agents; the orchestrator's gates, with POLYWAVE_DISPATCH_KEY_FILE).
// Real parts: a redis-server on loopback, a real `polywave worker` with the OS sandbox, `file://` remote, run-wave via the CLI.

const { scratch, redis, workers } = useDispatchRig('pw-dispatch-key-file-');

describe('the dispatch key file (A23-02)', () => {
  it("is unreadable to the worker's agents and to the orchestrator's gates; the wave still runs", async () => {
    const key = process.env.POLYWAVE_DISPATCH_KEY!;
    const workerKey = path.join(scratch, 'keys', 'worker-dispatch.key');
    const orchestratorKey = path.join(scratch, 'keys', 'orchestrator-dispatch.key');
    rmSync(path.dirname(workerKey), { recursive: true, force: true });
    for (const file of [workerKey, orchestratorKey]) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `${key}\n`, { mode: 0o600 });
    }
    // Each probe passes only when the file is there but cannot be read or reads empty (before the fix: the key — the
    // agent's call and the gate failed). (It must exist: a probe of a path the sandbox does not show proves nothing.)
    const probe = (file: string) => `f=${file}; test -e "$f" && ! cat "$f" 2>/dev/null | grep -q .`;
    // (the agent's path computed at run time — the static bash check refuses an absolute path out of its worktree; the
    // OS sandbox is what is tested)
    const computed = probe(`$(python3 -c "print(bytes.fromhex('${Buffer.from(workerKey).toString('hex')}').decode())")`);
    const script = lettersScript({ A: [`bash: ${JSON.stringify(computed)}\n        expect: ok`] });
    const target = await createDispatchRepo('keyfile', script, { waves: [['A', 'B']], gates: [probe(orchestratorKey)] });
    workers.push(await startWorker({ id: 'kf1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-kf1'), env: { POLYWAVE_DISPATCH_KEY: '' }, extra: ['--dispatch-key-file', workerKey] }));
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, env: { POLYWAVE_DISPATCH_KEY: '', POLYWAVE_DISPATCH_KEY_FILE: orchestratorKey }, timeoutMs: 150_000 });
    const result = waveResult(run);
    expect(result.success, `${JSON.stringify(result.blocked ?? result.agents)} ${run.stdout.split('\n').filter((line) => /gate|fail|grep/i.test(line)).join('\n').slice(-3000)}`).toBe(true);
    expect(target.repo.read('src/a.js')).toContain("export const a = 'a'");
  }, 200_000);
});
