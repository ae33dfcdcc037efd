// bench:dispatch (issue 17) — run-wave through BullMQ on Redis vs in-process, in the same run.
//   1. the bench:parallel wave (16 script agents × 2 s): in-process, then through Redis with 3 local
//      `polywave worker` processes; wall times side by side.
//   2. dispatch overhead per agent from the distributed run's job records: enqueue → a worker starts
//      the agent, and the worker finished → the result is written here (branch fetched and
//      fast-forwarded, report saved by the locked writer); medians against the 50 ms target. The worker
//      publishes the report and pushes the commits when the agent reports, so both are usually here
//      before the agent finishes; how many were is printed.
//   3. 200 agents (no finalize) across 4 workers: every job comes back (none lost), throughput.
// Needs Debian's redis-server on PATH (started here on a free loopback port, no persistence).
//
//   npm run bench:dispatch
//   BENCH_AGENTS=8 BENCH_MANY=100 npm run bench:dispatch
//   BENCH_MANY=0 node bench/dispatch.mjs     (the wave only, no 200-agent run; after npm run build)
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { benchEnv as baseEnv, measureScriptWave, percentile, root } from './support/script-wave.mjs';

// The orchestrator and the workers share a dispatch key (A21-43): one of this run's own.
const benchEnv = { ...baseEnv, POLYWAVE_DISPATCH_KEY: baseEnv.POLYWAVE_DISPATCH_KEY ?? randomBytes(32).toString('hex') };

const { createRedisDispatcher } = await import(path.join(root, 'dist/dispatch/redis-dispatcher.js'));
const count = Number(process.env.BENCH_AGENTS ?? 16);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 2000);
const many = Number(process.env.BENCH_MANY ?? 200);

if (spawnSync('redis-server', ['--version']).status !== 0) {
  console.error('bench:dispatch needs redis-server on PATH (apt-get install redis-server)');
  process.exit(2);
}

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-dispatch-'));
const port = await freePort();
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', directory], { stdio: 'ignore' });
const url = `redis://127.0.0.1:${port}`;
const remoteDir = path.join(directory, 'remote.git');
spawnSync('git', ['init', '--quiet', '--bare', '-b', 'main', remoteDir], { env: benchEnv });
const remote = `file://${remoteDir}`;
const workers = [];
// measureScriptWave exits on a failed wave: never leave a worker or the server behind.
process.on('exit', () => {
  for (const worker of workers) worker.kill('SIGKILL');
  redis.kill('SIGKILL');
});

async function startWorker(id, concurrency) {
  const child = spawn(process.execPath, [path.join(root, 'bin/polywave.js'), 'worker', '--redis', url, '--remote', remote, '--dir', path.join(directory, `worker-${id}`), '--id', id, '--concurrency', String(concurrency)], { env: benchEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  workers.push(child);
  let log = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => (log += chunk));
  for (let tries = 0; !log.includes('ready:'); tries += 1) {
    if (child.exitCode !== null || tries > 400) throw new Error(`worker ${id} did not start: ${log}`);
    await sleep(50);
  }
}

const median = (values) => percentile(values, 0.5);
const dispatchRecords = (result) => result.agents.map((agent) => agent.attempts.at(-1)?.dispatch).filter(Boolean);

try {
  for (let tries = 0; ; tries += 1) {
    if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG') break;
    if (tries > 100) throw new Error('redis-server did not start');
    await sleep(50);
  }
  const slots = Math.ceil(count / 3);
  await Promise.all(['b1', 'b2', 'b3'].map((id) => startWorker(id, slots)));
  const dispatcher = await createRedisDispatcher({ url, remote, env: benchEnv });

  console.log(`bench:dispatch — ${os.cpus().length} CPUs; ${count} script agents × ${agentMs} ms (the bench:parallel wave); Redis on loopback; 3 workers × concurrency ${slots}`);
  const local = await measureScriptWave(count, { agentMs });
  const distributed = await measureScriptWave(count, { agentMs, runOptions: { dispatcher } });
  console.log(`in-process:  run-wave ${local.total.toFixed(0)} ms, agents phase ${local.agentsPhase.toFixed(0)} ms`);
  console.log(`via Redis:   run-wave ${distributed.total.toFixed(0)} ms, agents phase ${distributed.agentsPhase.toFixed(0)} ms (${(distributed.agentsPhase / local.agentsPhase).toFixed(2)}× in-process)`);
  const records = dispatchRecords(distributed.result);
  const toStart = records.map((record) => record.enqueue_to_start_ms);
  const toResult = records.map((record) => record.finish_to_result_ms);
  const byWorker = {};
  for (const record of records) byWorker[record.worker] = (byWorker[record.worker] ?? 0) + 1;
  console.log(`dispatch overhead per agent (median of ${records.length}): enqueue → worker start ${median(toStart)} ms (p90 ${percentile(toStart, 0.9)}), worker finish → result written ${median(toResult)} ms (p90 ${percentile(toResult, 0.9)}); target ≤ 50 ms each → ${median(toStart) <= 50 && median(toResult) <= 50 ? 'met' : 'NOT met'}`);
  const part = (key, at = 0.5) => percentile(records.map((record) => record[key] ?? 0), at);
  console.log(`  enqueue → start: BullMQ's move to active for the worker ${part('enqueue_to_fetch_ms')} ms (p90 ${part('enqueue_to_fetch_ms', 0.9)}), then its processor ran it ${part('fetch_to_start_ms')} ms (p90 ${part('fetch_to_start_ms', 0.9)}); not counted, after the start: worktree set-up ${part('worker_setup_ms')} ms (p90 ${part('worker_setup_ms', 0.9)}) (medians)`);
  console.log(`  finish → result: arrival ${part('finish_to_received_ms')} ms (p90 ${part('finish_to_received_ms', 0.9)}), then at the same time branch fetch + fast-forward ${part('fetch_ms')} ms (p90 ${part('fetch_ms', 0.9)}) and report write ${part('report_ms')} ms (p90 ${part('report_ms', 0.9)}) (medians)`);
  console.log(`  done before the result arrived (when the agent reported, from the job's progress): report written ${records.filter((record) => record.report_early).length}/${records.length}, commits fetched + fast-forwarded ${records.filter((record) => record.commits_early).length}/${records.length}; p95: enqueue → start ${percentile(toStart, 0.95)} ms, finish → result ${percentile(toResult, 0.95)} ms`);
  // The early path, relative to the worker's finish (negative: before it), medians (p90).
  {
    const rel = (key) => records.map((record) => record[key]).filter((value) => typeof value === 'number');
    const show = (key, label) => {
      const values = rel(key);
      return values.length === 0 ? `${label} –` : `${label} ${median(values)} (p90 ${percentile(values, 0.9)})`;
    };
    const stepNames = ['active', 'processor', 'checked', 'admitted', 'clone_turn', 'base', 'cleaned', 'worktree', 'seeded', 'lease', 'first_event'];
    const stepValues = (name) => records.map((record) => record.worker_steps_ms?.[name]).filter((value) => typeof value === 'number');
    console.log(`  the worker's start step by step, ms from the step before (median, p90): ${stepNames.filter((name) => stepValues(name).length > 0).map((name) => `${name} ${median(stepValues(name))} (${percentile(stepValues(name), 0.9)})`).join(', ')}`);
    console.log(`  arrival split: finish → completion in Redis's stream ${show('finish_to_stream_ms', '')} ms; this process's event loop late by ${show('loop_delay_ms', '')} ms (p90 of its last 5 s at each result)`);
    console.log(`  workers' event loops late by (each result's p90 while its worker was busy; median over results):${show('worker_loop_delay_ms', '')} ms`);
    console.log(`  timeline vs the worker's finish, ms (median): ${show('agent_end_rel_ms', 'agent ended')}, ${show('reported_rel_ms', 'agent reported')}, ${show('pushed_rel_ms', 'worker pushed')}, ${show('report_seen_rel_ms', 'report seen here')}, ${show('pack_seen_rel_ms', 'pack seen here')}, ${show('pushed_seen_rel_ms', 'push seen here')}, ${show('early_fetched_rel_ms', 'unpacked or fetched here')}, ${show('early_applied_rel_ms', 'fast-forwarded here')}, ${show('report_written_rel_ms', 'report written here')}`);
  }
  console.log(`  load average at the end of the wave: ${os.loadavg().map((value) => value.toFixed(1)).join(' ')}`);
  console.log(`jobs per worker: ${Object.entries(byWorker).map(([id, jobs]) => `${id}=${jobs}`).join(', ')}`);
  // The cost of relaying the agents' events live (issue 17 item 5): they ride the job's progress updates,
  // which BullMQ stores on the job and appends to the queue's events stream (read here from that stream).
  {
    const { Redis } = await import('ioredis');
    const { queueNameFor, remoteKey } = await import(path.join(root, 'dist/dispatch/job.js'));
    const client = new Redis(url);
    const entries = await client.xrange(`bull:${queueNameFor([], remoteKey(remote))}:events`, '-', '+');
    client.disconnect();
    let updates = 0, withEvents = 0, onlyForEvents = 0, events = 0, bytes = 0, eventBytes = 0;
    const lastJournal = new Map();
    for (const [, fields] of entries) {
      const record = Object.fromEntries(fields.flatMap((value, index) => (index % 2 === 0 ? [[value, fields[index + 1]]] : [])));
      if (record.event !== 'progress') continue;
      const data = JSON.parse(record.data);
      updates += 1;
      bytes += record.data.length;
      const journal = JSON.stringify(data.journal ?? null);
      if (Array.isArray(data.events)) {
        withEvents += 1;
        events += data.events.length;
        eventBytes += JSON.stringify(data.events).length;
        if (lastJournal.get(record.jobId) === journal) onlyForEvents += 1;
      }
      lastJournal.set(record.jobId, journal);
    }
    console.log(`  live events: ${updates} progress updates for ${records.length} agents (${withEvents} carried ${events} events; ${onlyForEvents} sent for the events alone), ${(bytes / 1024).toFixed(1)} KB of progress in all, of which the events ${(eventBytes / 1024).toFixed(1)} KB`);
  }

  if (many > 0) {
    await startWorker('b4', slots);
    const manyStart = performance.now();
    const bulk = await measureScriptWave(many, { agentMs: 0, runOptions: { dispatcher, finalize: false, concurrency: 64 } });
    const seconds = (performance.now() - manyStart) / 1000;
    const bulkRecords = dispatchRecords(bulk.result);
    const complete = bulk.result.agents.filter((agent) => agent.status === 'complete').length;
    const perWorker = {};
    for (const record of bulkRecords) perWorker[record.worker] = (perWorker[record.worker] ?? 0) + 1;
    const lost = many - complete;
    console.log(`${many} agents across 4 workers (no finalize): ${complete} complete, ${lost} lost; agents phase ${(bulk.agentsPhase / 1000).toFixed(1)} s → ${(many / (bulk.agentsPhase / 1000)).toFixed(1)} agents/s (whole run-wave incl. ${many} worktrees: ${seconds.toFixed(1)} s); per worker ${Object.entries(perWorker).map(([id, jobs]) => `${id}=${jobs}`).join(', ')}`);
    if (lost > 0) process.exitCode = 1;
  }
  await dispatcher.close();
} finally {
  for (const worker of workers) worker.kill('SIGTERM');
  await sleep(300);
  for (const worker of workers) worker.kill('SIGKILL');
  redis.kill('SIGKILL');
  rmSync(directory, { recursive: true, force: true });
}
