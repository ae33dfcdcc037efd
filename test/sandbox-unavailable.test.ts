/**
 * Issue 11, "What it must show" 3: where the OS sandbox cannot run (simulated with
 * `POLYWAVE_SANDBOX=off`; see src/sandbox/sandbox-status.ts), model-backed agents refuse to
 * start with the coded error SANDBOX_UNAVAILABLE (exit 2, the packages to install named, nothing
 * created); `--unsafe-no-sandbox` lets them run after ONE warning line on stderr; script agents
 * (tests, the demo) still run, with a notice; verify-install reports the sandbox status.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentSpecVersion, emptyUsage, type AgentBackend, type AgentEvent, type AgentRunRequest } from '../src/agents/contract.js';
import { decideAgentSandbox, runAgent } from '../src/agents/run-agent.js';
import { createAgentTools, runToolCall, toolRunContext } from '../src/agents/tools/index.js';
import { resetSandbox, sandboxStatus, sandboxUnavailableMessage } from '../src/sandbox/index.js';
import { journalPaths } from '../src/engine/journal.js';
import { runCli } from './support/cli.js';
import { expectCodedError, parseStdoutJson } from './support/cli-assert.js';
import { createTestRepo } from './support/git-repo.js';

const off = { POLYWAVE_SANDBOX: 'off' };

afterAll(async () => {
  await resetSandbox();
});

function soloImpl(): string {
  return [
    'title: One letter',
    'feature_slug: letter',
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    '    - file: src/a.ts',
    '      agent: A',
    '      wave: 1',
    '      action: new',
    '    - file: src/a.test.ts',
    '      agent: A',
    '      wave: 1',
    '      action: new',
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const a: string"',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    '        - id: A',
    '          task: Implement src/a.ts with a test.',
    '          files:',
    '            - src/a.ts',
    '            - src/a.test.ts',
    '',
  ].join('\n');
}

function writeScript(): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-unavailable-')), 'agent.yaml');
  writeFileSync(
    file,
    ['version: 1', 'steps:', '  - write: { path: src/a.ts, content: "export const a = \'a\';\\n" }', '  - write: { path: src/a.test.ts, content: "import { a } from \'./a\';\\nif (a !== \'a\') throw new Error(\'bad\');\\n" }', '  - bash: "git status --short"', '  - commit: "feat(A): a"', '  - report: { status: complete, verification: PASS, notes: "done" }', ''].join('\n'),
  );
  return file;
}

describe('the status and the decision', () => {
  it('POLYWAVE_SANDBOX=off: unavailable, mechanism none, says why', async () => {
    const status = await sandboxStatus({ env: off });
    expect(status).toEqual({ available: false, mechanism: 'none', missing: [], detail: 'disabled by POLYWAVE_SANDBOX=off' });
  });

  it('the refusal names the Debian packages to install', () => {
    expect(sandboxUnavailableMessage({ available: false, mechanism: 'none', missing: ['bubblewrap', 'socat'], detail: 'bubblewrap (bwrap) not installed; socat not installed' })).toContain('apt-get install bubblewrap socat');
    expect(sandboxUnavailableMessage({ available: false, mechanism: 'none', missing: [], detail: 'x' })).toContain('apt-get install bubblewrap socat ripgrep');
  });

  it.each(['ai-sdk', 'claude-code', 'cli'] as const)('a %s agent refuses (SANDBOX_UNAVAILABLE, exit 2); a script agent runs unsandboxed', async (backend) => {
    await expect(decideAgentSandbox({ backend, env: off })).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE', exitCode: 2, message: expect.stringContaining('--unsafe-no-sandbox') });
    expect(await decideAgentSandbox({ backend, env: off, unsafeNoSandbox: true })).toMatchObject({ sandboxed: false, reason: 'unsafe-no-sandbox' });
    expect(await decideAgentSandbox({ backend: 'script', env: off })).toMatchObject({ sandboxed: false, reason: 'unavailable-script' });
  });
});

describe('runAgent', () => {
  it('a model-backed agent refuses before anything is created', async () => {
    const repo = await createTestRepo();
    const before = await repo.run(['status', '--porcelain', '--ignored']);
    await expect(
      runAgent({ agentId: 'A', role: 'wave', model: 'anthropic:claude-sonnet-4-5', systemPrompt: 's', prompt: 'p', cwd: repo.dir, policy: { root: repo.dir, ownedFiles: [] }, env: { ...repo.env, ...off } }),
    ).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE', exitCode: 2 });
    expect(await repo.run(['status', '--porcelain', '--ignored'])).toBe(before);
  });

  it('unsafeNoSandbox: the model-backed agent runs, with one warning event and the static checks only', async () => {
    const repo = await createTestRepo();
    const events: AgentEvent[] = [];
    let seen: AgentRunRequest | undefined;
    // Stands in for the AI SDK loop: the real contract, one write through the real tools.
    const backend: AgentBackend = {
      specVersion: agentSpecVersion,
      name: 'ai-sdk',
      async run(request) {
        seen = request;
        const { context, observer } = toolRunContext(request, request.onEvent, []);
        const write = createAgentTools({ include: ['write_file'] })[0]!;
        const result = await runToolCall(write, { path: 'src/a.ts', content: "export const a = 'a';\n" }, context, observer, 'write-1');
        return { status: result.isError ? 'failed' : 'finished', text: result.output, turns: 1, usage: emptyUsage(), durationMs: 0, denials: [] };
      },
    };
    const result = await runAgent({
      agentId: 'A',
      role: 'wave',
      model: 'anthropic:claude-sonnet-4-5',
      systemPrompt: 's',
      prompt: 'p',
      cwd: repo.dir,
      policy: { root: repo.dir, ownedFiles: ['src/a.ts'] },
      env: { ...repo.env, ...off },
      backend,
      unsafeNoSandbox: true,
      onEvent: (event) => events.push(event),
    });
    expect(result.outcome.status, JSON.stringify(result.outcome)).toBe('finished');
    expect(result.sandbox).toBeUndefined();
    expect(seen?.sandbox).toBeUndefined();
    expect(seen?.toolExecutor).toBeUndefined();
    expect(events.filter((event) => event.type === 'agent-log' && event.level === 'warn' && event.message.startsWith('UNSAFE'))).toHaveLength(1);
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toContain("'a'");
  });

  it('unsafeNoSandbox: a journal swapped for a symlink is not written through, and the refusal is said (agent log, denials)', async () => {
    const repo = await createTestRepo();
    const outside = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-journal-')), 'bashrc');
    writeFileSync(outside, 'echo original\n');
    const journal = journalPaths(repo.dir, 'solo', 1, 'A');
    const events: AgentEvent[] = [];
    const backend: AgentBackend = {
      specVersion: agentSpecVersion,
      name: 'ai-sdk',
      async run(request) {
        request.recorder!.recordToolUse({ toolCallId: 'c1', tool: 'bash', input: { command: 'true' } });
        // What an unsandboxed agent can do to its own journal: replace it with a link out.
        rmSync(journal.index, { force: true });
        symlinkSync(outside, journal.index);
        request.recorder!.recordToolResult({ toolCallId: 'c1', tool: 'bash', output: '$(touch PWNED)', isError: false });
        return { status: 'finished', text: '', turns: 1, usage: emptyUsage(), durationMs: 0, denials: [] };
      },
    };
    const result = await runAgent({ agentId: 'A', role: 'wave', model: 'anthropic:claude-sonnet-4-5', systemPrompt: 's', prompt: 'p', cwd: repo.dir, policy: { root: repo.dir, ownedFiles: [] }, env: { ...repo.env, ...off }, backend, unsafeNoSandbox: true, journal, onEvent: (event) => events.push(event) });
    expect(result.outcome.status).toBe('finished');
    expect(readFileSync(outside, 'utf8')).toBe('echo original\n');
    expect(events.some((event) => event.type === 'agent-log' && event.level === 'warn' && event.message.startsWith('JOURNAL_WRITE_REFUSED'))).toBe(true);
    expect(readFileSync(path.join(journal.dir, 'denials.jsonl'), 'utf8')).toContain('"code":"JOURNAL_WRITE_REFUSED"');
  });
});

describe('the CLI', () => {
  it('run-wave with a model-backed agent: error[SANDBOX_UNAVAILABLE], exit 2, nothing created', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letter.yaml': soloImpl() } });
    const implPath = repo.path('docs/IMPL/IMPL-letter.yaml');
    const manifestBefore = readFileSync(implPath, 'utf8');
    // A key is set (never used): the refusal under test is the sandbox's, not the credentials check's.
    const result = await runCli(['run-wave', implPath, '--wave', '1', '--model', 'anthropic:claude-sonnet-4-5', '--skip-critic'], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), ...off, ANTHROPIC_API_KEY: 'sk-test-never-sent' } });
    const { message } = expectCodedError(result, { exitCode: 2, code: 'SANDBOX_UNAVAILABLE' });
    expect(message).toContain('apt-get install bubblewrap socat ripgrep');
    expect(message).toContain('--unsafe-no-sandbox');
    expect(result.stdout).toBe('');
    expect(readFileSync(implPath, 'utf8')).toBe(manifestBefore);
    expect(await repo.git.worktreeList()).toHaveLength(1);
    expect(existsSync(repo.path('.polywave-state'))).toBe(false);
  }, 120_000);

  it('run-scout with a model-backed agent: the same refusal, before the Scout writes anything', async () => {
    const repo = await createTestRepo();
    const head = await repo.git.headCommit();
    const result = await runCli(['run-scout', 'add a letter', '--model', 'openai:gpt-5', '--no-critic'], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), ...off, OPENAI_API_KEY: 'sk-test-never-sent' } });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n').at(-1)).toMatch(/^polywave: error\[SANDBOX_UNAVAILABLE\]: .*apt-get install bubblewrap socat ripgrep/);
    expect(await repo.run(['status', '--porcelain'])).toBe('');
    expect(await repo.git.headCommit()).toBe(head);
  }, 120_000);

  it('run-wave --unsafe-no-sandbox: one warning line, and the wave runs (script agent, unsandboxed)', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letter.yaml': soloImpl() } });
    const implPath = repo.path('docs/IMPL/IMPL-letter.yaml');
    const result = await runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${writeScript()}`, '--skip-critic', '--unsafe-no-sandbox'], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), ...off }, timeoutMs: 180_000 });
    expect(result.code, result.stderr).toBe(0);
    const warnings = result.stderr.split('\n').filter((line) => line.includes('--unsafe-no-sandbox'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^polywave: WARNING: --unsafe-no-sandbox: agents run WITHOUT the OS sandbox/);
    expect(parseStdoutJson<{ success: boolean; state: string }>(result)).toMatchObject({ success: true, state: 'WAVE_VERIFIED' });
  }, 240_000);

  it('verify-install reports the sandbox: available here, unavailable with POLYWAVE_SANDBOX=off (the verdict does not change)', async () => {
    const repo = await createTestRepo();
    type Report = { verdict: string; sandbox: { available: boolean; mechanism: string; missing: string[]; detail: string } };
    const here = parseStdoutJson<Report>(await runCli(['verify-install'], { cwd: repo.dir, env: repo.env as Record<string, string> }));
    const status = await sandboxStatus();
    expect(here.sandbox).toEqual(status);
    const without = parseStdoutJson<Report>(await runCli(['verify-install'], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), ...off } }));
    expect(without.sandbox).toEqual({ available: false, mechanism: 'none', missing: [], detail: 'disabled by POLYWAVE_SANDBOX=off' });
    expect(without.verdict).toBe(here.verdict);
    const human = await runCli(['verify-install', '--human'], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), ...off } });
    expect(human.stdout).toContain('Sandbox: UNAVAILABLE');
    expect(human.stdout).toContain('apt-get install bubblewrap socat ripgrep');
  }, 120_000);

  it.runIf(process.platform === 'linux')('verify-install on a PATH without bubblewrap, socat and ripgrep: unavailable, the three Debian packages named (the check runs in the sandbox host)', async () => {
    const repo = await createTestRepo();
    // A bin directory with what polywave itself needs (git, node, a shell, which) and none of the three.
    const bin = repo.sibling('bin-without-sandbox');
    mkdirSync(bin, { recursive: true });
    for (const name of ['git', 'which', 'sh', 'bash', 'node', 'env']) {
      const found = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
      symlinkSync(found, path.join(bin, name));
    }
    type Report = { sandbox: { available: boolean; mechanism: string; missing: string[]; detail: string } };
    const report = parseStdoutJson<Report>(await runCli(['verify-install'], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), PATH: bin } }));
    expect(report.sandbox.available).toBe(false);
    expect(report.sandbox.mechanism).toBe('none');
    expect([...report.sandbox.missing].sort()).toEqual(['bubblewrap', 'ripgrep', 'socat']);
    expect(report.sandbox.detail).toMatch(/bwrap/);
  }, 120_000);

  // `polywave demo` without the sandbox (it runs and says so): test/demo.test.ts, whose one demo run a day alternates
  // between the sandbox as available and POLYWAVE_SANDBOX=off.
});
