// bench:serve — `polywave serve` (issue 16, "What it must show" 4, the server's part):
//  (a) the API's answer for an IMPL of 20 agents (GET /api/repos/:repo/impls/:slug, 200 calls over
//      one keep-alive connection): p50/p95 against the floor, a bare YAML parse of the same file
//      (the `yaml` package) measured in the same run; target ≤ 50 ms;
//  (b) SSE event-to-client latency while a recorder writes: a 16-agent script wave runs as a
//      `polywave run-wave` process recording into the server's store with POLYWAVE_EVENTS_FLUSH_MS=0
//      (each event written as it is emitted: what serve gives the runs it starts; BENCH_FLUSH_MS=20
//      compares a timer flush). Each agent writes its two files, says BENCH_TEXT_STEPS lines of
//      text spread over its BENCH_AGENT_MS (cards update while the others run, ~40 events an
//      agent: p95 over ~650 events, not a burst of 256), commits and reports. An SSE client of a
//      real `polywave serve` process (this process, otherwise idle) measures receipt time − the
//      event's ts (when the recorder received it); target p95 ≤ 100 ms (the browser's part is
//      bench:serve-ui). BENCH_BREAKDOWN=1 also splits it at the commit (this process then polls
//      the store every 5 ms: one more process competing for the cores).
//
//   npm run bench:serve
//   BENCH_CALLS=500 BENCH_AGENTS=8 npm run bench:serve
//   BENCH_SERVE_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' npm run bench:serve   (profiles the server)
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { agentIds, agentScriptYaml, benchEnv, fixedLengthSteps, percentile, root, sh, spawnRunWave, startServe, waveImplYaml } from './support/script-wave.mjs';

const { openEventStore } = await import(path.join(root, 'dist/observability/event-store.js'));

const calls = Number(process.env.BENCH_CALLS ?? 200);
const waveAgents = Number(process.env.BENCH_AGENTS ?? 16);
// The recorder flush of the wave (serve's runs get 0: each event written as it is emitted).
const flushSetting = process.env.BENCH_FLUSH_MS ?? '0';
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 4000);
const textSteps = Number(process.env.BENCH_TEXT_STEPS ?? 12);
const breakdown = process.env.BENCH_BREAKDOWN === '1';
const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-serve-'));
const repo = path.join(dir, 'repo');
const store = path.join(dir, 'events.db');

console.log(`bench:serve — ${os.cpus().length} CPUs, Node ${process.version}, load average ${os.loadavg().map((value) => value.toFixed(1)).join(' ')}`);

// A repository with an IMPL of 20 agents in 2 waves (two files each).
const ids = Array.from({ length: 20 }, (_, index) => `${String.fromCharCode(65 + (index % 10))}${index < 10 ? '' : '2'}`);
const waveOf = (index) => (index < 10 ? 1 : 2);
const file = (id, kind) => `src/agent-${id.toLowerCase()}/${kind}.ts`;
const impl = [
  'title: Twenty agents',
  'feature_slug: twenty',
  'verdict: SUITABLE',
  'state: REVIEWED',
  'test_command: "npm test"',
  'lint_command: "npm run lint"',
  'file_ownership:',
  ...ids.flatMap((id, index) => ['main', 'main.test'].flatMap((kind) => [`    - file: ${file(id, kind)}`, `      agent: ${id}`, `      wave: ${waveOf(index)}`, '      action: new'])),
  'interface_contracts:',
  ...ids.slice(0, 10).flatMap((id) => [`    - name: Api${id}`, `      description: The API agent ${id} exports.`, `      definition: "export interface Api${id} { run(input: string): Promise<number> }"`, `      location: ${file(id, 'main')}`]),
  'waves:',
  ...[1, 2].flatMap((wave) => [
    `    - number: ${wave}`,
    '      agents:',
    ...ids
      .filter((_, index) => waveOf(index) === wave)
      .flatMap((id) => [
        `        - id: ${id}`,
        `          task: "Implement ${file(id, 'main')} and its test: parse the input, validate it against the contract, return the count. Keep the public API exactly as the contract says; add unit tests for the empty input, a long input and an invalid one."`,
        '          files:',
        `            - ${file(id, 'main')}`,
        `            - ${file(id, 'main.test')}`,
        ...(wave === 2 ? ['          dependencies:', `            - ${ids[ids.indexOf(id) - 10]}`] : []),
      ]),
  ]),
  'quality_gates:',
  '    level: standard',
  '    gates:',
  '        - type: test',
  '          command: "npm test"',
  '          required: true',
  '',
].join('\n');
mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
writeFileSync(path.join(repo, 'docs', 'IMPL', 'IMPL-twenty.yaml'), impl);
spawnSync('sh', ['-c', 'git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm plan'], { cwd: repo, env: benchEnv });
openEventStore(store).close();
// (b)'s wave runs in its own repository, served too: serve shows only the runs of the repositories it serves.
const waveRepo = path.join(dir, 'wave');
const waveIds = agentIds(waveAgents);
mkdirSync(path.join(waveRepo, 'docs', 'IMPL'), { recursive: true });
writeFileSync(path.join(waveRepo, 'docs', 'IMPL', 'IMPL-bench.yaml'), waveImplYaml(waveIds, 'SSE bench'));
sh('git init -q -b main && git add -A && git commit -qm initial', waveRepo);

// BENCH_SERVE_NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof') profiles the server process alone.
const server = await startServe([repo, waveRepo], store, benchEnv, (process.env.BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean));
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (pathname) =>
  new Promise((resolve, reject) => {
    http
      .get(new URL(pathname, server.base), { agent, headers: { 'X-Polywave-Token': server.token } }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode, body }));
      })
      .on('error', reject);
  });

try {
  // (a) API time for the 20-agent IMPL vs a bare YAML parse of the same text.
  const { repos } = JSON.parse((await get('/api/repos')).body);
  const route = `/api/repos/${repos[0].id}/impls/twenty`;
  const first = await get(route);
  const answer = JSON.parse(first.body);
  if (first.status !== 200 || answer.progress.waves.flatMap((wave) => wave.agents).length !== 20) throw new Error(`unexpected answer ${first.status}: ${first.body.slice(0, 200)}`);
  const api = [];
  for (let index = 0; index < calls; index += 1) {
    const begin = performance.now();
    const response = await get(route);
    api.push(performance.now() - begin);
    if (response.status !== 200) throw new Error(`status ${response.status}`);
  }
  const text = readFileSync(path.join(repo, 'docs', 'IMPL', 'IMPL-twenty.yaml'), 'utf8');
  const floor = [];
  for (let index = 0; index < calls; index += 1) {
    const begin = performance.now();
    parse(text);
    floor.push(performance.now() - begin);
  }
  const p50 = percentile(api, 0.5);
  const p95 = percentile(api, 0.95);
  const floor50 = percentile(floor, 0.5);
  console.log(`(a) GET ${route.replace(repos[0].id, ':repo')} — IMPL of 20 agents (${text.length} bytes), ${calls} calls, answer ${first.body.length} bytes`);
  console.log(`    API p50 ${p50.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms (target ≤ 50 ms: ${p95 <= 50 ? 'met' : 'MISSED'})`);
  console.log(`    floor: bare YAML parse of the same file p50 ${floor50.toFixed(2)} ms, p95 ${percentile(floor, 0.95).toFixed(2)} ms — API p50 / parse p50 = ${(p50 / floor50).toFixed(2)}`);

  // (b) SSE latency during a 16-agent script wave recorded into the server's store.
  const latencies = [];
  const arrivals = [];
  let received = 0;
  const sse = await new Promise((resolve, reject) => {
    const request = http.get(new URL('/api/events', server.base), { headers: { 'X-Polywave-Token': server.token } }, (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk) => {
        const now = Date.now();
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (frame.startsWith('retry:')) resolve(request);
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const event = JSON.parse(data.slice(6));
          latencies.push(now - event.ts);
          arrivals.push({ id: event.id, ts: event.ts, now });
          received += 1;
        }
      });
    });
    request.on('error', reject);
  });
  // BENCH_BREAKDOWN=1: where the time goes — this process also polls the store every 5 ms and notes when each row became visible.
  const visibleAt = new Map();
  const watchDb = breakdown ? openEventStore(store, { readonly: true }) : undefined;
  const visible = watchDb?.prepare('SELECT id FROM events WHERE id > ? ORDER BY id');
  let watched = 0;
  const watcher = breakdown
    ? setInterval(() => {
        const now = Date.now();
        for (const row of visible.all(watched)) {
          visibleAt.set(row.id, now);
          watched = row.id;
        }
      }, 5)
    : undefined;
  // The wave: a real `polywave run-wave` process with script agents, recording into the server's store.
  const script = path.join(dir, 'agents.yaml');
  // Text lines spread over the agent's time (after its two writes; the commit and report follow, then it idles until agentMs).
  const gap = Math.round((agentMs * 0.8) / Math.max(1, textSteps));
  const talk = (id) => Array.from({ length: textSteps }, (_, index) => [`      - text: "Agent ${id} step ${index + 1}"`, `      - sleep_ms: ${gap}`]).flat();
  writeFileSync(script, agentScriptYaml(waveIds, (id) => fixedLengthSteps(id, { agentMs, extraSteps: talk(id) })));
  // Spawned, not spawnSync: this process's SSE client must read while the wave runs.
  const waveStart = performance.now();
  const wave = await new Promise((resolve) => {
    const child = spawnRunWave({ implPath: path.join(waveRepo, 'docs', 'IMPL', 'IMPL-bench.yaml'), script, store, cwd: waveRepo, env: { ...benchEnv, POLYWAVE_EVENTS_FLUSH_MS: flushSetting } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
  const waveMs = performance.now() - waveStart;
  const emitted = wave.stdout.split('\n').filter((line) => line.startsWith('{') && !line.includes('"run-wave-result"')).length;
  const deadline = Date.now() + 5000;
  while (received < emitted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  sse.destroy();
  if (watcher) clearInterval(watcher);
  watchDb?.close();
  const p = (values, fraction) => percentile(values, fraction);
  const recorderSide = arrivals.filter((arrival) => visibleAt.has(arrival.id)).map((arrival) => Math.max(0, visibleAt.get(arrival.id) - arrival.ts));
  const serverSide = arrivals.filter((arrival) => visibleAt.has(arrival.id)).map((arrival) => Math.max(0, arrival.now - visibleAt.get(arrival.id)));
  console.log(`(b) SSE event → client during a ${waveAgents}-agent script wave (polywave run-wave, script agents with ${textSteps} text steps over ${agentMs} ms, POLYWAVE_EVENTS_FLUSH_MS=${flushSetting}): ${received}/${emitted} events received; the run-wave process took ${(waveMs / 1000).toFixed(1)} s`);
  console.log(`    latency p50 ${p(latencies, 0.5)} ms, p95 ${p(latencies, 0.95)} ms, max ${Math.max(...latencies)} ms (target p95 ≤ 100 ms: ${p(latencies, 0.95) <= 100 ? 'met' : 'MISSED'})`);
  if (breakdown) console.log(`    of which: emitted → committed in the store (the run's recorder) p50 ${p(recorderSide, 0.5)} ms, p95 ${p(recorderSide, 0.95)} ms; committed → SSE client (the server) p50 ${p(serverSide, 0.5)} ms, p95 ${p(serverSide, 0.95)} ms (±5 ms: this bench's own poll)`);
} finally {
  server.child.kill('SIGTERM');
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
