import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCliBackend } from '../src/agents/backends/cli.js';
import { resetSandbox, sandboxStatus } from '../src/agents/sandbox/index.js';
import { functionCallOutputs, loopbackKeyVariable, startResponsesLoopback, writeCodexConfig } from './support/openai-responses-loopback.js';
import {
  branchState,
  cliReportCommand,
  createEscapeLayout,
  escapeAttempts,
  escapeBranch,
  escapeRequest,
  escapeSnapshot,
  expectNoEscapes,
  heartbeats,
  ownedContent,
  uncontainedAttempts,
  type EscapeLayout,
} from './support/sandbox-escapes.js';

/**
 * The cli backend inside the OS sandbox with the REAL `codex` CLI (@openai/codex 0.169, `codex exec
 * --json`), offline against a loopback Responses API (a custom provider in a temporary CODEX_HOME,
 * reached through the sandbox's proxy). The scripted model makes codex try every escape of
 * test/support/sandbox-escapes.ts with its own `exec_command` tool, then do its legitimate work;
 * asserted on the file system and git after the run and after a pause: 0 escapes. A second run
 * changes a file the agent does not own: the agent fails, nothing of it is committed.
 */

const codexScript = (() => {
  try {
    return createRequire(import.meta.url).resolve('@openai/codex/bin/codex.js');
  } catch {
    return undefined;
  }
})();
const status = await sandboxStatus();
const skipReason = !status.available ? `the OS sandbox is unavailable here (${status.detail})` : codexScript === undefined ? '@openai/codex is not installed' : undefined;

afterAll(async () => {
  await resetSandbox();
});

/** Runs codex as agent A with a scripted model that runs `commands` one per turn, then says "Done.". */
async function runCodex(layout: EscapeLayout, commands: readonly string[]) {
  const api = await startResponsesLoopback((body) => {
    const done = functionCallOutputs(body).length;
    const cmd = commands[done];
    return cmd !== undefined ? { calls: [{ name: 'exec_command', arguments: { cmd, login: false, yield_time_ms: 10_000 }, callId: `call_${done}` }] } : { text: 'Done.' };
  });
  try {
    const codexHome = path.join(layout.agentHome, '.codex');
    writeCodexConfig(codexHome, api.baseURL);
    const { request, record } = await escapeRequest(layout, { backend: 'cli', command: 'codex', raw: 'cli:codex' }, { POLYWAVE_CODEX_BIN: codexScript, CODEX_HOME: codexHome, [loopbackKeyVariable]: 'test' });
    const outcome = await createCliBackend().run(request);
    return { outcome, record, requests: api.requests.length, unexpected: [...api.unexpected] };
  } finally {
    await api.close();
  }
}

describe.skipIf(skipReason !== undefined)(`cli backend, sandboxed: the real codex CLI${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it('every escape attempt is contained; the owned change lands on the agent branch, committed by the orchestrator', async () => {
    const layout = await createEscapeLayout();
    const attempts = escapeAttempts(layout);
    const commands = [
      ...attempts.map((attempt) => attempt.command),
      `printf '${ownedContent.trim()}\\n' > src/a.ts; echo wrote`,
      'git add src/a.ts && git commit -m "A: inside the sandbox"; echo exit=$?',
      cliReportCommand,
    ];
    const before = await escapeSnapshot(layout);
    const { outcome, record, requests, unexpected } = await runCodex(layout, commands);

    expect(outcome.failure).toBeUndefined();
    expect(outcome.status).toBe('finished');
    expect(outcome.text).toBe('Done.');
    expect(unexpected).toEqual([]);
    expect(requests).toBe(commands.length + 1);
    // codex journals its commands as item_N, in the order they ran: attempt i is the i-th bash call.
    const bashCalls = record.uses.filter((use) => use.tool === 'bash').map((use) => use.toolCallId);
    expect(bashCalls).toHaveLength(commands.length);
    expect(uncontainedAttempts(attempts, record, (index) => bashCalls[index])).toEqual([]);
    expect(record.results.find((result) => result.toolCallId === bashCalls[attempts.length + 1])?.output).toMatch(/Read-only file system[\s\S]*exit=128|exit=128[\s\S]*Read-only file system/); // stdout and stderr interleave either way
    const codes = outcome.denials.map((denial) => denial.code);
    expect(codes.filter((code) => code === 'SANDBOX_WRITE_DENIED').length).toBeGreaterThanOrEqual(12);
    expect(codes).toContain('SANDBOX_NETWORK_DENIED');

    // The set -m job got to run (its heartbeat exists); expectNoEscapes checks that it stopped with the agent.
    expect(Object.keys(heartbeats(layout))).toContain('heartbeat-1');
    await expectNoEscapes(layout, before, 'feat(A): a = 2');
    const tip = (await layout.repo.run(['rev-parse', escapeBranch])).trim();
    expect(record.reports).toEqual([{ status: 'complete', files_changed: ['src/a.ts'], verification: 'PASS (scripted)', notes: 'sandboxed run', commit: tip, branch: escapeBranch, worktree: layout.worktree }]);
    // codex kept its state in the agent's private home.
    expect(existsSync(path.join(layout.agentHome, '.codex', 'sessions'))).toBe(true);
  }, 120_000);

  it('an unowned change fails the agent and nothing of it is committed', async () => {
    const layout = await createEscapeLayout();
    const { outcome, record } = await runCodex(layout, [`printf '${ownedContent.trim()}\\n' > src/a.ts`, "printf 'export const b = 666;\\n' > src/b.ts", cliReportCommand]);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('fatal');
    expect(outcome.failure?.message).toMatch(/^ownership violation: .*src\/b\.ts/);
    expect(outcome.denials).toContainEqual(expect.objectContaining({ tool: 'audit', code: 'JAIL_UNOWNED_CHANGE', target: 'src/b.ts' }));
    expect((await branchState(layout)).commits).toEqual([]);
    expect((await layout.repo.run(['rev-parse', escapeBranch])).trim()).toBe(layout.baseCommit);
    expect(record.uses.some((use) => use.tool === 'git_commit')).toBe(false);
    expect(record.reports).toEqual([]);
  }, 60_000);
});
