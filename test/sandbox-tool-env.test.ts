/**
 * Attack report F3 (issue 17): what an agent runs — a script's `bash:` step, a tool call a
 * prompt-injected model makes — never sees the machine's model credentials. The backend that
 * talks to the model keeps them (the loopback server receives the key); bash, the sandboxed tool
 * executor and the tools' git get the environment without them. Through runAgent, sandboxed when
 * the OS sandbox is available and with POLYWAVE_SANDBOX=off (the unsandboxed path of bash).
 */
import { writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createScriptBackend } from '../src/agents/backends/script.js';
import type { AgentBackend, AgentEvent } from '../src/agents/contract.js';
import { isCredentialVariable, withoutCredentials } from '../src/agents/credentials.js';
import { runAgent } from '../src/agents/run-agent.js';
import { bashEnvironment } from '../src/agents/tools/bash-tool.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';
import { messageText, startOpenAiLoopback, toolResults } from './support/openai-loopback.js';

const branch = 'polywave/env/wave1-agent-A';
const secrets: Record<string, string> = {
  OPENAI_API_KEY: 'sk-H5-openai-secret-0001',
  ANTHROPIC_API_KEY: 'sk-ant-H5-anthropic-0002',
  ANTHROPIC_AUTH_TOKEN: 'H5-auth-token-0003',
  CLAUDE_CODE_OAUTH_TOKEN: 'H5-oauth-0004',
  AWS_SECRET_ACCESS_KEY: 'H5-aws-secret-0005',
  AWS_SESSION_TOKEN: 'H5-aws-session-0006',
  GH_TOKEN: 'H5-gh-0007',
  GITHUB_TOKEN: 'H5-github-0008',
};
const plain = { PLAIN_MARKER: 'visible-0009', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/anthropic' };
const printenv = `printenv ${Object.keys(secrets).join(' ')}; echo "rc=$?"`;

const available = (await sandboxStatus()).available;
afterAll(async () => {
  await resetSandbox();
});

async function worktree(): Promise<{ root: string; worktree: string; env: Record<string, string | undefined> }> {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
  const path = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path, branch, base: 'HEAD', createBranch: true });
  return { root: repo.root, worktree: path, env: { ...repo.env, ...secrets, ...plain } };
}

/** The outputs of the bash calls of a run, in order. */
const bashOutputs = (events: AgentEvent[]): string[] => events.flatMap((event) => (event.type === 'tool-call-end' && event.tool === 'bash' ? [event.output] : []));

describe('credentials in the environment of agent tools (F3)', () => {
  it('the predicate: model and forge credentials go, plain variables stay', () => {
    for (const name of [...Object.keys(secrets), 'GOOGLE_API_KEY', 'AWS_ACCESS_KEY_ID', 'AZURE_OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'HF_TOKEN', 'NPM_TOKEN', 'PGPASSWORD', 'POLYWAVE_SERVE_TOKEN', 'GOOGLE_APPLICATION_CREDENTIALS']) expect([name, isCredentialVariable(name)]).toEqual([name, true]);
    for (const name of ['PATH', 'HOME', 'SSH_AUTH_SOCK', 'ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL', 'MAX_OUTPUT_TOKENS', 'KEYBOARD', 'GIT_AUTHOR_NAME', 'POLYWAVE_AGENT_ID']) expect([name, isCredentialVariable(name)]).toEqual([name, false]);
    expect(bashEnvironment({ ...secrets, ...plain, BASH_ENV: '/x' })).toEqual(plain);
    expect(withoutCredentials({ ...secrets, ...plain })).toEqual(plain);
  });

  for (const sandboxed of [true, false]) {
    it.skipIf(sandboxed && !available)(`a script agent's bash step sees none of them, the backend keeps them (${sandboxed ? 'sandboxed' : 'POLYWAVE_SANDBOX=off'})`, async () => {
      const setup = await worktree();
      const script = `${setup.worktree}.script.json`;
      writeFileSync(script, JSON.stringify({ version: 1, steps: [{ bash: printenv }, { bash: 'env' }] }));
      const events: AgentEvent[] = [];
      let backendKey: string | undefined;
      const inner = createScriptBackend();
      const backend: AgentBackend = { ...inner, run: async (request) => ((backendKey = request.env.OPENAI_API_KEY), inner.run(request)) };
      const result = await runAgent({
        agentId: 'A',
        role: 'wave',
        wave: 1,
        model: `script:${script}`,
        systemPrompt: 's',
        prompt: 'p',
        cwd: setup.worktree,
        branch,
        policy: { root: setup.worktree, ownedFiles: ['src/a.ts'], branch },
        env: sandboxed ? setup.env : { ...setup.env, POLYWAVE_SANDBOX: 'off' },
        backend,
        onEvent: (event) => events.push(event),
      });
      expect(result.outcome.status).toBe('finished');
      expect(result.sandbox !== undefined).toBe(sandboxed);
      expect(backendKey).toBe(secrets.OPENAI_API_KEY);
      const [printed, env] = bashOutputs(events);
      expect(printed).toBe('rc=1\n[exit status 0]');
      for (const value of Object.values(secrets)) expect(env).not.toContain(value);
      expect(env).toContain('PLAIN_MARKER=visible-0009\n');
      expect(env).toContain(`ANTHROPIC_BASE_URL=${plain.ANTHROPIC_BASE_URL}\n`);
    }, 60_000);
  }

  it('ai-sdk: the key reaches the model endpoint, not the bash tool the model calls', async () => {
    const setup = await worktree();
    const server = await startOpenAiLoopback((body) => (toolResults(body).length === 0 ? { toolCalls: [{ name: 'bash', arguments: { command: printenv } }] } : { text: 'done' }));
    try {
      const result = await runAgent({
        agentId: 'A',
        role: 'wave',
        wave: 1,
        model: `openai-compatible:${server.baseURL}#m`,
        systemPrompt: 's',
        prompt: 'p',
        cwd: setup.worktree,
        branch,
        policy: { root: setup.worktree, ownedFiles: ['src/a.ts'], branch },
        env: { ...setup.env, POLYWAVE_AI_MAX_RETRIES: '0' },
        ...(available ? {} : { unsafeNoSandbox: true }),
      });
      expect(result.outcome.status).toBe('finished');
      expect(server.headers.map((headers) => headers.authorization)).toEqual([`Bearer ${secrets.OPENAI_API_KEY}`, `Bearer ${secrets.OPENAI_API_KEY}`]);
      expect(messageText(toolResults(server.requests[1]!)[0])).toBe('rc=1\n[exit status 0]');
    } finally {
      await server.close();
    }
  }, 60_000);
});
