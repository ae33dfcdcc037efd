import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../../test/support/git-repo.js';
import { defaultAgentLimits, type AgentEvent, type AgentRunRequest, type ModelSpec } from '../contract.js';
import { createJail } from '../jail/jail.js';
import { vanishingShim } from '../../../test/support/bwrap-shim.js';
import { sandboxStatus } from '../../sandbox/index.js';
import { builtinCliTemplates, createCliBackend, endpointHost, expandTemplateArgs, modelEndpoints, noProxyFor, readReportFile, sandboxedCliTemplates, type CliTemplate } from './cli.js';

/**
 * A stand-in for `claude -p --output-format stream-json --verbose`: reads the prompt from stdin,
 * writes STANDIN_FILE, commits it, and prints the stream-json lines Claude Code prints.
 * STANDIN_MODE: ok | overloaded (result is_error + exit 1) | sleep (spawns a grandchild, sleeps).
 */
const claudeStandIn = `#!/usr/bin/env node
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const out = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
let prompt = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { prompt += chunk; });
process.stdin.on('end', () => {
  fs.writeFileSync(process.env.STANDIN_CAPTURE, JSON.stringify({ argv: process.argv.slice(2), prompt, claudecode: process.env.CLAUDECODE ?? null, dispatchKey: process.env.POLYWAVE_DISPATCH_KEY ?? null, dispatchKeyFile: process.env.POLYWAVE_DISPATCH_KEY_FILE ?? null, cwd: process.cwd() }));
  const mode = process.env.STANDIN_MODE || 'ok';
  out({ type: 'system', subtype: 'init', session_id: 'sess-123', model: 'claude-sonnet-4-5', tools: ['Write', 'Bash'] });
  if (mode === 'sleep') {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    fs.writeFileSync(process.env.STANDIN_PIDS, JSON.stringify([process.pid, child.pid]));
    setTimeout(() => {}, 60000);
    return;
  }
  if (mode === 'leftover') {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    fs.writeFileSync(process.env.STANDIN_PIDS, JSON.stringify([child.pid]));
    out({ type: 'result', subtype: 'success', is_error: false, result: 'left a process behind', num_turns: 1, session_id: 'sess-123', total_cost_usd: 0, usage: {} });
    process.exit(0);
  }
  if (mode === 'maxturns') {
    out({ type: 'result', subtype: 'error_max_turns', is_error: true, num_turns: 7, session_id: 'sess-123', total_cost_usd: 0.5, usage: { input_tokens: 10, output_tokens: 5 }, permission_denials: [{ tool_name: 'Bash', tool_use_id: 't', tool_input: {} }] });
    process.exit(1);
  }
  if (mode === 'overloaded') {
    process.stderr.write('API Error: 529 overloaded_error\\n');
    out({ type: 'result', subtype: 'error_during_execution', is_error: true, result: 'API Error: 529 {"type":"overloaded_error"}', num_turns: 1, session_id: 'sess-123', total_cost_usd: 0.001, usage: { input_tokens: 10, output_tokens: 0 } });
    process.exit(1);
  }
  const file = process.env.STANDIN_FILE;
  out({ type: 'assistant', message: { id: 'msg_1', role: 'assistant', content: [{ type: 'text', text: 'I will write ' + file }], usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 7 } } });
  out({ type: 'assistant', message: { id: 'msg_1', role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Write', input: { file_path: file, content: 'export const a = 1;\\n' } }], usage: { input_tokens: 100, output_tokens: 40 } } });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, 'export const a = 1;\\n');
  out({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'File created successfully', is_error: false }] } });
  out({ type: 'assistant', message: { id: 'msg_2', role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'git commit' } }] } });
  execFileSync('git', ['add', '--all']);
  execFileSync('git', ['commit', '--quiet', '--no-verify', '-m', 'feat(A): write ' + file]);
  out({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'committed' }], is_error: false }] } });
  process.stdout.write('not json at all\\n');
  out({ type: 'some_future_event', data: 1 });
  out({ type: 'assistant', message: { id: 'msg_3', role: 'assistant', content: [{ type: 'text', text: 'Done.' }] } });
  out({ type: 'result', subtype: 'success', is_error: false, result: 'Done: wrote ' + file, num_turns: 3, session_id: 'sess-123', total_cost_usd: 0.0421, usage: { input_tokens: 1200, output_tokens: 340, cache_read_input_tokens: 800, cache_creation_input_tokens: 60 } });
});
`;

/** A stand-in for `codex exec --json -`. */
const codexStandIn = `#!/usr/bin/env node
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const out = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
let prompt = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { prompt += chunk; });
process.stdin.on('end', () => {
  fs.writeFileSync(process.env.STANDIN_CAPTURE, JSON.stringify({ argv: process.argv.slice(2), prompt }));
  const file = process.env.STANDIN_FILE;
  out({ type: 'thread.started', thread_id: 'thread-9' });
  out({ type: 'turn.started' });
  out({ type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: 'thinking' } });
  out({ type: 'item.started', item: { id: 'item_1', type: 'command_execution', command: 'ls', aggregated_output: '', exit_code: null, status: 'in_progress' } });
  out({ type: 'item.completed', item: { id: 'item_1', type: 'command_execution', command: 'ls', aggregated_output: 'README.md\\n', exit_code: 0, status: 'completed' } });
  fs.mkdirSync(require('node:path').dirname(file), { recursive: true });
  fs.writeFileSync(file, 'export const a = 1;\\n');
  out({ type: 'item.completed', item: { id: 'item_2', type: 'file_change', changes: [{ path: file, kind: 'add' }], status: 'completed' } });
  execFileSync('git', ['add', '--all']);
  execFileSync('git', ['commit', '--quiet', '--no-verify', '-m', 'feat(A): codex']);
  out({ type: 'item.completed', item: { id: 'item_3', type: 'command_execution', command: 'false', aggregated_output: 'oops', exit_code: 1, status: 'failed' } });
  out({ type: 'item.completed', item: { id: 'item_4', type: 'agent_message', text: 'All done.' } });
  out({ type: 'turn.completed', usage: { input_tokens: 1000, cached_input_tokens: 400, output_tokens: 90 } });
});
`;

/** Prints its argv (and stdin) as plain text: for templates with promptVia argument/file and format text. */
const echoStandIn = `#!/usr/bin/env node
const fs = require('node:fs');
const args = process.argv.slice(2);
console.log('argv ' + JSON.stringify(args));
const fileIndex = args.findIndex((arg) => arg.startsWith('--prompt-file='));
if (fileIndex >= 0) console.log('file ' + fs.readFileSync(args[fileIndex].slice('--prompt-file='.length), 'utf8'));
console.log('');
console.log('last line');
`;

interface Fixture {
  repo: TestRepo;
  worktree: string;
  base: string;
  bin: string;
  scratch: string;
  capture: string;
}

async function fixture(): Promise<Fixture> {
  const repo = await createTestRepo({ files: { 'src/shared.ts': 'export const shared = 0;\n' } });
  const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch: 'wave1-agent-A', base: 'HEAD', createBranch: true });
  const bin = repo.sibling('bin');
  mkdirSync(bin, { recursive: true });
  const write = (name: string, text: string) => {
    writeFileSync(path.join(bin, name), text);
    chmodSync(path.join(bin, name), 0o755);
  };
  write('claude-standin', claudeStandIn);
  write('codex-standin', codexStandIn);
  write('echo-standin', echoStandIn);
  const scratch = repo.sibling('scratch-A');
  mkdirSync(scratch, { recursive: true });
  return { repo, worktree, base, bin, scratch, capture: path.join(scratch, 'capture.json') };
}

interface Journal {
  uses: Array<{ toolCallId: string; tool: string; input: Record<string, unknown> }>;
  results: Array<{ toolCallId: string; tool: string; output: string; isError: boolean }>;
}

async function request(
  f: Fixture,
  model: ModelSpec,
  options: { env?: Record<string, string>; ownedFiles?: string[]; signal?: AbortSignal; outputSchema?: Record<string, unknown> } = {},
): Promise<{ request: AgentRunRequest; events: AgentEvent[]; journal: Journal }> {
  const events: AgentEvent[] = [];
  const journal: Journal = { uses: [], results: [] };
  const jail = await createJail({ root: f.worktree, ownedFiles: options.ownedFiles ?? ['src/a.ts'], branch: 'wave1-agent-A' }, { env: f.repo.env });
  return {
    events,
    journal,
    request: {
      agentId: 'A',
      role: 'wave',
      wave: 1,
      attempt: 1,
      model,
      systemPrompt: 'SYSTEM PROMPT',
      prompt: 'Implement src/a.ts',
      cwd: f.worktree,
      branch: 'wave1-agent-A',
      baseCommit: f.base,
      jail,
      limits: { ...defaultAgentLimits, maxTurns: 7 },
      env: { ...f.repo.env, CLAUDECODE: '1', STANDIN_CAPTURE: f.capture, STANDIN_FILE: 'src/a.ts', ...options.env },
      scratchDir: f.scratch,
      signal: options.signal ?? new AbortController().signal,
      onEvent: (event) => events.push(event),
      recorder: {
        recordToolUse: (entry) => journal.uses.push(entry),
        recordToolResult: (entry) => journal.results.push(entry),
      },
      ...(options.outputSchema ? { outputSchema: options.outputSchema } : {}),
    },
  };
}

const claudeModel: ModelSpec = { backend: 'cli', command: 'claude', modelId: 'claude-sonnet-4-5', raw: 'cli:claude:claude-sonnet-4-5' };

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A zombie (killed, not yet reaped by its new parent) is gone for our purposes.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return true;
  }
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('expandTemplateArgs', () => {
  it('substitutes placeholders and drops a flag whose value is missing', () => {
    expect(expandTemplateArgs(['-p', '--model', '{model}', '--max-turns', '{max_turns}', '--x={model}', 'in {cwd}'], { max_turns: '5', cwd: '/w' })).toEqual([
      '-p',
      '--max-turns',
      '5',
      'in /w',
    ]);
    expect(expandTemplateArgs(['--model', '{model}', '{unknown}'], { model: 'm' })).toEqual(['--model', 'm', '{unknown}']);
  });
});

describe('sandboxed CLI agents: endpoints and templates', () => {
  it('reads the model endpoints a built-in CLI talks to as host:port', () => {
    expect(endpointHost('http://127.0.0.1:8080/v1')).toBe('127.0.0.1:8080');
    expect(endpointHost('https://api.anthropic.com')).toBe('api.anthropic.com:443');
    expect(endpointHost('http://ollama.lan/v1')).toBe('ollama.lan:80');
    expect(endpointHost('http://[::1]:9/v1')).toBe('[::1]:9');
    expect(endpointHost('not a url')).toBeUndefined();
    expect(modelEndpoints('claude', {})).toEqual(['api.anthropic.com:443']);
    expect(modelEndpoints('claude', { ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000' })).toEqual(['127.0.0.1:4000']);
    expect(modelEndpoints('my-cli', { ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000' })).toEqual([]);
    const codexHome = path.join(os.tmpdir(), `polywave-codex-home-${process.pid}`);
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(path.join(codexHome, 'config.toml'), 'model = "m"\n[model_providers.a]\nbase_url = "http://127.0.0.1:5000/v1"\n[model_providers.b]\n  base_url = \'https://llm.example.com/v1\'\n');
    try {
      expect(modelEndpoints('codex', { CODEX_HOME: codexHome })).toEqual(['api.openai.com:443', '127.0.0.1:5000', 'llm.example.com:443']);
      expect(modelEndpoints('codex', { OPENAI_BASE_URL: 'http://10.0.0.5:8000/v1', HOME: '/nonexistent' })).toEqual(['10.0.0.5:8000']);
    } finally {
      rmSync(codexHome, { recursive: true, force: true });
    }
  });

  it("drops from the sandbox's NO_PROXY only what would send the endpoint around the proxy", () => {
    const all = 'localhost,127.0.0.1,::1,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16';
    expect(noProxyFor(['api.anthropic.com:443'])).toBe(all);
    expect(noProxyFor(['127.0.0.1:4000'])).toBe('localhost,::1,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16');
    expect(noProxyFor(['localhost:4000', '[::1]:5'])).toBe('127.0.0.1,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16');
    expect(noProxyFor(['10.1.2.3:11434', '192.168.1.9:1'])).toBe('localhost,127.0.0.1,::1,169.254.0.0/16,172.16.0.0/12');
  });

  it("turns the CLIs' own permission layer and sandbox off only inside ours", () => {
    expect(builtinCliTemplates.claude.command).toContain('acceptEdits');
    expect(sandboxedCliTemplates.claude.command).toContain('bypassPermissions');
    expect(builtinCliTemplates.codex.command).toEqual(['codex', 'exec', '--json', '--sandbox', 'workspace-write', '--model', '{model}', '-']);
    expect(sandboxedCliTemplates.codex.command).toEqual(['codex', 'exec', '--json', '--dangerously-bypass-approvals-and-sandbox', '--model', '{model}', '-']);
  });
});

describe('cli backend: claude stream-json', () => {
  it('runs the stand-in in the worktree, streams events, journals tool calls, and reports usage, cost and session', async () => {
    const f = await fixture();
    // (the dispatch key of an orchestrator that dispatches other waves: whoever holds it signs jobs and results — h17j's A21-43)
    const { request: req, events, journal } = await request(f, claudeModel, { env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), POLYWAVE_DISPATCH_KEY: 'k'.repeat(40), POLYWAVE_DISPATCH_KEY_FILE: '/srv/dispatch.key' } });
    const outcome = await createCliBackend().run(req);

    expect(outcome.failure).toBeUndefined();
    expect(outcome.status).toBe('finished');
    expect(outcome.sessionId).toBe('sess-123');
    expect(outcome.turns).toBe(3);
    expect(outcome.text).toBe('Done: wrote src/a.ts');
    expect(outcome.usage).toEqual({ inputTokens: 1200, outputTokens: 340, cacheReadTokens: 800, cacheWriteTokens: 60, costUsd: 0.0421 });
    expect(outcome.denials).toEqual([]);

    const capture = JSON.parse(readFileSync(f.capture, 'utf8')) as { argv: string[]; prompt: string; claudecode: string | null; dispatchKey: string | null; dispatchKeyFile: string | null; cwd: string };
    expect(capture.argv).toEqual(['-p', '--output-format', 'stream-json', '--verbose', '--model', 'claude-sonnet-4-5', '--max-turns', '7', '--permission-mode', 'acceptEdits', '--setting-sources', 'user']);
    expect(capture.prompt).toBe('SYSTEM PROMPT\n\nImplement src/a.ts');
    expect(capture.claudecode).toBeNull();
    expect([capture.dispatchKey, capture.dispatchKeyFile]).toEqual([null, null]);
    expect(capture.cwd).toBe(f.worktree);

    expect(events.filter((event) => event.type === 'agent-text').map((event) => event.text)).toEqual(['I will write src/a.ts', 'Done.']);
    const starts = events.filter((event) => event.type === 'tool-call-start');
    expect(starts.map((event) => [event.toolCallId, event.tool])).toEqual([
      ['toolu_1', 'Write'],
      ['toolu_2', 'Bash'],
    ]);
    expect(starts[0]!.input).toEqual({ file_path: 'src/a.ts', content: 'export const a = 1;\n' });
    const ends = events.filter((event) => event.type === 'tool-call-end');
    expect(ends.map((event) => [event.toolCallId, event.tool, event.isError, event.output])).toEqual([
      ['toolu_1', 'Write', false, 'File created successfully'],
      ['toolu_2', 'Bash', false, 'committed'],
    ]);
    const turnEnds = events.filter((event) => event.type === 'turn-end');
    expect(turnEnds.at(-1)).toEqual({ type: 'turn-end', turn: 3, usage: outcome.usage });
    expect(turnEnds[0]).toEqual({ type: 'turn-end', turn: 1, usage: { inputTokens: 100, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0 } });
    expect(events.some((event) => event.type === 'agent-log' && event.message.includes('not json at all'))).toBe(true);

    expect(journal.uses.map((entry) => [entry.toolCallId, entry.tool])).toEqual([
      ['toolu_1', 'Write'],
      ['toolu_2', 'Bash'],
    ]);
    expect(journal.results.map((entry) => [entry.toolCallId, entry.tool, entry.output, entry.isError])).toEqual([
      ['toolu_1', 'Write', 'File created successfully', false],
      ['toolu_2', 'Bash', 'committed', false],
    ]);

    expect(readFileSync(path.join(f.worktree, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    const log = await f.repo.run(['log', '--format=%s', `${f.base}..wave1-agent-A`]);
    expect(log.trim()).toBe('feat(A): write src/a.ts');
  });

  it('fails the run with an ownership violation when the agent writes a file it does not own', async () => {
    const f = await fixture();
    const { request: req } = await request(f, claudeModel, { env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), STANDIN_FILE: 'src/other.ts' } });
    const outcome = await createCliBackend().run(req);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('fatal');
    expect(outcome.failure?.message).toMatch(/^ownership violation: /);
    expect(outcome.failure?.message).toContain('src/other.ts');
    expect(outcome.denials.length).toBeGreaterThan(0);
    expect(outcome.denials.some((denial) => denial.code === 'JAIL_UNOWNED_CHANGE' && denial.target === 'src/other.ts')).toBe(true);
    // usage and session still reported
    expect(outcome.sessionId).toBe('sess-123');
    expect(outcome.usage.costUsd).toBe(0.0421);
  });

  it('refuses to start when the binary cannot be found (config)', async () => {
    const f = await fixture();
    const missing = await request(f, claudeModel, { env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'no-such-claude') } });
    const outcome = await createCliBackend().run(missing.request);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('config');
    expect(outcome.failure?.message).toContain('no-such-claude');
    expect(outcome.failure?.message).toContain('POLYWAVE_CLAUDE_BIN');
    expect(existsSync(f.capture)).toBe(false);

    const onPath = await request(f, claudeModel, { env: { PATH: f.scratch } });
    const second = await createCliBackend().run(onPath.request);
    expect(second.failure?.kind).toBe('config');
    expect(second.failure?.message).toMatch(/"claude" .*not installed or not found on PATH/);

    const unknown = await request(f, { backend: 'cli', command: 'aider', raw: 'cli:aider' });
    const third = await createCliBackend().run(unknown.request);
    expect(third.failure?.kind).toBe('config');
    expect(third.failure?.message).toContain('unknown agent CLI "aider"');
  });

  it('classifies a non-zero exit with the provider error (529 overloaded → transient)', async () => {
    const f = await fixture();
    const { request: req } = await request(f, claudeModel, { env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), STANDIN_MODE: 'overloaded' } });
    const outcome = await createCliBackend().run(req);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('transient');
    expect(outcome.failure?.message).toContain('exited with status 1');
    expect(outcome.failure?.message).toContain('529');
  });

  it('ends as max-turns on error_max_turns and logs permission denials', async () => {
    const f = await fixture();
    const { request: req, events } = await request(f, claudeModel, { env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), STANDIN_MODE: 'maxturns' } });
    const outcome = await createCliBackend().run(req);
    expect(outcome.status).toBe('max-turns');
    expect(outcome.failure).toBeUndefined();
    expect(outcome.turns).toBe(7);
    expect(outcome.usage).toEqual({ inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.5 });
    expect(events.some((event) => event.type === 'agent-log' && event.message.includes('refused 1 tool call(s)'))).toBe(true);
  });

  it('kills processes the CLI left behind when it exits', async () => {
    const f = await fixture();
    const pidsFile = path.join(f.scratch, 'pids.json');
    const { request: req } = await request(f, claudeModel, { env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), STANDIN_MODE: 'leftover', STANDIN_PIDS: pidsFile } });
    const outcome = await createCliBackend().run(req);
    expect(outcome.status).toBe('finished');
    expect(outcome.text).toBe('left a process behind');
    const pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
    await waitFor(() => !pids.some(isAlive));
  });

  it('kills the whole process group on abort', async () => {
    const f = await fixture();
    const pidsFile = path.join(f.scratch, 'pids.json');
    const controller = new AbortController();
    const { request: req } = await request(f, claudeModel, {
      env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), STANDIN_MODE: 'sleep', STANDIN_PIDS: pidsFile },
      signal: controller.signal,
    });
    const running = createCliBackend().run(req);
    await waitFor(() => existsSync(pidsFile) && readFileSync(pidsFile, 'utf8') !== '');
    const pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
    expect(pids.every(isAlive)).toBe(true);
    controller.abort();
    const outcome = await running;
    expect(outcome.status).toBe('aborted');
    expect(outcome.sessionId).toBe('sess-123');
    await waitFor(() => !pids.some(isAlive));
  });

  it('reports timeout when the abort reason is a TimeoutError', async () => {
    const f = await fixture();
    const pidsFile = path.join(f.scratch, 'pids.json');
    const { request: req } = await request(f, claudeModel, {
      env: { POLYWAVE_CLAUDE_BIN: path.join(f.bin, 'claude-standin'), STANDIN_MODE: 'sleep', STANDIN_PIDS: pidsFile },
      signal: AbortSignal.timeout(1_500),
    });
    const outcome = await createCliBackend().run(req);
    expect(outcome.status).toBe('timeout');
    const pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
    await waitFor(() => !pids.some(isAlive));
  });
});

describe('cli backend: codex json', () => {
  it('parses thread, items and usage; audits the worktree', async () => {
    const f = await fixture();
    const { request: req, events, journal } = await request(f, { backend: 'cli', command: 'codex', raw: 'cli:codex' }, { env: { POLYWAVE_CODEX_BIN: path.join(f.bin, 'codex-standin') } });
    const outcome = await createCliBackend().run(req);
    expect(outcome.failure).toBeUndefined();
    expect(outcome.status).toBe('finished');
    expect(outcome.sessionId).toBe('thread-9');
    expect(outcome.text).toBe('All done.');
    expect(outcome.turns).toBe(1);
    expect(outcome.usage).toEqual({ inputTokens: 600, outputTokens: 90, cacheReadTokens: 400, cacheWriteTokens: 0 });

    const capture = JSON.parse(readFileSync(f.capture, 'utf8')) as { argv: string[]; prompt: string };
    expect(capture.argv).toEqual(['exec', '--json', '--sandbox', 'workspace-write', '-']);
    expect(capture.prompt).toBe('SYSTEM PROMPT\n\nImplement src/a.ts');

    const ends = events.filter((event) => event.type === 'tool-call-end');
    expect(ends.map((event) => [event.toolCallId, event.tool, event.isError, event.output])).toEqual([
      ['item_1', 'bash', false, 'README.md\n'],
      ['item_2', 'apply_patch', false, 'add src/a.ts'],
      ['item_3', 'bash', true, 'oops'],
    ]);
    expect(journal.uses.map((entry) => [entry.toolCallId, entry.tool, entry.input])).toEqual([
      ['item_1', 'bash', { command: 'ls' }],
      ['item_2', 'apply_patch', { changes: [{ path: 'src/a.ts', kind: 'add' }] }],
      ['item_3', 'bash', { command: 'false' }],
    ]);
    expect(events.filter((event) => event.type === 'turn-end')).toEqual([{ type: 'turn-end', turn: 1, usage: outcome.usage }]);
    expect(events.filter((event) => event.type === 'agent-text').map((event) => event.text)).toEqual(['All done.']);
    const log = await f.repo.run(['log', '--format=%s', `${f.base}..wave1-agent-A`]);
    expect(log.trim()).toBe('feat(A): codex');
  });

  it('fails on an unowned change', async () => {
    const f = await fixture();
    const { request: req } = await request(f, { backend: 'cli', command: 'codex', raw: 'cli:codex' }, { env: { POLYWAVE_CODEX_BIN: path.join(f.bin, 'codex-standin'), STANDIN_FILE: 'src/shared.ts' } });
    const outcome = await createCliBackend().run(req);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.message).toMatch(/^ownership violation: .*src\/shared\.ts/);
    expect(outcome.denials.map((denial) => denial.target)).toContain('src/shared.ts');
  });
});

describe('cli backend: custom templates', () => {
  it('passes the prompt as an argument or a file and reads plain text output', async () => {
    const f = await fixture();
    const echo = path.join(f.bin, 'echo-standin');
    const templates: Record<string, CliTemplate> = {
      echoarg: { command: [echo, '--model', '{model}', '--turns={max_turns}', '{prompt}'], promptVia: 'argument', format: 'text' },
      echofile: { command: [echo], promptVia: 'file', format: 'text' },
      echofile2: { command: [echo, '--prompt-file={prompt_file}', '--cwd', '{cwd}'], promptVia: 'file', format: 'text' },
    };
    const backend = createCliBackend({ templates });

    const first = await request(f, { backend: 'cli', command: 'echoarg', raw: 'cli:echoarg' }, { outputSchema: { type: 'object' } });
    const a = await backend.run(first.request);
    expect(a.status).toBe('finished');
    expect(a.text).toBe(`argv ${JSON.stringify(['--turns=7', 'SYSTEM PROMPT\n\nImplement src/a.ts'])}\n\nlast line`);
    expect(a.structured).toBeUndefined();
    expect(first.events.filter((event) => event.type === 'agent-text').map((event) => event.text)).toEqual([
      `argv ${JSON.stringify(['--turns=7', 'SYSTEM PROMPT\n\nImplement src/a.ts'])}`,
      'last line',
    ]);

    const second = await request(f, { backend: 'cli', command: 'echofile', modelId: 'm1', raw: 'cli:echofile:m1' });
    const b = await backend.run(second.request);
    expect(b.status).toBe('finished');
    const argv = JSON.parse(b.text.split('\n')[0]!.slice('argv '.length)) as string[];
    expect(argv).toHaveLength(1);
    expect(readFileSync(argv[0]!, 'utf8')).toBe('SYSTEM PROMPT\n\nImplement src/a.ts');
    expect(argv[0]!.startsWith(f.scratch)).toBe(true);

    const third = await request(f, { backend: 'cli', command: 'echofile2', raw: 'cli:echofile2' });
    const c = await backend.run(third.request);
    expect(c.text).toContain('file SYSTEM PROMPT\n\nImplement src/a.ts');
    expect(c.text).toContain(JSON.stringify(['--cwd', f.worktree]).slice(1, -1));
  });
});

describe.skipIf(!(await sandboxStatus()).available)('cli backend in the OS sandbox: a hidden directory that vanishes before bubblewrap starts', () => {
  it('the CLI is started again with a fresh wrap (bubblewrap ran nothing the first time) and its output is read', async () => {
    const f = await fixture();
    const vanishing = f.repo.sibling('other-run/polywave-scratch-x');
    mkdirSync(vanishing, { recursive: true });
    const shim = vanishingShim(vanishing);
    const backend = createCliBackend({ templates: { echoarg: { command: [path.join(f.bin, 'echo-standin'), '{prompt}'], promptVia: 'argument', format: 'text' } } });
    const made = await request(f, { backend: 'cli', command: 'echoarg', raw: 'cli:echoarg' }, { env: { PATH: shim.path(f.repo.env.PATH) } });
    made.request.sandbox = { writable: [f.worktree, f.scratch], readOnlyWithin: [], unreadable: [vanishing], allowedHosts: [] };
    const outcome = await backend.run(made.request);
    expect(outcome.status, JSON.stringify(outcome.failure ?? outcome.text)).toBe('finished');
    expect(outcome.text).toContain('last line');
    expect(shim.starts()).toBe(2);
  }, 60_000);
});

describe('cli backend: the report file the agent wrote (outside attack X19-19)', () => {
  it('a FIFO, a link or a huge file there is refused at once, never waited on or followed; a JSON object in a regular file is read', async () => {
    const f = await fixture();
    const logs: string[] = [];
    const state = { emit: (event: AgentEvent) => void (event.type === 'agent-log' && logs.push(event.message)) };
    const report = path.join(f.scratch, 'report.json');
    writeFileSync(report, JSON.stringify({ status: 'complete' }));
    expect(readReportFile(state, report)).toEqual({ status: 'complete' });
    rmSync(report);
    execFileSync('mkfifo', [report]);
    const started = Date.now();
    expect(readReportFile(state, report)).toBeUndefined(); // synchronous: a blocking open would never return
    expect(Date.now() - started).toBeLessThan(2_000);
    rmSync(report);
    const secret = path.join(f.repo.sibling('home'), 'creds.json');
    mkdirSync(path.dirname(secret), { recursive: true });
    writeFileSync(secret, JSON.stringify({ status: 'complete', token: 'SECRET' }));
    symlinkSync(secret, report);
    expect(readReportFile(state, report)).toBeUndefined();
    rmSync(report);
    writeFileSync(report, `{"notes":"${'x'.repeat(5 * 1024 * 1024)}"}`);
    expect(readReportFile(state, report)).toBeUndefined();
    expect(logs.filter((line) => line.includes('not a JSON object in a regular file'))).toHaveLength(3);
  });
});
