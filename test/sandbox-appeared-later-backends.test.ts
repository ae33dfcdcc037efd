import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClaudeCodeBackend } from '../src/agents/backends/claude-code.js';
import { createCliBackend, type CliTemplate } from '../src/agents/backends/cli.js';
import type { AgentOutcome, ModelSpec } from '../src/agents/contract.js';
import { makeScratchDir, resetSandbox, sandboxStatus } from '../src/agents/sandbox/index.js';
import { startAnthropicLoopback, toolResults, type LoopbackToolUse } from './support/anthropic-loopback.js';
import { functionCallOutputs, loopbackKeyVariable, startResponsesLoopback, writeCodexConfig } from './support/openai-responses-loopback.js';
import { createEscapeLayout, escapeRequest, type EscapeLayout, type RunRecord } from './support/sandbox-escapes.js';

// Issue 11, X39-10/11: the backends that keep ONE sandbox for an agent's whole run — `claude-code` (Claude Code's own
// sandbox, its deny list fixed at the start) and `cli:claude` / `cli:codex` (the whole CLI in one bubblewrap) — must
// not let a later tool call read what appeared after the sandbox started: here a worktree added to the repository
// OUTSIDE `.claude/worktrees/` (a sibling directory, as another run or a user makes them) between two Bash calls, with
// an uncommitted `.env`. Before the fix the second call printed the secret. Now the call is refused before it runs and
// the run ends as a transient failure (SANDBOX_VIEW_STALE): the orchestrator relaunches it in a sandbox that hides it.

const require = createRequire(import.meta.url);
const resolved = (id: string): string | undefined => {
  try {
    return require.resolve(id);
  } catch {
    return undefined;
  }
};
const claudeBinary = resolved(`@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`);
const codexScript = resolved('@openai/codex/bin/codex.js');
const status = await sandboxStatus();
const skipReason = !status.available ? `the OS sandbox is unavailable here (${status.detail})` : claudeBinary === undefined ? 'the Claude Code native binary package is not installed' : undefined;

afterAll(async () => {
  await resetSandbox();
});

const secret = 'SECRET-X39-10-late-worktree';

/** Adds a worktree beside the others (outside `.claude/worktrees/`) with an uncommitted `.env`; returns its path. */
async function addLateWorktree(layout: EscapeLayout, name: string): Promise<string> {
  const late = layout.repo.sibling(name);
  await layout.repo.git.worktreeAdd({ path: late, branch: `polywave/late/${name}`, base: 'HEAD', createBranch: true });
  writeFileSync(path.join(late, '.env'), `${secret}=agent-C\n`);
  return late;
}

/**
 * A Bash command that prints `<name>/.env` beside the agent's worktree through a path computed at run time (the
 * static check refuses a literal absolute path before it reaches the sandbox; the sandbox is what must hide it).
 */
const readLate = (name: string, marker: string) => `node -e "const p=require('path');try{process.stdout.write(require('fs').readFileSync(p.join(p.dirname(process.cwd()),'${name}','.env'),'utf8'))}catch(e){console.log(e.code)}"; echo ${marker}`;

function allOutput(record: RunRecord): string {
  return record.results.map((result) => result.output).join('\n');
}

function expectEndedStale(outcome: AgentOutcome, record: RunRecord, late: string): void {
  expect(allOutput(record)).not.toContain(secret);
  expect(outcome.status).toBe('failed');
  expect(outcome.failure?.kind).toBe('transient');
  expect(outcome.failure?.message).toMatch(/^SANDBOX_VIEW_STALE: /);
  expect(outcome.failure?.message).toContain(late);
}

/**
 * Runs `scenario` again (up to 3 times in all) when its run was ended by ANOTHER path than the test's — another
 * polywave run on this machine registering a worker directory or a scratch parent meanwhile, which ends it just as
 * well (fail closed) but shows nothing of the case under test.
 */
async function withoutOtherRuns<T extends { outcome: AgentOutcome; late: string }>(scenario: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round += 1) {
    const result = await scenario();
    const message = result.outcome.failure?.message ?? '';
    if (round >= 3 || !message.startsWith('SANDBOX_VIEW_STALE: ') || message.includes(result.late)) return result;
    console.warn(`run ended by another path than the test's, again: ${message.slice(0, 300)}`);
  }
}

const claudeModel: ModelSpec = { backend: 'cli', command: 'claude', modelId: 'claude-sonnet-4-5', raw: 'cli:claude:claude-sonnet-4-5' };
const claudeCliEnv = (baseURL: string) => ({ POLYWAVE_CLAUDE_BIN: claudeBinary, ANTHROPIC_BASE_URL: baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' });

/** The model runs `steps` one per turn; the worktree `name` is added when the first call's result arrives. */
async function claudeScenario(name: string, run: (layout: EscapeLayout, baseURL: string) => Promise<{ outcome: AgentOutcome; record: RunRecord }>) {
  const layout = await createEscapeLayout();
  const late = layout.repo.sibling(name);
  const steps: LoopbackToolUse[] = [
    { id: 'toolu_first', name: 'Bash', input: { command: 'echo started' } },
    { id: 'toolu_second', name: 'Bash', input: { command: readLate(name, 'second') } },
    { id: 'toolu_third', name: 'Bash', input: { command: readLate(name, 'third') } },
  ];
  const api = await startAnthropicLoopback(async (body) => {
    const done = toolResults(body).length;
    if (done === 1 && !existsSync(late)) await addLateWorktree(layout, name);
    const step = steps[done];
    return step ? { toolUses: [step] } : { text: 'Done.' };
  });
  try {
    const { outcome, record } = await run(layout, api.baseURL);
    const sawSecond = api.requests.some((body) => toolResults(body as never).some((result) => result.toolUseId === 'toolu_second'));
    return { outcome, record, late, sawSecond };
  } finally {
    await api.close();
  }
}

describe.skipIf(skipReason !== undefined)(`paths that appear after a backend's one sandbox started (X39-10/11)${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it('claude-code: a worktree added outside .claude/worktrees/ after the start is not readable by the next Bash call; the run ends transient', async () => {
    const { outcome, record, late } = await withoutOtherRuns(() =>
      claudeScenario('wt-late-cc', async (layout, baseURL) => {
        const model: ModelSpec = { backend: 'claude-code', modelId: 'claude-sonnet-4-5', raw: 'claude-code:claude-sonnet-4-5' };
        const { request, record } = await escapeRequest(layout, model, { ANTHROPIC_BASE_URL: baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0' });
        return { outcome: await createClaudeCodeBackend().run(request), record };
      }),
    );
    expect(record.results.find((result) => result.toolCallId === 'toolu_first')?.output).toContain('started');
    expectEndedStale(outcome, record, late);
    // refused by the PreToolUse check (a SANDBOX_VIEW_STALE denial), or ended by the 500 ms check before the call came
    expect(outcome.denials.every((denial) => denial.code === 'SANDBOX_VIEW_STALE' || denial.tool !== 'Bash')).toBe(true);
    // the refused call never ran: no output of it says "second"
    expect(allOutput(record)).not.toMatch(/^second$/m);
  }, 180_000);

  it('cli:claude: a worktree added outside .claude/worktrees/ after the start is not readable by the next Bash call; the CLI is stopped, the run ends transient', async () => {
    const { outcome, record, late, sawSecond } = await withoutOtherRuns(() =>
      claudeScenario('wt-late-cli', async (layout, baseURL) => {
        const { request, record } = await escapeRequest(layout, claudeModel, claudeCliEnv(baseURL));
        return { outcome: await createCliBackend().run(request), record };
      }),
    );
    expect(record.results.find((result) => result.toolCallId === 'toolu_first')?.output).toContain('started');
    expectEndedStale(outcome, record, late);
    // the CLI never got to run the call: the model saw no result of it
    expect(sawSecond).toBe(false);
    expect(record.events.some((event) => event.type === 'agent-log' && /^sandbox gate: 1 tool calls checked/.test(event.message))).toBe(true);
  }, 180_000);

  it.skipIf(codexScript === undefined)('cli:codex: a worktree added outside .claude/worktrees/ after the start is not readable by the next command; the CLI is stopped, the run ends transient', async () => {
    const { outcome, record, late } = await withoutOtherRuns(async () => {
      const layout = await createEscapeLayout();
      const late = layout.repo.sibling('wt-late-codex');
      const commands = ['echo started', readLate('wt-late-codex', 'second'), readLate('wt-late-codex', 'third')];
      const api = await startResponsesLoopback(async (body) => {
        const done = functionCallOutputs(body).length;
        if (done === 1 && !existsSync(late)) await addLateWorktree(layout, 'wt-late-codex');
        const cmd = commands[done];
        return cmd !== undefined ? { calls: [{ name: 'exec_command', arguments: { cmd, login: false, yield_time_ms: 10_000 }, callId: `call_${done}` }] } : { text: 'Done.' };
      });
      try {
        const codexHome = path.join(layout.agentHome, '.codex');
        writeCodexConfig(codexHome, api.baseURL);
        const { request, record } = await escapeRequest(layout, { backend: 'cli', command: 'codex', raw: 'cli:codex' }, { POLYWAVE_CODEX_BIN: codexScript, CODEX_HOME: codexHome, [loopbackKeyVariable]: 'test' });
        return { outcome: await createCliBackend().run(request), record, late };
      } finally {
        await api.close();
      }
    });
    expect(allOutput(record)).toContain('started');
    expectEndedStale(outcome, record, late);
    expect(record.events.some((event) => event.type === 'agent-log' && /^sandbox gate: 1 tool calls checked/.test(event.message))).toBe(true);
  }, 180_000);

  it('cli:claude: a worktree added DURING a long Bash call ends the run while the call runs (the check between calls, every 500 ms)', async () => {
    let elapsed = 0;
    const { outcome, record, late } = await withoutOtherRuns(async () => {
      const layout = await createEscapeLayout();
      const late = layout.repo.sibling('wt-late-during');
      const steps: LoopbackToolUse[] = [
        // a loop, not one long sleep (Claude Code refuses a bare long sleep in the foreground)
        { id: 'toolu_long', name: 'Bash', input: { command: 'for i in $(seq 1 300); do sleep 0.1; done; echo slept', timeout: 120_000 } },
        { id: 'toolu_after', name: 'Bash', input: { command: readLate('wt-late-during', 'after') } },
      ];
      let added: Promise<string> | undefined;
      const api = await startAnthropicLoopback((body) => {
        const done = toolResults(body).length;
        // the worktree appears 3 s after the long call was handed out: while it runs
        if (done === 0) added ??= new Promise((resolve) => setTimeout(resolve, 3_000)).then(() => addLateWorktree(layout, 'wt-late-during'));
        const step = steps[done];
        return step ? { toolUses: [step] } : { text: 'Done.' };
      });
      try {
        const { request, record } = await escapeRequest(layout, claudeModel, claudeCliEnv(api.baseURL));
        const started = Date.now();
        const outcome = await createCliBackend().run(request);
        elapsed = Date.now() - started;
        await added;
        return { outcome, record, late };
      } finally {
        await api.close();
      }
    });
    expectEndedStale(outcome, record, late);
    // stopped during the call: long before its 30 s, and the call never finished
    expect(elapsed).toBeLessThan(25_000);
    expect(allOutput(record)).not.toContain('slept');
    expect(record.results.some((result) => result.toolCallId === 'toolu_after')).toBe(false);
  }, 180_000);
  it('cli:claude: a scratch parent another run registers inside a directory the sandbox hides whole (the user\'s home) does not end the run (h11b, relaunch cost)', async () => {
    const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
    const registry = `/tmp/polywave-scratch-${uid}/parents`;
    const dropLine = (line: string) => {
      try {
        writeFileSync(registry, readFileSync(registry, 'utf8').split('\n').filter((entry) => entry !== line).join('\n'));
      } catch {
        // no registry
      }
    };
    const { outcome, record } = await withoutOtherRuns(async () => {
      const layout = await createEscapeLayout();
      const homeTmp = path.join(layout.userHome, 'tmp');
      mkdirSync(homeTmp, { recursive: true });
      const parent = path.join(homeTmp, `polywave-scratch-${uid}`);
      expect(layout.plan.unreadable).toContain(layout.userHome);
      const steps: LoopbackToolUse[] = [
        { id: 'toolu_first', name: 'Bash', input: { command: 'echo started' } },
        { id: 'toolu_second', name: 'Bash', input: { command: 'echo second' } },
      ];
      let registered = false;
      const api = await startAnthropicLoopback(async (body) => {
        const done = toolResults(body).length;
        if (done === 1 && !registered) {
          // another run with TMPDIR=<user home>/tmp: it registers its scratch parent (hidden whole in this sandbox)
          const saved = process.env.TMPDIR;
          process.env.TMPDIR = homeTmp;
          try {
            await makeScratchDir('polywave-agent-B-');
          } finally {
            if (saved === undefined) delete process.env.TMPDIR;
            else process.env.TMPDIR = saved;
          }
          registered = true;
        }
        const step = steps[done];
        return step ? { toolUses: [step] } : { text: 'Done.' };
      });
      try {
        const { request, record } = await escapeRequest(layout, claudeModel, claudeCliEnv(api.baseURL));
        const outcome = await createCliBackend().run(request);
        expect(registered).toBe(true);
        return { outcome, record, late: parent };
      } finally {
        await api.close();
        dropLine(parent);
      }
    });
    expect(outcome.failure?.message ?? '').not.toMatch(/SANDBOX_VIEW_STALE/);
    expect(outcome.status).toBe('finished');
    expect(record.results.find((result) => result.toolCallId === 'toolu_second')?.output).toContain('second');
  }, 180_000);
  it('a custom agent_clis template (no hook): a worktree added while it runs stops it within about 0.5 s, the run ends transient (h11b)', async () => {
    let elapsed = 0;
    const { outcome, late, text } = await withoutOtherRuns(async () => {
      const layout = await createEscapeLayout();
      const late = layout.repo.sibling('wt-late-custom');
      // a CLI polywave knows nothing of: it marks its start in its own file, then polls the late worktree's .env for 20 s
      const script = [
        'cat >/dev/null',
        `p="$(dirname "$PWD")/wt-late-custom/.env"`,
        "echo 'export const a = 0;' > src/a.ts",
        'end=$((SECONDS + 20))',
        'while [ "$SECONDS" -lt "$end" ]; do if [ -r "$p" ]; then echo "seen"; fi; sleep 0.1; done',
        'echo "loop""-done"',
      ].join('\n');
      const templates: Record<string, CliTemplate> = { latecli: { command: ['bash', '-c', script], promptVia: 'stdin', format: 'text' } };
      const { request } = await escapeRequest(layout, { backend: 'cli', command: 'latecli', raw: 'cli:latecli' }, {});
      const started = Date.now();
      const running = createCliBackend({ templates }).run(request);
      let ended = false;
      void running.finally(() => (ended = true));
      const marked = () => {
        try {
          return readFileSync(path.join(layout.worktree, 'src', 'a.ts'), 'utf8').includes('a = 0');
        } catch {
          return false;
        }
      };
      while (!ended && !marked() && Date.now() - started < 60_000) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(marked()).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await addLateWorktree(layout, 'wt-late-custom');
      const outcome = await running;
      elapsed = Date.now() - started;
      return { outcome, late, text: outcome.text };
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('transient');
    expect(outcome.failure?.message).toMatch(/^SANDBOX_VIEW_STALE: /);
    expect(outcome.failure?.message).toContain(late);
    // stopped long before its 20 s loop ended
    expect(text).not.toContain('loop-done');
    expect(elapsed).toBeLessThan(15_000);
  }, 180_000);
});
