import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEvents, lastEventId, openEventStore, type Database, type NewEventRow } from '../src/observability/event-store.js';
import { startRecording } from '../src/cli/event-recording.js';
import { EventBus } from '../src/engine/events.js';
import { startServer } from '../src/serve/server.js';
import { binPath } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

/** A real `polywave serve --port 0` process; resolves once it printed its URL. */
function startServeProcess(args: string[]): Promise<{ child: ChildProcess; base: string; token: string; stderr: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0', ...args], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /(http:\/\/127\.\d+\.\d+\.\d+:\d+\/)\?token=([0-9a-f]{32})/.exec(stdout);
      if (match) resolve({ child, base: match[1]!, token: match[2]!, stderr: () => stderr });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

interface Received {
  id: number;
  /** The frame's `id:` as sent (`<epoch>-<row>`): what a browser's Last-Event-ID carries. */
  sent: string;
  seq: number;
  type: string;
  run_id: string;
}

/**
 * A raw SSE client over node:http. `slow`: the socket is paused for 1.5 s first (the server's
 * writes stop draining: back-pressure), then each chunk is read 3 ms after the previous one.
 * `stopAfter`: the connection is dropped once that many events arrived (a partial frame is not counted).
 */
function sseClient(url: string, headers: Record<string, string>, options: { slow?: boolean; stopAfter?: number; want: number }): { connected: Promise<void>; done: Promise<Received[]> } {
  const events: Received[] = [];
  let connectedResolve!: () => void;
  const connected = new Promise<void>((resolve) => (connectedResolve = resolve));
  const done = new Promise<Received[]>((resolve, reject) => {
    const request = http.get(url, { headers }, (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`status ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      let buffer = '';
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        request.destroy();
        resolve(events);
      };
      if (options.slow) {
        response.pause();
        setTimeout(() => response.resume(), 1500);
      }
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (frame.startsWith('retry:')) connectedResolve();
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          const id = frame.split('\n').find((line) => line.startsWith('id: '));
          if (!data || !id) continue;
          const parsed = JSON.parse(data.slice(6)) as Received;
          expect(id.slice(4)).toMatch(new RegExp(`^[0-9a-f]{10}-${parsed.id}$`));
          events.push({ id: parsed.id, sent: id.slice(4), seq: parsed.seq, type: parsed.type, run_id: parsed.run_id });
          if (options.stopAfter !== undefined && events.length >= options.stopAfter) return finish();
          if (events.length >= options.want) return finish();
        }
        if (options.slow && !finished) {
          response.pause();
          setTimeout(() => response.resume(), 3);
        }
      });
      response.on('end', finish);
      // The server ended the connection (stopped): what arrived is the answer.
      response.on('close', finish);
    });
    request.on('error', (error) => {
      if (!(error as NodeJS.ErrnoException).code?.startsWith('ECONNRESET')) reject(error);
    });
  });
  return { connected, done };
}

const total = 5000;
const padding = 'p'.repeat(1500);

function burstRows(runId: string, from: number, count: number): NewEventRow[] {
  return Array.from({ length: count }, (_, index) => {
    const seq = from + index;
    const slug = seq % 2 === 0 ? 'letters' : 'other';
    return { run_id: runId, seq, ts: Date.now(), type: 'agent-progress', activity_type: null, slug, wave: 1, agent: 'A', program: null, payload: JSON.stringify({ type: 'agent-progress', slug, wave: 1, agent: 'A', seq, padding }) };
  });
}

let repo: TestRepo;
let db: Database;
let server: Awaited<ReturnType<typeof startServeProcess>>;

beforeAll(async () => {
  repo = await createTestRepo();
  const store = path.join(makeTempDir('polywave-serve-sse-'), 'events.db');
  db = openEventStore(store)!;
  server = await startServeProcess(['--repo', repo.dir, '--store', store]);
}, 30_000);

afterAll(() => {
  server?.child.kill('SIGTERM');
  db?.close();
});

describe('polywave serve: SSE from the event store', () => {
  it('delivers a burst of 5,000 events to 3 clients (one throttled) in order, and resumes a dropped client with Last-Event-ID exactly', { timeout: 30_000 }, async () => {
    const url = `${server.base}api/events`;
    const auth = { 'X-Polywave-Token': server.token };
    const fast = sseClient(url, auth, { want: total });
    const slow = sseClient(url, auth, { want: total, slow: true });
    const dropped = sseClient(url, auth, { want: total, stopAfter: 2000 });
    const filtered = sseClient(`${url}?impl=letters`, auth, { want: total / 2 });
    await Promise.all([fast.connected, slow.connected, dropped.connected, filtered.connected]);

    const runId = '01TESTSSEBURST000000000000';
    for (let from = 1; from <= total; from += 100) insertEvents(db, burstRows(runId, from, 100), from === 1 ? { run_id: runId, started_at: Date.now(), command: 'run', cwd: repo.dir, pid: process.pid } : undefined);

    const sequence = Array.from({ length: total }, (_, index) => index + 1);
    const [fastEvents, slowEvents, firstPart, filteredEvents] = await Promise.all([fast.done, slow.done, dropped.done, filtered.done]);
    expect(fastEvents.map((event) => event.seq)).toEqual(sequence);
    expect(slowEvents.map((event) => event.seq)).toEqual(sequence);
    expect(filteredEvents.map((event) => event.seq)).toEqual(sequence.filter((seq) => seq % 2 === 0));
    // Store ids are strictly increasing on every stream.
    for (const events of [fastEvents, slowEvents, filteredEvents]) expect(events.every((event, index) => index === 0 || event.id > events[index - 1]!.id)).toBe(true);

    expect(firstPart.length).toBeGreaterThanOrEqual(2000);
    expect(firstPart.map((event) => event.seq)).toEqual(sequence.slice(0, firstPart.length));
    const lastId = firstPart[firstPart.length - 1]!.id;
    const rest = sseClient(url, { ...auth, 'Last-Event-ID': firstPart[firstPart.length - 1]!.sent }, { want: total - firstPart.length });
    const restEvents = await rest.done;
    expect(restEvents.map((event) => event.seq)).toEqual(sequence.slice(firstPart.length));
    expect(restEvents[0]!.id).toBe(lastId + 1);
  });

  it('filters by repository (the run recorded its working directory), treats a bad Last-Event-ID as absent and refuses a bad ?after=', { timeout: 15_000 }, async () => {
    const url = `${server.base}api/events`;
    const auth = { 'X-Polywave-Token': server.token };
    const otherRun = '01TESTSSEOTHER000000000000';
    const ours = sseClient(`${url}?repo=${encodeURIComponent(await repoId())}&after=${lastEventId(db)}`, auth, { want: 3 });
    await ours.connected;
    // Three events of a run in another directory, then three of a run in this repository.
    insertEvents(db, burstRows(otherRun, 1, 3), { run_id: otherRun, started_at: Date.now(), command: 'run', cwd: '/somewhere/else', pid: 1 });
    const mine = '01TESTSSEMINE0000000000000';
    insertEvents(db, burstRows(mine, 1, 3), { run_id: mine, started_at: Date.now(), command: 'run', cwd: path.join(repo.dir, 'sub'), pid: 1 });
    const events = await ours.done;
    expect(events.map((event) => [event.run_id, event.seq])).toEqual([[mine, 1], [mine, 2], [mine, 3]]);
    expect(new Set(events.map((event) => event.id)).size).toBe(3);
    // State answers carry the newest row id: an EventSource opened with ?after=<event_id> misses nothing.
    const listed = (await (await fetch(`${server.base}api/repos`, { headers: auth })).json()) as { event_id: number };
    expect(listed.event_id).toBe(lastEventId(db));
    // X12 F5: a Last-Event-ID that is not a row id is treated as absent (a 400 ends an EventSource for good):
    // the stream opens at the store's current position with a resync first. `?after=` takes decimal digits only.
    const controller = new AbortController();
    const odd = await fetch(url, { headers: { ...auth, 'Last-Event-ID': 'abc' }, signal: controller.signal });
    expect(odd.status).toBe(200);
    const reader = odd.body!.getReader();
    let head = '';
    while (!head.includes('event: resync')) head += new TextDecoder().decode((await reader.read()).value);
    expect(head).toContain(`event: resync\ndata: {"after":${lastEventId(db)}}`);
    controller.abort();
    // X17 X4: a bare row id (a tab of a pre-epoch server) cannot tell a replaced store: `resync` first, then the rows after it.
    // `?after=<row>` (curl, documented) stays a plain row id: the rows after it, no resync.
    const rowBefore = lastEventId(db) - 1;
    for (const [label, target, headers] of [['bare Last-Event-ID', url, { ...auth, 'Last-Event-ID': String(rowBefore) }], ['?after=', `${url}?after=${rowBefore}`, auth]] as const) {
      const abort = new AbortController();
      const answer = await fetch(target, { headers, signal: abort.signal });
      expect(answer.status, label).toBe(200);
      const body = answer.body!.getReader();
      let text = '';
      while (!text.includes(`-${rowBefore + 1}\nevent: `)) text += new TextDecoder().decode((await body.read()).value);
      abort.abort();
      const frames = text.split('\n\n').filter((frame) => frame.includes('\nevent: ')).map((frame) => /^id: ([^\n]+)\nevent: (\S+)/.exec(frame)?.slice(1, 3));
      expect(frames[0], label).toEqual(label === '?after=' ? [expect.stringMatching(new RegExp(`^[0-9a-f]{10}-${rowBefore + 1}$`)), expect.any(String)] : [expect.stringMatching(new RegExp(`^[0-9a-f]{10}-${rowBefore}$`)), 'resync']);
      expect(frames.filter((frame) => frame?.[1] === 'resync'), label).toHaveLength(label === '?after=' ? 0 : 1);
    }
    for (const after of ['1e3', '0x10', '-1', ' 5', 'abc']) {
      const bad = await fetch(`${url}?after=${encodeURIComponent(after)}`, { headers: auth });
      expect(bad.status, after).toBe(400);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('SERVE_BAD_REQUEST');
    }
  });
});

describe('POLYWAVE_EVENTS_FLUSH_MS (the runs serve starts)', () => {
  it('0 writes each event in the call that emits it; a delay leaves it buffered until the timer', () => {
    const directory = makeTempDir('polywave-serve-flush-');
    const countIn = (file: string) => {
      const reader = openEventStore(file, { readonly: true });
      try {
        return reader ? (reader.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n : 0;
      } finally {
        reader?.close();
      }
    };
    for (const [setting, expected] of [['0', 1], ['5000', 0]] as const) {
      const store = path.join(directory, `flush-${setting}.db`);
      const bus = new EventBus();
      const io = { cwd: directory, env: { POLYWAVE_EVENTS_FLUSH_MS: setting }, now: () => new Date(), stdout: () => undefined, stderr: () => undefined, readStdin: async () => '' };
      const recorder = startRecording(bus, { command: 'run', options: { store }, io, quiet: true })!;
      bus.emit({ type: 'wave-run-start', slug: 'letters', wave: 1 } as never);
      expect(countIn(store), setting).toBe(expected);
      recorder.close();
      expect(countIn(store), setting).toBe(1);
    }
  });
});

describe('polywave demo --program records like polywave demo (X15 N6)', () => {
  it('its run, with the shop repository and the PROGRAM, is in the store as it runs: serve shows it on the shop repository', { timeout: 60_000 }, async () => {
    const directory = makeTempDir('polywave-serve-demo-program-');
    const store = path.join(directory, 'events.db');
    const demo = spawn(process.execPath, [binPath, 'demo', '--program', '--dir', path.join(directory, 'd'), '--json'], {
      env: { ...process.env, NO_COLOR: '1', POLYWAVE_EVENTS_DB: store, POLYWAVE_EVENTS_FLUSH_MS: '0', POLYWAVE_SANDBOX: 'off', POLYWAVE_MODEL: '' },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => demo.once('exit', resolve));
    // Only until its first IMPL events are stored (the whole tier loop takes ~25 s; what is recorded is what matters here).
    let repos: string | null = null;
    try {
      for (let attempt = 0; attempt < 400 && repos === null; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const reader = openEventStore(store, { readonly: true, busyTimeoutMs: 1000 });
        try {
          const found = reader?.prepare("SELECT r.repos AS repos FROM runs r JOIN events e ON e.run_id = r.run_id WHERE r.command = 'demo' AND e.program = 'shop' AND e.slug IS NOT NULL AND r.repos IS NOT NULL LIMIT 1").get() as { repos: string } | undefined;
          repos = found?.repos ?? null;
        } catch {
          // the store is being created
        } finally {
          reader?.close();
        }
      }
    } finally {
      demo.kill('SIGKILL');
      await exited;
    }
    const shop = path.join(directory, 'd', 'shop');
    expect(JSON.parse(repos ?? 'null')).toEqual([realpathSync(shop)]);
    const served = await startServer({ repos: [shop], port: 0, explicitHost: false, storePath: store, env: {}, now: () => new Date() });
    try {
      const get = async (pathname: string) => (await (await fetch(new URL(pathname, served.url), { headers: { 'X-Polywave-Token': served.token } })).json()) as Record<string, unknown>;
      const runs = (await get('/api/runs')).runs as Array<{ command: string; programs: string[]; events: number }>;
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ command: 'demo', programs: ['shop'] });
      expect(runs[0]!.events).toBeGreaterThan(0);
      const listed = ((await get('/api/repos')).repos as Array<{ programs: Array<{ slug: string; last_event_at: string | null }> }>)[0]!;
      expect(listed.programs.find((program) => program.slug === 'shop')?.last_event_at).toMatch(/^\d{4}-/);
    } finally {
      await served.close();
    }
  });
});

describe('polywave serve: stopping', () => {
  it('closes cleanly on SIGTERM with an event stream open (exit 0)', { timeout: 15_000 }, async () => {
    const stream = sseClient(`${server.base}api/events`, { 'X-Polywave-Token': server.token }, { want: 1 });
    await stream.connected;
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
    const start = Date.now();
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - start).toBeLessThan(5000);
    expect(server.stderr()).toContain('polywave serve: stopped');
    expect(await stream.done).toEqual([]);
  });
});

async function repoId(): Promise<string> {
  const response = await fetch(`${server.base}api/repos`, { headers: { 'X-Polywave-Token': server.token } });
  return ((await response.json()) as { repos: Array<{ id: string }> }).repos[0]!.id;
}
