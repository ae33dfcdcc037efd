import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireReachableModels } from '../src/agents/model-preflight.js';
import { ollamaBaseUrl, resolveModelSpec } from '../src/agents/model-spec.js';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { createTestRepo } from './support/git-repo.js';

// Outside attack attack-compat-5 F10 (issue 13): `polywave run "…" --model ollama:<m>` with no Ollama
// server launched the Scout, failed after ~20 s with ECONNREFUSED, named an IMPL that did not exist,
// advised to "resume" and left an empty docs/IMPL/. Now a reachability check comes first (exit 2, one
// coded line naming the URL and what to set, nothing written); a failed Scout names no IMPL and leaves
// no empty directory. Real loopback servers: one that refuses, one that speaks Ollama's OpenAI API.

async function call(args: string[], cwd: string, env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = { cwd, env, now: () => new Date(), stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), readStdin: async () => '' };
  return { code: await main(args, io), stdout, stderr };
}

const requests: string[] = [];
let server: Server;
let refusedPort: number;
let ollamaPort: number;

beforeAll(async () => {
  // A port nothing listens on: bind, read it, close.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  refusedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  // Ollama's OpenAI-compatible API: the model list answers; a chat request is refused as bad (400: no retries).
  server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    if (request.url === '/v1/models') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'llama3', object: 'model' }] }));
      return;
    }
    response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'model "llama3" not found, try pulling it first', type: 'api_error' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ollamaPort = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('local model servers are checked before a run starts (F10)', () => {
  it('OLLAMA_HOST forms; a refusing port is reported with the URL, an answering one passes', async () => {
    expect(['127.0.0.1:9', 'http://h', 'https://h', '0.0.0.0', 'http://h:80/'].map(ollamaBaseUrl)).toEqual(['http://127.0.0.1:9/v1', 'http://h:11434/v1', 'https://h/v1', 'http://127.0.0.1:11434/v1', 'http://h/v1']);
    expect(resolveModelSpec('ollama:llama3', {})).toMatchObject({ baseURL: 'http://localhost:11434/v1' });
    const role = [{ role: 'the Scout', model: 'ollama:llama3' }];
    const down = resolveModelSpec('ollama:llama3', { OLLAMA_HOST: `127.0.0.1:${refusedPort}` });
    await expect(requireReachableModels(role, [down])).rejects.toMatchObject({ code: 'AGENT_MODEL_UNREACHABLE', message: expect.stringContaining(`http://127.0.0.1:${refusedPort}/v1 does not answer (ECONNREFUSED)`) });
    const up = resolveModelSpec('ollama:llama3', { OLLAMA_HOST: `127.0.0.1:${ollamaPort}` });
    await expect(requireReachableModels(role, [up])).resolves.toBeUndefined();
    expect(requests).toContain('GET /v1/models');
    // Other backends need no server check.
    await expect(requireReachableModels(role, [resolveModelSpec('anthropic:claude-sonnet-4-5', {})])).resolves.toBeUndefined();
  });

  it('run with no server: exit 2, one coded line naming the URL and OLLAMA_HOST, nothing written', async () => {
    const repo = await createTestRepo();
    const before = await repo.run(['status', '--porcelain', '--ignored']);
    const env = { ...repo.env, OLLAMA_HOST: `127.0.0.1:${refusedPort}`, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' };
    const run = await call(['run', 'add hello', '--yes', '--model', `ollama:llama3`], repo.dir, env);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^polywave: error\[AGENT_MODEL_UNREACHABLE\]: http:\/\/127\.0\.0\.1:\d+\/v1 does not answer \(ECONNREFUSED\) — needed by the Scout \(ollama:llama3\), the wave agents \(ollama:llama3\); start Ollama \(`ollama serve`\) or set OLLAMA_HOST/);
    expect(run.stdout).toBe('');
    expect(existsSync(repo.path('docs'))).toBe(false);
    expect(await repo.run(['status', '--porcelain', '--ignored'])).toBe(before);
  });

  it('a Scout that fails on an answering server: no IMPL named, no resume advice, no empty docs/IMPL/ left', async () => {
    const repo = await createTestRepo();
    const env = { ...repo.env, OLLAMA_HOST: `127.0.0.1:${ollamaPort}`, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' };
    const run = await call(['run', 'add hello', '--yes', '--model', 'ollama:llama3'], repo.dir, env);
    expect(run.code, run.stderr).toBe(1);
    expect(requests.some((line) => line.startsWith('POST /v1/chat/completions'))).toBe(true);
    expect(run.stdout).toContain('stopped (no IMPL written)');
    expect(run.stdout).not.toContain('IMPL-add-hello.yaml');
    expect(run.stdout).not.toContain('resume');
    expect(run.stdout).toContain('Nothing was written');
    expect(existsSync(repo.path('docs/IMPL'))).toBe(false);
  });
});
