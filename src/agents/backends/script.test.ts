import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../../test/support/git-repo.js';
import { defaultAgentLimits, type AgentEvent, type AgentRole, type AgentRunRequest, type ModelSpec } from '../contract.js';
import { createJail } from '../jail/jail.js';
import { createScriptBackend, parseAgentScript, selectSteps } from './script.js';

interface Fixture {
  repo: TestRepo;
  worktree: string;
  base: string;
  scratch: string;
}

async function fixture(): Promise<Fixture> {
  const repo = await createTestRepo({ files: { 'src/shared.ts': 'export const shared = 0;\n', 'src/frozen.ts': 'export {};\n' } });
  const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch: 'wave1-agent-A', base: 'HEAD', createBranch: true });
  const scratch = repo.sibling('scratch-A');
  mkdirSync(scratch, { recursive: true });
  return { repo, worktree, base, scratch };
}

function writeScript(f: Fixture, name: string, text: string): string {
  const file = path.join(f.repo.root, name);
  writeFileSync(file, text);
  return file;
}

interface Run {
  request: AgentRunRequest;
  events: AgentEvent[];
  reports: Array<Record<string, unknown>>;
  journal: { uses: Array<{ toolCallId: string; tool: string }>; results: Array<{ toolCallId: string; tool: string; isError: boolean }> };
}

async function makeRun(
  f: Fixture,
  model: ModelSpec,
  options: { agentId?: string; role?: AgentRole; attempt?: number; maxTurns?: number; signal?: AbortSignal; env?: Record<string, string> } = {},
): Promise<Run> {
  const events: AgentEvent[] = [];
  const reports: Array<Record<string, unknown>> = [];
  const journal: Run['journal'] = { uses: [], results: [] };
  const jail = await createJail({ root: f.worktree, ownedFiles: ['src/a.ts', 'src/shared.ts'], branch: 'wave1-agent-A' }, { env: f.repo.env });
  return {
    events,
    reports,
    journal,
    request: {
      agentId: options.agentId ?? 'A',
      role: options.role ?? 'wave',
      wave: 1,
      attempt: options.attempt ?? 1,
      model,
      systemPrompt: 'system',
      prompt: 'prompt',
      cwd: f.worktree,
      branch: 'wave1-agent-A',
      baseCommit: f.base,
      jail,
      limits: { ...defaultAgentLimits, maxTurns: options.maxTurns ?? defaultAgentLimits.maxTurns },
      env: { ...f.repo.env, ...options.env },
      scratchDir: f.scratch,
      signal: options.signal ?? new AbortController().signal,
      onEvent: (event) => events.push(event),
      recorder: {
        recordToolUse: (entry) => journal.uses.push(entry),
        recordToolResult: (entry) => journal.results.push(entry),
      },
      reportCompletion: async (report) => {
        reports.push(report);
        return { ok: true, status: String(report.status) };
      },
    },
  };
}

const scriptModel = (scriptPath?: string): ModelSpec => ({ backend: 'script', ...(scriptPath ? { scriptPath } : {}), raw: `script:${scriptPath ?? ''}` });

describe('script backend', () => {
  it('writes, edits, runs bash, commits and reports through the real tools (report filled from git)', async () => {
    const f = await fixture();
    const file = writeScript(
      f,
      'script.yaml',
      [
        'version: 1',
        'agents:',
        '  A:',
        '    steps:',
        '      - text: "reading the brief"',
        '      - read: README.md',
        '      - write: { path: src/a.ts, content: "export const a = 1;\\n" }',
        '      - edit: { path: src/a.ts, old: "1", new: "2" }',
        '      - edit: { path: src/shared.ts, old: "0", new: "3" }',
        '      - bash: "ls src"',
        '        expect: ok',
        '      - commit: "feat(A): implement a"',
        '      - report: { status: complete, verification: "PASS", notes: "all good" }',
        '      - text: "done"',
        '',
      ].join('\n'),
    );
    const run = await makeRun(f, scriptModel(file));
    const outcome = await createScriptBackend().run(run.request);

    expect(outcome.failure).toBeUndefined();
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(9);
    expect(outcome.text).toBe('done');
    expect(outcome.denials).toEqual([]);
    expect(outcome.usage).toEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

    expect(f.repo.read('../wt-A/src/a.ts')).toBe('export const a = 2;\n');
    const head = (await f.repo.run(['rev-parse', 'wave1-agent-A'])).trim();
    expect((await f.repo.run(['log', '-1', '--format=%s', 'wave1-agent-A'])).trim()).toBe('feat(A): implement a');

    expect(run.reports).toHaveLength(1);
    expect(run.reports[0]).toMatchObject({
      status: 'complete',
      verification: 'PASS',
      notes: 'all good',
      commit: head,
      branch: 'wave1-agent-A',
      worktree: f.worktree,
      files_created: ['src/a.ts'],
      files_changed: ['src/shared.ts'],
    });

    const turnEnds = run.events.filter((event) => event.type === 'turn-end');
    expect(turnEnds.map((event) => event.type === 'turn-end' && event.turn)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(run.events.filter((event) => event.type === 'agent-text').map((event) => event.type === 'agent-text' && event.text)).toEqual(['reading the brief', 'done']);
    const tools = run.events.filter((event) => event.type === 'tool-call-start').map((event) => event.type === 'tool-call-start' && event.tool);
    expect(tools).toEqual(['read_file', 'write_file', 'edit_file', 'edit_file', 'bash', 'git_commit', 'set_completion']);
    expect(run.journal.uses.map((entry) => entry.tool)).toEqual(tools);
    expect(run.journal.results.map((entry) => entry.isError)).toEqual(tools.map(() => false));
  });

  it('replaces the steps with the attempt override (attempt 1 fails transient, attempt 2 succeeds)', async () => {
    const f = await fixture();
    const file = writeScript(
      f,
      'attempts.yaml',
      'version: 1\nagents:\n  A:\n    attempts:\n      1:\n        - fail: { kind: transient, message: "429 overloaded" }\n    steps:\n      - text: second try\n',
    );
    const first = await createScriptBackend().run((await makeRun(f, scriptModel(file), { attempt: 1 })).request);
    expect(first.status).toBe('failed');
    expect(first.failure).toEqual({ kind: 'transient', message: '429 overloaded' });
    expect(first.turns).toBe(1);
    const second = await createScriptBackend().run((await makeRun(f, scriptModel(file), { attempt: 2 })).request);
    expect(second.status).toBe('finished');
    expect(second.text).toBe('second try');
  });

  it('records a denied step and goes on; `expect: ok` makes it fatal', async () => {
    const f = await fixture();
    const file = writeScript(
      f,
      'denied.yaml',
      'version: 1\nsteps:\n  - write: { path: src/other.ts, content: "x" }\n  - write: { path: src/a.ts, content: "a" }\n',
    );
    const run = await makeRun(f, scriptModel(file));
    const outcome = await createScriptBackend().run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.denials).toHaveLength(1);
    expect(outcome.denials[0]).toMatchObject({ tool: 'write_file', code: 'JAIL_NOT_OWNED' });
    expect(run.events.some((event) => event.type === 'tool-call-deny')).toBe(true);
    expect(f.repo.read('../wt-A/src/a.ts')).toBe('a');

    const strict = writeScript(f, 'strict.yaml', 'version: 1\nsteps:\n  - write: { path: src/other.ts, content: "x" }\n    expect: ok\n  - text: never\n');
    const failed = await createScriptBackend().run((await makeRun(f, scriptModel(strict))).request);
    expect(failed.status).toBe('failed');
    expect(failed.failure?.kind).toBe('fatal');
    expect(failed.failure?.message).toContain('step 1 (write)');
    expect(failed.failure?.message).toContain('JAIL_NOT_OWNED');
    expect(failed.turns).toBe(1);
  });

  it('sleep_ms honours abort', async () => {
    const f = await fixture();
    const file = writeScript(f, 'sleep.yaml', 'version: 1\nsteps:\n  - sleep_ms: 60000\n  - text: never\n');
    const controller = new AbortController();
    const run = await makeRun(f, scriptModel(file), { signal: controller.signal });
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const outcome = await createScriptBackend().run(run.request);
    expect(outcome.status).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(outcome.text).toBe('');

    const timed = await createScriptBackend().run((await makeRun(f, scriptModel(file), { signal: AbortSignal.timeout(100) })).request);
    expect(timed.status).toBe('timeout');
  });

  it('fails with a config error naming the file and the field for an invalid script', async () => {
    const f = await fixture();
    const cases: Array<[string, RegExp]> = [
      ['version: 1\nagents:\n  A:\n    steps:\n      - text: ok\n      - write: { content: "x" }\n', /agents\.A\.steps\[1\]\.write\.path/],
      ['version: 2\nsteps: []\n', /version/],
      ['version: 1\nsteps:\n  - jump: 3\n', /steps\[0\]\.jump: unknown step kind/],
      ['version: 1\nsteps:\n  - text: a\n    bash: b\n', /steps\[0\]: a step has exactly one of/],
      ['version: 1\nsteps:\n  - sleep_ms: soon\n', /steps\[0\]\.sleep_ms/],
      ['version: 1\nsteps:\n  - fail: { kind: maybe, message: x }\n', /steps\[0\]\.fail\.kind/],
      ['version: 1\nagents:\n  A:\n    attempts:\n      first: []\n', /agents\.A\.attempts\.first|attempt keys/],
      ['version: 1\n', /agents: a script needs/],
      ['version: 1\nsteps: [\n', /.+/],
      ['version: 1\nsteps: []\nsteps: []\n', /duplicate|steps/i],
    ];
    for (const [index, [text, pattern]] of cases.entries()) {
      const file = writeScript(f, `bad-${index}.yaml`, text);
      const outcome = await createScriptBackend().run((await makeRun(f, scriptModel(file))).request);
      expect(outcome.status, text).toBe('failed');
      expect(outcome.failure?.kind, text).toBe('config');
      expect(outcome.failure?.message, text).toContain(file);
      expect(outcome.failure?.message, text).toMatch(pattern);
    }

    const missing = await createScriptBackend().run((await makeRun(f, scriptModel(path.join(f.repo.root, 'nope.yaml')))).request);
    expect(missing.failure?.kind).toBe('config');
    expect(missing.failure?.message).toContain('nope.yaml');

    const noScript = await createScriptBackend().run((await makeRun(f, scriptModel())).request);
    expect(noScript.failure).toEqual({ kind: 'config', message: expect.stringContaining('POLYWAVE_SCRIPT') as unknown as string });

    const other = writeScript(f, 'other.yaml', 'version: 1\nagents:\n  B:\n    steps: []\n');
    const noEntry = await createScriptBackend().run((await makeRun(f, scriptModel(other))).request);
    expect(noEntry.failure?.kind).toBe('config');
    expect(noEntry.failure?.message).toContain('no entry for agent "A"');
  });

  it('returns a structured `final` for scout/critic style roles (JSON script, role key, POLYWAVE_SCRIPT relative to POLYWAVE_REPO_ROOT)', async () => {
    const f = await fixture();
    mkdirSync(path.join(f.repo.root, 'scripts'), { recursive: true });
    writeScript(f, 'scripts/critic.json', JSON.stringify({ version: 1, agents: { critic: { steps: [{ text: 'reviewing' }, { final: { verdict: 'PASS', issues: [] } }] } } }));
    const run = await makeRun(f, scriptModel(), { agentId: 'critic', role: 'critic', env: { POLYWAVE_SCRIPT: 'scripts/critic.json', POLYWAVE_REPO_ROOT: f.repo.root } });
    const outcome = await createScriptBackend().run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.structured).toEqual({ verdict: 'PASS', issues: [] });
    expect(outcome.text).toBe(JSON.stringify({ verdict: 'PASS', issues: [] }));
    expect(outcome.turns).toBe(2);
  });

  it('stops at limits.maxTurns', async () => {
    const f = await fixture();
    const file = writeScript(f, 'long.yaml', 'version: 1\nsteps:\n  - text: one\n  - text: two\n  - text: three\n');
    const outcome = await createScriptBackend().run((await makeRun(f, scriptModel(file), { maxTurns: 2 })).request);
    expect(outcome.status).toBe('max-turns');
    expect(outcome.turns).toBe(2);
    expect(outcome.text).toBe('two');
  });
});

describe('parseAgentScript / selectSteps', () => {
  it('selects by agent id, then role, then top-level steps; attempt overrides replace steps', () => {
    const script = parseAgentScript(
      'version: 1\nsteps:\n  - text: everyone\nagents:\n  A:\n    steps:\n      - text: a\n    attempts:\n      2:\n        - text: a2\n  scout:\n    steps:\n      - final: { ok: true }\n',
    );
    expect(selectSteps(script, 'A', 'wave', 1)).toEqual([{ kind: 'text', value: 'a' }]);
    expect(selectSteps(script, 'A', 'wave', 2)).toEqual([{ kind: 'text', value: 'a2' }]);
    expect(selectSteps(script, 'scout', 'scout', 1)).toEqual([{ kind: 'final', value: { ok: true } }]);
    expect(selectSteps(script, 'B', 'wave', 1)).toEqual([{ kind: 'text', value: 'everyone' }]);
  });

  it('the same text is parsed once: every caller gets an equal copy of its own; a bad text fails every time', () => {
    const text = 'version: 1\nagents:\n  A:\n    steps:\n      - write: { path: a.txt, content: "a" }\n';
    const first = parseAgentScript(text);
    const second = parseAgentScript(text);
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    (first.agents!.A!.steps![0]!.value as { path: string }).path = 'changed.txt';
    expect(selectSteps(parseAgentScript(text), 'A', 'wave', 1)).toEqual([{ kind: 'write', value: { path: 'a.txt', content: 'a' } }]);
    for (let round = 0; round < 2; round += 1) expect(() => parseAgentScript('version: 2\n')).toThrow(/version must be 1/);
  });
});
