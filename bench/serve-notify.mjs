// bench:serve-notify — how the server should learn of a new event (issue 16, the wake-up hop):
// a small writer process stores one event every 20 ms into an event store (one commit each, as a
// run with POLYWAVE_EVENTS_FLUSH_MS=0 does) while this process tails it with the server's EventTail;
// latency = when the tail saw the row − the row's ts. Three ways to wake the tail, interleaved:
//   watch  — fs.watch on the store's directory (what serve does), with its 10 ms settle re-poll;
//   notify — the writer also writes one byte to `<store>-notify` after each commit (a post-commit
//            file-system notification: no wake before the WAL index is updated);
//   uds    — the writer sends one byte over a Unix socket to this process after each commit (a push).
// The floor in the same run: the same writer appending a line to a file and a reader woken by fs.watch.
// BENCH_LOAD=N busy-looping processes run beside each round (a loaded shared machine).
//
//   npm run build && node bench/serve-notify.mjs
//   BENCH_LOAD=4 BENCH_ROUNDS=3 BENCH_ROUND_MS=10000 node bench/serve-notify.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, watch, writeFileSync, openSync, readSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { percentile, root } from './support/script-wave.mjs';

const { EventTail } = await import(path.join(root, 'dist/serve/event-tail.js'));
const { openEventStore } = await import(path.join(root, 'dist/observability/event-store.js'));
const busyLoops = Number(process.env.BENCH_LOAD ?? 0);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const roundMs = Number(process.env.BENCH_ROUND_MS ?? 8000);

const writerSource = (mode) => `
const { openEventStore, insertEvents } = await import(${JSON.stringify(path.join(root, 'dist/observability/event-store.js'))});
const fs = await import('node:fs');
const net = await import('node:net');
const [store, raw] = process.argv.slice(1);
const db = openEventStore(store);
const notify = ${mode === 'notify'} ? fs.openSync(store + '-notify', 'w') : undefined;
const socket = ${mode === 'uds'} ? net.connect(store + '.sock') : undefined;
let seq = 0;
setInterval(() => {
  seq += 1;
  const ts = Date.now();
  insertEvents(db, [{ run_id: 'r', seq, ts, type: 'agent-progress', activity_type: null, slug: 'b', wave: 1, agent: 'A', program: null, payload: '{"text":"step"}' }], seq === 1 ? { run_id: 'r', started_at: ts, command: 'bench', cwd: '/', pid: process.pid } : undefined);
  if (notify !== undefined) fs.writeSync(notify, 'x', 0);
  socket?.write('x');
  fs.appendFileSync(raw, ts + '\\n');
}, 20);`;

async function round(mode) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-notify-'));
  const store = path.join(dir, 'events.db');
  const raw = path.join(dir, 'raw.txt');
  openEventStore(store).close();
  writeFileSync(raw, '');
  const tail = new EventTail(store);
  const latencies = [];
  let seen = 0;
  tail.onAdvance = (_id, at) => {
    for (const row of tail.read({}, seen, 1000)) {
      latencies.push(at - row.ts);
      seen = row.id;
    }
  };
  tail.start();
  // The floor: the raw file, read when fs.watch says it changed.
  const floor = [];
  const fd = openSync(raw, 'r');
  let offset = 0;
  let rest = '';
  const rawWatch = watch(raw, () => {
    const buffer = Buffer.alloc(65536);
    let n;
    while ((n = readSync(fd, buffer, 0, buffer.length, offset)) > 0) {
      offset += n;
      rest += buffer.toString('utf8', 0, n);
    }
    const now = Date.now();
    const lines = rest.split('\n');
    rest = lines.pop();
    for (const line of lines) floor.push(now - Number(line));
  });
  let server;
  if (mode === 'uds') {
    server = net.createServer((connection) => connection.on('data', () => tail.poll()));
    await new Promise((listening) => server.listen(`${store}.sock`, listening));
  }
  const writer = spawn(process.execPath, ['--input-type=module', '-e', writerSource(mode), store, raw], { stdio: 'inherit' });
  const loops = Array.from({ length: busyLoops }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  await new Promise((done) => setTimeout(done, roundMs));
  const load = os.loadavg()[0];
  writer.kill();
  for (const loop of loops) loop.kill();
  rawWatch.close();
  tail.close();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
  const stats = (values) => `p50 ${percentile(values, 0.5)} ms, p95 ${percentile(values, 0.95)} ms, max ${Math.max(...values)} ms`;
  console.log(`${mode.padEnd(6)} ${latencies.length} events: ${stats(latencies)} | floor (raw file, fs.watch) ${stats(floor)} | ratio p95 ${(percentile(latencies, 0.95) / Math.max(1, percentile(floor, 0.95))).toFixed(1)} | load ${load.toFixed(1)}`);
}

console.log(`bench:serve-notify — ${os.cpus().length} CPUs, Node ${process.version}, load average ${os.loadavg().map((value) => value.toFixed(1)).join(' ')}${busyLoops ? `, ${busyLoops} busy loops beside each round` : ''}`);
for (let index = 0; index < rounds; index += 1) for (const mode of ['watch', 'notify', 'uds']) await round(mode);
