// bench:events — the E40 event store (issue 14, "What it must show" 4):
//  (a) bench:parallel's wave (16 script agents × 2 s, run-wave through the library) with the
//      recorder attached vs not, alternating in the same run: overhead of recording (target ≤ 3 %);
//      plus what the engine's thread pays per event (the listener) and per batch written (timer);
//  (b) 100k events written in batches of 500, one transaction each: events/s (target ≥ 50k/s),
//      directly and through the recorder (emit → buffer → timer → store);
//  (c) a store of 1 million events (200 IMPLs): `polywave query events --impl X --limit 100` and
//      `polywave metrics X` as CLI processes (target ≤ 100 ms each), against `polywave version`
//      (the bare process start) measured in the same run; and the same calls through the native client
//      against a warm `polywave resident` server (what hooks and scripts use: docs/performance.md),
//      its output compared byte for byte with the CLI process's.
//  BENCH_PARTS=c runs only (c) (default abc).
//
//   npm run bench:events
//   BENCH_AGENTS=8 BENCH_PAIRS=2 BENCH_EVENTS=1000000 npm run bench:events
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchEnv, measureScriptWave, percentile, root } from './support/script-wave.mjs';

const { EventBus } = await import(path.join(root, 'dist/engine/events.js'));
const { attachRecorder } = await import(path.join(root, 'dist/observability/recorder.js'));
const { openEventStore, insertEvents } = await import(path.join(root, 'dist/observability/event-store.js'));

const agents = Number(process.env.BENCH_AGENTS ?? 16);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 2000);
const pairs = Number(process.env.BENCH_PAIRS ?? 3);
const bigCount = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-events-'));
const median = (values) => percentile(values, 0.5);
const parts = process.env.BENCH_PARTS ?? 'abc';

console.log(`bench:events — ${os.cpus().length} CPUs, Node ${process.version}, load average ${os.loadavg().map((value) => value.toFixed(1)).join(" ")} (targets assume an idle machine; the ratios are what this run can show)`);

// (a) the wave, recording on vs off, alternating (off first, then on, `pairs` times).
if (parts.includes('a')) {
  const off = [];
  const on = [];
  let stored = 0;
  let listenerNs = 0;
  let received = 0;
  let captured = [];
  await measureScriptWave(agents, { agentMs, env: benchEnv }); // warm-up (file cache, JIT), not counted
  for (let pair = 0; pair < pairs; pair += 1) {
    for (const recording of pair % 2 === 0 ? [false, true] : [true, false]) {
      const bus = new EventBus();
      let recorder;
      if (recording) {
        captured = [];
        bus.subscribe((event) => captured.push(event));
        recorder = attachRecorder(bus, { storePath: path.join(dir, 'wave.db'), command: 'bench', warn: (line) => process.stderr.write(line) });
        // Time the engine's thread spends in the recorder's listener (it only buffers).
        const emit = bus.emit.bind(bus);
        bus.emit = (event) => {
          const start = process.hrtime.bigint();
          emit(event);
          listenerNs += Number(process.hrtime.bigint() - start);
        };
      }
      const wave = await measureScriptWave(agents, { agentMs, env: benchEnv, runOptions: { events: bus } });
      if (recorder) {
        recorder.close();
        stored += recorder.counts.written;
        received += recorder.counts.received;
        if (recorder.disabled) throw new Error('the recorder gave up during the bench');
      }
      (recording ? on : off).push(wave.total);
    }
  }
  const overhead = median(on) / median(off) - 1;
  console.log(`(a) run-wave of ${agents} script agents × ${agentMs} ms, ${pairs} pairs alternating: recording off median ${median(off).toFixed(0)} ms [${off.map((value) => value.toFixed(0)).join(', ')}], on ${median(on).toFixed(0)} ms [${on.map((value) => value.toFixed(0)).join(', ')}] → overhead ${(overhead * 100).toFixed(1)}% (target ≤ 3%) — ${overhead <= 0.03 ? 'OK' : 'ABOVE TARGET (noise: compare the spread of the runs)'}`);
  // Noise-free: the recorder's whole main-thread work for one wave's events (listener + every write), replayed.
  const replay = [];
  for (let index = 0; index < 5; index += 1) {
    const bus = new EventBus();
    const recorder = attachRecorder(bus, { storePath: path.join(dir, 'replay.db'), command: 'bench', warn: (line) => process.stderr.write(line), batchSize: 64 });
    const begin = performance.now();
    for (const event of captured) bus.emit(event);
    recorder.close();
    replay.push(performance.now() - begin);
  }
  console.log(`    replaying one wave's ${captured.length} events through a recorder (buffer + writes, synchronous): ${median(replay).toFixed(1)} ms = ${((median(replay) / median(on)) * 100).toFixed(2)}% of the wave's wall time — the recorder's own cost on the engine's thread`);
  console.log(`    ${stored} events stored over ${pairs} waves; emit() with the recorder attached costs ${(listenerNs / Math.max(1, received) / 1000).toFixed(1)} µs per event on the engine's thread (all listeners, incl. the buffer push)`);
}

// (b) insert throughput: 100k events, batches of 500.
function sampleRow(runId, seq, slug, now) {
  const agent = String.fromCharCode(65 + (seq % 6));
  const wave = 1 + (seq % 3);
  const kinds = ['agent-tool-call', 'agent-tool-call', 'agent-tool-call', 'agent-tool-call', 'agent-progress', 'step-end', 'agent-end', 'cost', 'agent_performance', 'agent-launch', 'wave-run-end'];
  const type = kinds[seq % kinds.length];
  const base = { v: 1, type, slug, wave };
  const event =
    type === 'agent-tool-call' ? { ...base, agent, attempt: 1, tool: 'bash', is_error: false, duration_ms: seq % 900 }
    : type === 'agent-progress' ? { ...base, agent, attempt: 1, turns: 3, input_tokens: 1200, output_tokens: 300, cost_usd: 0.0081 }
    : type === 'step-end' ? { ...base, command: 'finalize-wave', step: { step: 'merge-agents', status: 'success', detail: 'merged 3 agent branch(es)' } }
    : type === 'agent-end' ? { ...base, agent, attempt: 1, status: 'complete', turns: 7, input_tokens: 5200, output_tokens: 1300, cost_usd: 0.0351, duration_ms: 61_000 }
    : type === 'cost' ? { ...base, e40: true, agent, role: 'wave', attempt: 1, turn: 2, model: 'anthropic:claude-sonnet-4-5', backend: 'ai-sdk', input_tokens: 1200, output_tokens: 300, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0.0081, cost_source: 'pricing-table', pricing_date: '2026-11-01' }
    : type === 'agent_performance' ? { ...base, e40: true, agent, status: 'success', retry_count: 0, duration_ms: 61_000, duration_seconds: 61, files_modified: ['src/a.ts'], tests_added: 1, tests_passed: 0, tests_failed: 0, model: 'anthropic:claude-sonnet-4-5', backend: 'ai-sdk', turns: 7, input_tokens: 5200, output_tokens: 1300, cost_usd: 0.0351 }
    : type === 'agent-launch' ? { ...base, agent, attempt: 1, model: 'anthropic:claude-sonnet-4-5', backend: 'ai-sdk' }
    : { ...base, success: true, state: 'WAVE_VERIFIED', duration_ms: 190_000, cost_usd: 0.1 };
  return { run_id: runId, seq, ts: now + seq, type, activity_type: null, slug, wave, agent: event.agent ?? null, program: null, payload: JSON.stringify(event) };
}
if (parts.includes('b')) {
  const file = path.join(dir, 'throughput.db');
  const db = openEventStore(file);
  const now = Date.now();
  const total = 100_000;
  const batch = 500;
  const batches = [];
  for (let first = 1; first <= total; first += batch) {
    const rows = [];
    for (let seq = first; seq < first + batch; seq += 1) rows.push(sampleRow('bench-direct', seq, 'throughput', now));
    batches.push(rows);
  }
  const start = performance.now();
  for (const rows of batches) insertEvents(db, rows);
  const direct = performance.now() - start;
  db.close();
  // The same through the recorder: emit 100k events on a bus, then close (flushes what is left).
  const bus = new EventBus();
  const recorder = attachRecorder(bus, { storePath: file, command: 'bench', warn: (line) => process.stderr.write(line) });
  const emitStart = performance.now();
  for (let seq = 1; seq <= total; seq += 1) {
    bus.emit({ v: 1, type: 'agent-tool-call', slug: 'throughput', wave: 1, agent: 'A', attempt: 1, tool: 'bash', is_error: false, duration_ms: seq });
    if (seq % batch === 0) await new Promise((resolve) => setTimeout(resolve, 0)); // let full batches flush, as the engine's awaits would
  }
  recorder.close();
  const viaRecorder = performance.now() - emitStart;
  console.log(`(b) 100k events in batches of ${batch}: ${Math.round(total / (direct / 1000))} events/s written directly (${direct.toFixed(0)} ms; target ≥ 50k/s — ${total / (direct / 1000) >= 50_000 ? 'OK' : 'BELOW TARGET'}); through the recorder (emit → store): ${Math.round(recorder.counts.written / (viaRecorder / 1000))} events/s, ${recorder.counts.written} stored`);
}

// (c) 1M events, then the two CLI calls.
if (parts.includes('c')) {
  const file = path.join(dir, 'million.db');
  const db = openEventStore(file);
  const slugs = 200;
  const perRun = 1000;
  const now = Date.now() - 86_400_000;
  const start = performance.now();
  let written = 0;
  let rows = [];
  for (let index = 0; index < bigCount; index += 1) {
    const run = Math.floor(index / perRun);
    const slug = `impl-${run % slugs}`;
    rows.push(sampleRow(`run-${run}`, (index % perRun) + 1, slug, now + run * perRun));
    if (rows.length === 10_000) {
      written += insertEvents(db, rows);
      rows = [];
    }
  }
  if (rows.length > 0) written += insertEvents(db, rows);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const build = performance.now() - start;
  const size = statSync(file).size;
  console.log(`(c) store of ${written} events (${slugs} IMPLs, ${(size / 1e6).toFixed(0)} MB) written in ${(build / 1000).toFixed(1)} s (${Math.round(written / (build / 1000))} events/s in batches of 10k)`);
  const bin = path.join(root, 'bin', 'polywave.js');
  const time = (args) => {
    const samples = [];
    let output = '';
    for (let index = 0; index < 7; index += 1) {
      const begin = performance.now();
      const result = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...process.env, POLYWAVE_EVENTS_DB: file } });
      samples.push(performance.now() - begin);
      if (result.status !== 0) throw new Error(`${args.join(' ')}: ${result.stderr}`);
      output = result.stdout;
    }
    return { ms: median(samples), output };
  };
  const bare = time(['version']);
  // The whole CLI without the store: query events on a store that does not exist (better-sqlite3 not loaded).
  const noStore = spawnSync(process.execPath, [bin, 'query', 'events', '--store', path.join(dir, 'absent.db')], { encoding: 'utf8' });
  if (noStore.status !== 0) throw new Error(noStore.stderr);
  const cliOnly = (() => {
    const samples = [];
    for (let index = 0; index < 7; index += 1) {
      const begin = performance.now();
      spawnSync(process.execPath, [bin, 'query', 'events', '--store', path.join(dir, 'absent.db')], { encoding: 'utf8' });
      samples.push(performance.now() - begin);
    }
    return median(samples);
  })();
  // In-process: the store's own work (open + query / open + aggregate), without the process start.
  const { queryLatestEvents, eventsForMetrics } = await import(path.join(root, 'dist/observability/event-store.js'));
  const { computeMetrics, metricsEventTypes } = await import(path.join(root, 'dist/observability/metrics.js'));
  const inProcess = (work) => {
    const samples = [];
    for (let index = 0; index < 7; index += 1) {
      const begin = performance.now();
      const handle = openEventStore(file, { readonly: true });
      work(handle);
      handle.close();
      samples.push(performance.now() - begin);
    }
    return median(samples);
  };
  const queryInProcess = inProcess((handle) => queryLatestEvents(handle, { impl: 'impl-17' }, 100));
  const metricsInProcess = inProcess((handle) => computeMetrics(eventsForMetrics(handle, { impl: 'impl-17' }, metricsEventTypes), { impl: 'impl-17' }));
  const query = time(['query', 'events', '--impl', 'impl-17', '--limit', '100']);
  const queryJson = time(['query', 'events', '--impl', 'impl-17', '--limit', '100', '--format', 'json']);
  const metrics = time(['metrics', 'impl-17']);
  const queryRows = JSON.parse(queryJson.output).length;
  const verdict = (ms) => (ms <= 100 ? 'OK' : 'ABOVE TARGET');
  console.log(`    polywave version (process start, baseline): ${bare.ms.toFixed(0)} ms; the CLI with query events on a missing store (no SQLite): ${cliOnly.toFixed(0)} ms`);
  console.log(`    in-process (open the store + the work): query ${queryInProcess.toFixed(1)} ms, metrics ${metricsInProcess.toFixed(1)} ms`);
  console.log(`    query events --impl impl-17 --limit 100: ${query.ms.toFixed(0)} ms (${(query.ms / bare.ms).toFixed(2)}× the bare start; ${queryRows} rows) — target ≤ 100 ms: ${verdict(query.ms)}`);
  console.log(`    metrics impl-17 (${bigCount / slugs} events of the IMPL): ${metrics.ms.toFixed(0)} ms (${(metrics.ms / bare.ms).toFixed(2)}× the bare start) — target ≤ 100 ms: ${verdict(metrics.ms)}`);

  // The same calls through the native client and a warm resident server (query and metrics are on its allow-list).
  const client = path.join(root, 'dist', 'native', 'polywave-client');
  if (!existsSync(client)) {
    console.log('    resident: no native client (dist/native/polywave-client: no C compiler at build) — not measured');
  } else {
    const socketDir = path.join(dir, 'resident');
    mkdirSync(socketDir, { mode: 0o700 });
    const env = { ...process.env, POLYWAVE_EVENTS_DB: file, POLYWAVE_RESIDENT_SOCKET: path.join(socketDir, 'r.sock') };
    const status = () => {
      const result = spawnSync(process.execPath, [bin, 'resident', 'status', '--json'], { encoding: 'utf8', env });
      try {
        return JSON.parse(result.stdout);
      } catch {
        return {};
      }
    };
    spawnSync(process.execPath, [bin, 'resident', 'start', '--idle-timeout', '600'], { env, stdio: 'ignore' });
    for (let waited = 0; waited < 20_000 && status().running !== true; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      const viaClient = (args, expected) => {
        const samples = [];
        let same = true;
        spawnSync(client, args, { encoding: 'utf8', env }); // warm-up: the server's first call of this command
        const before = status().requests ?? 0;
        for (let index = 0; index < 7; index += 1) {
          const begin = performance.now();
          const result = spawnSync(client, args, { encoding: 'utf8', env });
          samples.push(performance.now() - begin);
          if (result.status !== 0) throw new Error(`resident ${args.join(' ')}: ${result.stderr}`);
          if (result.stdout !== expected) same = false;
        }
        const served = (status().requests ?? 0) - before;
        return { ms: median(samples), same, served };
      };
      const residentQuery = viaClient(['query', 'events', '--impl', 'impl-17', '--limit', '100'], query.output);
      const residentMetrics = viaClient(['metrics', 'impl-17'], metrics.output);
      for (const [name, row] of [['query events --impl impl-17 --limit 100', residentQuery], ['metrics impl-17', residentMetrics]]) {
        console.log(`    resident (native client + warm server) ${name}: ${row.ms.toFixed(1)} ms (${(row.ms / bare.ms).toFixed(2)}× the bare start of a CLI process, ${(row.ms / (name.startsWith('query') ? queryInProcess : metricsInProcess)).toFixed(1)}× the store's own work in-process), ${row.served}/7 served by the server, output ${row.same ? 'identical to' : 'DIFFERENT FROM'} the CLI process's — target ≤ 100 ms: ${verdict(row.ms)}`);
      }
    } finally {
      spawnSync(process.execPath, [bin, 'resident', 'stop'], { env, stdio: 'ignore' });
    }
  }
}

rmSync(dir, { recursive: true, force: true });
