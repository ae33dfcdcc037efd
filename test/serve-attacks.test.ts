import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../src/serve/server.js';
import { insertEvents, openEventStore, type Database, type NewEventRow } from '../src/observability/event-store.js';
import { binPath } from './support/cli.js';
import { browserSkipReason, launchChromium } from './support/browser.js';
import { createTestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

// The findings F1, F4 and F5 of the outside attack on `polywave serve` (/work/coord/attack-serve.md),
// each reproduced against the real server process, a real SQLite store and real HTTP (F1 also in
// Debian's Chromium): every attack here worked before the fix and must fail now.

interface Served {
  child: ChildProcess;
  base: string;
  host: string;
  port: number;
  token: string;
  stderr: () => string;
}

const running: ChildProcess[] = [];
afterAll(() => {
  for (const child of running) child.kill('SIGTERM');
});

function startServe(args: string[], env: Record<string, string> = {}): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0', ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    running.push(child);
    let stdout = '';
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /(http:\/\/(127\.\d+\.\d+\.\d+):(\d+)\/)\?token=([0-9a-f]{32})/.exec(stdout);
      if (match) resolve({ child, base: match[1]!, host: match[2]!, port: Number(match[3]), token: match[4]!, stderr: () => stderr });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

interface Frame {
  event: string;
  id: number | undefined;
  data: unknown;
}

/** A raw SSE client that keeps every frame (resync included) until `until` says it has enough. */
function sseFrames(url: string, headers: Record<string, string>, until: (frames: Frame[]) => boolean): { connected: Promise<void>; done: Promise<Frame[]> } {
  const frames: Frame[] = [];
  let onConnected!: () => void;
  const connected = new Promise<void>((resolve) => (onConnected = resolve));
  const done = new Promise<Frame[]>((resolve, reject) => {
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`SSE: gave up with ${JSON.stringify(frames)}`));
    }, 15_000);
    const request = http.get(url, { headers }, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`status ${response.statusCode}`));
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const lines = buffer.slice(0, end).split('\n');
          buffer = buffer.slice(end + 2);
          if (lines[0]!.startsWith('retry:')) onConnected();
          const field = (name: string) => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
          const data = field('data');
          if (data === undefined) continue;
          const id = field('id');
          frames.push({ event: field('event') ?? 'message', id: id === undefined ? undefined : Number(id.split('-').pop()), data: JSON.parse(data) });
          if (until(frames)) {
            clearTimeout(timer);
            request.destroy();
            resolve(frames);
          }
        }
      });
    });
    request.on('error', (error) => {
      if (!frames.length || !(error as NodeJS.ErrnoException).code?.startsWith('ECONNRESET')) reject(error);
    });
  });
  return { connected, done };
}

function rows(runId: string, count: number, payload: (seq: number) => Record<string, unknown> = () => ({})): NewEventRow[] {
  return Array.from({ length: count }, (_, index) => ({ run_id: runId, seq: index + 1, ts: Date.now(), type: 'agent-progress', activity_type: null, slug: 'letters', wave: 1, agent: 'A', program: null, payload: JSON.stringify({ type: 'agent-progress', seq: index + 1, ...payload(index + 1) }) }));
}

/** The raw `id:` of the first event frame (`<store epoch>-<row>`) of /api/events?after=0. */
function firstRawId(base: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${base}api/events?after=0`, { headers }, (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk: string) => {
        buffer += chunk;
        const match = /^id: (\S+)\nevent: (?!resync)/m.exec(buffer);
        if (match) {
          request.destroy();
          resolve(match[1]!);
        }
      });
    });
    request.on('error', (error) => {
      if (!(error as NodeJS.ErrnoException).code?.startsWith('ECONNRESET')) reject(error);
    });
  });
}

const eventIds = (frames: Frame[]) => frames.filter((frame) => frame.event !== 'resync').map((frame) => frame.id);

describe('F1: the token cookie is private to this server', () => {
  it('binds a random 127.X.Y.Z by default (only that Host is accepted); --host 127.0.0.1 still works as before', { timeout: 20_000 }, async () => {
    const repo = await createTestRepo();
    const store = path.join(makeTempDir('polywave-serve-f1-'), 'events.db');
    const server = await startServe(['--repo', repo.dir, '--store', store]);
    expect(server.host).not.toBe('127.0.0.1');
    const auth = { 'X-Polywave-Token': server.token };
    expect((await rawGet(`${server.base}api/health`, auth)).status).toBe(200);
    // The server is not on 127.0.0.1 at all, and a request naming 127.0.0.1 / localhost as Host is refused.
    await expect(rawGet(`http://127.0.0.1:${server.port}/api/health`, auth)).rejects.toThrow(/ECONNREFUSED/);
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`]) expect((await rawGet(`${server.base}api/health`, { ...auth, Host: host })).status, host).toBe(403);
    server.child.kill('SIGTERM');

    const shared = await startServe(['--repo', repo.dir, '--store', store, '--host', '127.0.0.1']);
    expect(shared.host).toBe('127.0.0.1');
    expect((await rawGet(`${shared.base}api/health`, { 'X-Polywave-Token': shared.token, Host: `localhost:${shared.port}` })).status).toBe(200);
    shared.child.kill('SIGTERM');
  });

  it('falls back to 127.0.0.1 with a one-line warning when the OS refuses the chosen address (EADDRNOTAVAIL)', { timeout: 15_000 }, async () => {
    const repo = await createTestRepo();
    const lines: string[] = [];
    // 192.0.2.1 (TEST-NET-1) is on no interface here: bind() fails with EADDRNOTAVAIL, as 127.X.Y.Z does on macOS.
    const server = await startServer({ repos: [repo.dir], port: 0, pickHost: () => '192.0.2.1', explicitHost: false, storePath: path.join(makeTempDir('polywave-serve-f1c-'), 'events.db'), env: process.env, now: () => new Date(), log: (line) => lines.push(line) });
    try {
      expect(server.host).toBe('127.0.0.1');
      expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
      expect(lines).toEqual([`polywave: warning: cannot listen on 192.0.2.1 (EADDRNOTAVAIL); using 127.0.0.1, whose token cookie every other server on 127.0.0.1 also receives (docs/serve.md "Security")\n`]);
      expect((await rawGet(`${server.url}api/health`, { 'X-Polywave-Token': server.token })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  const skip = browserSkipReason();
  it.skipIf(skip !== undefined)('a browser that logged in sends the cookie to no other server on 127.0.0.1 (the reported theft)', { timeout: 60_000 }, async () => {
    const repo = await createTestRepo();
    const server = await startServe(['--repo', repo.dir, '--store', path.join(makeTempDir('polywave-serve-f1b-'), 'events.db')]);
    // The attacker: another local web server that logs the cookies it is sent.
    const grabbed: string[] = [];
    const grabber = http.createServer((request, response) => {
      grabbed.push(request.headers.cookie ?? '');
      response.end('<html><body>hello</body></html>');
    });
    await new Promise<void>((resolve) => grabber.listen(0, '127.0.0.1', resolve));
    const grabberPort = (grabber.address() as AddressInfo).port;
    const chromium = await launchChromium();
    try {
      const page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
      await page.goto(`${server.base}?token=${server.token}`);
      expect(page.url()).toBe(server.base);
      const cookies = await chromium.context.cookies();
      expect(cookies.map((cookie) => [cookie.name, cookie.domain, cookie.httpOnly, cookie.sameSite])).toEqual([[`polywave_token_${server.port}`, server.host, true, 'Strict']]);
      // The logged-in browser still reaches the API with the cookie alone…
      const health = await page.evaluate(async () => (await fetch('/api/health')).status);
      expect(health).toBe(200);
      // …and then visits the other local page: it must not receive the token.
      await page.goto(`http://127.0.0.1:${grabberPort}/`);
      await page.goto(`http://localhost:${grabberPort}/`);
      expect(grabbed.length).toBeGreaterThanOrEqual(2);
      for (const header of grabbed) {
        expect(header).not.toContain('polywave_token');
        expect(header).not.toContain(server.token);
      }
    } finally {
      await chromium.close();
      grabber.close();
      server.child.kill('SIGTERM');
    }
  });
});

describe('F4: secrets inside text are redacted', () => {
  it('in the file view (.env, JSON config), event payload strings and argv, and run command lines', { timeout: 20_000 }, async () => {
    const repo = await createTestRepo({
      files: {
        '.env': 'ANTHROPIC_API_KEY=plainsecretvalue123\nGITHUB_TOKEN=github_pat_11AAAAAAA0abcdefghijklmnopqrstuv\nSTRIPE=sk_live_51Habcdefghijklmnop\nPORT=8080\n',
        'polywave.config.json': '{\n  "anthropic_api_key": "myproxykey-0123456789",\n  "openai": "sk-proj-abcdefghijklmnopqrstuvwx",\n  "model": "sonnet"\n}\n',
      },
    });
    const store = path.join(makeTempDir('polywave-serve-f4-'), 'events.db');
    const db = openEventStore(store)!;
    const runId = '01TESTATTACKF4000000000000';
    insertEvents(
      db,
      rows(runId, 1, () => ({
        refreshToken: 'plain-refresh-1',
        'github-token': 'plain-gh-2',
        bearer: 'plainbearer0',
        log: 'Authorization: Bearer plainbearer123',
        argv: ['writer', '--api-key', 'argv-plain-secret'],
        hf: 'hf_abcdefghijklmnopqrstuvwxyz',
        slack: 'xoxb-1234567890-abcdefghij',
        aws: 'AKIAABCDEFGHIJKLMNOP',
        gho: 'gho_abcdefghijklmnopqrstuvwxyz0123',
        db: 'postgres://u:hunter2@db/prod',
        input_tokens: 42,
      })),
      { run_id: runId, started_at: Date.now(), command: 'writer --api-key cmdsecret --github-token github_pat_11CMDLINEabcdefghijklmnopqrst', cwd: repo.dir, pid: 1 },
    );
    db.close();
    const server = await startServe(['--repo', repo.dir, '--store', store]);
    const auth = { 'X-Polywave-Token': server.token };
    const repos = JSON.parse((await rawGet(`${server.base}api/repos`, auth)).body) as { repos: Array<{ id: string }> };
    const repoId = repos.repos[0]!.id;

    const env = await rawGet(`${server.base}api/repos/${repoId}/file?path=.env`, auth);
    expect(env.status).toBe(200);
    expect(JSON.parse(env.body).content).toBe('ANTHROPIC_API_KEY=[redacted]\nGITHUB_TOKEN=[redacted]\nSTRIPE=[redacted]\nPORT=8080\n');
    const config = await rawGet(`${server.base}api/repos/${repoId}/file?path=polywave.config.json`, auth);
    expect(JSON.parse(config.body).content).toBe('{\n  "anthropic_api_key": "[redacted]",\n  "openai": "[redacted]",\n  "model": "sonnet"\n}\n');

    const runs = JSON.parse((await rawGet(`${server.base}api/runs`, auth)).body) as { runs: Array<{ command: string }> };
    expect(runs.runs[0]!.command).toBe('writer --api-key [redacted] --github-token [redacted]');

    const frames = await sseFrames(`${server.base}api/events?after=0`, auth, (got) => got.length >= 1).done;
    const payload = (frames[0]!.data as { payload: Record<string, unknown> }).payload;
    expect(payload).toEqual({
      type: 'agent-progress',
      seq: 1,
      refreshToken: '[redacted]',
      'github-token': '[redacted]',
      bearer: '[redacted]',
      log: 'Authorization: Bearer [redacted]',
      argv: ['writer', '--api-key', '[redacted]'],
      hf: '[redacted]',
      slack: '[redacted]',
      aws: '[redacted]',
      gho: '[redacted]',
      db: 'postgres://u:[redacted]@db/prod',
      input_tokens: 42,
    });
    server.child.kill('SIGTERM');
  });
});

describe('F5: no silent gap when the store is empty or replaced', () => {
  it('a Last-Event-ID beyond an empty (even absent) store gets resync at once, then every row of the store from its start', { timeout: 20_000 }, async () => {
    const repo = await createTestRepo();
    const store = path.join(makeTempDir('polywave-serve-f5a-'), 'events.db');
    const server = await startServe(['--repo', repo.dir, '--store', store]);
    const auth = { 'X-Polywave-Token': server.token };
    const client = sseFrames(`${server.base}api/events`, { ...auth, 'Last-Event-ID': '2' }, (got) => eventIds(got).length >= 5);
    await client.connected;
    const db = openEventStore(store)!;
    const runId = '01TESTATTACKF5A00000000000';
    insertEvents(db, rows(runId, 5), { run_id: runId, started_at: Date.now(), command: 'run', cwd: repo.dir, pid: 1 });
    db.close();
    const frames = await client.done;
    expect(frames[0]).toEqual({ event: 'resync', id: 0, data: { after: 0 } });
    expect(eventIds(frames)).toEqual([1, 2, 3, 4, 5]);
    // ?after= beyond a non-empty store: resync with its max, then what follows it.
    const later = sseFrames(`${server.base}api/events?after=99`, auth, (got) => got.length >= 1);
    expect((await later.done)[0]).toEqual({ event: 'resync', id: 5, data: { after: 5 } });
    server.child.kill('SIGTERM');
  });

  it('a store file deleted and recreated while serving is reopened: every client gets resync, then the new rows; /api/runs shows the new run', { timeout: 30_000 }, async () => {
    const repo = await createTestRepo();
    const store = path.join(makeTempDir('polywave-serve-f5b-'), 'events.db');
    let db: Database = openEventStore(store)!;
    insertEvents(db, rows('01TESTATTACKF5BOLD00000000', 3), { run_id: '01TESTATTACKF5BOLD00000000', started_at: Date.now(), command: 'old-run', cwd: repo.dir, pid: 1 });
    db.close();
    const server = await startServe(['--repo', repo.dir, '--store', store]);
    const auth = { 'X-Polywave-Token': server.token };
    const wantNew = (got: Frame[]) => got.some((frame) => frame.event === 'resync') && got.filter((frame) => frame.event !== 'resync' && (frame.data as { run_id: string }).run_id === '01TESTATTACKF5BNEW00000000').length >= 2;
    // X15 N7: the id a tab of the old store holds (epoch of the old store, row 1).
    const oldId = await firstRawId(server.base, auth);
    expect(oldId).toMatch(/^[0-9a-f]{10}-1$/);
    const clients = [sseFrames(`${server.base}api/events`, auth, wantNew), sseFrames(`${server.base}api/events?after=3`, auth, wantNew)];
    await Promise.all(clients.map((client) => client.connected));
    // Rotate the store: delete it (with its WAL files) and create a new one.
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${store}${suffix}`, { force: true });
    db = openEventStore(store)!;
    // Let the server's poll see the new file before it has rows (it then follows from the new max, 0).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const newRun = '01TESTATTACKF5BNEW00000000';
    insertEvents(db, rows(newRun, 2), { run_id: newRun, started_at: Date.now(), command: 'new-run', cwd: repo.dir, pid: 1 });
    db.close();
    for (const client of clients) {
      const frames = await client.done;
      const resyncAt = frames.findIndex((frame) => frame.event === 'resync');
      expect(resyncAt).toBeGreaterThanOrEqual(0);
      expect(frames.slice(resyncAt + 1).map((frame) => [frame.id, (frame.data as { run_id: string }).run_id])).toEqual([
        [1, newRun],
        [2, newRun],
      ]);
    }
    const runs = JSON.parse((await rawGet(`${server.base}api/runs`, auth)).body) as { runs: Array<{ command: string; events: number }> };
    expect(runs.runs.map((run) => [run.command, run.events])).toEqual([['new-run', 2]]);
    // X15 N7: a tab disconnected during the replacement comes back with the old store's id 1, LOWER than the new store's
    // newest row (2): a row number alone would resume after 1 and silently skip the new store's row 1. Its epoch says
    // it is another store's: resync first (the page refetches), then what follows. An id of this store resumes exactly.
    const stale = await sseFrames(`${server.base}api/events`, { ...auth, 'Last-Event-ID': oldId }, (got) => got.length >= 1).done;
    expect(stale[0]).toEqual({ event: 'resync', id: 2, data: { after: 2 } });
    const newId = await firstRawId(server.base, auth);
    expect(newId).not.toBe(oldId);
    expect(newId.endsWith('-1')).toBe(true);
    const current = await sseFrames(`${server.base}api/events`, { ...auth, 'Last-Event-ID': newId }, (got) => got.length >= 1).done;
    expect(current.map((frame) => [frame.event, frame.id])).toEqual([['agent-progress', 2]]);
    server.child.kill('SIGTERM');
  });
});
