// bench:serve-ui — the browser side of `polywave serve` (issue 16, "What it must show" 4):
//  (a) first view transferred bytes (HTML + JS + CSS the shell loads before it renders, not the
//      lazily loaded costs view) vs the 300 KB gzip budget: measured from the built files in
//      dist/web (gzip -9 of each) and from Chromium's network log opening the printed URL
//      (encoded body bytes as received; the server may send them uncompressed: both are shown);
//  (b) event-to-browser latency during a 16-agent script wave: the live board of a real
//      `polywave serve` in Debian's Chromium (playwright-core); a real `polywave run-wave` process
//      records into the server's store (each event written as it is emitted,
//      POLYWAVE_EVENTS_FLUSH_MS=0, what serve gives the runs it starts); the page
//      reports, through page.exposeFunction, when each card re-rendered with an event (after the
//      paint); latency = that time − the event's ts (when the run emitted it), split into the part
//      before the page's EventSource got it and the page's own part. Target p95 ≤ 100 ms. Each
//      agent says BENCH_TEXT_STEPS (8) lines over its time besides its writes: ~14 card updates an
//      agent, p95 over ~200+ updates rather than a handful per card.
//
//  The floor in the same run, the same hops without polywave code: while the wave runs, one small
//  process appends an event line to a file every 20 ms; another, woken by fs.watch, reads it (the
//  raw one-hop floor) and sends it as an SSE frame to a bare EventSource in a second page of the
//  same Chromium (the browser floor); the page's latency is printed as a ratio of that floor.
//  The pages keep their times in memory, read once after the wave (BENCH_CDP_HOOK=1: the card updates
//  sent over CDP as they happen, as before — through Chromium's browser process at nice -8).
//  BENCH_BARE_PAGE=1 adds a bare EventSource on the server's stream in a third page (no UI).
//  BENCH_LOAD=N adds N busy-looping processes for the wave's duration (a loaded shared machine,
//  reproducibly; the load average is printed before and after).
//
//   npm run bench:serve-ui
//   BENCH_AGENTS=8 BENCH_AGENT_MS=3000 npm run bench:serve-ui
//   BENCH_LOAD=6 npm run bench:serve-ui
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { agentIds, agentScriptYaml, benchEnv, fileOf, percentile, root, sh, spawnRunWave, startServe, testOf, waveImplYaml } from './support/script-wave.mjs';

const chromiumPath = process.env.POLYWAVE_CHROMIUM ?? '/usr/bin/chromium';
const waveAgents = Number(process.env.BENCH_AGENTS ?? 16);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 4000);
// A loaded machine can make the wave slow: it is stopped after this long and what was seen is reported.
const waveTimeoutMs = Number(process.env.BENCH_WAVE_TIMEOUT_MS ?? 240_000);
const busyLoops = Number(process.env.BENCH_LOAD ?? 0);
const budget = 300 * 1024;
const benchStart = Date.now();
const webRoot = path.join(root, 'dist', 'web');

console.log(`bench:serve-ui — ${os.cpus().length} CPUs, Node ${process.version}, load average ${os.loadavg().map((value) => value.toFixed(1)).join(' ')}`);
if (!existsSync(path.join(webRoot, 'index.html'))) throw new Error('dist/web is not built: npm run build');

// (a) from the built files: what index.html references (entry script, its CSS, modulepreloads).
const html = readFileSync(path.join(webRoot, 'index.html'), 'utf8');
const referenced = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((match) => match[1]);
const entry = referenced.find((file) => file.endsWith('.js'));
// Static imports of the entry chunk load before it runs: count them too (dynamic import() chunks are not first view).
const staticImports = (file) => [...readFileSync(path.join(webRoot, file), 'utf8').matchAll(/\bimport\s*(?:[\w{},*\s]+from\s*)?["']\.\/([^"']+\.js)["']/g)].map((match) => `assets/${match[1]}`);
const firstView = new Set(['index.html', ...referenced, ...(entry ? staticImports(entry) : [])]);
let raw = 0;
let gzipped = 0;
const rows = [];
for (const file of firstView) {
  const bytes = readFileSync(path.join(webRoot, file));
  const gz = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gzipped += gz;
  rows.push(`${file} ${(bytes.length / 1024).toFixed(1)} KB → ${(gz / 1024).toFixed(1)} KB`);
}
const lazy = readdirSync(path.join(webRoot, 'assets')).filter((file) => !firstView.has(`assets/${file}`));
console.log(`(a) first view from dist/web: ${firstView.size} files, ${(raw / 1024).toFixed(1)} KB raw, ${(gzipped / 1024).toFixed(1)} KB gzip (budget 300 KB: ${gzipped <= budget ? 'met' : 'MISSED'})`);
for (const row of rows) console.log(`    ${row}`);
console.log(`    loaded later (costs view): ${lazy.join(', ')}`);

if (!existsSync(chromiumPath)) {
  console.log(`(a, browser) and (b) skipped: ${chromiumPath} is absent (apt-get install chromium)`);
  process.exit(0);
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-serve-ui-'));
const store = path.join(dir, 'events.db');
const repo = path.join(dir, 'repo');
const ids = agentIds(waveAgents);
mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
writeFileSync(path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'), waveImplYaml(ids, 'Live board bench'));
// Each agent: BENCH_TEXT_STEPS lines of text and its two writes spread over agentMs (each a turn: a
// card update), so cards update while the others run — p95 over several hundred card updates.
const textSteps = Number(process.env.BENCH_TEXT_STEPS ?? 8);
const gap = Math.round((agentMs * 0.7) / Math.max(1, textSteps));
const talk = (id, from, to) => Array.from({ length: to - from }, (_, index) => [`      - text: "Agent ${id} step ${from + index + 1}"`, `      - sleep_ms: ${gap}`]).flat();
const half = Math.floor(textSteps / 2);
const script = path.join(dir, 'agents.yaml');
writeFileSync(
  script,
  agentScriptYaml(ids, (id) => [
    `      - text: "Agent ${id} starts"`,
    ...talk(id, 0, half),
    `      - write: { path: ${fileOf(id)}, content: "export const value${id} = 1;\\n" }`,
    ...talk(id, half, textSteps),
    `      - write: { path: ${testOf(id)}, content: "import { value${id} } from './main';\\n" }`,
    `      - commit: "feat(${id}): value"`,
    '      - report: { status: complete, verification: PASS }',
    `      - sleep_until_ms: ${agentMs}`,
  ]),
);
sh('git init -q -b main && git add -A && git commit -qm plan', repo);

// BENCH_SERVE_NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof') profiles the server process.
// The server traces where each event's time went (src/serve/trace.ts): noticed by its tail, read and written per client.
const traceFile = path.join(dir, 'serve-trace.txt');
const server = await startServe(repo, store, { ...benchEnv, POLYWAVE_SERVE_TRACE: traceFile }, (process.env.BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean));

const { chromium } = await import('playwright-core');
const profile = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: chromiumPath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('crash', () => console.log('    (the page crashed)'));
  context.on('close', () => console.log(`    (the browser closed ${Date.now() - benchStart} ms after the start)`));

  // (a) from the browser: every response of the first view (after the token redirect), as transferred.
  const responses = [];
  page.on('requestfinished', async (request) => {
    const response = await request.response();
    const sizes = await request.sizes().catch(() => undefined);
    if (response && sizes) responses.push({ url: request.url(), status: response.status(), body: sizes.responseBodySize, headers: sizes.responseHeadersSize, encoding: (await response.allHeaders())['content-encoding'] ?? 'identity' });
  });
  await page.goto(server.url, { waitUntil: 'networkidle' });
  await page.locator('[data-view="repos"] [data-impl="bench"]').waitFor({ timeout: 20_000 });
  const assets = responses.filter((entry) => !entry.url.includes('/api/'));
  const transferred = assets.reduce((sum, entry) => sum + entry.body + entry.headers, 0);
  // The same bytes gzip-encoded (what a compressing server or proxy would send).
  const asGzip = assets.reduce((sum, entry) => {
    const file = new URL(entry.url).pathname;
    const local = file === '/' ? null : path.join(webRoot, file);
    const bytes = local && existsSync(local) ? readFileSync(local) : Buffer.from(html);
    return sum + (entry.encoding === 'gzip' ? entry.body : gzipSync(bytes, { level: 9 }).length) + entry.headers;
  }, 0);
  console.log(`(a) first view in Chromium: ${assets.length} responses (${assets.map((entry) => `${new URL(entry.url).pathname} ${entry.status} ${entry.encoding}`).join(', ')})`);
  console.log(`    transferred ${(transferred / 1024).toFixed(1)} KB as sent (${[...new Set(assets.map((entry) => entry.encoding))].join('/')}), ${(asGzip / 1024).toFixed(1)} KB with gzip bodies (budget 300 KB: ${asGzip <= budget ? 'met' : 'MISSED'}; as sent: ${transferred <= budget ? 'met' : 'MISSED'})`);

  // (b) the live board of the IMPL; the page reports each card update.
  // BENCH_CDP_HOOK=1: each update goes to this process over CDP as it happens (page.exposeFunction,
  // the earlier way: every call is a round trip through Chromium's browser process, which runs at
  // nice -8, and this process). Default: the page keeps them in an array read once after the wave.
  const cdpHook = process.env.BENCH_CDP_HOOK === '1';
  let updates = [];
  if (cdpHook) await page.exposeFunction('__polywaveCardUpdated', (update) => updates.push(update));
  else await page.addInitScript(() => (globalThis.__polywaveCardUpdated = (update) => (globalThis.__cardUpdates ??= []).push(update)));
  const repoId = await page.locator('[data-repo]').first().getAttribute('data-repo');
  await page.goto(`${server.origin}/r/${repoId}/impl/bench/live`);
  await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor({ timeout: 20_000 });
  // Beside the page, a plain SSE client in its own small Node process (same query as the page; this
  // process is busy with Playwright's traffic): when the server's frame reached a client outside the
  // browser — the split between the run + server part and Chromium's.
  const nodeReceived = new Map();
  const clientScript = `
    const http = require('node:http');
    http.get(process.argv[1], { headers: { 'X-Polywave-Token': process.argv[2] } }, (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk) => {
        const now = Date.now();
        buffer += chunk;
        let end, out = '';
        while ((end = buffer.indexOf('\\n\\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = frame.split('\\n').find((line) => line.startsWith('id: '));
          if (id) out += id.slice(4).split('-').pop() + ' ' + now + '\\n';
        }
        if (out) process.stdout.write(out);
      });
    });`;
  const nodeClient = spawn(process.execPath, ['-e', clientScript, new URL(`/api/events?repo=${encodeURIComponent(repoId)}&impl=bench&after=0`, server.base).href, server.token], { stdio: ['ignore', 'pipe', 'ignore'] });
  let clientOut = '';
  nodeClient.stdout.setEncoding('utf8').on('data', (chunk) => {
    clientOut += chunk;
    const lines = clientOut.split('\n');
    clientOut = lines.pop();
    for (const line of lines) {
      const [id, at] = line.split(' ').map(Number);
      nodeReceived.set(id, at);
    }
  });
  // The floor: the same hops with no polywave code — a small process appends an event line to a file
  // every 20 ms; a second small process, woken by fs.watch, reads it (one process hop: the raw floor)
  // and sends it as an SSE frame to a bare EventSource in a second page of the same Chromium (the
  // browser floor: writer → server → Chromium's network service → renderer, as for the cards).
  const floorFile = path.join(dir, 'floor.jsonl');
  writeFileSync(floorFile, '');
  const floorServer = spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs'); const http = require('node:http'); const file = process.argv[1]; const fd = fs.openSync(file, 'r'); let offset = 0, rest = ''; const clients = new Set();
      const page = '<!doctype html><title>floor</title><script>const source = new EventSource("/events"); source.onmessage = (message) => { const at = Date.now(); (window.__floor ??= []).push({ ts: JSON.parse(message.data).ts, latency: at - JSON.parse(message.data).ts }); };</script>';
      const read = () => { const buffer = Buffer.alloc(65536); let n; let out = '', frames = '';
        while ((n = fs.readSync(fd, buffer, 0, buffer.length, offset)) > 0) { offset += n; rest += buffer.toString('utf8', 0, n); }
        const now = Date.now(); const lines = rest.split('\\n'); rest = lines.pop();
        for (const line of lines) { out += JSON.parse(line).ts + ' ' + now + '\\n'; frames += 'data: ' + line + '\\n\\n'; }
        if (frames) for (const client of clients) client.write(frames);
        if (out) process.stdout.write(out); };
      const server = http.createServer((request, response) => {
        if (request.url === '/events') { response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' }); response.write(': floor\\n\\n'); clients.add(response); request.on('close', () => clients.delete(response)); return; }
        response.writeHead(200, { 'content-type': 'text/html' }); response.end(page); });
      server.listen(0, '127.0.0.1', () => { fs.watch(file, read); process.stdout.write('ready ' + server.address().port + '\\n'); });`,
      floorFile,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const floorLatencies = [];
  let floorPageLatencies = [];
  const floorPort = await new Promise((ready) => {
    let rest = '';
    floorServer.stdout.setEncoding('utf8').on('data', (chunk) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const line of lines) {
        const [first, second] = line.split(' ');
        if (first === 'ready') ready(Number(second));
        else if (second) floorLatencies.push({ ts: Number(first), latency: Number(second) - Number(first) });
      }
    });
  });
  const floorPage = await context.newPage();
  await floorPage.goto(`http://127.0.0.1:${floorPort}/`);
  // A bare EventSource on the server's own stream, in a third page (its own renderer, the cookie
  // of the first view): the server's frames without the live board's main thread.
  // BENCH_BARE_PAGE=1 only: a third client makes the server and the machine busier.
  let bareReceived = new Map();
  const barePage = process.env.BENCH_BARE_PAGE === '1' ? await context.newPage() : undefined;
  await barePage?.goto(`${server.origin}/favicon.svg`);
  await barePage?.evaluate((query) => {
    const source = new globalThis.EventSource(`/api/events?${query}`, { withCredentials: true });
    const handle = (message) => (globalThis.__bare ??= []).push([Number(message.lastEventId), Date.now()]);
    for (const type of ['worktree-create', 'agent-launch', 'agent-progress', 'agent-tool-call', 'agent-end', 'agent-merge', 'agent_performance', 'message']) source.addEventListener(type, handle);
  }, `repo=${encodeURIComponent(repoId)}&impl=bench&after=0`);
  await page.bringToFront();
  const floorWriter = spawn(process.execPath, ['-e', `const fs = require('node:fs'); setInterval(() => fs.appendFileSync(process.argv[1], JSON.stringify({ ts: Date.now(), type: 'agent-progress', payload: { text: 'floor' } }) + '\\n'), 20);`, floorFile], { stdio: 'ignore' });
  const loops = Array.from({ length: busyLoops }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  await new Promise((done) => setTimeout(done, 500));
  const loadBefore = os.loadavg()[0];
  // BENCH_PAGE_PROFILE=1: a CPU profile of the live page's main thread over the wave (CDP Profiler,
  // 1 ms samples): how much of it the page spent running (script, rendering tasks, GC) per card update.
  const profiler = process.env.BENCH_PAGE_PROFILE === '1' ? await context.newCDPSession(page) : undefined;
  if (profiler) {
    await profiler.send('Profiler.enable');
    await profiler.send('Profiler.setSamplingInterval', { interval: 1000 });
    await profiler.send('Profiler.start');
  }
  const startedAt = Date.now();
  const wave = await new Promise((resolve) => {
    const child = spawnRunWave({
      implPath: path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'),
      script,
      store,
      cwd: repo,
      env: { ...benchEnv, POLYWAVE_EVENTS_FLUSH_MS: '0' },
      // stdout is not read: ignored (a full pipe would stall the run).
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGTERM'), waveTimeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stderr, ms: Date.now() - startedAt });
    });
    console.log(`    run-wave started ${startedAt - benchStart} ms after the start`);
  });
  const loadAfter = os.loadavg()[0];
  const pageProfile = profiler ? (await profiler.send('Profiler.stop')).profile : undefined;
  floorWriter.kill();
  for (const loop of loops) loop.kill();
  // Let the last frames reach the page.
  await new Promise((done) => setTimeout(done, 1500));
  nodeClient.kill();
  floorServer.kill();
  if (!cdpHook) updates = await page.evaluate(() => globalThis.__cardUpdates ?? []);
  floorPageLatencies = await floorPage.evaluate(() => globalThis.__floor ?? []);
  if (barePage) bareReceived = new Map(await barePage.evaluate(() => globalThis.__bare ?? []));
  const live = updates.filter((update) => update.ts >= startedAt);
  const latencies = live.map((update) => update.shown_at - update.ts);
  const segment = (from, to) => live.map((update) => update[to] - update[from]);
  const stats = (values) => `p50 ${percentile(values, 0.5).toFixed(0)} ms, p95 ${percentile(values, 0.95).toFixed(0)} ms`;
  const cards = await page.locator('[data-agent].card').count();
  const complete = await page.locator('[data-agent].card[data-status="complete"]').count();
  const byType = {};
  for (const update of live) byType[update.type] = (byType[update.type] ?? 0) + 1;
  console.log(`(b) machine: load average ${loadBefore.toFixed(1)} at the wave's start, ${loadAfter.toFixed(1)} at its end${busyLoops > 0 ? ` (with ${busyLoops} busy-looping processes beside it, BENCH_LOAD)` : ''}`);
  console.log(`(b) ${waveAgents}-agent script wave (run-wave exit ${wave.code}, ${(wave.ms / 1000).toFixed(1)} s): ${live.length} card updates shown (${Object.entries(byType).map(([type, count]) => `${type} ${count}`).join(', ')}); ${complete} of ${cards} cards complete`);
  if (latencies.length > 0) {
    const p95 = percentile(latencies, 0.95);
    console.log(`    event → card on screen (after paint): p50 ${percentile(latencies, 0.5).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms (target p95 ≤ 100 ms: ${p95 <= 100 ? 'met' : 'MISSED'})`);
    // The floor's events sent while the wave ran (beside it, under the same load).
    const during = (entries) => entries.filter((entry) => entry.ts >= startedAt && entry.ts <= startedAt + wave.ms).map((entry) => entry.latency);
    const floorRaw = during(floorLatencies);
    const floorPageOnly = during(floorPageLatencies);
    if (floorRaw.length > 0 && floorPageOnly.length > 0) {
      const ratio = (value, floor) => (floor > 0 ? `${(value / floor).toFixed(1)}×` : `${value.toFixed(0)} ms over a 0 ms floor`);
      const received = segment('ts', 'received_at');
      console.log(`    floor in the same run, no polywave code (an event line appended every 20 ms by one small process): read by a second process woken by fs.watch p50 ${percentile(floorRaw, 0.5).toFixed(0)} ms, p95 ${percentile(floorRaw, 0.95).toFixed(0)} ms (${floorRaw.length}); sent by it as SSE to a bare EventSource in a second page of the same Chromium p50 ${percentile(floorPageOnly, 0.5).toFixed(0)} ms, p95 ${percentile(floorPageOnly, 0.95).toFixed(0)} ms (${floorPageOnly.length})`);
      console.log(`    ratio to the browser floor: emitted → the page's EventSource p95 ${percentile(received, 0.95).toFixed(0)} ms = ${ratio(percentile(received, 0.95), percentile(floorPageOnly, 0.95))} (p50 ${ratio(percentile(received, 0.5), percentile(floorPageOnly, 0.5))}); event → card on screen p95 = ${ratio(p95, percentile(floorPageOnly, 0.95))} of the floor's p95`);
    }
    const bare = live.filter((update) => bareReceived.has(update.event_id));
    if (bare.length > 0) console.log(`    a bare EventSource on the same stream in a third page (its own renderer, no UI): emitted → received ${stats(bare.map((update) => bareReceived.get(update.event_id) - update.ts))} (${bare.length} events); the live page's EventSource minus the bare one ${stats(bare.map((update) => update.received_at - bareReceived.get(update.event_id)))}`);
    console.log(`    of which: emitted → EventSource in the page ${stats(segment('ts', 'received_at'))} (run's recorder, store, server, network); → card DOM updated ${stats(segment('received_at', 'committed_at'))}; → painted ${stats(segment('committed_at', 'shown_at'))}`);
    if (pageProfile) {
      // Self time per node from the samples (each sample's delta is the time since the previous one).
      const self = new Map();
      const nodes = new Map(pageProfile.nodes.map((node) => [node.id, node]));
      pageProfile.samples.forEach((id, index) => self.set(id, (self.get(id) ?? 0) + (pageProfile.timeDeltas[index + 1] ?? 0) / 1000));
      let busy = 0;
      let native = 0;
      const byFunction = new Map();
      for (const [id, ms] of self) {
        const frame = nodes.get(id).callFrame;
        if (frame.functionName === '(idle)') continue;
        // Blink's own work outside script (style, layout, paint, parsing the stream): busy, not attributed to a function.
        if (frame.functionName === '(program)') {
          native += ms;
          continue;
        }
        busy += ms;
        const name = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop()}:${frame.lineNumber + 1}`;
        byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
      }
      const wall = (pageProfile.endTime - pageProfile.startTime) / 1000;
      const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([name, ms]) => `${name} ${ms.toFixed(0)} ms`);
      console.log(`    the live page's main thread (CDP profile over ${(wall / 1000).toFixed(1)} s): ${busy.toFixed(0)} ms running script and GC = ${(busy / Math.max(1, live.length)).toFixed(2)} ms per card update, + ${native.toFixed(0)} ms in Blink outside script (style, layout, paint); most: ${top.join(', ')}`);
    }
    // The page folds the frames of one received chunk in one update (web/src/sse.ts): how many came together.
    const batched = live.filter((update) => typeof update.batch === 'number');
    if (batched.length > 0) console.log(`    the page's bursts: ${batched.filter((update) => update.batch > 1).length} of ${batched.length} card updates came with others in one update, at most ${Math.max(...batched.map((update) => update.batch))} events in one`);
    const both = live.filter((update) => nodeReceived.has(update.event_id));
    if (both.length > 0) {
      const viaNode = both.map((update) => nodeReceived.get(update.event_id) - update.ts);
      const inBrowser = both.map((update) => update.received_at - nodeReceived.get(update.event_id));
      console.log(`    split (${both.length} updates also seen by a Node SSE client in its own process): emitted → Node client ${stats(viaNode)}; Node client → page's EventSource ${stats(inBrowser)} (Chromium's network and renderer processes; negative when the page was first)`);
    }
    // The server's own trace: per event and client, when its tail noticed the row, when the client's loop read it, when the write returned.
    const traced = { page: new Map(), node: new Map() };
    const pageWrites = new Map();
    for (const line of (existsSync(traceFile) ? readFileSync(traceFile, 'utf8') : '').split('\n')) {
      const [id, client, ts, noticed, read, written] = line.split(' ');
      if (!written) continue;
      const entry = { ts: Number(ts), noticed: Number(noticed), read: Number(read), written: Number(written) };
      (client.endsWith(':none') ? traced.node : traced.page).set(Number(id), entry);
      if (!client.endsWith(':none')) pageWrites.set(`${read} ${written}`, (pageWrites.get(`${read} ${written}`) ?? 0) + 1);
    }
    // Rows per write to the page (a write is one loop step: the rows of one read, one chunk; told apart by its read and write times in ms): how bursty the page's frames are.
    if (pageWrites.size > 0) console.log(`    the page's SSE loop: ${[...pageWrites.values()].reduce((sum, count) => sum + count, 0)} rows in ${pageWrites.size} writes, at most ${Math.max(...pageWrites.values())} in one`);
    const inPage = live.filter((update) => traced.page.has(update.event_id));
    if (inPage.length > 0) {
      const part = (f) => inPage.map((update) => f(traced.page.get(update.event_id), update));
      // Bursts (several frames in one write) against single frames: the hop after the write, split by the size of the write that carried the row.
      const hop = (rows) => rows.map((update) => update.received_at - traced.page.get(update.event_id).written);
      const sizeOf = (update) => pageWrites.get(`${traced.page.get(update.event_id).read} ${traced.page.get(update.event_id).written}`) ?? 1;
      const single = inPage.filter((update) => sizeOf(update) === 1);
      const burst = inPage.filter((update) => sizeOf(update) > 1);
      if (single.length > 0 && burst.length > 0) console.log(`    write returned → the page's EventSource, by the write that carried it: alone ${stats(hop(single))} (${single.length}); with others (2+ frames in one write) ${stats(hop(burst))} (${burst.length})`);
      // Its place in its write (1st, 2nd–5th, 6th or later frame): the page handles a write's frames one after the other.
      const place = new Map();
      const byWrite = new Map();
      for (const update of [...inPage].sort((a, b) => a.event_id - b.event_id)) {
        const t = traced.page.get(update.event_id);
        const key = `${t.read} ${t.written}`;
        byWrite.set(key, (byWrite.get(key) ?? 0) + 1);
        place.set(update.event_id, byWrite.get(key));
      }
      const at = (from, to) => burst.filter((update) => place.get(update.event_id) >= from && place.get(update.event_id) <= to);
      if (burst.length > 0) console.log(`    the same for the frames of a write by their place in it: 1st ${stats(hop(at(1, 1)))} (${at(1, 1).length}); 2nd–5th ${stats(hop(at(2, 5)))} (${at(2, 5).length}); 6th or later ${at(6, Infinity).length > 0 ? stats(hop(at(6, Infinity))) : '—'} (${at(6, Infinity).length})`);
      console.log(`    where the time went (${inPage.length} page updates in the server's trace): emitted → the server's tail saw it committed ${stats(part((t) => t.noticed - t.ts))} (the run's recorder, SQLite, the write notification, the server waiting for a core); → the page's SSE loop read it ${stats(part((t) => t.read - t.noticed))}; → its write returned ${stats(part((t) => t.written - t.read))}; → the page's EventSource ${stats(part((t, update) => update.received_at - t.written))} (loopback, Chromium's network and renderer processes); → on screen ${stats(part((t, update) => update.shown_at - update.received_at))}`);
      const nodeBoth = inPage.filter((update) => traced.node.has(update.event_id) && nodeReceived.has(update.event_id));
      if (nodeBoth.length > 0) console.log(`    the Node client beside it: its frame written → received ${stats(nodeBoth.map((update) => nodeReceived.get(update.event_id) - traced.node.get(update.event_id).written))}`);
    }
  } else {
    console.log(`    no card update observed: ${wave.stderr.slice(-800)}`);
  }
} finally {
  await context.close().catch(() => undefined);
  server.child.kill('SIGTERM');
  // Chromium's helpers may still be writing the profile for a moment after close.
  rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
