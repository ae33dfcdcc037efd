/**
 * Issue 11 (h11c's open finding, h11e): a `cli:claude` agent that kills its own PreToolUse hook. The whole CLI runs in one
 * sandbox; before each tool call its hook asks polywave's gate (outside) whether the sandbox's view is still current. A
 * job an earlier Bash call left behind (`setsid`) sees the sandbox's processes and can SIGKILL a hook. Claude Code takes
 * a hook that dies for a non-blocking error and, under `--permission-mode bypassPermissions`, ran the call unchecked.
 * Now the CLI runs in `dontAsk` and the gate's pass is an explicit `permissionDecision: allow` (the hook's `--allow-json`):
 * a call whose hook died is refused by the CLI's own permission layer — fail closed.
 *
 * Deterministic, with the real `claude` CLI and a loopback Messages API: the arguments the cli backend gives the CLI
 * are recorded (a wrapper in front of the real binary), then the CLI is run with exactly those arguments, its hook
 * replaced by one that SIGKILLs itself — as the agent's job would — and a Bash call must not run. The same arguments with
 * the gate's own hook run a call (the gate passes it).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCliBackend } from '../src/agents/backends/cli.js';
import type { ModelSpec } from '../src/agents/contract.js';
import { resetSandbox, sandboxStatus } from '../src/agents/sandbox/index.js';
import { startAnthropicLoopback, toolResults } from './support/anthropic-loopback.js';
import { createEscapeLayout, escapeRequest } from './support/sandbox-escapes.js';

const require = createRequire(import.meta.url);
const resolved = (id: string): string | undefined => {
  try {
    return require.resolve(id);
  } catch {
    return undefined;
  }
};
const claudeBinary = resolved(`@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`);
const status = await sandboxStatus();
const skipReason = !status.available ? `the OS sandbox is unavailable here (${status.detail})` : claudeBinary === undefined ? 'the Claude Code native binary package is not installed' : undefined;

afterAll(async () => {
  await resetSandbox();
});

const claudeModel: ModelSpec = { backend: 'cli', command: 'claude', modelId: 'claude-sonnet-4-5', raw: 'cli:claude:claude-sonnet-4-5' };

/** Runs the real claude CLI with `args` (outside any sandbox) against a loopback whose model makes one Bash call; true when the call ran. */
async function bashRan(args: readonly string[], dir: string): Promise<boolean> {
  const marker = path.join(dir, `ran-${Date.now()}-${Math.random().toString(16).slice(2)}`);
  const api = await startAnthropicLoopback((body) => (toolResults(body).length === 0 ? { toolUses: [{ id: 'toolu_1', name: 'Bash', input: { command: `touch ${marker}` } }] } : { text: 'Done.' }));
  try {
    const home = mkdtempSync(path.join(dir, 'home-'));
    await new Promise<void>((resolve) => {
      const child = spawn(claudeBinary!, args, { cwd: dir, env: { PATH: process.env.PATH!, HOME: home, IS_SANDBOX: '1', ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' }, stdio: ['pipe', 'ignore', 'ignore'] });
      child.stdin.end('go');
      child.on('close', () => resolve());
    });
    return existsSync(marker);
  } finally {
    await api.close();
  }
}

describe.skipIf(skipReason !== undefined)(`a cli:claude agent that kills its own gate hook (issue 11)${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it('a call whose hook died is refused by the CLI: the backend runs it in dontAsk and the gate answers with an explicit allow', async () => {
    const layout = await createEscapeLayout();
    // the wrapper records the arguments the backend gives the CLI, then runs the real one
    const argsFile = path.join(layout.worktree, '.claude-args.json');
    const wrapper = path.join(layout.worktree, 'claude-wrapper.cjs');
    writeFileSync(wrapper, `#!/usr/bin/env node\nrequire('fs').writeFileSync(${JSON.stringify(argsFile)}, JSON.stringify(process.argv.slice(2)));\nconst r = require('child_process').spawnSync(${JSON.stringify(claudeBinary)}, process.argv.slice(2), { stdio: 'inherit' });\nprocess.exit(r.status ?? 1);\n`);
    chmodSync(wrapper, 0o755);
    const api = await startAnthropicLoopback(() => ({ text: 'Done.' }));
    try {
      const { request } = await escapeRequest(layout, claudeModel, { POLYWAVE_CLAUDE_BIN: wrapper, ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' });
      await createCliBackend().run(request);
    } finally {
      await api.close();
    }
    const args = JSON.parse(readFileSync(argsFile, 'utf8')) as string[];
    const settingsAt = args.indexOf('--settings');
    expect(settingsAt).toBeGreaterThan(0);
    const settings = JSON.parse(args[settingsAt + 1]!) as { hooks: { PreToolUse: Array<{ hooks: Array<{ command: string }> }> } };
    expect(settings.hooks.PreToolUse[0]!.hooks[0]!.command).toMatch(/ --allow-json$/);

    const scratch = mkdtempSync(path.join(layout.outside, 'claude-'));
    mkdirSync(scratch, { recursive: true });
    const withHook = (body: string): string[] => {
      const hook = path.join(scratch, `hook-${Math.random().toString(16).slice(2)}.sh`);
      writeFileSync(hook, `#!/bin/bash\ncat >/dev/null\n${body}\n`, { mode: 0o755 });
      const changed = [...args];
      changed[settingsAt + 1] = JSON.stringify({ hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: hook, timeout: 30 }] }] } });
      return changed;
    };
    // the agent's job SIGKILLs the hook: the call must not run
    expect(await bashRan(withHook('kill -9 $$'), scratch)).toBe(false);
    // the hook never started (a spawn failure: what is left is the hook's exit without an answer)
    expect(await bashRan(withHook('exit 1'), scratch)).toBe(false);
    // the gate's pass: the same arguments, the hook's answer after a clean check — the call runs
    expect(await bashRan(withHook(`printf '%s\\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'`), scratch)).toBe(true);
  }, 300_000);
});
