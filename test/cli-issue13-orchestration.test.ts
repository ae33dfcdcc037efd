import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import type { CliResult } from './support/cli.js';
import { expectCodedError, expectNoStackTrace, parseStdoutJson } from './support/cli-assert.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

// Issue 13, item 1 (second part): update-agent-prompt, finalize-scout, finalize-impl,
// populate-integration-checklist, retry, run-integration-wave, run-review and run-scout
// --refresh-brief — end to end on real temporary git repositories through the real CLI entry
// point; script agents wherever an agent is launched.

async function cli(args: string[], options: { cwd: string; env?: Record<string, string | undefined>; input?: string }): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd: options.cwd,
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', ...options.env },
    now: () => new Date('2026-03-04T10:00:00Z'),
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readStdin: async () => options.input ?? '',
  };
  const start = performance.now();
  const code = await main(args, io);
  expectNoStackTrace(stderr, args.join(' '));
  return { code, stdout, stderr, durationMs: performance.now() - start };
}

const manifestText = `# Greeting feature
title: Greeting CLI
feature_slug: greet
verdict: SUITABLE
test_command: node -e "process.exit(0)"
lint_command: node -e "process.exit(0)"
state: WAVE_PENDING
file_ownership:
  - {file: src/cli.ts, agent: A, wave: 1, action: modify}
  - {file: src/extra.ts, agent: B, wave: 1, action: new}
  - {file: src/use.ts, agent: C, wave: 2, action: modify, depends_on: [A]}
interface_contracts:
  - name: greet
    description: greets
    definition: "export function greet(name: string): string"
    location: src/cli.ts
waves:
  - number: 1
    agents:
      - id: A
        task: Rename the greeting in \`greet\` (src/cli.ts) and keep \`helper\` working.
        files: [src/cli.ts]
      - id: B
        task: Create src/extra.ts exporting \`extraThing\`.
        files: [src/extra.ts]
  - number: 2
    agents:
      - id: C
        task: Call \`greet\` from src/use.ts.  # keep this comment
        files: [src/use.ts]
        dependencies: [A]
quality_gates:
  level: standard
  gates:
    - {type: build, command: 'node -e "process.exit(0)"', required: true}
`;

const baseFiles = {
  'package.json': JSON.stringify({ name: 'demo', version: '1.0.0' }, null, 2),
  'src/cli.ts': 'export function greet(name: string): string {\n  return helper(name);\n}\nfunction helper(name: string): string {\n  return `Hello, ${name}`;\n}\n',
  'src/use.ts': "import { greet } from './cli.js';\nexport const message = greet('world');\n",
};

async function greetRepo(text = manifestText, files: Record<string, string> = {}): Promise<{ repo: TestRepo; impl: string }> {
  const repo = await createTestRepo({ files: { ...baseFiles, ...files, 'docs/IMPL/IMPL-greet.yaml': text } });
  return { repo, impl: repo.path('docs/IMPL/IMPL-greet.yaml') };
}

describe('update-agent-prompt (E6)', () => {
  it("replaces only the agent's task line (comments kept); extract-context then shows the new prompt", async () => {
    const { repo, impl } = await greetRepo();
    const before = readFileSync(impl, 'utf8');
    const result = await cli(['update-agent-prompt', impl, '--agent', 'C', '--prompt', 'Call `greet` twice from src/use.ts.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ agent: 'C', updated: true, wave: 2, interface_deviations: [], warnings: [] });
    const after = readFileSync(impl, 'utf8');
    const changed = after.split('\n').filter((line, index) => line !== before.split('\n')[index]);
    expect(changed).toHaveLength(1);
    expect(after).toContain('# keep this comment');
    const context = parseStdoutJson<{ agent_task: string }>(await cli(['extract-context', impl, '--agent', 'C'], { cwd: repo.dir }));
    expect(context.agent_task).toBe('Call `greet` twice from src/use.ts.');
    // Same text again: nothing written.
    const again = await cli(['update-agent-prompt', impl, '--agent', 'C', '--prompt', 'Call `greet` twice from src/use.ts.'], { cwd: repo.dir });
    expect(parseStdoutJson<{ updated: boolean }>(again).updated).toBe(false);
    // --file - reads stdin.
    const fromStdin = await cli(['update-agent-prompt', impl, '--agent', 'A', '--file', '-'], { cwd: repo.dir, input: 'Multi-line\nprompt for A.\n' });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(parseStdoutJson<{ agent_task: string }>(await cli(['extract-context', impl, '--agent', 'A'], { cwd: repo.dir })).agent_task).toBe('Multi-line\nprompt for A.');
  });

  it('surfaces interface_deviations that name the agent, here and in agent-status (E6/E8)', async () => {
    const reports = `completion_reports:
  A:
    status: complete
    commit: abc1234
    interface_deviations:
      - {description: "greet now takes (name, punctuation)", downstream_action_required: true, affects: [C]}
`;
    const { repo, impl } = await greetRepo(manifestText.replace('state: WAVE_PENDING', 'state: WAVE_EXECUTING') + reports);
    const result = await cli(['update-agent-prompt', impl, '--agent', 'C', '--prompt', 'Call greet(name, "!") from src/use.ts.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson<{ interface_deviations: unknown[] }>(result).interface_deviations).toEqual([
      { agent: 'A', wave: 1, description: 'greet now takes (name, punctuation)', downstream_action_required: true, affects: ['C'] },
    ]);
    const status = parseStdoutJson<{ interface_deviations?: Array<{ agent: string }> }>(await cli(['agent-status', impl, '--json'], { cwd: repo.dir }));
    expect(status.interface_deviations?.map((deviation) => deviation.agent)).toEqual(['A']);
    const text = await cli(['agent-status', impl], { cwd: repo.dir });
    expect(text.stdout).toContain('Interface deviations');
    expect(text.stdout).toContain('greet now takes (name, punctuation) — affects C [downstream action required]');
  });

  it('bad input: unknown agent exit 1, missing/both prompt sources exit 2 — the IMPL unchanged', async () => {
    const { repo, impl } = await greetRepo();
    const before = readFileSync(impl, 'utf8');
    expectCodedError(await cli(['update-agent-prompt', impl, '--agent', 'Z', '--prompt', 'x'], { cwd: repo.dir }), { exitCode: 1, code: 'A006_AGENT_NOT_FOUND' });
    expectCodedError(await cli(['update-agent-prompt', impl, '--agent', 'A'], { cwd: repo.dir }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(['update-agent-prompt', impl, '--agent', 'A', '--prompt', 'x', '--file', '-'], { cwd: repo.dir }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(['update-agent-prompt', impl, '--agent', 'A', '--prompt', '   '], { cwd: repo.dir }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(['update-agent-prompt', impl, '--prompt', 'x'], { cwd: repo.dir }), { exitCode: 2 });
    expect(readFileSync(impl, 'utf8')).toBe(before);
  });
});

describe('populate-integration-checklist (M5, E16D)', () => {
  const handlerManifest = manifestText
    .replace('  - {file: src/use.ts, agent: C, wave: 2, action: modify, depends_on: [A]}', '  - {file: src/use.ts, agent: C, wave: 2, action: modify, depends_on: [A]}\n  - {file: pkg/api/users_handler.go, agent: C, wave: 2, action: new}\n  - {file: web/src/components/UserList.tsx, agent: C, wave: 2, action: new}')
    .replace('        files: [src/use.ts]\n', '        files: [src/use.ts, pkg/api/users_handler.go, web/src/components/UserList.tsx]\n')
    .concat('wiring:\n  - {symbol: extraThing, defined_in: src/extra.ts, must_be_called_from: src/use.ts, agent: C, wave: 2}\n');

  it('derives groups from new handlers, components and wiring; E16_MISSING_CHECKLIST goes away; a second run adds nothing', async () => {
    const { repo, impl } = await greetRepo(handlerManifest);
    const warningsBefore = parseStdoutJson<{ warnings: Array<{ code: string }> }>(await cli(['validate', impl], { cwd: repo.dir })).warnings.map((warning) => warning.code);
    expect(warningsBefore).toContain('E16_MISSING_CHECKLIST');
    const result = await cli(['populate-integration-checklist', impl], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({
      success: true,
      groups_added: 3,
      items_added: 3,
      groups: [
        { title: 'API Route Registration', item_count: 1 },
        { title: 'React Navigation Wiring', item_count: 1 },
        { title: 'Wiring Obligations (E35)', item_count: 1 },
      ],
    });
    const text = readFileSync(impl, 'utf8');
    expect(text).toContain('# keep this comment');
    expect(text).toContain('Register routes in server.go for handleUsers');
    expect(text).toContain('Add UserList to App.tsx navigation');
    const validate = await cli(['validate', impl], { cwd: repo.dir });
    expect(validate.code, validate.stdout).toBe(0);
    expect(parseStdoutJson<{ warnings: Array<{ code: string }> }>(validate).warnings.map((warning) => warning.code)).not.toContain('E16_MISSING_CHECKLIST');
    const again = await cli(['populate-integration-checklist', impl], { cwd: repo.dir });
    expect(parseStdoutJson<{ items_added: number; groups_added: number }>(again)).toMatchObject({ items_added: 0, groups_added: 0 });
    expect(readFileSync(impl, 'utf8')).toBe(text);
  });

  it('nothing to add: exit 0 with the file untouched; an unreadable manifest is exit 2', async () => {
    const { repo, impl } = await greetRepo();
    const before = readFileSync(impl, 'utf8');
    const result = await cli(['populate-integration-checklist', impl], { cwd: repo.dir });
    expect(result.code).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ success: true, groups_added: 0, items_added: 0, groups: [] });
    expect(readFileSync(impl, 'utf8')).toBe(before);
    expectCodedError(await cli(['populate-integration-checklist', repo.path('docs/IMPL/IMPL-missing.yaml')], { cwd: repo.dir }), { exitCode: 2 });
  });
});

describe('run-integration-wave (E27)', () => {
  const integrationManifest = `title: Greeting CLI
feature_slug: greet
verdict: SUITABLE
test_command: node -e "process.exit(0)"
lint_command: node -e "process.exit(0)"
state: WAVE_PENDING
file_ownership:
  - {file: src/extra.ts, agent: A, wave: 1, action: modify}
  - {file: src/use.ts, agent: I, wave: 2, action: modify, depends_on: [A]}
waves:
  - number: 1
    agents:
      - {id: A, task: "Export \`extraThing\` from src/extra.ts.", files: [src/extra.ts]}
  - number: 2
    type: integration
    agents:
      - id: I
        task: "Wire \`extraThing\` into src/use.ts."
        files: [src/use.ts]
        dependencies: [A]
completion_reports:
  A: {status: complete, commit: HEAD_SHA, verification: PASS}
quality_gates:
  level: standard
  gates:
    - {type: build, command: 'node -e "process.exit(0)"', required: true}
`;

  it('runs the integration agent in the main checkout with a script agent and verifies the wave', async () => {
    const repo = await createTestRepo({ files: { ...baseFiles, 'src/extra.ts': 'export const extraThing = 1;\n' } });
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    repo.write('docs/IMPL/IMPL-greet.yaml', integrationManifest.replace('HEAD_SHA', head).replace('  - number: 1\n', `  - number: 1\n    base_commit: ${head}\n`).replace('state: WAVE_PENDING', 'state: WAVE_VERIFIED'));
    await repo.commitAll('plan');
    const impl = repo.path('docs/IMPL/IMPL-greet.yaml');
    repo.write('../script.yaml', [
      'version: 1',
      'agents:',
      '  I:',
      '    steps:',
      '      - expect_prompt: "Wire `extraThing`"',
      '      - edit: { path: src/use.ts, old: "export const message", new: "import { extraThing } from \'./extra.js\';\\nexport const wired = extraThing;\\nexport const message" }',
      '      - commit: "feat(I): wire extraThing"',
      '      - report: { status: complete, verification: PASS }',
      '',
    ].join('\n'));
    const before = (await repo.run(['branch', '--list'])).trim();
    const result = await cli(['run-integration-wave', impl, '--wave', '2', '--model', `script:${repo.sibling('script.yaml')}`, '--skip-critic'], { cwd: repo.dir, env: repo.env });
    expect(result.code, `${result.stderr}\n${result.stdout}`).toBe(0);
    const output = parseStdoutJson<{ success: boolean; wave: number; state: string; agents: Array<{ id: string; agent: string; files: string[]; brief: string; status: string }> }>(result);
    expect(output).toMatchObject({ success: true, wave: 2 });
    expect(output.agents).toEqual([expect.objectContaining({ id: 'I', agent: 'I', files: ['src/use.ts'], brief: 'Wire `extraThing` into src/use.ts.', status: 'complete' })]);
    // The work is on main, done in the main checkout: no agent branch, no worktree.
    expect(repo.read('src/use.ts')).toContain('export const wired = extraThing;');
    expect((await repo.run(['branch', '--list'])).trim()).toBe(before);
    expect((await repo.run(['worktree', 'list'])).trim().split('\n')).toHaveLength(1);
    expect(readFileSync(impl, 'utf8')).toMatch(/I:\s*\n\s+status: complete|I: \{status: complete/);
  }, 120_000);

  it('refuses a standard wave (exit 1) and a missing wave (exit 2) with nothing changed', async () => {
    const { repo, impl } = await greetRepo();
    const before = readFileSync(impl, 'utf8');
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    expectCodedError(await cli(['run-integration-wave', impl, '--wave', '1', '--model', 'script:/nonexistent.yaml'], { cwd: repo.dir, env: repo.env }), { exitCode: 1, code: 'E27_NOT_INTEGRATION_WAVE' });
    expectCodedError(await cli(['run-integration-wave', impl, '--wave', '7'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'P011_WAVE_NOT_FOUND' });
    expectCodedError(await cli(['run-integration-wave', impl], { cwd: repo.dir, env: repo.env }), { exitCode: 2 });
    expect(readFileSync(impl, 'utf8')).toBe(before);
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).toBe(head);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  });
});

describe('finalize-scout', () => {
  const scoutManifest = manifestText.replace('state: WAVE_PENDING', 'state: SCOUT_PENDING').replace("{type: build, command: 'node -e \"process.exit(0)\"', required: true}", "{type: compile, command: 'node -e \"process.exit(0)\"', required: true}");

  it('fixes, validates, checks the briefs and records injection_method (exit 0; the critic is pending)', async () => {
    const { repo, impl } = await greetRepo(scoutManifest);
    const result = await cli(['finalize-scout', impl, '--injection-method', 'hook'], { cwd: repo.dir, env: repo.env });
    expect(result.code, result.stdout).toBe(0);
    const output = parseStdoutJson<{ passed: boolean; injection_method: string; validation: { valid: boolean; fixed: number }; brief_validation: { valid: boolean }; failed_step?: string }>(result);
    expect(output).toMatchObject({ passed: true, injection_method: 'hook', validation: { valid: true, fixed: 1 }, brief_validation: { valid: true } });
    expect(output.failed_step).toBeUndefined();
    const text = readFileSync(impl, 'utf8');
    expect(text).toContain('injection_method: hook');
    expect(text).toContain('# keep this comment');
  });

  it('stops at the brief check when a task cites a symbol that does not exist (`helpr`) (exit 1, injection_method not written)', async () => {
    const { repo, impl } = await greetRepo(scoutManifest.replace('Rename the greeting', 'Change the greeting').replace('keep `helper` working', 'keep `helpr` working'));
    const result = await cli(['finalize-scout', impl, '--injection-method', 'hook'], { cwd: repo.dir, env: repo.env });
    expect(result.code, result.stdout).toBe(1);
    expect(parseStdoutJson(result)).toMatchObject({ passed: false, failed_step: 'brief_validation', injection_method: '' });
    expect(readFileSync(impl, 'utf8')).not.toContain('injection_method');
  });

  it('an invalid manifest fails at validation; a bad --injection-method is exit 2 with nothing changed', async () => {
    const { repo, impl } = await greetRepo(scoutManifest.replace('  - {file: src/extra.ts, agent: B, wave: 1, action: new}\n', '  - {file: src/extra.ts, agent: B, wave: 1, action: new}\n  - {file: src/extra.ts, agent: A, wave: 1, action: new}\n'));
    const before = readFileSync(impl, 'utf8');
    expectCodedError(await cli(['finalize-scout', impl, '--injection-method', 'telepathy'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expect(readFileSync(impl, 'utf8')).toBe(before);
    const result = await cli(['finalize-scout', impl], { cwd: repo.dir, env: repo.env });
    expect(result.code).toBe(1);
    expect(parseStdoutJson(result)).toMatchObject({ passed: false, failed_step: 'validation' });
  });
});

describe('finalize-impl', () => {
  it('adds the missing lint and test gates from package.json (H2), keeps the build gate and comments; a second run changes nothing', async () => {
    const scripts = { build: 'tsc -p .', lint: 'eslint .', test: 'vitest run' };
    const { repo, impl } = await greetRepo(manifestText.replace('    - {type: build,', '    # the build gate\n    - {type: build,'), { 'package.json': JSON.stringify({ name: 'demo', version: '1.0.0', scripts }, null, 2) });
    const result = await cli(['finalize-impl', impl], { cwd: repo.dir, env: repo.env });
    expect(result.code, result.stdout).toBe(0);
    const output = parseStdoutJson<{ success: boolean; saved: boolean; gates_added: unknown[]; validation: { valid: boolean }; commands: { build: string } }>(result);
    expect(output).toMatchObject({ success: true, saved: true, validation: { valid: true } });
    expect(output.gates_added).toEqual([
      { type: 'lint', command: 'npm run lint', required: true },
      { type: 'test', command: 'npm run test', required: true },
    ]);
    const text = readFileSync(impl, 'utf8');
    expect(text).toContain('# the build gate');
    expect(text).toContain("command: 'node -e \"process.exit(0)\"'");
    expect(text).toContain('npm run lint');
    const again = await cli(['finalize-impl', impl], { cwd: repo.dir, env: repo.env });
    expect(parseStdoutJson(again)).toMatchObject({ success: true, saved: false, gates_added: [] });
    expect(readFileSync(impl, 'utf8')).toBe(text);
  });

  it('an invalid IMPL is exit 1 with nothing written (not even the fixes); a missing file is exit 2', async () => {
    const { repo, impl } = await greetRepo(manifestText.replace("{type: build,", "{type: compile,").replace('  - {file: src/extra.ts, agent: B, wave: 1, action: new}\n', '  - {file: src/extra.ts, agent: B, wave: 1, action: new}\n  - {file: src/extra.ts, agent: A, wave: 1, action: new}\n'));
    const before = readFileSync(impl, 'utf8');
    const result = await cli(['finalize-impl', impl], { cwd: repo.dir, env: repo.env });
    expect(result.code).toBe(1);
    expect(parseStdoutJson(result)).toMatchObject({ success: false, saved: false, failed_step: 'validation' });
    expect(readFileSync(impl, 'utf8')).toBe(before);
    expectCodedError(await cli(['finalize-impl', repo.path('docs/IMPL/IMPL-nope.yaml')], { cwd: repo.dir, env: repo.env }), { exitCode: 2 });
  });
});

describe('retry (E7/E19/E7a)', () => {
  const retryManifest = `title: Letters
feature_slug: letters
verdict: SUITABLE
test_command: node -e "process.exit(0)"
lint_command: node -e "process.exit(0)"
state: WAVE_PENDING
file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: new}
waves:
  - number: 1
    agents:
      - {id: A, task: "Create src/a.ts exporting a.", files: [src/a.ts]}
      - {id: B, task: "Create src/b.ts exporting b.", files: [src/b.ts]}
quality_gates:
  level: standard
  gates:
    - {type: build, command: 'node -e "process.exit(0)"', required: true}
`;
  const complete = (id: string) => [`  ${id}:`, '    steps:', `      - write: { path: src/${id.toLowerCase()}.ts, content: "export const ${id.toLowerCase()} = 1;\\n" }`, `      - commit: "feat(${id})"`, '      - report: { status: complete, verification: PASS }'];

  it('relaunches only the blocked agent with its last report as retry context, then finalizes; a second retry has nothing to do', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letters.yaml': retryManifest, 'src/index.ts': 'export {};\n' } });
    const impl = repo.path('docs/IMPL/IMPL-letters.yaml');
    const script = repo.sibling('script.yaml');
    repo.write('../script.yaml', ['version: 1', 'agents:', ...complete('A'), '  B:', '    steps:', '      - write: { path: src/b.ts, content: "export const b = 0;\\n" }', '      - commit: "wip(B)"', '      - report: { status: partial, failure_type: fixable, verification: "FAIL (src/b.ts: cannot find module left-pad)", notes: "left-pad is not installed" }', ''].join('\n'));
    const first = await cli(['run-wave', impl, '--wave', '1', '--model', `script:${script}`, '--skip-critic'], { cwd: repo.dir, env: repo.env });
    expect(first.code, first.stderr).toBe(1);
    // The retry: A (complete) is not relaunched; B gets its previous notes in the prompt.
    repo.write('../script.yaml', ['version: 1', 'agents:', '  A:', '    steps:', '      - fail: { kind: fatal, message: "A must not be relaunched" }', '  B:', '    steps:', '      - expect_prompt: "left-pad is not installed"', '      - expect_prompt: "The build quality gate failed."', '      - edit: { path: src/b.ts, old: "= 0", new: "= 1" }', '      - commit: "fix(B)"', '      - report: { status: complete, verification: PASS }', ''].join('\n'));
    const result = await cli(['retry', impl, '--wave', '1', '--gate-type', 'build', '--model', `script:${script}`, '--skip-critic'], { cwd: repo.dir, env: repo.env });
    expect(result.code, `${result.stderr}\n${result.stdout.slice(0, 3000)}`).toBe(0);
    const output = parseStdoutJson<{ final_state: string; agents: unknown[]; run: { state: string; agents: Array<{ agent: string; status: string; resumed?: boolean }> } }>(result);
    expect(output.final_state).toBe('passed');
    expect(output.agents).toEqual([{ agent: 'B', attempt: 1, previous_status: 'partial', error_class: expect.any(String), failure_type: 'fixable', relaunched: true }]);
    expect(output.run.agents.find((agent) => agent.agent === 'A')).toMatchObject({ status: 'complete', resumed: true });
    expect(repo.read('src/b.ts')).toBe('export const b = 1;\n');
    expect(repo.read('src/a.ts')).toBe('export const a = 1;\n');
    expectCodedError(await cli(['retry', impl, '--wave', '1', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env }), { exitCode: 1, code: 'R001_NOTHING_TO_RETRY' });
  }, 180_000);

  it('bad input (exit 2) and used-up retries (exit 1, final_state blocked, nothing launched)', async () => {
    const reports = 'completion_reports:\n  B: {status: blocked, failure_type: fixable, notes: "no"}\n';
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letters.yaml': retryManifest.replace('state: WAVE_PENDING', 'state: BLOCKED') + reports } });
    const impl = repo.path('docs/IMPL/IMPL-letters.yaml');
    const before = readFileSync(impl, 'utf8');
    expectCodedError(await cli(['retry', impl, '--wave', '3'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'P011_WAVE_NOT_FOUND' });
    expectCodedError(await cli(['retry', impl, '--wave', '1', '--agent', 'Q'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(['retry', impl, '--wave', '1', '--gate-type', 'vibes'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    const result = await cli(['retry', impl, '--wave', '1', '--agent', 'B', '--max-retries', '0', '--model', 'script:/nonexistent.yaml'], { cwd: repo.dir, env: repo.env });
    expect(result.code).toBe(1);
    expect(parseStdoutJson(result)).toMatchObject({ final_state: 'blocked', success: false, agents: [{ agent: 'B', relaunched: false }] });
    expect(result.stderr).toContain('not relaunched');
    expect(readFileSync(impl, 'utf8')).toBe(before);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  });
});

describe('run-scout --refresh-brief (E28A)', () => {
  const reviewed = manifestText.replace('state: WAVE_PENDING', 'state: REVIEWED');

  async function refresh(newText: string) {
    const { repo, impl } = await greetRepo(reviewed);
    const script = repo.sibling('scout.yaml');
    repo.write('../scout.yaml', `version: 1\nagents:\n  scout:\n    steps:\n      - expect_prompt: "BRIEF REFRESH (E28A)"\n      - write: { path: docs/IMPL/IMPL-greet.yaml, content: ${JSON.stringify(newText)} }\n      - text: "refreshed"\n`);
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const result = await cli(['run-scout', impl, '--refresh-brief', '--model', `script:${script}`, '--max-attempts', '1'], { cwd: repo.dir, env: repo.env });
    return { repo, impl, head, result };
  }

  it('updates only the task texts, keeps REVIEWED (the Scout wrote SCOUT_PENDING), commits once', async () => {
    const newText = reviewed.replace('Call `greet` from src/use.ts.', 'Call `greet` from src/use.ts (greet now lives at line 1).').replace('state: REVIEWED', 'state: SCOUT_PENDING');
    const { repo, impl, head, result } = await refresh(newText);
    expect(result.code, `${result.stderr}\n${result.stdout.slice(0, 2000)}`).toBe(0);
    expect(parseStdoutJson(result)).toMatchObject({ state: 'REVIEWED', success: true, committed: true, brief_refresh: { agents_refreshed: ['C'], plan_changes: [], restored: false } });
    const text = readFileSync(impl, 'utf8');
    expect(text).toContain('greet now lives at line 1');
    expect(text).toContain('state: REVIEWED');
    expect((await repo.run(['rev-list', '--count', `${head}..HEAD`])).trim()).toBe('1');
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  }, 60_000);

  it('refuses a refresh that changes ownership or waves: the IMPL restored byte for byte (exit 1)', async () => {
    // Still a valid IMPL, but the Scout re-planned: an extra file for C.
    const newText = reviewed.replace('  - {file: src/use.ts, agent: C, wave: 2, action: modify, depends_on: [A]}', '  - {file: src/use.ts, agent: C, wave: 2, action: modify, depends_on: [A]}\n  - {file: src/more.ts, agent: C, wave: 2, action: new}').replace('        files: [src/use.ts]\n', '        files: [src/use.ts, src/more.ts]\n');
    const { repo, impl, head, result } = await refresh(newText);
    expect(result.code).toBe(1);
    expect(parseStdoutJson(result)).toMatchObject({ state: 'REVIEWED', success: false, committed: false, error: { code: 'E28A_REFRESH_CHANGED_PLAN' }, brief_refresh: { restored: true, plan_changes: ['file_ownership', 'waves'] } });
    expect(readFileSync(impl, 'utf8')).toBe(reviewed);
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).toBe(head);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  }, 60_000);

  it('refuses an IMPL that is not reviewed, or missing (exit 2, nothing changed)', async () => {
    const { repo, impl } = await greetRepo(manifestText.replace('state: WAVE_PENDING', 'state: SCOUT_PENDING'));
    const before = readFileSync(impl, 'utf8');
    expectCodedError(await cli(['run-scout', impl, '--refresh-brief', '--model', 'script:/nonexistent.yaml'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'N019_SCOUT_INVALID_OPTS' });
    expect(readFileSync(impl, 'utf8')).toBe(before);
    expectCodedError(await cli(['run-scout', repo.path('docs/IMPL/IMPL-nope.yaml'), '--refresh-brief', '--model', 'script:/nonexistent.yaml'], { cwd: repo.dir, env: repo.env }), { exitCode: 2 });
  });
});

const reviewSandbox = await sandboxStatus();

describe('run-review', () => {
  const review = (overall: number) => ({
    code_quality: { score: overall, rationale: 'Readable.' },
    naming_clarity: { score: overall, rationale: 'Clear names.' },
    complexity: { score: overall, rationale: 'Simple.' },
    pattern_adherence: { score: overall, rationale: 'Fits.' },
    security: { score: overall, rationale: 'No input handling.' },
    overall,
    summary: 'A small change.',
  });

  async function reviewed(overall: number, extra: string[] = []) {
    const repo = await createTestRepo({ files: baseFiles });
    repo.write('src/use.ts', `${repo.read('src/use.ts')}export const twice = greet('again');\n`);
    await repo.commitAll('use greet twice');
    repo.write('../review.yaml', `version: 1\nagents:\n  reviewer:\n    steps:\n      - expect_prompt: "export const twice"\n      - final: ${JSON.stringify(review(overall))}\n`);
    const result = await cli(['run-review', '--model', `script:${repo.sibling('review.yaml')}`, ...extra], { cwd: repo.dir, env: repo.env });
    return { repo, result };
  }

  it("reviews HEAD's diff: scores per dimension; passed at the threshold", async () => {
    const { repo, result } = await reviewed(80);
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toMatchObject({ passed: true, overall: 80, threshold: 70, summary: 'A small change.', truncated: false, dimensions: { security: { score: 80, rationale: 'No input handling.' } } });
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  });

  it.runIf(reviewSandbox.available)('X33-04: started in a subdirectory, the reviewer\'s bash can change nothing there either (read-only wherever it runs)', async () => {
    const repo = await createTestRepo({ files: baseFiles });
    repo.write('src/use.ts', `${repo.read('src/use.ts')}export const twice = greet('again');\n`);
    await repo.commitAll('use greet twice');
    const attack = "const fs=require('fs');for(const f of ['evil'+'.test.js','use'+'.ts']){try{fs.appendFileSync(f,'//x');console.log(f+': DONE')}catch(e){console.log(f+': '+e.code)}}";
    repo.write('../review-sub.yaml', `version: 1\nagents:\n  reviewer:\n    steps:\n      - bash: ${JSON.stringify(`node -e "eval(Buffer.from('${Buffer.from(attack).toString('base64')}','base64').toString())"`)}\n      - final: ${JSON.stringify(review(80))}\n`);
    const result = await cli(['run-review', '--model', `script:${repo.sibling('review-sub.yaml')}`], { cwd: repo.path('src'), env: repo.env });
    expect(result.code, result.stderr).toBe(0);
    expect((await repo.run(['status', '--porcelain', '-uall'])).trim()).toBe('');
  });

  it('below the threshold: exit 0, with --blocking exit 1; a bad --threshold is exit 2', async () => {
    const { repo, result } = await reviewed(50, ['--threshold', '60']);
    expect(result.code).toBe(0);
    expect(parseStdoutJson(result)).toMatchObject({ passed: false, overall: 50, threshold: 60 });
    const blocking = await cli(['run-review', '--model', `script:${repo.sibling('review.yaml')}`, '--blocking'], { cwd: repo.dir, env: repo.env });
    expect(blocking.code).toBe(1);
    expectCodedError(await cli(['run-review', '--threshold', 'lots'], { cwd: repo.dir, env: repo.env }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
  });
});
