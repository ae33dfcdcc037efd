/**
 * Outside tester, issue 17 × issue 11: a dispatched agent read its worker's own `--dir` outside its worktree — the
 * other jobs' journals (`<dir>/journals/<job>`), scripts (`<dir>/scripts/<job>.yaml`), gate checkouts
 * (`<dir>/gates/<job>`) and anything in `<dir>/work` that was not a registered worktree. Now its sandbox hides the
 * whole directory, what appears there later too, but for its own worktree (writable) and the clone (read-only, its
 * `worktrees/` showing the agent's own entry only): git still works, and its work still commits and merges.
 *
 * Real parts: a redis-server on loopback, a bare `file://` remote, one real `polywave worker` (concurrency 3) with the
 * OS sandbox, a real `run-wave --dispatch` of agents A (the reader) and B (a victim that keeps uncommitted work in its
 * worktree until told to go on), and a job C of another run put on the queue after A started (its paths appear after
 * A's sandbox was made). A walks `<dir>` with python (the static check refuses paths out of the root; an interpreter
 * computing them at run time is what reaches the OS sandbox) and commits what it saw into its own file. Then a gate
 * job (`dispatch.gates: "workers"`) on the same worker cats the planted files. Needs `npm run build` (the worker and
 * run-wave run bin/polywave.js).
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedJobId, type AgentJobData } from '../src/dispatch/job.js';
import { createRedisDispatcher } from '../src/dispatch/redis-dispatcher.js';
import { createDispatchRepo, gitEnv, lettersScript, produceJob, runWaveCli, startWorker, waveResult, useDispatchRig, type DispatchRepo, type TestWorker } from './dispatch-support.js';

// (`workers`: the worker under test and its siblings)
const { scratch, redis, workers } = useDispatchRig('pw-worker-dir-hidden-');
const workerDir = path.join(scratch, 'worker');
let worker: TestWorker;
// Outside attack A17-12: other workers of the same host (own --dir each, another queue: they take none of these jobs),
// one started before the wave and one after A's sandbox was made.
const siblingEarly = path.join(scratch, 'sibling-early');
const siblingLate = path.join(scratch, 'sibling-late');
const siblingSecrets = (dir: string, tag: string) => {
  for (const file of ['work/job.x/src/wip.js', 'scripts/job.x.yaml', 'journals/job.x/journal.md', 'repo.git/unpushed.txt']) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), `SIBLING-${tag}-SECRET\n`);
  }
};
let target: DispatchRepo;

// What A does (after waiting for `go-a` in its worktree): walk the worker's directory and its neighbours (all but its
// own worktree and the object store), read every file it can, check that git works, and append it all (base64) to its own src/a.js.
const reader = [
  'import os, subprocess, base64, time',
  "me = os.path.abspath('.')",
  // the worker's --dir and, beside it, other workers' (A17-12)
  'top = os.path.dirname(os.path.dirname(os.path.dirname(me)))',
  'seen = []',
  'for at, dirs, files in os.walk(top):',
  "    if at == me or at.startswith(me + '/') or os.path.basename(at) == 'objects':",
  '        dirs[:] = []',
  '        continue',
  "    seen.append(at + '/')",
  '    for name in files:',
  '        p = os.path.join(at, name)',
  "        try: body = open(p, 'rb').read(20000).decode('utf8', 'replace')",
  "        except Exception as e: body = 'ERR ' + type(e).__name__",
  "        seen.append(p + '\\n' + body)",
  "works = all(subprocess.run(['git'] + args, capture_output=True).returncode == 0 for args in (['log', '--oneline', '-1'], ['status', '--porcelain'], ['rev-parse', 'HEAD']))",
  "loot = base64.b64encode('\\n'.join(seen).encode()).decode()",
  "open('src/a.js', 'a').write(\"export const seen = '%s';\\nexport const git = '%s';\\n\" % (loot, 'GIT-WORKS' if works else 'GIT-BROKEN'))",
].join('\n');
// (waiting for `go-a` is a bash call of its own: a worker started meanwhile registers its --dir, and the next call — the
// reader — must find it hidden; one long call sees what appears during it, README's X39-01)
const waitForGo = "import os, time\nwhile not os.path.exists('go-a'): time.sleep(0.05)\nos.remove('go-a')";
const readStep = `bash: ${JSON.stringify(`python3 -c "import base64; exec(base64.b64decode('${Buffer.from(waitForGo).toString('base64')}'))"`)}\n        expect: ok\n      - bash: ${JSON.stringify(`python3 -c "import base64; exec(base64.b64decode('${Buffer.from(reader).toString('base64')}'))"`)}\n        expect: ok`;
// B (and C) keep a marker in their worktree, never in their script or journal (printf builds it), until the test
// writes `go-on` into their file `go` (an owned one: a write elsewhere is refused).
const holdStep = (file: string, tag: string, go: string) => `bash: ${JSON.stringify(`printf '${tag}-%s-UNCOMMITTED' 42 > ${file}; until grep -q go-on ${go}; do sleep 0.1; done`)}\n        expect: ok`;

const planted: Record<string, string> = {
  'work/planted-wt/notes.txt': 'PLANTED-WORK-SECRET',
  'journals/planted-job/journal.md': 'PLANTED-JOURNAL-SECRET',
  'scripts/planted-job.yaml': 'PLANTED-SCRIPT-SECRET',
  'gates/planted-gate/out.txt': 'PLANTED-GATE-SECRET',
};

beforeAll(async () => {
  target = await createDispatchRepo('wdh', lettersScript({ A: [readStep], B: [holdStep('src/b.test.js', 'VICTIM', 'src/b.js'), 'write: { path: src/b.js, content: "export const b = \'b\';\\n" }', 'write: { path: src/b.test.js, content: "export {};\\n" }'] }), { waves: [['A', 'B']] });
  worker = await startWorker({ id: 'wdh-worker', redisUrl: redis.url, remote: target.remote, dir: workerDir, extra: ['--concurrency', '3'] });
  workers.push(worker);
  workers.push(await startWorker({ id: 'wdh-sibling-early', redisUrl: redis.url, remote: target.remote, dir: siblingEarly, extra: ['--queue', 'elsewhere'] }));
  siblingSecrets(siblingEarly, 'EARLY');
  // (after the start, which empties these directories)
  for (const [file, content] of Object.entries(planted)) {
    mkdirSync(path.dirname(path.join(workerDir, file)), { recursive: true });
    writeFileSync(path.join(workerDir, file), `${content}\n`);
  }
}, 60_000);

afterAll(() => {
  if (process.env.WDH_DEBUG) console.log(worker?.log());
  target?.repo.cleanup();
});

/** The job directory of `<workerDir>/work` whose name starts with `prefix`, once `file` in it holds `text`. */
async function worktreeWith(prefix: string, file: string, text: string, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const name = (existsSync(path.join(workerDir, 'work')) ? readdirSync(path.join(workerDir, 'work')) : []).find((entry) => entry.startsWith(prefix));
    if (name !== undefined) {
      const full = path.join(workerDir, 'work', name, file);
      if (existsSync(full) && readFileSync(full, 'utf8').includes(text)) return path.join(workerDir, 'work', name);
    }
    await sleep(50);
  }
  throw new Error(`no worktree ${prefix}* with ${file} holding ${text}: ${worker.log()}`);
}

describe('a dispatched agent and its worker’s --dir', () => {
  it('reads nothing of it but its own worktree and the clone: not the other jobs’ worktrees, journals, scripts, gate checkouts (later ones too); its work still commits and merges', async () => {
    const wave = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 90_000 });
    // A runs (its sandbox made: its first writes are in), B holds its uncommitted marker.
    const mineA = await worktreeWith('wdh.w1.A.', 'src/a.js', "export const a = 'a'", 40_000);
    const victimB = await worktreeWith('wdh.w1.B.', 'src/b.test.js', 'VICTIM-42-UNCOMMITTED', 40_000);
    // C: a job of another run, started after A's sandbox was made.
    const base = (await target.repo.git.headCommit()).trim();
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/polywave/base/late/wave1`]);
    const late: AgentJobData = {
      v: 2, polywave: '0.1.0',
      job_id: '',
      slug: 'late',
      wave: 1,
      agent: 'C',
      attempt: 1,
      role: 'wave',
      model: 'script:',
      script_text: ['version: 1', 'steps:', `  - ${holdStep('src/c.js', 'LATE', 'src/c.js').replace('\n        expect', '\n    expect')}`, '  - commit: "feat(C): c"', '  - report: { status: complete, verification: PASS, notes: done }', ''].join('\n'),
      system_prompt: '',
      prompt: '',
      base_commit: base,
      branch: 'polywave/late/wave1-agent-C',
      base_ref: 'refs/polywave/base/late/wave1',
      owned_files: ['src/c.js'],
      frozen_paths: [],
      limits: {},
      labels: [],
      remote: target.remote,
      enqueued_at: Date.now(),
    };
    late.job_id = expectedJobId(late);
    const lateDone = produceJob(redis.port, late, late.job_id, 60_000);
    const lateC = await worktreeWith('late.w1.C.', 'src/c.js', 'LATE-42-UNCOMMITTED', 40_000);
    // A worker started on this host after A's sandbox was made.
    workers.push(await startWorker({ id: 'wdh-sibling-late', redisUrl: redis.url, remote: target.remote, dir: siblingLate, extra: ['--queue', 'elsewhere'] }));
    siblingSecrets(siblingLate, 'LATE');
    // Everything is in place: the journals and scripts of A, B and C, the planted files. A reads now.
    expect(readdirSync(path.join(workerDir, 'journals')).filter((name) => name !== 'planted-job'), worker.log()).toHaveLength(3);
    writeFileSync(path.join(mineA, 'go-a'), '');
    await worktreeWith('wdh.w1.A.', 'src/a.js', 'export const git', 40_000);
    appendFileSync(path.join(victimB, 'src/b.js'), '// go-on\n');
    appendFileSync(path.join(lateC, 'src/c.js'), '\n// go-on\n');

    const result = await wave;
    const [lateAnswer, summary] = [await lateDone, waveResult(result)];
    expect(summary.state, result.stderr.slice(-2000)).toBe('WAVE_VERIFIED');
    expect(lateAnswer.error).toBeUndefined();
    // A17-12: a job's script goes with it (the worker kept every past job's)
    expect(readdirSync(path.join(workerDir, 'scripts')).filter((name) => name !== 'planted-job.yaml')).toEqual([]);
    // A's work, merged: what it saw of the worker's directory.
    const merged = target.repo.read('src/a.js');
    expect(merged).toContain("export const git = 'GIT-WORKS'");
    const seen = Buffer.from(/export const seen = '([A-Za-z0-9+/=]*)'/.exec(merged)![1]!, 'base64').toString('utf8');
    if (process.env.WDH_DEBUG) console.log(seen.split('\n').filter((line) => line.startsWith('/')).join('\n'));
    // What it needs: the clone (read-only), its own entry of the clone's worktrees.
    expect(seen).toContain(`${path.join(workerDir, 'repo.git')}/HEAD\n`);
    expect(seen).toContain(path.join(workerDir, 'repo.git', 'worktrees', path.basename(mineA)));
    // Nothing of the other jobs, present (B) or started later (C), nor what was planted.
    expect(['VICTIM-42-UNCOMMITTED', 'LATE-42-UNCOMMITTED', ...Object.values(planted)].filter((secret) => seen.includes(secret))).toEqual([]);
    expect(seen.split('\n').filter((line) => [path.basename(victimB), path.basename(lateC), 'planted-'].some((other) => line.startsWith('/') && line.includes(other)))).toEqual([]);
    // A17-12: nothing of the other workers' directories, the one started before the wave or after A's sandbox was made.
    // (the walk went beside the worker's directory: a hidden sibling is empty or cannot be listed, and is skipped then)
    expect(seen).toContain(`${path.join(scratch, 'redis')}/\n`);
    expect(['SIBLING-EARLY-SECRET', 'SIBLING-LATE-SECRET'].filter((secret) => seen.includes(secret))).toEqual([]);
    expect(seen.split('\n').filter((line) => line.startsWith(`${siblingEarly}/`) || line.startsWith(`${siblingLate}/`)).filter((line) => line !== `${siblingEarly}/` && line !== `${siblingLate}/`)).toEqual([]);
  }, 120_000);

  it('a gate job there (the agent branch\'s code) reads nothing of it either but its checkout and the clone; git works', async () => {
    const base = (await target.repo.git.headCommit()).trim();
    const branch = 'polywave/wdg/wave1-agent-G';
    await target.repo.run(['push', '--quiet', target.remote, `${base}:refs/heads/${branch}`]);
    // No static check in a gate: plain absolute paths.
    const command = `cat ${[...Object.keys(planted).map((file) => path.join(workerDir, file)), path.join(siblingEarly, 'work/job.x/src/wip.js'), path.join(siblingLate, 'scripts/job.x.yaml'), path.join(siblingEarly, 'repo.git/unpushed.txt')].join(' ')} 2>&1; ls -a ${path.join(workerDir, 'repo.git', 'worktrees')} ${path.join(workerDir, 'work')}; git log -1 --format=GATE-GIT-%h; true`;
    const dispatcher = await createRedisDispatcher({ url: redis.url, remote: target.remote, gates: 'workers', env: { ...process.env, ...gitEnv }, labelWaitMs: 10_000, pollMs: 200 });
    try {
      const ran = await dispatcher.runGateJob!({ slug: 'wdg', wave: 1, agentId: 'G', branch, head: base, repoRoot: target.repo.dir, gates: [{ type: 'test', command, required: true }], docsOnly: false });
      const output = ran.run.phases.flatMap((phase) => phase.results.map((result) => result.output)).join('\n');
      if (process.env.WDH_DEBUG) console.log(output);
      expect(ran.run.passed, output).toBe(true);
      expect(output).toMatch(/GATE-GIT-[0-9a-f]{7}/);
      expect(Object.values(planted).filter((secret) => output.includes(secret))).toEqual([]);
      // A17-12: nor of the other workers' directories
      expect(output).not.toContain('SIBLING-');
    } finally {
      await dispatcher.close();
    }
  }, 60_000);
});
