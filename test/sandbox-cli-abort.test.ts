import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { createCliBackend } from '../src/agents/backends/cli.js';
import { resetSandbox, sandboxStatus } from '../src/agents/sandbox/index.js';
import { startAnthropicLoopback, toolResults, type LoopbackReply } from './support/anthropic-loopback.js';
import { createEscapeLayout, escapeBranch, escapeRequest, heartbeats, pause } from './support/sandbox-escapes.js';

/**
 * Aborting a sandboxed CLI agent (the runner's abort or wall-clock timeout) ends every process it
 * started, its background jobs included — the sandbox's PID namespace goes down with the CLI — and
 * nothing is committed for it. The real `claude` CLI starts a heartbeat loop in the background,
 * then the model "thinks" until the abort.
 */

const claudeBinary = (() => {
  try {
    return createRequire(import.meta.url).resolve(`@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`);
  } catch {
    return undefined;
  }
})();
const status = await sandboxStatus();
const skipReason = !status.available ? `the OS sandbox is unavailable here (${status.detail})` : claudeBinary === undefined ? 'the Claude Code native binary package is not installed' : undefined;

afterAll(async () => {
  await resetSandbox();
});

describe.skipIf(skipReason !== undefined)(`cli backend, sandboxed: abort${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it('an abort ends the CLI and every process it started; nothing is committed', async () => {
    const layout = await createEscapeLayout();
    const controller = new AbortController();
    let release = () => {};
    const api = await startAnthropicLoopback((body) => {
      if (toolResults(body).length === 0) {
        const command = `printf 'export const a = 3;\\n' > src/a.ts; (while :; do date +%s%N > "$TMPDIR/heartbeat-1"; sleep 0.2; done) > /dev/null 2>&1 & disown; echo started`;
        return { toolUses: [{ id: 'toolu_bg', name: 'Bash', input: { command } }] };
      }
      // The model thinks until the abort.
      return new Promise<LoopbackReply>((resolve) => {
        release = () => resolve({ text: 'too late' });
        setTimeout(() => controller.abort(new DOMException('agent A exceeded its wall-clock limit', 'TimeoutError')), 1_000);
      });
    });
    try {
      const { request } = await escapeRequest(
        layout,
        { backend: 'cli', command: 'claude', raw: 'cli:claude' },
        { POLYWAVE_CLAUDE_BIN: claudeBinary, ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
        { signal: controller.signal },
      );
      const started = Date.now();
      const outcome = await createCliBackend().run(request);
      expect(outcome.status).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(60_000);
      // The background loop ran while the agent lived, and stopped with it.
      const beats = heartbeats(layout);
      expect(Object.keys(beats)).toEqual(['heartbeat-1']);
      await pause(1_500);
      expect(heartbeats(layout)).toEqual(beats);
      // An aborted run is not committed: the owned change stays uncommitted in the worktree.
      expect((await layout.repo.run(['rev-parse', escapeBranch])).trim()).toBe(layout.baseCommit);
      expect((await layout.repo.run(['-C', layout.worktree, 'status', '--porcelain'])).trim()).toBe('M src/a.ts');
    } finally {
      release();
      await api.close();
    }
  }, 90_000);
});
