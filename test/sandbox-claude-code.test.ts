import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { completionToolName, createClaudeCodeBackend, gitCommitToolName } from '../src/agents/backends/claude-code.js';
import type { ModelSpec } from '../src/agents/contract.js';
import { resetSandbox, sandboxStatus } from '../src/agents/sandbox/index.js';
import { startAnthropicLoopback, toolResults, userText, type LoopbackToolUse, type MessagesRequestBody } from './support/anthropic-loopback.js';
import {
  computedNodeAttempts,
  containedPattern,
  createEscapeLayout,
  escapeAttempts,
  escapeBranch,
  escapeRequest,
  escapeSnapshot,
  expectNoEscapes,
  ownedContent,
  type EscapeAttempt,
} from './support/sandbox-escapes.js';

/**
 * The claude-code backend with the OS sandbox on, end to end and offline: the real Claude Code
 * (the Agent SDK's native binary) against a loopback Messages API. Its Bash runs in Claude Code's
 * own sandbox configured from the agent's plan; its file tools stay behind the PreToolUse jail;
 * commits go through the `git_commit` MCP tool (outside the sandbox). The scripted model tries
 * every escape of test/support/sandbox-escapes.ts (and computed node variants the static check
 * cannot see into) with Bash, the file tools on the main checkout, its git metadata and another
 * worktree, and a background Bash; then does its legitimate work. Each attempt is either refused
 * by the jail before it runs (a JAIL_* denial) or contained by the sandbox (its output shows the
 * refusal, a SANDBOX_* denial); 0 escapes on the file system and in git, after a pause too.
 *
 * Claude Code starts its sandbox for every Bash call (seconds each on a loaded 2-core machine), so
 * the attempts the static check lets through run in a few Bash calls, each marked `### <n>`.
 */

const hasBinary = (() => {
  try {
    createRequire(import.meta.url).resolve(`@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`);
    return true;
  } catch {
    return false;
  }
})();
const status = await sandboxStatus();
const skipReason = !status.available ? `the OS sandbox is unavailable here (${status.detail})` : !hasBinary ? 'the Claude Code native binary package is not installed' : undefined;

afterAll(async () => {
  await resetSandbox();
});

const model: ModelSpec = { backend: 'claude-code', modelId: 'claude-sonnet-4-5', raw: 'claude-code:claude-sonnet-4-5' };
const claudeEnv = (baseURL: string) => ({ ANTHROPIC_BASE_URL: baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0' });
const groupSize = 7;

/** The tool_result of a tool call, as the model received it in a later request. */
function resultSeen(bodies: readonly MessagesRequestBody[], toolUseId: string) {
  for (const body of bodies) {
    const found = toolResults(body).find((result) => result.toolUseId === toolUseId);
    if (found) return found;
  }
  return undefined;
}

describe.skipIf(skipReason !== undefined)(`claude-code backend, sandboxed${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it('every attempt is refused by the jail or contained by the sandbox; the owned change is committed through git_commit', async () => {
    const layout = await createEscapeLayout();
    const attempts: EscapeAttempt[] = [...escapeAttempts(layout), ...computedNodeAttempts(layout)];
    const { request, record } = await escapeRequest(layout, model, {});

    // Attempts the static pre-check refuses never reach a shell: sent one tool call each, all in
    // one turn. The others run in the sandbox, several per Bash call.
    const refusedStatically: number[] = [];
    const reachShell: number[] = [];
    for (const [index, attempt] of attempts.entries()) ((await request.jail.checkBash(attempt.command)).allowed ? reachShell : refusedStatically).push(index);
    expect(reachShell.length).toBeGreaterThanOrEqual(12);
    const groups: number[][] = [];
    for (let start = 0; start < reachShell.length; start += groupSize) groups.push(reachShell.slice(start, start + groupSize));

    const W = layout.worktree;
    const fileAttacks: LoopbackToolUse[] = [
      { id: 'toolu_file_readme', name: 'Write', input: { file_path: path.join(layout.main, 'README.md'), content: 'PWNED' } },
      { id: 'toolu_file_hook', name: 'Write', input: { file_path: path.join(layout.main, '.git', 'hooks', 'post-merge'), content: '#!/bin/sh\ntouch /tmp/pwned\n' } },
      { id: 'toolu_file_config', name: 'Edit', input: { file_path: path.join(layout.main, '.git', 'config'), old_string: '[core]', new_string: '[core]\n\thooksPath = /tmp' } },
      { id: 'toolu_file_other', name: 'Write', input: { file_path: path.join(layout.otherWorktree, 'src', 'b.ts'), content: 'PWNED' } },
      { id: 'toolu_file_outside', name: 'Write', input: { file_path: path.join(layout.outside, 'victim.txt'), content: 'PWNED' } },
      { id: 'toolu_file_gitfile', name: 'Write', input: { file_path: path.join(W, '.git'), content: 'gitdir: /tmp\n' } },
      // New files: Claude Code's own "read it first" rule does not apply, so the hook decides.
      { id: 'toolu_new_main', name: 'Write', input: { file_path: path.join(layout.main, 'src', 'pwned.ts'), content: 'PWNED' } },
      { id: 'toolu_new_other', name: 'Write', input: { file_path: path.join(layout.otherWorktree, 'src', 'pwned.ts'), content: 'PWNED' } },
      { id: 'toolu_new_outside', name: 'Write', input: { file_path: path.join(layout.outside, 'pwned.txt'), content: 'PWNED' } },
      { id: 'toolu_new_ref', name: 'Write', input: { file_path: path.join(layout.main, '.git', 'refs', 'heads', 'evil'), content: layout.baseCommit } },
    ];
    const turns: LoopbackToolUse[][] = [
      refusedStatically.map((index) => ({ id: `toolu_attempt_${index}`, name: 'Bash', input: { command: attempts[index]!.command } })),
      ...groups.map((group, number) => [{ id: `toolu_group_${number}`, name: 'Bash', input: { command: group.map((index) => `echo '### ${index}'\n${attempts[index]!.command}`).join('\n'), timeout: 60_000 } }]),
      fileAttacks,
      [{ id: 'toolu_background', name: 'Bash', input: { command: 'while :; do date > "$TMPDIR/heartbeat-4"; sleep 0.2; done', run_in_background: true } }],
      [{ id: 'toolu_read', name: 'Read', input: { file_path: path.join(W, 'src/a.ts') } }],
      [{ id: 'toolu_write', name: 'Write', input: { file_path: path.join(W, 'src/a.ts'), content: ownedContent } }],
      [{ id: 'toolu_git_in_bash', name: 'Bash', input: { command: 'git add src/a.ts && git commit -m "A: in Bash"' } }],
      [{ id: 'toolu_git_commit', name: gitCommitToolName, input: { message: 'feat(A): a = 2' } }],
      [{ id: 'toolu_report', name: completionToolName, input: { status: 'complete', files_changed: ['src/a.ts'], verification: 'PASS' } }],
    ].filter((turn) => turn.length > 0);
    const api = await startAnthropicLoopback((body) => {
      const done = toolResults(body).length;
      let seen = 0;
      for (const turn of turns) {
        if (done === seen) return { toolUses: turn };
        seen += turn.length;
      }
      return { text: 'Done.' };
    });
    try {
      const before = await escapeSnapshot(layout);
      const outcome = await createClaudeCodeBackend().run({ ...request, env: { ...request.env, ...claudeEnv(api.baseURL) } });
      const bodies = api.requests as MessagesRequestBody[];

      expect(outcome.failure).toBeUndefined();
      expect(outcome.status).toBe('finished');
      expect(outcome.text).toBe('Done.');
      expect(api.unexpected).toEqual([]);

      const denialsById = new Map<string, string[]>();
      for (const event of record.events) if (event.type === 'tool-call-deny') denialsById.set(event.toolCallId, [...(denialsById.get(event.toolCallId) ?? []), event.denial.code]);
      const problems: string[] = [];
      // Refused by the jail before running: a JAIL_* denial, and the model was told.
      for (const index of refusedStatically) {
        const id = `toolu_attempt_${index}`;
        const codes = denialsById.get(id) ?? [];
        if (!codes.some((code) => code.startsWith('JAIL_'))) problems.push(`${attempts[index]!.name}: not refused by the jail (${codes.join(',')})`);
        if (!resultSeen(bodies, id)?.isError) problems.push(`${attempts[index]!.name}: the model was not told`);
      }
      // Contained by the sandbox: its segment of the group's output shows the refusal.
      groups.forEach((group, number) => {
        const output = resultSeen(bodies, `toolu_group_${number}`)?.text ?? '';
        for (const index of group) {
          const segment = output.split(`### ${index}\n`)[1]?.split(/\n### \d+\n/)[0];
          if (segment === undefined) problems.push(`${attempts[index]!.name}: no output`);
          // Claude Code's own sandbox gives the hidden main checkout a WRITABLE empty view (our executor remounts it
          // read-only; Claude Code's bundled sandbox-runtime takes no such option): a write there succeeds into that
          // view and vanishes — contained, which the host snapshot below checks; README.md documents it.
          else if (attempts[index]!.shows === 'refused' && !containedPattern.test(segment) && !(/the main checkout's README/.test(attempts[index]!.name) && /exit=0/.test(segment)))
            problems.push(`${attempts[index]!.name}: no refusal in ${JSON.stringify(segment.slice(0, 300))}`);
        }
      });
      // The file tools are stopped by the jail (or by Claude Code's own "read it first" rule, before the hook).
      for (const attack of fileAttacks) {
        const seen = resultSeen(bodies, attack.id!);
        if (!seen?.isError) problems.push(`${attack.name} ${String(attack.input.file_path)}: not refused (${seen?.text.slice(0, 200)})`);
      }
      expect(problems).toEqual([]);
      for (const id of ['toolu_file_hook', 'toolu_new_main', 'toolu_new_other', 'toolu_new_outside', 'toolu_new_ref']) expect(denialsById.get(id)?.[0], id).toMatch(/^JAIL_(OUTSIDE_ROOT|GIT_INTERNALS)$/);
      // No background Bash: Claude Code offers no run_in_background (CLAUDE_CODE_DISABLE_BACKGROUND_TASKS) and refuses
      // the parameter before any hook; were it offered, the PreToolUse hook would refuse it (JAIL_BASH_UNSAFE).
      expect(resultSeen(bodies, 'toolu_background')).toMatchObject({ isError: true, text: expect.stringMatching(/run_in_background/) });
      expect(JSON.stringify((bodies[0]!.tools ?? []).find((tool) => tool.name === 'Bash')?.input_schema)).not.toContain('run_in_background');
      const codes = outcome.denials.map((denial) => denial.code);
      expect(codes.filter((code) => code === 'SANDBOX_WRITE_DENIED').length).toBeGreaterThanOrEqual(groups.length);
      // The network attempts go straight at the loopback port (Claude Code's sandbox keeps 127.0.0.1 in
      // NO_PROXY): in the sandbox's own network namespace nothing listens there, so they end
      // "connection refused" (checked per attempt above) and the port on the host sees nothing (below).

      // git in Bash is read-only; the model is pointed at git_commit, which commits outside the sandbox.
      expect(resultSeen(bodies, 'toolu_git_in_bash')?.text).toMatch(/Read-only file system/);
      expect(bodies.some((body) => userText(body).includes(`[polywave sandbox]`) && userText(body).includes(gitCommitToolName))).toBe(true);
      expect(resultSeen(bodies, 'toolu_git_commit')).toMatchObject({ isError: false, text: expect.stringMatching(/^Committed [0-9a-f]{12} on polywave\/attack\/wave1-agent-A: 1 file \(src\/a\.ts\)/) });
      // commit, branch and worktree are filled from git by set_completion (the model named none of them).
      const tip = (await layout.repo.run(['rev-parse', escapeBranch])).trim();
      expect(record.reports).toEqual([{ status: 'complete', files_changed: ['src/a.ts'], verification: 'PASS', commit: tip, branch: escapeBranch, worktree: layout.worktree }]);

      // The sandbox settings reached Claude Code: the prompt says so, the tools are confined.
      const first = bodies[0]!;
      expect(JSON.stringify(first.system)).toContain('The repository metadata (.git) is read-only in Bash');
      expect((first.tools ?? []).map((tool) => tool.name)).toEqual(expect.arrayContaining([gitCommitToolName, completionToolName, 'Bash', 'Write']));

      await expectNoEscapes(layout, before, 'feat(A): a = 2');
      expect(escapeBranch).toBe('polywave/attack/wave1-agent-A');
    } finally {
      await api.close();
    }
  }, 150_000);

  it("maps Claude Code's own refusal to start without its sandbox (no bubblewrap on the agent's PATH) to SANDBOX_UNAVAILABLE", async () => {
    const layout = await createEscapeLayout();
    // A PATH with git and a shell but without bubblewrap and socat.
    const bin = path.join(layout.root, 'bin-without-bwrap');
    mkdirSync(bin);
    for (const tool of ['git', 'bash', 'sh', 'node', 'env']) {
      const found = [`/usr/bin/${tool}`, `/bin/${tool}`, process.execPath].find((candidate) => path.basename(candidate) === tool && existsSync(candidate));
      if (found) symlinkSync(found, path.join(bin, tool));
    }
    const api = await startAnthropicLoopback(() => ({ text: 'unreachable' }));
    try {
      const { request } = await escapeRequest(layout, model, { ...claudeEnv(api.baseURL), PATH: bin });
      const outcome = await createClaudeCodeBackend().run(request);
      expect(outcome.status).toBe('failed');
      expect(outcome.failure?.kind).toBe('config');
      expect(outcome.failure?.message).toMatch(/^SANDBOX_UNAVAILABLE: Claude Code could not start its sandbox here/);
      expect(api.requests).toEqual([]);
    } finally {
      await api.close();
    }
  });

  it('refuses with SANDBOX_UNAVAILABLE (config) when the plan cannot be enforced here, before Claude Code starts', async () => {
    const layout = await createEscapeLayout();
    const { request } = await escapeRequest(layout, model, { POLYWAVE_SANDBOX: 'off', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: 'test' });
    const outcome = await createClaudeCodeBackend().run(request);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('config');
    expect(outcome.failure?.message).toMatch(/^SANDBOX_UNAVAILABLE: the OS sandbox for agents is unavailable .*--unsafe-no-sandbox/);
    expect(outcome.turns).toBe(0);
  });
});
