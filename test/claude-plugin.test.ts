// vitest: own process — the Claude Agent SDK, loaded in-process here, sets process.env (CLAUDE_AGENT_SDK_VERSION, NoDefaultCurrentDirectoryInExePath).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderPluginAgents } from '../src/cli/claude-plugin-agents.js';
import { startAnthropicLoopback, toolResults, type LoopbackToolUse, type MessagesRequestBody } from './support/anthropic-loopback.js';
import { binPath, repoRoot } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

/**
 * The Claude Code plugin (claude-plugin/) loaded by the real Claude Code CLI through the Claude
 * Agent SDK (`plugins: [{type: 'local', path}]`), offline against a loopback Messages API. The
 * scripted "model" tries writes inside and outside a wave agent's ownership and worktree; the
 * plugin's PreToolUse hook (hooks/hooks.json → polywave-hook.sh → `polywave hook pre-tool-use`,
 * the CLI of this checkout) must let the owned write through and stop the others. Every
 * assertion is on the file system, the hook's own decision log and what the model was told.
 * Needs `npm run build` (the hook runs bin/polywave.js).
 */

const pluginRoot = path.join(repoRoot, 'claude-plugin');
const nativePackage = `@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}`;
function hasNativeBinary(): boolean {
  const require = createRequire(import.meta.url);
  for (const name of [nativePackage, `${nativePackage}-musl`]) {
    try {
      require.resolve(`${name}/claude`);
      return true;
    } catch {
      // next
    }
  }
  return false;
}
const noBinary = !hasNativeBinary();
const needsBinary = (title: string) => (noBinary ? `${title} — SKIPPED: the Claude Code CLI cannot start here: the native binary package ${nativePackage} is not installed (npm i without --omit=optional)` : title);

const implYaml = `title: Demo feature
feature_slug: demo
verdict: SUITABLE
state: REVIEWED
file_ownership:
    - {file: src/a.ts, agent: A, wave: 1, action: new}
    - {file: src/b.ts, agent: B, wave: 1, action: new}
waves:
    - number: 1
      agents:
        - {id: A, task: "Write src/a.ts.", files: [src/a.ts]}
        - {id: B, task: "Write src/b.ts.", files: [src/b.ts]}
`;

interface PreparedWave {
  repo: TestRepo;
  impl: string;
  worktreeA: string;
  worktreeB: string;
}

/** A real wave: IMPL committed, `polywave prepare-wave` run (worktrees, ownership records, guard). */
async function prepareRealWave(): Promise<PreparedWave> {
  const repo = await createTestRepo({ files: { 'src/base.ts': 'export const base = 1;\n', 'docs/IMPL/IMPL-demo.yaml': implYaml } });
  const impl = repo.path('docs/IMPL/IMPL-demo.yaml');
  execFileSync(process.execPath, [binPath, 'prepare-wave', impl, '--wave', '1', '--json-only'], { cwd: repo.dir, env: { ...repo.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const worktreeA = repo.path('.claude/worktrees/polywave/demo/wave1-agent-A');
  const worktreeB = repo.path('.claude/worktrees/polywave/demo/wave1-agent-B');
  expect(existsSync(path.join(worktreeA, '.polywave-ownership.json'))).toBe(true);
  return { repo, impl, worktreeA, worktreeB };
}

function sdkEnv(repo: TestRepo, baseURL: string, extra: Record<string, string> = {}): Record<string, string> {
  const home = path.join(repo.root, 'home');
  const tmp = path.join(repo.root, 'tmp');
  mkdirSync(path.join(home, '.claude'), { recursive: true });
  mkdirSync(tmp, { recursive: true });
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    TMPDIR: tmp,
    ANTHROPIC_BASE_URL: baseURL,
    ANTHROPIC_API_KEY: 'test-key',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: os.devNull,
    ...extra,
  };
}

interface HookLogLine {
  event: string;
  action: string;
  code?: string;
  reason?: string;
  tool?: string;
  target?: string;
  worktree?: string;
  agent_type?: string;
}

function readLog(file: string): HookLogLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as HookLogLine);
}

async function runSession(options: { cwd: string; env: Record<string, string>; prompt: string; plugins?: Array<{ type: 'local'; path: string }>; settingSources?: Array<'user' | 'project' | 'local'>; allowedTools?: string[] }) {
  const sdk = await import('@anthropic-ai/claude-agent-sdk');
  const messages: Array<Record<string, unknown>> = [];
  const stream = sdk.query({
    prompt: options.prompt,
    options: {
      cwd: options.cwd,
      env: options.env,
      permissionMode: 'acceptEdits',
      settingSources: options.settingSources ?? [],
      ...(options.plugins ? { plugins: options.plugins } : {}),
      ...(options.allowedTools ? { allowedTools: options.allowedTools } : {}),
      maxTurns: 12,
      model: 'claude-sonnet-4-5',
    },
  });
  try {
    for await (const message of stream) messages.push(message as unknown as Record<string, unknown>);
  } catch (error) {
    messages.push({ type: 'thrown', error: String(error) });
  }
  return messages;
}

describe('the plugin files', () => {
  it('plugin.json is the current Claude Code manifest, its version is the package version, and every hook command goes through polywave-hook.sh', () => {
    const manifest = JSON.parse(readFileSync(path.join(pluginRoot, '.claude-plugin/plugin.json'), 'utf8')) as Record<string, unknown>;
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string; files: string[] };
    expect(manifest).toMatchObject({ name: 'polywave', version: pkg.version });
    expect(typeof manifest.description).toBe('string');
    expect(pkg.files).toContain('claude-plugin');
    const hooks = JSON.parse(readFileSync(path.join(pluginRoot, 'hooks/hooks.json'), 'utf8')) as { hooks: Record<string, Array<{ matcher?: string; hooks: Array<{ type: string; command: string }> }>> };
    expect(Object.keys(hooks.hooks).sort()).toEqual(['PostToolUse', 'PreToolUse', 'SubagentStop']);
    for (const entries of Object.values(hooks.hooks)) for (const entry of entries) for (const hook of entry.hooks) expect(hook.command).toMatch(/^sh "\$\{CLAUDE_PLUGIN_ROOT\}\/hooks\/polywave-hook\.sh" (pre-tool-use|post-tool-use|subagent-stop)$/);
    expect(hooks.hooks.PreToolUse![0]!.matcher).toBe('Write|Edit|MultiEdit|NotebookEdit|Bash');
  });

  it('the agent files are exactly what our role prompts render (node scripts/build-claude-plugin.mjs)', () => {
    const rendered = renderPluginAgents();
    expect(readdirSync(path.join(pluginRoot, 'agents')).sort()).toEqual(rendered.map((agent) => agent.file).sort());
    for (const agent of rendered) expect(readFileSync(path.join(pluginRoot, 'agents', agent.file), 'utf8'), agent.file).toBe(agent.content);
    const wave = rendered.find((agent) => agent.name === 'polywave-wave-agent')!.content;
    // Load-bearing rules: ownership, the report through the CLI, no edits outside the worktree.
    expect(wave).toContain('## 1. Ownership (I1)');
    expect(wave).toContain('polywave set-completion');
    expect(wave).toMatch(/writes that resolve anywhere else — the main checkout included — are refused/);
  });

  it('every command the skill tells the orchestrator to run exists in our CLI', async () => {
    const skill = readFileSync(path.join(pluginRoot, 'skills/polywave/SKILL.md'), 'utf8');
    expect(skill).toMatch(/^---\nname: polywave\n/);
    const { commandTable } = await import('../src/cli/command-table.js');
    const known = new Set(commandTable.map((spec) => spec.name));
    const used = new Set([...skill.matchAll(/`(?:npx )?polywave ([a-z][a-z-]+)/g)].map((match) => match[1]!));
    expect(used.size).toBeGreaterThan(20);
    expect([...used].filter((name) => !known.has(name))).toEqual([]);
    for (const entry of ['scout', 'wave', 'status', 'resume', 'program', 'interview']) expect(skill).toContain(`## \`/polywave ${entry}`);
  });
});

describe.skipIf(noBinary)(needsBinary('the plugin loaded by Claude Code (Agent SDK, loopback Messages API)'), () => {
  it('a wave agent session: the owned write goes through; unowned, main-checkout, other-worktree and shell escapes are blocked by `polywave hook`', { timeout: 120_000 }, async () => {
    const { repo, worktreeA, worktreeB } = await prepareRealWave();
    const hookLog = path.join(repo.root, 'hook-log.jsonl');
    const attempts: LoopbackToolUse[] = [
      { name: 'Write', input: { file_path: path.join(worktreeA, 'src/a.ts'), content: 'export const a = 1;\n' } },
      { name: 'Write', input: { file_path: path.join(worktreeA, 'src/b.ts'), content: 'export const stolen = 1;\n' } },
      { name: 'Write', input: { file_path: repo.path('src/leak.ts'), content: 'export const leak = 1;\n' } },
      { name: 'Write', input: { file_path: path.join(worktreeB, 'src/b.ts'), content: 'export const b = 666;\n' } },
      { name: 'Bash', input: { command: `echo pwned > ${repo.path('escape.txt')}`, description: 'escape' } },
    ];
    const api = await startAnthropicLoopback((body) => {
      const done = toolResults(body).length;
      const step = attempts[done];
      return step ? { text: `Step ${done + 1}.`, toolUses: [step] } : { text: 'All done.' };
    });
    try {
      const messages = await runSession({
        cwd: worktreeA,
        env: sdkEnv(repo, api.baseURL, { POLYWAVE_HOOK_LOG: hookLog }),
        prompt: '[polywave:wave1:agent-A] IMPL=' + repo.path('docs/IMPL/IMPL-demo.yaml') + '\nImplement src/a.ts.',
        plugins: [{ type: 'local', path: pluginRoot }],
      });
      const init = messages.find((message) => message.type === 'system' && message.subtype === 'init') as { plugins?: Array<{ name: string }>; agents?: string[]; skills?: string[]; slash_commands?: string[]; plugin_errors?: unknown[] } | undefined;
      expect(init, JSON.stringify(messages.slice(-2))).toBeDefined();
      // Discovered: the plugin, its skill and its five agents.
      expect(init!.plugin_errors ?? []).toEqual([]);
      expect(init!.plugins?.map((plugin) => plugin.name)).toContain('polywave');
      expect([...(init!.skills ?? []), ...(init!.slash_commands ?? [])].some((name) => /(^|:)polywave$/.test(name))).toBe(true);
      for (const agent of ['polywave-wave-agent', 'polywave-scout', 'polywave-critic', 'polywave-integration-agent', 'polywave-scaffold-agent']) {
        expect(init!.agents?.some((name) => name === agent || name.endsWith(`:${agent}`)), `${agent} in ${JSON.stringify(init!.agents)}`).toBe(true);
      }

      // The file system: only the owned write happened.
      expect(readFileSync(path.join(worktreeA, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
      expect(existsSync(path.join(worktreeA, 'src/b.ts'))).toBe(false);
      expect(existsSync(repo.path('src/leak.ts'))).toBe(false);
      expect(existsSync(path.join(worktreeB, 'src/b.ts'))).toBe(false);
      expect(existsSync(repo.path('escape.txt'))).toBe(false);

      // The hook's polywave calls: one decision per attempt, made against the right worktree.
      const log = readLog(hookLog).filter((line) => line.event === 'pre-tool-use');
      expect(log.map((line) => [line.tool, line.action])).toEqual([['Write', 'pass'], ['Write', 'deny'], ['Write', 'deny'], ['Write', 'deny'], ['Bash', 'deny']]);
      expect(log[1]).toMatchObject({ code: 'JAIL_NOT_OWNED', worktree: worktreeA });
      expect(log[2]).toMatchObject({ code: 'JAIL_OUTSIDE_ROOT', worktree: worktreeA });
      expect(log[3]!.worktree).toBe(worktreeA);
      // What the model was told: the reasons polywave gave.
      const last = api.requests[api.requests.length - 1] as MessagesRequestBody;
      const results = toolResults(last);
      expect(results).toHaveLength(5);
      expect(results[0]!.isError).toBe(false);
      for (const result of results.slice(1)) {
        expect(result.isError).toBe(true);
        expect(result.text).toContain('[polywave E43 JAIL_');
      }
      const final = messages.find((message) => message.type === 'result') as { permission_denials?: unknown[] } | undefined;
      expect(final?.permission_denials).toHaveLength(4);
      expect(api.unexpected).toEqual([]);
    } finally {
      await api.close();
    }
  });

  it('the orchestrator launches the plugin wave agent: its write to the main checkout is blocked (E43), and it cannot stop before its commit and report (E42)', { timeout: 180_000 }, async () => {
    const { repo, impl, worktreeB } = await prepareRealWave();
    const hookLog = path.join(repo.root, 'hook-log.jsonl');
    const tag = `[polywave:wave1:agent-B] IMPL=${impl}`;
    const report = `cd ${worktreeB} && git add src/b.ts && git commit -q -m "agent B: src/b.ts" && polywave set-completion ${impl} --agent B --status complete --commit "$(git rev-parse HEAD)" --files-created src/b.ts --verification PASS`;
    const api = await startAnthropicLoopback((body) => {
      const system = JSON.stringify(body.system ?? '');
      const results = toolResults(body);
      if (system.includes('Role: Polywave Wave Agent')) {
        const text = JSON.stringify(body.messages);
        // The subagent: one forbidden write, one owned write, then stop; when E42 sends it back, commit and report.
        if (results.length === 0) return { toolUses: [{ name: 'Write', input: { file_path: repo.path('src/b.ts'), content: 'export const b = 0;\n' } }] };
        if (results.length === 1) return { toolUses: [{ name: 'Write', input: { file_path: path.join(worktreeB, 'src/b.ts'), content: 'export const b = 2;\n' } }] };
        if (text.includes('cannot stop yet') && results.length === 2) return { toolUses: [{ name: 'Bash', input: { command: report, description: 'commit and report' } }] };
        return { text: 'Agent B done.' };
      }
      if (results.length === 0) return { toolUses: [{ name: 'Agent', input: { subagent_type: 'polywave:polywave-wave-agent', description: 'wave 1 agent B', prompt: `${tag}\nWorktree: ${worktreeB}\nRead ${worktreeB}/.polywave-agent-brief.md and follow it exactly.` } }] };
      return { text: 'Wave launched and finished.' };
    });
    try {
      const binDir = path.join(repo.root, 'bin');
      mkdirSync(binDir, { recursive: true });
      writeFileSync(path.join(binDir, 'polywave'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(binPath)} "$@"\n`, { mode: 0o755 });
      const messages = await runSession({
        cwd: repo.dir,
        env: sdkEnv(repo, api.baseURL, { POLYWAVE_HOOK_LOG: hookLog, PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}` }),
        prompt: '/polywave wave --impl demo',
        plugins: [{ type: 'local', path: pluginRoot }],
        allowedTools: ['Bash', 'Agent', 'Task', 'Write', 'Edit'],
      });
      const log = readLog(hookLog);
      const summary = log.map((line) => `${line.event}:${line.tool ?? ''}:${line.action}:${line.code ?? ''}:${line.reason ?? ''}`);
      // E43: the wave agent's write into the main checkout was refused; the owned write went through.
      expect(existsSync(repo.path('src/b.ts')), summary.join('\n')).toBe(false);
      expect(log.find((line) => line.event === 'pre-tool-use' && line.target === repo.path('src/b.ts'))).toMatchObject({ action: 'deny', code: 'E43_OUTSIDE_WORKTREE' });
      expect(log.find((line) => line.event === 'pre-tool-use' && line.target === path.join(worktreeB, 'src/b.ts'))).toMatchObject({ action: 'pass', worktree: worktreeB });
      // E42: the first stop was blocked (no report, no commit), the second passed after commit + report.
      const stops = log.filter((line) => line.event === 'subagent-stop');
      expect(stops.map((line) => line.action), summary.join('\n')).toEqual(['block', 'pass']);
      expect(stops[0]!.reason).toContain('has no completion report');
      const manifest = readFileSync(impl, 'utf8');
      expect(manifest).toMatch(/completion_reports:[\s\S]*B:[\s\S]*status: complete/);
      expect(execFileSync('git', ['-C', worktreeB, 'log', '-1', '--format=%s'], { env: { ...repo.env } as NodeJS.ProcessEnv }).toString().trim()).toBe('agent B: src/b.ts');
      expect(messages.some((message) => message.type === 'result')).toBe(true);
    } finally {
      await api.close();
    }
  });
});

/** Runs `polywave hook <event>` with `payload` on stdin (a real process, as Claude Code runs it). */
async function hookCall(event: string, payload: unknown, options: { cwd: string; env?: Record<string, string> }) {
  const { runCli } = await import('./support/cli.js');
  const result = await runCli(['hook', event], { cwd: options.cwd, input: typeof payload === 'string' ? payload : JSON.stringify(payload), ...(options.env ? { env: options.env } : {}) });
  return { ...result, json: result.stdout.trim() === '' ? undefined : (JSON.parse(result.stdout) as { hookSpecificOutput?: { permissionDecision: string; permissionDecisionReason: string }; decision?: string; reason?: string; systemMessage?: string }) };
}

describe('polywave hook, attacked from outside (real processes, a real prepared wave)', () => {
  it('hostile payloads and paths: bad JSON and unknown events fail closed (exit 2); symlinks, .., missing fields, a broken ownership record are denied', { timeout: 60_000 }, async () => {
    const { repo, worktreeA } = await prepareRealWave();
    const garbage = await hookCall('pre-tool-use', 'not json', { cwd: worktreeA });
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toMatch(/^polywave: error\[X001_INVALID_INPUT\]: hook:/);
    expect((await hookCall('pre-tool-use', '[1,2]', { cwd: worktreeA })).code).toBe(2);
    expect((await hookCall('session-start', {}, { cwd: worktreeA })).code).toBe(2);

    const write = (filePath: unknown) => ({ hook_event_name: 'PreToolUse', tool_name: 'Write', tool_input: { file_path: filePath, content: 'x' }, cwd: worktreeA });
    const denied = async (payload: unknown) => (await hookCall('pre-tool-use', payload, { cwd: worktreeA })).json?.hookSpecificOutput?.permissionDecision;
    symlinkSync(repo.path('src'), path.join(worktreeA, 'src-link'));
    expect(await denied(write(path.join(worktreeA, 'src-link/base.ts')))).toBe('deny'); // symlink into the main checkout
    expect(await denied(write(`${worktreeA}/src/../../../../../src/base.ts`))).toBe('deny'); // .. out of the worktree
    expect(await denied(write('src/../.git/config'))).toBe('deny');
    expect(await denied(write(42))).toBe('deny'); // no usable path: fail closed
    expect(await denied({ tool_name: 'Bash', tool_input: { command: 'cd / && rm -rf tmp' }, cwd: worktreeA })).toBe('deny');
    expect(await denied({ tool_name: 'Bash', tool_input: { command: 'git stash' }, cwd: worktreeA })).toBe('deny');
    expect(await denied(write('src/a.ts'))).toBeUndefined(); // relative to the session cwd, owned: no objection
    // Tools the hook has no say on.
    expect(await denied({ tool_name: 'Read', tool_input: { file_path: '/etc/passwd' }, cwd: worktreeA })).toBeUndefined();

    writeFileSync(path.join(worktreeA, '.polywave-ownership.json'), '{ broken');
    const broken = await hookCall('pre-tool-use', write('src/a.ts'), { cwd: worktreeA });
    expect(broken.json?.hookSpecificOutput?.permissionDecisionReason).toContain('cannot be read');
  });

  it('outside an agent worktree: the main session is left alone, a Scout writes only its IMPL (I6), a critic writes nothing', async () => {
    const { repo } = await prepareRealWave();
    const call = (payload: Record<string, unknown>) => hookCall('pre-tool-use', { cwd: repo.dir, ...payload }, { cwd: repo.dir });
    expect((await call({ tool_name: 'Write', tool_input: { file_path: repo.path('notes.md'), content: 'x' } })).stdout).toBe('');
    expect((await call({ agent_type: 'polywave:polywave-scout', tool_name: 'Write', tool_input: { file_path: repo.path('docs/IMPL/IMPL-next.yaml'), content: 'x' } })).stdout).toBe('');
    const scout = await call({ agent_type: 'polywave-scout', tool_name: 'Edit', tool_input: { file_path: repo.path('src/base.ts'), old_string: 'a', new_string: 'b' } });
    expect(scout.json?.hookSpecificOutput?.permissionDecisionReason).toContain('[polywave I6]');
    const elsewhere = await call({ agent_type: 'polywave-scout', tool_name: 'Write', tool_input: { file_path: path.join(os.tmpdir(), 'docs/IMPL/IMPL-x.yaml'), content: 'x' } });
    expect(elsewhere.json?.hookSpecificOutput?.permissionDecision).toBe('deny');
    const critic = await call({ agent_type: 'polywave:polywave-critic', tool_name: 'Write', tool_input: { file_path: repo.path('docs/IMPL/IMPL-demo.yaml'), content: 'x' } });
    expect(critic.json?.hookSpecificOutput?.permissionDecision).toBe('deny');
  });

  it('post-tool-use (E16): a valid IMPL write passes silently, an invalid one is sent back with its errors; other files are ignored', async () => {
    const { repo, impl } = await prepareRealWave();
    const payload = { hook_event_name: 'PostToolUse', tool_name: 'Write', tool_input: { file_path: impl }, cwd: repo.dir };
    expect((await hookCall('post-tool-use', payload, { cwd: repo.dir })).stdout).toBe('');
    writeFileSync(impl, readFileSync(impl, 'utf8').replace('id: B,', 'id: b,'));
    const blocked = await hookCall('post-tool-use', payload, { cwd: repo.dir });
    expect(blocked.code).toBe(0);
    expect(blocked.json?.decision).toBe('block');
    expect(blocked.json?.reason).toMatch(/\[polywave E16\] .*IMPL-demo\.yaml does not validate/);
    expect(blocked.json?.reason).toContain('V009');
    expect((await hookCall('post-tool-use', { ...payload, tool_input: { file_path: repo.path('src/base.ts') } }, { cwd: repo.dir })).stdout).toBe('');
  });

  it('subagent-stop (E42/E48): untagged strangers pass; an untagged polywave agent, a critic without a committed review, a wave agent without report are blocked', async () => {
    const { repo, impl } = await prepareRealWave();
    const transcript = (text: string) => {
      const file = path.join(repo.root, `transcript-${Math.random().toString(36).slice(2)}.jsonl`);
      writeFileSync(file, `${JSON.stringify({ type: 'user', message: { role: 'user', content: text } })}\n`);
      return file;
    };
    const stop = (payload: Record<string, unknown>) => hookCall('subagent-stop', { hook_event_name: 'SubagentStop', cwd: repo.dir, ...payload }, { cwd: repo.dir });
    expect((await stop({ agent_type: 'general-purpose', agent_transcript_path: transcript('hello') })).stdout).toBe('');
    expect((await stop({ agent_type: 'polywave-wave-agent', agent_transcript_path: transcript('no tag') })).json?.reason).toContain('without its tag');
    const wave = await stop({ agent_type: 'polywave-wave-agent', agent_transcript_path: transcript(`[polywave:wave1:agent-A] IMPL=${impl}`) });
    expect(wave.json?.reason).toContain('agent A has no completion report');
    // Sent back three times already (Claude Code sets stop_hook_active): the fourth stop is let through with a warning, not a fifth turn.
    const looping = transcript(`[polywave:wave1:agent-A] IMPL=${impl}\n${'[polywave E42] agent A (wave 1) cannot stop yet\n'.repeat(3)}`);
    expect((await stop({ agent_type: 'polywave-wave-agent', agent_transcript_path: looping, stop_hook_active: false })).json?.decision).toBe('block');
    const gaveUp = await stop({ agent_type: 'polywave-wave-agent', agent_transcript_path: looping, stop_hook_active: true });
    expect(gaveUp.json).toEqual({ systemMessage: expect.stringContaining('stopped with its obligations unmet after 3 refusals') });

    const critic = { agent_type: 'polywave-critic', agent_transcript_path: transcript(`[polywave:critic:demo] IMPL=${impl}`) };
    expect((await stop(critic)).json?.reason).toContain('no critic_report');
    const review = await (await import('./support/cli.js')).runCli(['set-critic-review', impl, '--verdict', 'PASS', '--summary', 'ok', '--agent-reviews', '[]'], { cwd: repo.dir });
    expect(review.code, review.stderr).toBe(0);
    expect((await stop(critic)).json?.reason).toContain('E48: the IMPL holds your review but is not committed');
    execFileSync('git', ['-C', repo.dir, 'commit', '-q', '--no-verify', '-am', 'critic review'], { env: { ...repo.env } as NodeJS.ProcessEnv });
    expect((await stop(critic)).stdout).toBe('');
  });

  it('a hook call is cheap: pre-tool-use on an owned write, median of 5 real processes', { timeout: 60_000 }, async () => {
    const { worktreeA } = await prepareRealWave();
    const durations: number[] = [];
    for (let index = 0; index < 5; index += 1) {
      const result = await hookCall('pre-tool-use', { tool_name: 'Write', tool_input: { file_path: 'src/a.ts', content: 'x' }, cwd: worktreeA }, { cwd: worktreeA });
      expect(result.stdout).toBe('');
      durations.push(result.durationMs);
    }
    durations.sort((left, right) => left - right);
    console.log(`polywave hook pre-tool-use: median ${Math.round(durations[2]!)} ms (min ${Math.round(durations[0]!)}, max ${Math.round(durations[4]!)})`);
    expect(durations[2]).toBeLessThan(5000); // noisy shared machine: a generous ceiling; the number is printed
  });
});

describe('polywave-hook.sh, the launcher every hook command runs', () => {
  const launcher = path.join(pluginRoot, 'hooks/polywave-hook.sh');
  const runOnce = (script: string, env: Record<string, string>) => {
    try {
      return { code: 0, stdout: execFileSync('sh', [script, 'pre-tool-use'], { input: '{}', cwd: os.tmpdir(), env: { PATH: '/usr/bin:/bin', ...env } }).toString() };
    } catch (error) {
      const failure = error as { status: number; stderr: Buffer };
      return { code: failure.status, stdout: '', stderr: failure.stderr.toString() };
    }
  };
  // A script written a moment ago can be "Text file busy" (ETXTBSY) when another test's process
  // forked while our write descriptor was open (it closes at that child's exec): seen once in CI
  // under load. That is the test's race, not the launcher's: try again.
  const run = (script: string, env: Record<string, string>) => {
    let result = runOnce(script, env);
    for (let attempt = 0; attempt < 5 && /text file busy/i.test(result.stderr ?? ''); attempt += 1) result = runOnce(script, env);
    return result;
  };

  it('prefers $POLYWAVE_BIN, then the package it ships in; a copy outside any package with no polywave anywhere exits 1 saying so', () => {
    const directory = makeTempDir('polywave-launcher-');
    const fake = path.join(directory, 'fake-polywave');
    writeFileSync(fake, '#!/bin/sh\necho "fake $*"\n', { mode: 0o755 });
    expect(run(launcher, { POLYWAVE_BIN: fake })).toEqual({ code: 0, stdout: 'fake hook pre-tool-use\n' });
    // From the package: the real CLI answers (an empty payload has no objection: no output, exit 0).
    // (POLYWAVE_RESIDENT=0: the native client would leave a resident server behind; test/resident.test.ts covers that path.)
    const fromPackage = run(launcher, { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, POLYWAVE_RESIDENT: '0' });
    expect(fromPackage).toEqual({ code: 0, stdout: '' });
    // A copy elsewhere (as init --claude installs it), nothing on PATH, no project install.
    const copy = path.join(directory, 'hooks', 'polywave-hook.sh');
    mkdirSync(path.dirname(copy), { recursive: true });
    writeFileSync(copy, readFileSync(launcher));
    const missing = run(copy, { CLAUDE_PROJECT_DIR: directory });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('the polywave CLI was not found');
    // The project's own install is found through $CLAUDE_PROJECT_DIR.
    mkdirSync(path.join(directory, 'node_modules/.bin'), { recursive: true });
    writeFileSync(path.join(directory, 'node_modules/.bin/polywave'), '#!/bin/sh\necho "project $*"\n', { mode: 0o755 });
    expect(run(copy, { CLAUDE_PROJECT_DIR: directory })).toEqual({ code: 0, stdout: 'project hook pre-tool-use\n' });
  });
});
