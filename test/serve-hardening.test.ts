import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEvents, openEventStore, type Database, type NewEventRow } from '../src/observability/event-store.js';
import os from 'node:os';
import { acquireRunLock, readRunLockHolder, runLockPath } from '../src/cli/run-lock.js';
import { binPath, repoRoot } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { lettersImplYaml } from './support/letters-impl.js';
import { makeTempDir } from './support/temp.js';

/**
 * The attack report's F2, F3, F6 and F7 (docs/serve.md "Security") against a real `polywave serve`
 * process: committed symlinks out of the repository, FIFOs and /dev/zero as manifests and journals,
 * a hard link, a file swapped for a symlink while it is read, and runs of repositories not served.
 */

interface Serve {
  child: ChildProcess;
  base: string;
  token: string;
  exited: Promise<number | null>;
  /** Resolves once stderr printed its "serving …" line (after any warning). */
  served: Promise<void>;
  stderr: () => string;
}

function startServeProcess(args: string[], env: Record<string, string> = {}): Promise<Serve> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0', ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    let stdout = '';
    let stderr = '';
    let servedResolve!: () => void;
    const served = new Promise<void>((done) => (servedResolve = done));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (/^serving /m.test(stderr)) servedResolve();
    });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /(http:\/\/[^/\s?]+\/)\?token=([0-9a-f]{32})/.exec(stdout);
      if (match) resolve({ child, base: match[1]!, token: match[2]!, exited, served, stderr: () => stderr });
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

let repo: TestRepo;
let other: TestRepo;
// Made at load time: makeTempDir registers its own cleanup.
const outside = makeTempDir('polywave-serve-outside-');
const storeDir = makeTempDir('polywave-serve-hardening-');
const away = makeTempDir('polywave-serve-runlog-');
let db: Database;
let server: Serve;
let repoId: string;
const secretText = 'OUTSIDE-SECRET-hunter2';
const envKey = 'Zq9vENVPLAINKEY0001';

async function api(pathname: string, timeoutMs = 5000): Promise<{ status: number; json: Record<string, unknown>; text: string; ms: number }> {
  const started = Date.now();
  const response = await fetch(new URL(pathname, server.base), { headers: { 'X-Polywave-Token': server.token }, signal: AbortSignal.timeout(timeoutMs) });
  const text = await response.text();
  return { status: response.status, json: JSON.parse(text) as Record<string, unknown>, text, ms: Date.now() - started };
}

const errorOf = (answer: { json: Record<string, unknown> }) => answer.json.error as { code: string; message: string };

function row(runId: string, seq: number, slug: string, type = 'agent-progress', extra: Record<string, unknown> = {}): NewEventRow {
  return { run_id: runId, seq, ts: Date.now(), type, activity_type: null, slug, wave: 1, agent: 'A', program: null, payload: JSON.stringify({ type, slug, wave: 1, agent: 'A', seq, ...extra }) };
}

/** SSE frames of `/api/events…` until a frame's data contains `until` (or the timeout). */
function sseUntil(pathname: string, until: string, timeoutMs = 8000): Promise<Array<{ id: number; run_id: string; slug: string }>> {
  return new Promise((resolve, reject) => {
    const events: Array<{ id: number; run_id: string; slug: string }> = [];
    const request = http.get(new URL(pathname, server.base), { headers: { 'X-Polywave-Token': server.token } }, (response) => {
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          if (!data || !frame.split('\n').some((line) => line.startsWith('id: '))) continue;
          events.push(JSON.parse(data.slice(6)) as { id: number; run_id: string; slug: string });
          if (data.includes(until)) {
            clearTimeout(timer);
            request.destroy();
            resolve(events);
            return;
          }
        }
      });
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`no event with ${until} within ${timeoutMs} ms; got ${JSON.stringify(events)}`));
    }, timeoutMs);
    request.on('error', (error) => {
      if (!request.destroyed) reject(error);
    });
  });
}

beforeAll(async () => {
  // What an attacker's clone points at: a YAML mapping of the victim's, a FIFO, a journal.
  writeFileSync(path.join(outside, 'hosts.yml'), `title: outside-file\nfeature_slug: leak\nprogram_slug: leak\ndb_url: ${secretText}\n`);
  execFileSync('mkfifo', [path.join(outside, 'fifo')]);
  writeFileSync(path.join(outside, 'journal.jsonl'), `${JSON.stringify({ ts: '2026-12-01T10:00:00.000Z', kind: 'tool_use', tool_name: 'Bash', input: { command: secretText } })}\n`);

  repo = await createTestRepo({ files: { 'src/keep.js': 'export const keep = 1;\n' } });
  repo.write('docs/IMPL/IMPL-ok.yaml', lettersImplYaml({ title: 'Ok', slug: 'ok', agents: ['A'] }));
  // Committed symlinks (git stores them: a cloned repository is enough).
  symlinkSync(path.join(outside, 'hosts.yml'), path.join(repo.dir, 'docs', 'IMPL', 'IMPL-leak.yaml'));
  symlinkSync('/dev/zero', path.join(repo.dir, 'docs', 'IMPL', 'IMPL-zero.yaml'));
  symlinkSync(path.join(outside, 'fifo'), path.join(repo.dir, 'docs', 'IMPL', 'IMPL-fifo.yaml'));
  mkdirSync(path.join(repo.dir, 'docs', 'PROGRAM'));
  symlinkSync(path.join(outside, 'hosts.yml'), path.join(repo.dir, 'docs', 'PROGRAM', 'PROGRAM-leak.yaml'));
  const journal = path.join(repo.dir, '.polywave-state', 'ok', 'wave1', 'agent-A');
  mkdirSync(journal, { recursive: true });
  symlinkSync(path.join(outside, 'journal.jsonl'), path.join(journal, 'index.jsonl'));
  await repo.commitAll('plans, and links an attacker committed');
  // Not committable, made locally: a FIFO in the repository (as a manifest and as denials), a hard link to .git/HEAD.
  execFileSync('mkfifo', [path.join(repo.dir, 'docs', 'IMPL', 'IMPL-pipe.yaml')]);
  execFileSync('mkfifo', [path.join(journal, 'denials.jsonl')]);
  linkSync(path.join(repo.dir, '.git', 'HEAD'), path.join(repo.dir, 'hardlinked_head'));
  writeFileSync(path.join(repo.dir, 'swap-race'), 'inside\n');

  // The per-user store holds runs of the served repository and of another one.
  other = await createTestRepo();
  const store = path.join(storeDir, 'events.db');
  db = openEventStore(store)!;
  const started = Date.now();
  insertEvents(db, [row('run-mine', 1, 'ok')], { run_id: 'run-mine', started_at: started, command: 'run docs/IMPL/IMPL-ok.yaml', cwd: repo.dir, pid: 1 });
  insertEvents(db, [row('run-other', 1, 'secretplan', 'cost', { cost_usd: 1.25, note: 'OTHER-REPO-ACTIVITY' })], { run_id: 'run-other', started_at: started + 1, command: 'run --api-key x other', cwd: other.dir, pid: 2 });
  insertEvents(db, [row('run-sibling', 1, 'ok', 'agent-progress', { note: 'SIBLING-PREFIX' })], { run_id: 'run-sibling', started_at: started + 2, command: 'run sibling', cwd: `${repo.dir}-sibling`, pid: 3 });
  insertEvents(db, [row('run-mine', 2, 'ok', 'agent-progress', { note: 'MINE-LAST' })]);
  // Attack X12 F1: runs are matched by the repositories they recorded, not by where they were started:
  // `demo --dir` / `run --repo-dir R` from elsewhere is shown; started inside with --repo-dir of another repository is not.
  insertEvents(db, [row('run-elsewhere', 1, 'ok', 'agent-progress', { note: 'MINE-ELSEWHERE' })], { run_id: 'run-elsewhere', started_at: started + 4, command: 'demo', cwd: outside, pid: 5, repos: JSON.stringify([repo.dir]) });
  insertEvents(db, [row('run-reverse', 1, 'ok', 'agent-progress', { note: 'REVERSE-LEAK' })], { run_id: 'run-reverse', started_at: started + 5, command: 'run --repo-dir other', cwd: path.join(repo.dir, 'src'), pid: 6, repos: JSON.stringify([other.dir]) });
  insertEvents(db, [row('run-sub', 1, 'ok', 'agent-progress', { note: 'MINE-SUBDIR' })], { run_id: 'run-sub', started_at: started + 3, command: 'run sub', cwd: path.join(repo.dir, 'src'), pid: 4 });
  // Attack X12 F2: a key of the server's own environment with no known shape, in a file of the repository.
  writeFileSync(path.join(repo.dir, 'envleak.txt'), `key in use ${envKey}\n`);
  server = await startServeProcess(['--repo', repo.dir, '--store', store], { OPENAI_API_KEY: envKey });
  repoId = ((await api('/api/repos')).json.repos as Array<{ id: string }>)[0]!.id;
}, 30_000);

afterAll(() => {
  server?.child.kill('SIGKILL');
  db?.close();
});

describe('polywave serve hardening (attack report F2, F3, F6, F7)', () => {
  it('F2: a committed symlink out of the repository is never read as a manifest (coded 403, not listed)', async () => {
    const impl = await api(`/api/repos/${repoId}/impls/leak`);
    expect(impl.status).toBe(403);
    expect(errorOf(impl)).toEqual({ code: 'SERVE_PATH', message: 'docs/IMPL/IMPL-leak.yaml leads outside the repository' });
    const program = await api(`/api/repos/${repoId}/programs/leak`);
    expect(program.status).toBe(403);
    expect(errorOf(program)).toEqual({ code: 'SERVE_PATH', message: 'docs/PROGRAM/PROGRAM-leak.yaml leads outside the repository' });
    const repos = await api('/api/repos');
    const served = (repos.json.repos as Array<{ impls: Array<{ slug: string }>; programs: Array<{ slug: string }> }>)[0]!;
    expect(served.impls.map((entry) => entry.slug)).toEqual(['ok']);
    expect(served.programs).toEqual([]);
    for (const answer of [impl, program, repos]) {
      expect(answer.text).not.toContain(secretText);
      expect(answer.text).not.toContain('outside-file');
    }
  });

  it('F3: a FIFO (linked or in the repository) or /dev/zero as a manifest is refused at once, concurrently, and the server keeps serving', async () => {
    const slugs = ['fifo', 'pipe', 'zero'];
    // More concurrent requests than libuv has threadpool threads (4): each once blocked one for good.
    const answers = await Promise.all(Array.from({ length: 12 }, (_, index) => api(`/api/repos/${repoId}/impls/${slugs[index % 3]}`)));
    for (const [index, answer] of answers.entries()) {
      const slug = slugs[index % 3]!;
      expect(answer.ms, slug).toBeLessThan(3000);
      if (slug === 'pipe') expect([answer.status, errorOf(answer)], slug).toEqual([404, { code: 'SERVE_NOT_FILE', message: 'docs/IMPL/IMPL-pipe.yaml is not a regular file' }]);
      else expect([answer.status, errorOf(answer)], slug).toEqual([403, { code: 'SERVE_PATH', message: `docs/IMPL/IMPL-${slug}.yaml leads outside the repository` }]);
    }
    // Every async fs call still works: the file view, a manifest, the shell.
    const file = await api(`/api/repos/${repoId}/file?path=src/keep.js`, 3000);
    expect(file.json).toEqual({ path: 'src/keep.js', content: 'export const keep = 1;\n' });
    expect((await api(`/api/repos/${repoId}/impls/ok`, 3000)).status).toBe(200);
    const shell = await fetch(new URL('/', server.base), { headers: { 'X-Polywave-Token': server.token }, signal: AbortSignal.timeout(3000) });
    expect(shell.status).toBe(200);
    await shell.text();
  });

  it('F2/F3: a journal linked out of the repository and denials that are a FIFO are listed as unreadable, not read', async () => {
    const agent = await api(`/api/repos/${repoId}/impls/ok/agents/A`, 3000);
    expect(agent.status).toBe(200);
    expect(agent.json.journal).toEqual([]);
    expect(agent.json.unreadable).toEqual([
      { file: '.polywave-state/ok/wave1/agent-A/index.jsonl', code: 'SERVE_PATH', message: '.polywave-state/ok/wave1/agent-A/index.jsonl leads outside the repository' },
      { file: '.polywave-state/ok/wave1/agent-A/denials.jsonl', code: 'SERVE_NOT_FILE', message: '.polywave-state/ok/wave1/agent-A/denials.jsonl is not a regular file' },
    ]);
    expect(agent.text).not.toContain(secretText);
  });

  it('F6/F7: the file view refuses a hard link, a FIFO and a trailing slash on a file', async () => {
    const file = (relative: string) => api(`/api/repos/${repoId}/file?path=${encodeURIComponent(relative)}`, 3000);
    const hard = await file('hardlinked_head');
    expect([hard.status, errorOf(hard)]).toEqual([403, { code: 'SERVE_PATH', message: 'hardlinked_head has other hard links: it may be a file outside the repository' }]);
    expect(hard.text).not.toContain('refs/heads');
    const fifo = await file('docs/IMPL/IMPL-pipe.yaml');
    expect([fifo.status, errorOf(fifo).code]).toEqual([404, 'SERVE_NOT_FILE']);
    const slash = await file('src/keep.js/');
    expect([slash.status, errorOf(slash)]).toEqual([404, { code: 'SERVE_NOT_FOUND', message: 'src/keep.js/ is not a file (a path ending in "/")' }]);
    expect((await file('src/keep.js')).status).toBe(200);
  });

  it('F6: a file swapped for a symlink out of the repository while it is served never leaks', async () => {
    writeFileSync(path.join(outside, 'race-secret'), `${secretText}\n`);
    const script = `
      const fs = require('node:fs'); const path = require('node:path');
      const dir = process.argv[1], secret = process.argv[2];
      const end = Date.now() + 60000; // a synchronous loop: SIGKILL (or the end) stops it
      while (Date.now() < end) {
        try { fs.symlinkSync(secret, path.join(dir, 'swap-link')); fs.renameSync(path.join(dir, 'swap-link'), path.join(dir, 'swap-race')); } catch {}
        try { fs.writeFileSync(path.join(dir, 'swap-file'), 'inside\\n'); fs.renameSync(path.join(dir, 'swap-file'), path.join(dir, 'swap-race')); } catch {}
      }`;
    const swapper = spawn(process.execPath, ['-e', script, repo.dir, path.join(outside, 'race-secret')], { stdio: 'ignore' });
    const outcomes = new Map<string, number>();
    try {
      for (let round = 0; round < 100; round += 1) {
        const answers = await Promise.all(Array.from({ length: 4 }, () => api(`/api/repos/${repoId}/file?path=swap-race`)));
        for (const answer of answers) {
          const key = answer.status === 200 ? ((answer.json.content as string) === 'inside\n' ? 'inside' : `LEAK ${answer.text}`) : errorOf(answer).code;
          outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        }
      }
    } finally {
      const exited = new Promise((resolve) => swapper.once('exit', resolve));
      swapper.kill('SIGKILL');
      await exited;
    }
    expect([...outcomes.keys()].filter((key) => key.startsWith('LEAK'))).toEqual([]);
    expect(outcomes.get('inside') ?? 0).toBeGreaterThan(0);
    expect(outcomes.get('SERVE_PATH') ?? 0).toBeGreaterThan(0);
  }, 60_000);

  it('Reject re-reads the IMPL through the confined reader: one swapped for a symlink out of the repository after it was loaded is refused, nothing copied or written', async () => {
    // Same size and mtime as the served IMPL: the manifest cache (stat follows links) still answers from the inside copy,
    // so only the re-read under the lock sees the link. The store's path read would follow it and copy the outside plan into the repository.
    const inside = lettersImplYaml({ title: 'x'.repeat(secretText.length), slug: 'rej', agents: ['A'] }).replace('state: WAVE_PENDING', 'state: REVIEWED');
    const outsidePlan = inside.replace(`title: ${'x'.repeat(secretText.length)}`, `title: ${secretText}`);
    const implFile = path.join(repo.dir, 'docs', 'IMPL', 'IMPL-rej.yaml');
    writeFileSync(implFile, inside);
    const second = Math.floor(Date.now() / 1000) - 60;
    utimesSync(implFile, second, second);
    const loaded = await api(`/api/repos/${repoId}/impls/rej`);
    expect([loaded.status, loaded.json.state]).toEqual([200, 'REVIEWED']);
    const target = path.join(outside, 'IMPL-rej.yaml');
    writeFileSync(target, outsidePlan);
    utimesSync(target, second, second);
    symlinkSync(target, `${implFile}.link`);
    renameSync(`${implFile}.link`, implFile);
    const response = await fetch(new URL(`/api/repos/${repoId}/impls/rej/reject`, server.base), { method: 'POST', headers: { 'X-Polywave-Token': server.token, 'Content-Type': 'application/json' }, body: JSON.stringify({ reason: 'swapped' }) });
    const text = await response.text();
    expect([response.status, (JSON.parse(text) as { error: unknown }).error]).toEqual([403, { code: 'SERVE_PATH', message: 'docs/IMPL/IMPL-rej.yaml leads outside the repository' }]);
    expect(text).not.toContain(secretText);
    // The link is still a link, the outside plan unchanged, nothing logged as rejected.
    expect(lstatSync(implFile).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe(outsidePlan);
    expect(existsSync(path.join(repo.dir, '.polywave-state', 'serve', 'rejections.jsonl'))).toBe(false);
  });

  it('F7 / X12 F1: without repo=, runs, events and metrics are those of the served repositories only — by the repositories a run recorded, else its cwd', async () => {
    const runs = await api('/api/runs');
    expect((runs.json.runs as Array<{ run_id: string }>).map((run) => run.run_id).sort()).toEqual(['run-elsewhere', 'run-mine', 'run-sub']);
    const elsewhere = (runs.json.runs as Array<{ run_id: string; repos: string[]; impls: string[]; programs: string[] }>).find((run) => run.run_id === 'run-elsewhere')!;
    expect([elsewhere.repos, elsewhere.impls, elsewhere.programs]).toEqual([[repo.dir], ['ok'], []]);
    const events = await sseUntil('/api/events?after=0', 'MINE-SUBDIR');
    expect(events.map((event) => [event.run_id, event.slug])).toEqual([
      ['run-mine', 'ok'],
      ['run-mine', 'ok'],
      ['run-elsewhere', 'ok'],
      ['run-sub', 'ok'],
    ]);
    const metrics = await api('/api/metrics?impl=secretplan');
    expect(metrics.json).toMatchObject({ runs: 0, events: 0, totals: { cost_usd: null } });
    const mine = await api('/api/metrics?impl=ok');
    expect(mine.json).toMatchObject({ runs: 3, events: 4 });
    for (const answer of [runs, metrics, mine]) {
      expect(answer.text).not.toContain('OTHER-REPO-ACTIVITY');
      expect(answer.text).not.toContain('SIBLING-PREFIX');
      expect(answer.text).not.toContain('REVERSE-LEAK');
    }
    expect(JSON.stringify(events)).not.toContain('REVERSE-LEAK');
    // Last activity counts the run started elsewhere (the newest event of `ok` is its row or run-sub's).
    const listed = (await api('/api/repos')).json.repos as Array<{ impls: Array<{ slug: string; last_event_at: string | null }> }>;
    expect(listed[0]!.impls.find((impl) => impl.slug === 'ok')!.last_event_at).not.toBeNull();
    // repo= still narrows to one repository; an unknown one is 404.
    expect((await api(`/api/runs?repo=${repoId}`)).json.runs).toHaveLength(3);
    expect((await api('/api/runs?repo=nope-00000000')).status).toBe(404);
  });

  it("X12 F2: the server's own credential values never reach the browser, whatever their shape", async () => {
    const file = await api(`/api/repos/${repoId}/file?path=envleak.txt`);
    expect(file.status).toBe(200);
    expect(file.json.content).toBe('key in use [redacted]\n');
  });

  it('X12 F3: the run log is not written through a symlinked .polywave-state/serve out of the repository (403, no run, nothing outside)', async () => {
    const link = path.join(repo.dir, '.polywave-state', 'serve');
    symlinkSync(away, link);
    try {
      const response = await fetch(new URL(`/api/repos/${repoId}/impls/ok/run`, server.base), { method: 'POST', headers: { 'X-Polywave-Token': server.token } });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('SERVE_PATH');
      expect(readdirSync(away)).toEqual([]);
      expect((await api('/api/launches')).json).toEqual({ launches: [] });
    } finally {
      unlinkSync(link);
    }
  });

  it('F7: a model that starts like an option is refused before any run starts', async () => {
    for (const model of ['--help', '-x', '.hidden']) {
      const response = await fetch(new URL(`/api/repos/${repoId}/impls/ok/run`, server.base), { method: 'POST', headers: { 'X-Polywave-Token': server.token, 'Content-Type': 'application/json' }, body: JSON.stringify({ model }) });
      expect(response.status, model).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('SERVE_BAD_REQUEST');
    }
    expect((await api('/api/launches')).json).toEqual({ launches: [] });
  });

  it('X15 N3/N4: secret shapes of the second attack (spaced assignments, .netrc, Azure, docker, kube, Google, Twilio, Mailgun, .pgpass) and secret object KEYS never reach the browser — file view and SSE', async () => {
    const shapes: Array<[string, string]> = [
      ['api_key = "Zq9vTOMLplainvalue0001"', 'Zq9vTOMLplainvalue0001'],
      ['OPENAI_API_KEY = "Zq9vPYplainvalue00002"', 'Zq9vPYplainvalue00002'],
      ['aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY'],
      ['machine github.com login bob password Zq9vNETRCplain0003', 'Zq9vNETRCplain0003'],
      ['{password: hunterhunterhunter}', 'hunterhunterhunter'],
      ['DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zq9vAZUREbase64value0004==;EndpointSuffix=core.windows.net', 'Zq9vAZUREbase64value0004'],
      ['    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB', 'LS0tLS1CRUdJTiBSU0Eg'],
      ['kube client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVC', 'LS0tLS1CRUdJTiBSU0Eg'],
      ['"auths":{"ghcr.io":{"auth":"Ym9iOlpxOXZET0NLRVJwYXNzMDAwNQ=="}}', 'Ym9iOlpxOXZET0NLRVJwYXNzMDAwNQ'],
      ['ya29.a0AfH6SMBZq9vGOOGLEoauthACCESStoken0006xyz', 'a0AfH6SMBZq9vGOOGLE'],
      ['GOCSPX-Zq9vGOOGLEclientSECRET07', 'Zq9vGOOGLEclientSECRET07'],
      ['twilio SK0123456789abcdef0123456789abcdef', 'SK0123456789abcdef'],
      ['truncated sk-ant-api03-Zq9', 'sk-ant-api03-Zq9'],
      ['db.example.com:5432:prod:admin:Zq9vPGPASSplain0008', 'Zq9vPGPASSplain0008'],
      ['mailgun key-0123456789abcdef0123456789abcdef', 'key-0123456789abcdef'],
      ['could not build api_key = Zq9vNOTESspaced0009', 'Zq9vNOTESspaced0009'],
    ];
    writeFileSync(path.join(repo.dir, 'keys2.txt'), `${shapes.map(([line]) => line).join('\n')}\nkeep const token = getToken(); password = None; input_tokens = 1234\n`);
    const file = await api(`/api/repos/${repoId}/file?path=keys2.txt`);
    expect(file.status).toBe(200);
    const lines = (file.json.content as string).split('\n');
    shapes.forEach(([, secret], index) => {
      expect(lines[index], secret).toContain('[redacted]');
      expect(lines[index], secret).not.toContain(secret);
    });
    expect(lines[shapes.length]).toBe('keep const token = getToken(); password = None; input_tokens = 1234');
    // An event whose payload has secrets as property NAMES (a model-written tool input), the server's own key among them, and spaced notes.
    insertEvents(db, [row('run-keys', 1, 'ok', 'agent-tool-call', { input: { 'sk-ant-api03-OBJECTKEYLEAKaaaaaaaaaaaa': 1, env: { [envKey]: true } }, notes: shapes.map(([line]) => line).join(' | '), probe: 'KEYS-PROBE' })], { run_id: 'run-keys', started_at: Date.now(), command: 'run', cwd: repo.dir, pid: 7 });
    const events = await sseUntil(`/api/events?repo=${repoId}&after=0`, 'KEYS-PROBE');
    const frame = JSON.stringify(events.find((event) => event.run_id === 'run-keys'));
    expect(frame).toContain('[redacted]');
    for (const secret of ['OBJECTKEYLEAK', envKey, ...shapes.map(([, secret]) => secret)]) expect(frame, secret).not.toContain(secret);
  });

  it('X15 N5: Reject with a rejection log that leads outside the repository refuses before the plan changes (403, still REVIEWED, nothing outside)', async () => {
    const implFile = path.join(repo.dir, 'docs', 'IMPL', 'IMPL-rev.yaml');
    writeFileSync(implFile, lettersImplYaml({ title: 'Rev', slug: 'rev', agents: ['A'] }).replace('state: WAVE_PENDING', 'state: REVIEWED'));
    const before = readFileSync(implFile, 'utf8');
    const link = path.join(repo.dir, '.polywave-state', 'serve');
    symlinkSync(away, link);
    try {
      const response = await fetch(new URL(`/api/repos/${repoId}/impls/rev/reject`, server.base), { method: 'POST', headers: { 'X-Polywave-Token': server.token, 'Content-Type': 'application/json' }, body: JSON.stringify({ reason: 'no' }) });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('SERVE_PATH');
      expect(readFileSync(implFile, 'utf8')).toBe(before);
      expect(readdirSync(away)).toEqual([]);
    } finally {
      unlinkSync(link);
      unlinkSync(implFile);
    }
  });

  it('X15 N1: one run per plan across processes — a held run lock is SERVE_BUSY (nothing started or changed), a dead holder\'s lock is taken over', { timeout: 30_000 }, async () => {
    const implFile = path.join(repo.dir, 'docs', 'IMPL', 'IMPL-ok.yaml');
    const before = readFileSync(implFile, 'utf8');
    const post = async (body: Record<string, unknown> = {}) => {
      const response = await fetch(new URL(`/api/repos/${repoId}/impls/ok/run`, server.base), { method: 'POST', headers: { 'X-Polywave-Token': server.token, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };
    // Another process's run of the plan (here: this test process) holds the lock: the run the server starts refuses (RUN_IN_PROGRESS, exit 2).
    const release = acquireRunLock(repo.dir, implFile);
    try {
      const busy = await post();
      expect(busy.status, JSON.stringify(busy.json)).toBe(409);
      const error = busy.json.error as { code: string; message: string };
      expect(error.code).toBe('SERVE_BUSY');
      expect(error.message).toMatch(/^a run of IMPL-ok\.yaml is already in progress /); // X17 X5: no CLI `polywave: error[…]:` prefix inside the JSON message
      expect(error.message).toContain(`pid ${process.pid} on ${os.hostname()}`);
      expect((await api('/api/launches')).json).toEqual({ launches: [] });
      // Its log is removed too: not shown as the plan's last launch (nor after a server restart, from the logs on disk).
      expect((await api(`/api/repos/${repoId}/impls/ok`)).json.launch).toBeNull();
      // X15 N8: Reject holds the same lock while it edits: not while a run of the plan holds it.
      const reject = await fetch(new URL(`/api/repos/${repoId}/impls/ok/reject`, server.base), { method: 'POST', headers: { 'X-Polywave-Token': server.token, 'Content-Type': 'application/json' }, body: '{}' });
      expect([reject.status, ((await reject.json()) as { error: { code: string } }).error.code]).toEqual([409, 'SERVE_BUSY']);
      expect(readFileSync(implFile, 'utf8')).toBe(before);
    } finally {
      release();
    }
    // A holder killed with SIGKILL (the released lock above left no file): the kernel dropped its lock; its record stays in the file, and the next run takes the lock over.
    const lockFile = runLockPath(repo.dir, implFile);
    const holderScript = `const fs=require('fs');const n=require(${JSON.stringify(path.join(repoRoot, 'node_modules', 'fs-native-extensions'))});fs.mkdirSync(require('path').dirname(process.argv[1]),{recursive:true});const fd=fs.openSync(process.argv[1],'w+');if(!n.tryLock(fd))process.exit(3);fs.ftruncateSync(fd,0);fs.writeSync(fd,JSON.stringify({pid:process.pid,hostname:require('os').hostname(),since:'then',impl:'x'}),0);console.log('locked');setInterval(()=>{},1000);`;
    const holder = spawn(process.execPath, ['-e', holderScript, lockFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => holder.stdout!.on('data', () => resolve()));
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(readRunLockHolder(lockFile)?.pid).toBe(holder.pid);
    // The next run takes it over (here in this process; the launch's outcome on the page: test/serve-browser.test.ts).
    const again = acquireRunLock(repo.dir, implFile);
    try {
      expect(readRunLockHolder(lockFile)?.pid).toBe(process.pid);
    } finally {
      again();
    }
    expect(readFileSync(implFile, 'utf8')).toBe(before);
    // A clone that ships .polywave-state as a symlink out of it: the lock is refused, nothing created outside.
    const clone = makeTempDir('polywave-run-lock-clone-');
    const elsewhere = makeTempDir('polywave-run-lock-elsewhere-');
    symlinkSync(elsewhere, path.join(clone, '.polywave-state'));
    expect(() => acquireRunLock(clone, path.join(clone, 'IMPL-x.yaml'))).toThrow(/not a directory \(a symlink\?\)/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('F7: --host 0 and a numeric 127.0.0.1 print the address they bound, and warn only for the wildcard', async () => {
    for (const [host, warns] of [['0', true], ['2130706433', false]] as const) {
      const started = await startServeProcess(['--repo', repo.dir, '--store', path.join(storeDir, 'host.db'), '--host', host]);
      try {
        expect(started.base, host).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
        const health = await fetch(new URL('/api/health', started.base), { headers: { 'X-Polywave-Token': started.token } });
        expect(health.status, host).toBe(200);
        await health.text();
        await started.served;
        expect(started.stderr().includes('reachable from other machines'), host).toBe(warns);
        if (warns) expect(started.stderr()).toContain('serve listens on 0.0.0.0:');
      } finally {
        started.child.kill('SIGTERM');
        await started.exited;
      }
    }
  });

  it('F3: SIGTERM still ends the server promptly with exit 0 after all of the above', async () => {
    const started = Date.now();
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
