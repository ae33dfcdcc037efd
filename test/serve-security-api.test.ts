import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../src/engine/events.js';
import { attachRecorder } from '../src/observability/recorder.js';
import { browserCommands } from '../src/serve/open-browser.js';
import { startServer, type RunningServer } from '../src/serve/server.js';
import { binPath, runCli } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { lettersImplYaml } from './support/letters-impl.js';
import { makeTempDir } from './support/temp.js';

/** A real `polywave serve --port 0` process; resolves once it printed its URL. */
function startServeProcess(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; base: string; token: string; port: number; stderr: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0', ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /(http:\/\/127\.\d+\.\d+\.\d+:(\d+)\/)\?token=([0-9a-f]{32})/.exec(stdout);
      if (match) resolve({ child, url: match[0], base: match[1]!, port: Number(match[2]), token: match[3]!, stderr: () => stderr });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

/** A raw HTTP request (node:http: any Host/Origin header, no cookie jar). */
function rawRequest(url: string, options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/** A raw HTTP request whose body is kept as bytes (compressed answers). */
function rawBytes(url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    request.on('error', reject);
    request.end();
  });
}

let repo: TestRepo;
let server: Awaited<ReturnType<typeof startServeProcess>>;
let repoId: string;
const jsonBodies: string[] = [];
const storeDir = makeTempDir('polywave-serve-store-');
let browserScript: string;

async function api(pathname: string, init: RequestInit = {}): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(new URL(pathname, server.base), { ...init, headers: { 'X-Polywave-Token': server.token, ...(init.headers as Record<string, string> | undefined) } });
  const text = await response.text();
  jsonBodies.push(text);
  return { status: response.status, json: JSON.parse(text) as Record<string, unknown>, headers: response.headers };
}

beforeAll(async () => {
  repo = await createTestRepo({ files: { 'src/keep.js': 'export const keep = 1;\n' } });
  repo.write('docs/IMPL/IMPL-letters.yaml', lettersImplYaml({ title: 'Letters', slug: 'letters', agents: ['A', 'B'] }).replace('state: WAVE_PENDING', 'state: REVIEWED'));
  repo.write('docs/IMPL/IMPL-pending.yaml', lettersImplYaml({ title: 'Pending', slug: 'pending', agents: ['A'] }));
  // Invalid on purpose: agent B owns a file agent A also owns in the same wave (I1).
  repo.write('docs/IMPL/IMPL-broken.yaml', lettersImplYaml({ title: 'Broken', slug: 'broken', agents: ['A', 'B'] }).replace('file: src/b.js', 'file: src/a.js'));
  repo.write('docs/IMPL/IMPL-go.yaml', lettersImplYaml({ title: 'Go', slug: 'go', agents: ['A'] }).replace('state: WAVE_PENDING', 'state: REVIEWED'));
  repo.write(
    'docs/PROGRAM/PROGRAM-suite.yaml',
    [
      'title: Suite',
      'program_slug: suite',
      'state: TIER_EXECUTING',
      'program_contracts:',
      '    - name: Letter',
      '      definition: "export const x: string"',
      '      location: src/a.js',
      '      freeze_at: tier 1',
      'impls:',
      '    - slug: pending',
      '      title: Pending',
      '      tier: 1',
      '      status: executing',
      '    - slug: broken',
      '      title: Broken',
      '      tier: 1',
      '      status: reviewed',
      '    - slug: later',
      '      title: Later',
      '      tier: 2',
      '      status: pending',
      'tiers:',
      '    - number: 1',
      '      impls: [pending, broken]',
      '    - number: 2',
      '      impls: [later]',
      'completion:',
      '    tiers_complete: 0',
      '    tiers_total: 2',
      '    impls_complete: 0',
      '    impls_total: 3',
      '    total_agents: 3',
      '    total_waves: 2',
      '',
    ].join('\n'),
  );
  // The script agent of the run started from the page (approve).
  writeFileSync(
    path.join(repo.root, 'agents.yaml'),
    ['version: 1', 'agents:', '  A:', '    steps:', '      - write: { path: src/a.js, content: "export const a = 1;\\n" }', '      - write: { path: src/a.test.js, content: "// test\\n" }', '      - commit: "feat(A): a"', '      - report: { status: complete, verification: PASS }', ''].join('\n'),
  );
  await repo.commitAll('plans');
  // Agent A of letters: its branch with one commit, its journal and one refused write.
  await repo.run(['branch', 'polywave/letters/wave1-agent-A']);
  await repo.run(['checkout', '-q', 'polywave/letters/wave1-agent-A']);
  repo.write('src/a.js', 'export const a = "A";\n');
  await repo.commitAll('agent A: src/a.js');
  await repo.run(['checkout', '-q', 'main']);
  const journal = path.join(repo.dir, '.polywave-state', 'letters', 'wave1', 'agent-A');
  mkdirSync(journal, { recursive: true });
  writeFileSync(path.join(journal, 'index.jsonl'), `${JSON.stringify({ ts: '2026-12-01T10:00:00.000Z', kind: 'tool_use', tool_name: 'write_file', tool_use_id: 't1', input: { file_path: 'src/a.js' } })}\n`);
  writeFileSync(path.join(journal, 'denials.jsonl'), `${JSON.stringify({ ts: '2026-12-01T10:00:01.000Z', attempt: 1, tool: 'write_file', code: 'JAIL_NOT_OWNED', reason: 'src/b.js is owned by B', target: 'src/b.js' })}\n`);
  // The file view: a secret outside the repository and a symlink to it.
  const outside = path.join(repo.root, 'outside-secret.txt');
  writeFileSync(outside, 'secret\n');
  symlinkSync(outside, path.join(repo.dir, 'escape.txt'));
  // Untracked test files stay out of the run started by the approve test.
  writeFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), 'escape.txt\nnotes.txt\n');
  // A stand-in for the user's browser ($BROWSER of --open): writes its arguments beside itself.
  browserScript = path.join(storeDir, 'browser.sh');
  writeFileSync(browserScript, '#!/bin/sh\nprintf \'%s\\n\' "$@" > "$0.out.tmp" && mv "$0.out.tmp" "$0.out"\n', { mode: 0o755 });
  server = await startServeProcess(['--repo', repo.dir, '--store', path.join(storeDir, 'events.db')], { ANTHROPIC_API_KEY: 'sk-ant-test-key-0123456789abcdefghij', BROWSER: `${browserScript} %s` });
  const repos = await api('/api/repos');
  repoId = ((repos.json.repos as Array<{ id: string }>)[0]!).id;
}, 30_000);

afterAll(() => {
  server?.child.kill('SIGTERM');
});

describe('polywave serve: security', () => {
  it('answers 401 without the token on every route, SSE included', async () => {
    const routes = ['/api/health', '/api/repos', `/api/repos/${repoId}/impls/letters`, `/api/repos/${repoId}/impls/letters/agents/A`, `/api/repos/${repoId}/file?path=src/keep.js`, '/api/runs', '/api/metrics?impl=letters', '/api/events', '/api/launches', '/', '/r/x/impl/letters', '/assets/index.js'];
    for (const route of routes) {
      const response = await rawRequest(new URL(route, server.base).href);
      expect(response.status, route).toBe(401);
      if (route.startsWith('/api/')) expect(JSON.parse(response.body).error.code, route).toBe('SERVE_AUTH');
    }
    for (const action of ['approve', 'reject', 'run']) {
      const response = await rawRequest(new URL(`/api/repos/${repoId}/impls/letters/${action}`, server.base).href, { method: 'POST', body: '{}' });
      expect(response.status).toBe(401);
    }
    // A wrong token is no better than none.
    expect((await rawRequest(new URL('/api/repos', server.base).href, { headers: { 'X-Polywave-Token': 'f'.repeat(32) } })).status).toBe(401);
    expect((await rawRequest(`${server.base}?token=${'0'.repeat(32)}`)).status).toBe(401);
  });

  it('exchanges the printed URL for an HttpOnly SameSite=Strict cookie, which then opens the shell and the API', async () => {
    const login = await rawRequest(server.url);
    expect(login.status).toBe(302);
    expect(login.headers.location).toBe('/');
    const cookie = String(login.headers['set-cookie']);
    expect(cookie).toContain(`polywave_token_${server.port}=${server.token}`);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    const pair = cookie.split(';')[0]!;
    const deepLogin = await rawRequest(`${server.base}r/x/impl/y?view=live&token=${server.token}`);
    expect(deepLogin.headers.location).toBe('/r/x/impl/y?view=live');
    // Never a redirect to another site (`//host` is protocol-relative).
    const sneaky = await rawRequest(`${server.base.replace(/\/$/, '')}//evil.example/x?token=${server.token}`);
    expect(sneaky.headers.location).toBe('/evil.example/x');
    const shell = await rawRequest(new URL('/r/some/deep/link', server.base).href, { headers: { Cookie: pair } });
    expect(shell.status).toBe(200);
    expect(shell.headers['content-type']).toContain('text/html');
    expect(shell.body).toContain(`<meta name="polywave-token" content="${server.token}">`);
    expect(shell.headers['content-security-policy']).toContain("default-src 'self'");
    expect(shell.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(shell.headers['x-content-type-options']).toBe('nosniff');
    expect(shell.headers['referrer-policy']).toBe('no-referrer');
    const health = await rawRequest(new URL('/api/health', server.base).href, { headers: { Cookie: pair } });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ ok: true });
    // The cookie alone does not make a POST: the header is required (CSRF).
    const post = await rawRequest(new URL(`/api/repos/${repoId}/impls/letters/reject`, server.base).href, { method: 'POST', headers: { Cookie: pair, 'Content-Type': 'application/json' }, body: '{"reason":"x"}' });
    expect(post.status).toBe(403);
    expect(JSON.parse(post.body).error.code).toBe('SERVE_CSRF');
    expect(readFileSync(repo.path('docs/IMPL/IMPL-letters.yaml'), 'utf8')).toContain('state: REVIEWED');
  });

  it('refuses a Host that is not the bound loopback address and port (DNS rebinding), and a foreign Origin', async () => {
    const url = new URL('/api/health', server.base).href;
    const bound = new URL(server.base).host;
    // The default bind is a per-server 127.X.Y.Z (attack-serve.md F1): only it names this server.
    expect(bound).toMatch(/^127\.\d+\.\d+\.\d+:\d+$/);
    expect(bound).not.toBe(`127.0.0.1:${server.port}`);
    const headers = { 'X-Polywave-Token': server.token };
    for (const host of ['evil.example', `evil.example:${server.port}`, '127.0.0.1:1', `192.168.1.5:${server.port}`, `localhost:${server.port}`, `[::1]:${server.port}`, `127.0.0.1:${server.port}`]) {
      const response = await rawRequest(url, { headers: { ...headers, Host: host } });
      expect(response.status, host).toBe(403);
      expect(JSON.parse(response.body).error.code).toBe('SERVE_HOST');
    }
    expect((await rawRequest(url, { headers: { ...headers, Host: bound } })).status).toBe(200);
    const foreign = await rawRequest(url, { headers: { ...headers, Origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body).error.code).toBe('SERVE_ORIGIN');
    const otherPort = await rawRequest(url, { headers: { ...headers, Origin: 'http://127.0.0.1:1' } });
    expect(otherPort.status).toBe(403);
    expect((await rawRequest(url, { headers: { ...headers, Origin: `http://${bound}` } })).status).toBe(200);
  });

  it('confines the file view to the repository: no .., no absolute path, no symlink escape, nothing in .git', async () => {
    const file = (relative: string) => api(`/api/repos/${repoId}/file?path=${encodeURIComponent(relative)}`);
    const ok = await file('src/keep.js');
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ path: 'src/keep.js', content: 'export const keep = 1;\n' });
    for (const [relative, status, code] of [
      ['../outside-secret.txt', 403, 'SERVE_PATH'],
      ['src/../../outside-secret.txt', 403, 'SERVE_PATH'],
      [path.join(repo.root, 'outside-secret.txt'), 403, 'SERVE_PATH'],
      ['/etc/passwd', 403, 'SERVE_PATH'],
      ['escape.txt', 403, 'SERVE_PATH'],
      ['.git/config', 403, 'SERVE_PATH'],
      ['src/../.git/HEAD', 403, 'SERVE_PATH'],
      ['missing.txt', 404, 'SERVE_NOT_FOUND'],
    ] as const) {
      const response = await file(relative);
      expect(response.status, relative).toBe(status);
      expect((response.json.error as { code: string }).code, relative).toBe(code);
      expect(JSON.stringify(response.json)).not.toContain('secret\\n');
    }
  });

  it('refuses bodies over 1 MB with 413', async () => {
    const big = JSON.stringify({ reason: 'x'.repeat(1024 * 1024 + 10) });
    const response = await api(`/api/repos/${repoId}/impls/letters/reject`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: big });
    expect(response.status).toBe(413);
    expect((response.json.error as { code: string }).code).toBe('SERVE_TOO_LARGE');
    expect(readFileSync(repo.path('docs/IMPL/IMPL-letters.yaml'), 'utf8')).toContain('state: REVIEWED');
  });

  it('refuses a non-loopback address unless --host is given (exit 2, coded), and a directory outside git', async () => {
    // With --open too: nothing is opened for a server that is refused.
    const refused = await runCli(['serve', '--repo', repo.dir, '--port', '0', '--open'], { env: { POLYWAVE_SERVE_HOST: '0.0.0.0', BROWSER: `${browserScript} %s` } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('error[SERVE_NON_LOOPBACK]');
    expect(refused.stdout).toBe('');
    expect(existsSync(`${browserScript}.out`)).toBe(false);
    const notRepo = await runCli(['serve', '--repo', storeDir, '--port', '0']);
    expect(notRepo.code).toBe(2);
    expect(notRepo.stderr).toContain('error[G000_NOT_A_REPOSITORY]');
    // An empty --host (an unset shell variable) is a mistake, not "the default" and not Node's every-interface bind.
    for (const blank of ['', '  ']) {
      const empty = await runCli(['serve', '--repo', repo.dir, '--port', '0', '--host', blank, '--open'], { env: { BROWSER: `${browserScript} %s` } });
      expect(empty.code).toBe(2);
      expect(empty.stderr).toContain('error[X001_INVALID_INPUT]');
      expect(empty.stderr).toContain('--host needs an address');
      expect(empty.stdout).toBe('');
    }
    expect(existsSync(`${browserScript}.out`)).toBe(false);
  });

  it('--open starts $BROWSER with the printed URL (the token in it), and only with --open', async () => {
    const opened = await startServeProcess(['--repo', repo.dir, '--store', path.join(storeDir, 'open.db'), '--open'], { BROWSER: `/nonexistent/browser:${browserScript} --new-window %s` });
    try {
      let args = '';
      for (let attempt = 0; attempt < 100 && !args.endsWith('\n'); attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        args = existsSync(`${browserScript}.out`) ? readFileSync(`${browserScript}.out`, 'utf8') : '';
      }
      // The first entry cannot start: the next one gets `%s` replaced by the URL with this start's token.
      expect(args).toBe(`--new-window\n${opened.url}\n`);
      expect(opened.url).toContain(`?token=${opened.token}`);
    } finally {
      opened.child.kill('SIGTERM');
      rmSync(`${browserScript}.out`, { force: true });
    }
    // The server of this file was started without --open (same BROWSER): nothing opened.
    expect(browserCommands('http://h/?token=t', { BROWSER: 'firefox -P x' }, 'linux')).toEqual([
      ['firefox', ['-P', 'x', 'http://h/?token=t']],
      ['xdg-open', ['http://h/?token=t']],
    ]);
  });

  it('never sends the token or an API key in JSON', async () => {
    // A repository file holding the token and a key-shaped string: served redacted.
    repo.write('notes.txt', `token ${server.token}\nkey sk-ant-abcdefghijklmnopqrstuvwxyz012345\n`);
    const response = await api(`/api/repos/${repoId}/file?path=notes.txt`);
    expect(response.json.content).toBe('token [redacted]\nkey [redacted]\n');
    for (const body of jsonBodies) {
      expect(body).not.toContain(server.token);
      expect(body).not.toContain('sk-ant-');
    }
    expect(server.stderr()).not.toContain(server.token);
  });
});

describe('polywave serve: API', () => {
  it('lists the repository with its IMPLs (state, waves, agents)', async () => {
    const { json } = await api('/api/repos');
    const [entry] = json.repos as Array<{ id: string; name: string; path: string; impls: Array<Record<string, unknown>>; programs: unknown[] }>;
    expect(entry!.path).toBe(repo.dir);
    expect(entry!.id).toMatch(/^repo-[0-9a-f]{8}$/);
    expect(entry!.impls.map((impl) => [impl.slug, impl.file, impl.state, impl.waves, impl.agents, impl.valid])).toEqual([
      ['broken', 'docs/IMPL/IMPL-broken.yaml', 'WAVE_PENDING', 1, 2, false],
      ['go', 'docs/IMPL/IMPL-go.yaml', 'REVIEWED', 1, 1, true],
      ['letters', 'docs/IMPL/IMPL-letters.yaml', 'REVIEWED', 1, 2, true],
      ['pending', 'docs/IMPL/IMPL-pending.yaml', 'WAVE_PENDING', 1, 1, true],
    ]);
    expect(entry!.programs).toMatchObject([{ slug: 'suite', file: 'docs/PROGRAM/PROGRAM-suite.yaml', title: 'Suite', state: 'TIER_EXECUTING', tiers: 2, impls: 3 }]);
  });

  it("reports an IMPL's validation findings with the validator's codes", async () => {
    const { status, json } = await api(`/api/repos/${repoId}/impls/broken`);
    expect(status).toBe(200);
    const validate = await runCli(['validate', repo.path('docs/IMPL/IMPL-broken.yaml')]);
    const expected = JSON.parse(validate.stdout) as { errors: Array<{ code: string }>; warnings: Array<{ code: string }> };
    const codes = (json.findings as Array<{ code: string; severity: string }>).filter((finding) => finding.severity === 'error').map((finding) => finding.code).sort();
    expect(codes).toEqual(expected.errors.map((finding) => finding.code).sort());
    expect(codes).toContain('V002_DISJOINT_OWNERSHIP');
    const letters = await api(`/api/repos/${repoId}/impls/letters`);
    expect(letters.json.state).toBe('REVIEWED');
    expect((letters.json.manifest as { feature_slug: string }).feature_slug).toBe('letters');
    expect(letters.json.progress).toMatchObject({
      total: 1,
      complete: 0,
      waves: [
        {
          number: 1,
          agents: [
            { id: 'A', status: 'in_progress', files: ['src/a.js', 'src/a.test.js'], branch: 'polywave/letters/wave1-agent-A', branch_exists: true },
            { id: 'B', status: 'not_started', files: ['src/b.js', 'src/b.test.js'], branch: 'polywave/letters/wave1-agent-B', branch_exists: false },
          ],
        },
      ],
    });
  });

  it("shows an agent's journal, refused writes and its branch's diff against the base", async () => {
    const { status, json } = await api(`/api/repos/${repoId}/impls/letters/agents/A`);
    expect(status).toBe(200);
    expect(json).toMatchObject({ id: 'A', wave: 1, task: 'Implement src/a.js.', files: ['src/a.js', 'src/a.test.js'], status: 'in_progress', branch: 'polywave/letters/wave1-agent-A', report: null, diff_truncated: false });
    expect(json.journal).toEqual([
      { ts: '2026-12-01T10:00:00.000Z', kind: 'tool_use', tool: 'write_file', summary: 'src/a.js' },
      { ts: '2026-12-01T10:00:01.000Z', kind: 'denial', tool: 'write_file', summary: 'JAIL_NOT_OWNED: src/b.js is owned by B (src/b.js)', denied: true },
    ]);
    expect(json.diff).toContain('diff --git a/src/a.js b/src/a.js');
    expect(json.diff).toContain('+export const a = "A";');
    const missing = await api(`/api/repos/${repoId}/impls/letters/agents/Z`);
    expect(missing.status).toBe(404);
    expect((await api(`/api/repos/${repoId}/impls/nope`)).status).toBe(404);
    // A slug is never a path: an IMPL outside the repository is not reachable through it.
    repo.write('../IMPL-outside.yaml', readFileSync(repo.path('docs/IMPL/IMPL-pending.yaml'), 'utf8').replace('feature_slug: pending', 'feature_slug: ../../../../../IMPL-outside'));
    const traversal = await api(`/api/repos/${repoId}/impls/${encodeURIComponent('../../../../../IMPL-outside')}`);
    expect(traversal.status).toBe(404);
    expect((traversal.json.error as { code: string }).code).toBe('SERVE_NOT_FOUND');
    expect((await api('/api/repos/nope-00000000/impls/letters')).status).toBe(404);
  });

  it('approve on a plan that is not REVIEWED → 409 SERVE_STATE; reject moves REVIEWED to BLOCKED', async () => {
    const approve = await api(`/api/repos/${repoId}/impls/pending/approve`, { method: 'POST' });
    expect(approve.status).toBe(409);
    expect((approve.json.error as { code: string }).code).toBe('SERVE_STATE');
    const reject = await api(`/api/repos/${repoId}/impls/letters/reject`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ reason: 'split agent A' }) });
    expect(reject.status).toBe(200);
    expect(reject.json).toEqual({ state: 'BLOCKED', previous_state: 'REVIEWED', reason: 'split agent A' });
    expect(readFileSync(repo.path('docs/IMPL/IMPL-letters.yaml'), 'utf8')).toContain('state: BLOCKED');
    expect(readFileSync(repo.path('.polywave-state/serve/rejections.jsonl'), 'utf8')).toContain('"reason":"split agent A"');
    const again = await api(`/api/repos/${repoId}/impls/letters/reject`, { method: 'POST' });
    expect(again.status).toBe(409);
    // The cached parse follows the file: the next read shows the new state.
    expect((await api(`/api/repos/${repoId}/impls/letters`)).json.state).toBe('BLOCKED');
    expect((await api(`/api/repos/${repoId}/impls/letters/approve`, { method: 'POST' })).status).toBe(409);
  });

  it('shows a PROGRAM: tiers with the IMPL docs\' states and wave progress, contract freeze status', async () => {
    const { status, json } = await api(`/api/repos/${repoId}/programs/suite`);
    expect(status).toBe(200);
    expect(json.tiers).toEqual([
      {
        number: 1,
        description: '',
        complete: false,
        impls: [
          { slug: 'pending', title: 'Pending', state: 'WAVE_PENDING', status: expect.any(String), waves_done: 0, waves_total: 1 },
          { slug: 'broken', title: 'Broken', state: 'WAVE_PENDING', status: expect.any(String), waves_done: 0, waves_total: 1 },
        ],
      },
      { number: 2, description: '', complete: false, impls: [{ slug: 'later', title: 'Later', state: 'pending', status: 'pending', waves_done: 0, waves_total: 0 }] },
    ]);
    expect(json.frozen_contracts).toEqual([{ name: 'Letter', location: 'src/a.js', freeze_at: 'tier 1', freeze_tier: 1, frozen: false }]);
    expect(json.current_tier).toBe(1);
    expect((await api(`/api/repos/${repoId}/programs/nope`)).status).toBe(404);
  });

  it('approve starts `polywave run` for a REVIEWED plan, recording into the server\'s store', { timeout: 30_000 }, async () => {
    await repo.commitAll('the rejected plan'); // a clean checkout, as a user would start a run from
    const approve = await api(`/api/repos/${repoId}/impls/go/approve`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model: `script:${path.join(repo.root, 'agents.yaml')}` }) });
    expect(approve.status).toBe(200);
    expect(approve.json).toMatchObject({ started: true, pid: expect.any(Number) });
    const launches = await api('/api/launches');
    expect(launches.json.launches).toMatchObject([{ pid: approve.json.pid, slug: 'go', repo: repoId }]);
    // The run records into the server's store with its working directory: /api/runs?repo= finds it.
    let runs: Array<{ command: string; cwd: string; events: number }> = [];
    for (let attempt = 0; attempt < 100 && runs.length === 0; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      runs = (await api(`/api/runs?repo=${repoId}`)).json.runs as typeof runs;
    }
    expect(runs).toMatchObject([{ command: 'run', cwd: repo.dir }]);
    expect(runs[0]!.events).toBeGreaterThan(0);
    expect((await api(`/api/runs?impl=go`)).json.runs).toHaveLength(1);
    expect((await api(`/api/runs?impl=letters`)).json.runs).toHaveLength(0);
    const listed = ((await api('/api/repos')).json.repos as Array<{ impls: Array<{ slug: string; last_event_at: string | null }> }>)[0]!.impls;
    expect(listed.find((impl) => impl.slug === 'go')!.last_event_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(listed.find((impl) => impl.slug === 'pending')!.last_event_at).toBeNull();
    // The run ends on its own (the server never kills it): the script agent completes and the IMPL moves on.
    let launch: { running: boolean; exit_code: number | null; log: string } | undefined;
    for (let attempt = 0; attempt < 150; attempt += 1) {
      launch = ((await api('/api/launches')).json.launches as Array<typeof launch>)[0];
      if (!launch!.running) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const log = readFileSync(launch!.log, 'utf8');
    expect(launch, log).toMatchObject({ running: false, exit_code: 0 });
    const impl = (await api(`/api/repos/${repoId}/impls/go`)).json;
    expect(impl.state).toBe('COMPLETE');
    // X15 N2: the IMPL answer carries the launch's outcome (what the review page shows), the log's last lines included.
    expect(impl.launch).toMatchObject({ pid: approve.json.pid, running: false, exit_code: 0, reason: null, hint: null, log: expect.stringMatching(/^\.polywave-state\/serve\/go-/) });
    expect((impl.launch as { log_tail: string[] }).log_tail.join('\n')).toContain('run: COMPLETE');
  });

  it('answers runs and metrics from the store, and unknown API routes with a coded 404', async () => {
    expect((await api('/api/health')).headers.get('cache-control')).toBe('no-store');
    const metrics = await api('/api/metrics?impl=letters');
    expect(metrics.json).toMatchObject({ scope: { impl: 'letters' }, runs: 0, events: 0 });
    expect((await api('/api/metrics')).status).toBe(400);
    const unknown = await api('/api/nothing-here');
    expect(unknown.status).toBe(404);
    expect((unknown.json.error as { code: string }).code).toBe('SERVE_NOT_FOUND');
  });

  it('says where each agent ran (issue 17): the worker of a dispatched attempt, in-process for the run started here', async () => {
    // The events of a `run-wave --dispatch redis://…` recorded as run-wave records them (no Redis needed): attempt 1
    // on w1 failed (transient), attempt 2 stalled once and completed on w2; a later run found it complete (E9, attempt 0).
    const record = (emit: (bus: EventBus) => void) => {
      const bus = new EventBus();
      const recorder = attachRecorder(bus, { storePath: path.join(storeDir, 'events.db'), command: 'run-wave', cwd: repo.dir, warn: () => undefined, flushDelayMs: 0 });
      emit(bus);
      recorder.close();
    };
    const launch = (attempt: number) => ({ v: 1 as const, type: 'agent-launch' as const, slug: 'pending', wave: 1, agent: 'A', attempt, model: 'script:', backend: 'script', dispatcher: 'redis' as const });
    const end = (attempt: number, status: string, dispatch?: { worker: string; stalls: number }) => ({
      v: 1 as const,
      type: 'agent-end' as const,
      slug: 'pending',
      wave: 1,
      agent: 'A',
      attempt,
      status,
      turns: 1,
      input_tokens: 0,
      output_tokens: 0,
      duration_ms: 10,
      ...(dispatch ? { dispatch: { dispatcher: 'redis', job_id: `pending.w1.A.0123456789ab.a${attempt}.ba9876543210`, enqueue_to_start_ms: 12, finish_to_result_ms: 30, ...dispatch } } : {}),
    });
    record((bus) => {
      bus.emit(launch(1));
      bus.emit(end(1, 'failed', { worker: 'w1', stalls: 0 }));
      bus.emit(launch(2));
      bus.emit(end(2, 'complete', { worker: 'w2', stalls: 1 }));
    });
    const runsOn = async () => ((await api(`/api/repos/${repoId}/impls/pending`)).json.progress as { waves: Array<{ agents: Array<{ runs_on: unknown }> }> }).waves[0]!.agents[0]!.runs_on;
    const expected = { dispatcher: 'redis', worker: 'w2', host: null, job_id: 'pending.w1.A.0123456789ab.a2.ba9876543210', stalls: 1, attempt: 2, ended: true };
    expect(await runsOn()).toMatchObject(expected);
    // Read on from where the last answer stopped: a later run's E9 agent-end (attempt 0) leaves it as it was.
    record((bus) => bus.emit({ ...end(0, 'complete'), explanation: 'already complete (E9: not relaunched)' }));
    expect(await runsOn()).toMatchObject(expected);
    expect((await api(`/api/repos/${repoId}/impls/pending/agents/A`)).json.runs_on).toMatchObject(expected);
    // The run the approve test started from the page ran its agent here; an agent never launched: null.
    const go = (await api(`/api/repos/${repoId}/impls/go`)).json.progress as { waves: Array<{ agents: Array<{ runs_on: unknown }> }> };
    expect(go.waves[0]!.agents[0]!.runs_on).toMatchObject({ dispatcher: 'in-process', worker: null, job_id: null, attempt: 1, ended: true });
    expect((await api(`/api/repos/${repoId}/impls/letters/agents/B`)).json.runs_on).toBeNull();
    // The live stream carries the same: the agent-end frame with the worker.
    const controller = new AbortController();
    const stream = await fetch(new URL(`/api/events?impl=pending&after=0`, server.base), { headers: { 'X-Polywave-Token': server.token }, signal: controller.signal });
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of stream.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (text.split('event: agent-end').length > 3) break;
    }
    controller.abort();
    const ends = text.split('\n').filter((line) => line.startsWith('data: ') && line.includes('"agent-end"')).map((line) => JSON.parse(line.slice(6)) as { payload: { attempt: number; dispatch?: { worker: string } } });
    expect(ends.map((frame) => [frame.payload.attempt, frame.payload.dispatch?.worker ?? null])).toEqual([
      [1, 'w1'],
      [2, 'w2'],
      [0, null],
    ]);
    // While an attempt runs: a worker took its job (agent-running, before any result) — its worker and host already.
    record((bus) => {
      bus.emit(launch(3));
      bus.emit({ v: 1, type: 'agent-running', slug: 'pending', wave: 1, agent: 'A', attempt: 3, dispatcher: 'redis', job_id: 'pending.w1.A.0123456789ab.a3.ba9876543210', worker: 'w3', host: 'box-3' });
    });
    expect(await runsOn()).toMatchObject({ dispatcher: 'redis', worker: 'w3', host: 'box-3', job_id: 'pending.w1.A.0123456789ab.a3.ba9876543210', stalls: null, attempt: 3, ended: false });
  });
});

describe('polywave serve: static UI', () => {
  let inProcess: RunningServer;
  afterAll(async () => inProcess?.close());

  it('serves hashed assets with a long cache, the shell with the token for every UI route, and a "not built" shell without dist/web', async () => {
    const web = makeTempDir('polywave-serve-web-');
    mkdirSync(path.join(web, 'assets'));
    writeFileSync(path.join(web, 'index.html'), '<!doctype html><html><head><title>ui</title><meta name="polywave-token" content=""></head><body><script type="module" src="/assets/index-abc123.js"></script></body></html>');
    writeFileSync(path.join(web, 'assets', 'index-abc123.js'), 'console.log(1);\n');
    const second = await createTestRepo();
    second.write('docs/IMPL/IMPL-solo.yaml', lettersImplYaml({ title: 'Solo', slug: 'solo', agents: ['A'] }));
    inProcess = await startServer({ repos: [repo.dir, second.dir, repo.dir], port: 0, host: '127.0.0.1', explicitHost: false, storePath: path.join(storeDir, 'static.db'), env: process.env, now: () => new Date(), webRoot: web });
    const headers = { 'X-Polywave-Token': inProcess.token };
    // Several repositories (a duplicate once), each with its own IMPLs.
    const listed = JSON.parse((await rawRequest(`${inProcess.url}api/repos`, { headers })).body) as { repos: Array<{ path: string; impls: Array<{ slug: string }> }> };
    // (go is archived to docs/IMPL/complete/ once the approve test's run completed: sorted by slug here.)
    expect(listed.repos.map((entry) => [entry.path, entry.impls.map((impl) => impl.slug).sort()])).toEqual([
      [repo.dir, ['broken', 'go', 'letters', 'pending']],
      [second.dir, ['solo']],
    ]);
    const asset = await rawRequest(`${inProcess.url}assets/index-abc123.js`, { headers });
    expect(asset.status).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['content-type']).toContain('text/javascript');
    expect(asset.body).toBe('console.log(1);\n');
    // A file worth compressing: br or gzip as accepted (one ETag per coding), the bytes decompress to the file; 304 on a match.
    const big = `${Array.from({ length: 200 }, (_, index) => `export const v${index} = ${index};`).join('\n')}\n`;
    writeFileSync(path.join(web, 'assets', 'big-abc123.js'), big);
    const bigUrl = `${inProcess.url}assets/big-abc123.js`;
    const raw = (encoding: string | undefined, extra: Record<string, string> = {}) => rawBytes(bigUrl, { ...headers, ...(encoding ? { 'Accept-Encoding': encoding } : {}), ...extra });
    const br = await raw('gzip, deflate, br');
    expect([br.status, br.headers['content-encoding'], br.headers.vary, br.headers['cache-control']]).toEqual([200, 'br', 'Accept-Encoding', 'public, max-age=31536000, immutable']);
    expect(zlib.brotliDecompressSync(br.body).toString('utf8')).toBe(big);
    expect(br.body.length).toBeLessThan(big.length / 3);
    const gz = await raw('gzip, br;q=0');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).toString('utf8')).toBe(big);
    const plain = await raw(undefined);
    expect([plain.headers['content-encoding'], plain.body.toString('utf8')]).toEqual([undefined, big]);
    const etags = [br, gz, plain].map((answer) => answer.headers.etag);
    expect(new Set(etags).size).toBe(3);
    for (const etag of etags) expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await raw('br', { 'If-None-Match': br.headers.etag! });
    expect([again.status, again.body.length, again.headers.etag]).toEqual([304, 0, br.headers.etag]);
    expect((await raw('br', { 'If-None-Match': gz.headers.etag! })).status).toBe(200);
    expect((await rawRequest(`${inProcess.url}assets/missing-1.js`, { headers })).status).toBe(404);
    expect((await rawRequest(`${inProcess.url}assets/..%2f..%2fetc%2fpasswd`, { headers })).body).not.toContain('root:');
    const deep = await rawRequest(`${inProcess.url}r/${repoId}/impl/letters`, { headers });
    expect(deep.status).toBe(200);
    expect(deep.headers['cache-control']).toBe('no-store');
    expect(deep.body).toContain(`<head><title>ui</title><meta name="polywave-token" content="${inProcess.token}"></head>`);
    expect(deep.body.match(/polywave-token/g)).toHaveLength(1);
    const notBuilt = await rawRequest(`${server.base}`, { headers: { 'X-Polywave-Token': server.token } });
    expect(notBuilt.status).toBe(200);
    expect(notBuilt.body).toContain(`<meta name="polywave-token" content="${server.token}">`);
  });
});
