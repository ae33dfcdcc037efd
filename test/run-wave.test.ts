import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import { readJournal, journalPaths } from '../src/engine/journal.js';
import { runWave } from '../src/orchestrator/run-wave.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { createGit } from '../src/git/git-cli.js';
import { createTestRepo } from './support/git-repo.js';
import { runCli } from './support/cli.js';

// run-wave end to end with the script backend on real repositories: real worktrees, real jailed
// tools, real reports through the locked writer, real merges (issue 5, "What it must show" 3).

const agents = ['A', 'B', 'C', 'D'];

function implYaml(): string {
  const rows = agents.flatMap((id) => [`    - file: src/${id.toLowerCase()}.ts`, `      agent: ${id}`, '      wave: 1', '      action: new', `    - file: src/${id.toLowerCase()}.test.ts`, `      agent: ${id}`, '      wave: 1', '      action: new']);
  const wave = agents.flatMap((id) => [`        - id: ${id}`, `          task: Implement src/${id.toLowerCase()}.ts with a test.`, '          files:', `            - src/${id.toLowerCase()}.ts`, `            - src/${id.toLowerCase()}.test.ts`]);
  return [
    '# run-wave demo (this comment must survive)',
    'title: Four letters',
    'feature_slug: letters',
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...rows,
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const x: string"',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...wave,
    '',
  ].join('\n');
}

function agentSteps(id: string): string[] {
  const lower = id.toLowerCase();
  return [
    `      - write: { path: src/${lower}.ts, content: "export const ${lower} = '${lower}';\\n" }`,
    `      - write: { path: src/${lower}.test.ts, content: "import { ${lower} } from './${lower}';\\nif (${lower} !== '${lower}') throw new Error('bad');\\n" }`,
    `      - bash: "git status --short"`,
    `      - commit: "feat(${id}): letter ${lower}"`,
    '      - report: { status: complete, verification: PASS, notes: "done" }',
  ];
}

async function setup(script: string, yaml = implYaml(), files: Record<string, string> = {}) {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letters.yaml': yaml, 'src/index.ts': 'export {};\n', ...files } });
  const scriptDir = mkdtempSync(path.join(os.tmpdir(), 'pw-script-'));
  const scriptPath = path.join(scriptDir, 'letters.yaml');
  writeFileSync(scriptPath, script);
  return { repo, implPath: repo.path('docs/IMPL/IMPL-letters.yaml'), scriptPath };
}

describe('run-wave with the script backend', () => {
  it('runs 4 agents, relaunches a transient failure with its recovered journal, finalizes and merges', async () => {
    const script = [
      'version: 1',
      'agents:',
      ...agents.flatMap((id) => {
        if (id !== 'C') return [`  ${id}:`, '    steps:', ...agentSteps(id)];
        return [
          '  C:',
          '    attempts:',
          '      1:',
          '        - write: { path: src/c.ts, content: "export const c = \'draft\';\\n" }',
          '        - fail: { kind: transient, message: "429 overloaded: try again" }',
          '    steps:',
          '      - expect_prompt: "Session Context (Recovered from Tool Journal)"',
          ...agentSteps('C'),
        ];
      }),
      '',
    ].join('\n');
    // A real test gate (node:test, TAP summary) runs in each agent's worktree: E40 agent_performance carries its counts.
    const gate = ['quality_gates:', '    level: standard', '    gates:', '        - type: test', '          command: "node --test --test-reporter=tap test/"', '          required: true', ''].join('\n');
    const nodeTests = "import test from 'node:test';\ntest('one', () => {});\ntest('two', () => {});\ntest('three', () => {});\n";
    const { repo, implPath, scriptPath } = await setup(script, implYaml().replace('interface_contracts:', `${gate}interface_contracts:`), { 'test/base.test.mjs': nodeTests });
    const events: PolywaveEvent[] = [];
    const bus = new EventBus();
    bus.subscribe((event) => events.push(event));
    const before = await repo.git.headCommit();
    const result = await runWave({ implPath, wave: 1, model: `script:${scriptPath}`, env: repo.env, events: bus, retryBackoffMs: 10, skipCritic: true, gitAt: (dir) => createGit(dir, { env: repo.env }) });

    expect(result.success, JSON.stringify({ blocked: result.blocked, failed: result.finalize?.failed_step, prepare: result.prepare?.success }, null, 2)).toBe(true);
    expect(result.state).toBe('WAVE_VERIFIED');
    const byId = Object.fromEntries(result.agents.map((agent) => [agent.agent, agent]));
    for (const id of agents) expect(byId[id]?.status).toBe('complete');
    expect(byId.C?.attempts.map((attempt) => attempt.outcome)).toEqual(['failed', 'finished']);
    expect(byId.C?.attempts[0]?.decision?.action).toBe('retry');
    expect(events.some((event) => event.type === 'agent-retry' && event.agent === 'C' && event.failure_type === 'transient')).toBe(true);
    // The journal kept attempt 1's tool calls and recorded attempt 2's.
    const journal = await readJournal(journalPaths(repo.dir, 'letters', 1, 'C').index);
    expect(journal.filter((entry) => entry.kind === 'tool_use').length).toBeGreaterThanOrEqual(5);
    // Everyone's work is merged, one --no-ff merge per agent.
    for (const id of agents) expect(readFileSync(repo.path(`src/${id.toLowerCase()}.ts`), 'utf8')).toContain(`'${id.toLowerCase()}'`);
    const merges = (await repo.run(['rev-list', '--merges', `${before}..HEAD`])).split('\n').filter(Boolean);
    expect(merges).toHaveLength(4);
    const manifest = parseImpl(readFileSync(implPath, 'utf8')).manifest!;
    expect(manifest.state).toBe('WAVE_VERIFIED');
    for (const id of agents) expect(manifest.completion_reports?.[id]?.status).toBe('complete');
    expect(readFileSync(implPath, 'utf8')).toContain('# run-wave demo (this comment must survive)');
    expect(await repo.git.listBranches('polywave/')).toEqual([]);
    // Events: start, a launch per attempt, an end per attempt, the end of the run.
    expect(events.filter((event) => event.type === 'agent-launch')).toHaveLength(5);
    expect(events.at(-1)?.type).toBe('wave-run-end');
    const performance = events.filter((event) => event.type === 'agent_performance') as unknown as Array<{ agent: string; tests_passed: number; tests_failed: number; tests_reported: boolean; retry_count: number }>;
    expect(performance.map((event) => [event.agent, event.tests_passed, event.tests_failed, event.tests_reported]).sort()).toEqual(agents.map((id) => [id, 3, 0, true]));
    expect(performance.find((event) => event.agent === 'C')?.retry_count).toBe(1);
  }, 120_000);

  it('E1 order holds with --concurrency below the agent count: an agent whose preparation is slow (an E9 check of a stale report) still launches first', async () => {
    const script = ['version: 1', 'agents:', ...agents.flatMap((id) => [`  ${id}:`, '    steps:', ...agentSteps(id)]), ''].join('\n');
    const { repo, implPath, scriptPath } = await setup(script);
    // A, first in the launch order, has a "complete" report whose commit does not exist: run-wave checks it (E9/E42,
    // git calls in a jail) before relaunching A, while B–D have nothing to check.
    writeFileSync(implPath, `${readFileSync(implPath, 'utf8')}completion_reports:\n    A:\n        status: complete\n        commit: ${'d'.repeat(40)}\n        files_created: [src/a.ts]\n`);
    await repo.run(['commit', '-qam', 'stale report of A']);
    const launches: string[] = [];
    const bus = new EventBus();
    bus.subscribe((event) => {
      if (event.type === 'agent-launch') launches.push(String(event.agent));
    });
    // Every git the wave starts, with the process that started it: a git on PATH that records its parent.
    const shim = mkdtempSync(path.join(os.tmpdir(), 'polywave-git-parents-'));
    mkdirSync(path.join(shim, 'bin'));
    const realGit = (await repo.run(['--exec-path'])).trim() + '/git';
    writeFileSync(path.join(shim, 'bin', 'git'), `#!/bin/sh\necho "$PPID" >> ${JSON.stringify(path.join(shim, 'parents'))}\nexec ${JSON.stringify(realGit)} "$@"\n`);
    chmodSync(path.join(shim, 'bin', 'git'), 0o755);
    const env = { ...repo.env, PATH: `${path.join(shim, 'bin')}:${repo.env.PATH ?? process.env.PATH ?? ''}` };
    const result = await runWave({ implPath, wave: 1, model: `script:${scriptPath}`, env, events: bus, concurrency: 1, skipCritic: true, gitAt: (dir) => createGit(dir, { env }) });
    expect(result.success, JSON.stringify(result.blocked ?? result.finalize?.failed_step)).toBe(true);
    expect(result.launch_order).toEqual(['A', 'B', 'C', 'D']);
    expect(launches).toEqual(result.launch_order);
    // The wave's git commands are started by the helper process (git/spawn-server.ts), not forked by this
    // process's main thread, where each fork held every agent's tool calls: a few with a timeout at most.
    const parents = readFileSync(path.join(shim, 'parents'), 'utf8').split('\n').filter(Boolean);
    const here = parents.filter((parent) => parent === String(process.pid)).length;
    expect(parents.length).toBeGreaterThan(40);
    expect(here, `${here} of ${parents.length} git commands forked by the orchestrator itself`).toBeLessThanOrEqual(parents.length / 10);
    rmSync(shim, { recursive: true, force: true });
  }, 120_000);

  it('leaves the wave BLOCKED with nothing merged when an agent reports blocked', async () => {
    const script = [
      'version: 1',
      'agents:',
      ...agents.flatMap((id) =>
        id === 'B'
          ? ['  B:', '    steps:', '      - write: { path: src/b.ts, content: "export const b = 1;\\n" }', '      - commit: "wip(B)"', '      - report: { status: blocked, failure_type: needs_replan, verification: "FAIL (contract Letter cannot hold a number)", notes: "the Letter contract is wrong" }']
          : [`  ${id}:`, '    steps:', ...agentSteps(id)],
      ),
      '',
    ].join('\n');
    const { repo, implPath, scriptPath } = await setup(script);
    const before = await repo.git.headCommit();
    const cli = await runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic'], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(cli.code, cli.stderr).toBe(1);
    const result = JSON.parse(cli.stdout) as { success: boolean; state: string; blocked: { agents: Array<{ agent: string; action?: string; explanation: string }> } };
    expect(result.success).toBe(false);
    expect(result.state).toBe('BLOCKED');
    expect(result.blocked.agents).toEqual([expect.objectContaining({ agent: 'B', action: 'pause' })]);
    expect(result.blocked.agents[0]!.explanation).toContain('needs_replan');
    expect(cli.stderr).toContain('BLOCKED');
    // Nothing merged: no merge commit and no agent's file on main (prepare-wave's own bookkeeping
    // commits of the IMPL are allowed); every agent's branch still holds its work.
    expect((await repo.run(['rev-list', '--merges', `${before}..HEAD`])).trim()).toBe('');
    expect((await repo.run(['diff', '--name-only', before, 'HEAD'])).split('\n').filter(Boolean).every((file) => file.startsWith('docs/IMPL/'))).toBe(true);
    expect(existsSync(repo.path('src/a.ts'))).toBe(false);
    expect((await repo.git.listBranches('polywave/')).length).toBe(4);
    expect(parseImpl(readFileSync(implPath, 'utf8')).manifest!.state).toBe('BLOCKED');
  }, 120_000);

  it('runs a solo wave (I6: one agent, no worktree, on the merge target) and streams NDJSON with --json', async () => {
    const gate = (command: string) => ['quality_gates:', '    level: standard', '    gates:', '        - type: test', `          command: ${JSON.stringify(command)}`, '          required: true'].join('\n');
    const solo = (command: string) => implYaml().replace(/( {4}- file: src\/[bcd]\.(?:test\.)?ts\n {6}agent: [BCD]\n {6}wave: 1\n {6}action: new\n)/g, '').replace(/ {8}- id: [BCD]\n(?: {10}.*\n)+? {12}- src\/[bcd]\.test\.ts\n/g, '').replace('interface_contracts:', `${gate(command)}\ninterface_contracts:`);
    // A gate without `timing` is a pre-merge gate; a solo wave has no worktree to run it in before a merge, so it runs on the target.
    const yaml = solo("node -e \"process.exit(require('fs').readdirSync('src').length === 3 ? 0 : 4)\"");
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letters.yaml': yaml, 'src/index.ts': 'export {};\n' } });
    const implPath = repo.path('docs/IMPL/IMPL-letters.yaml');
    expect(parseImpl(yaml).manifest?.waves?.[0]?.agents?.map((agent) => agent.id)).toEqual(['A']);
    const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-script-')), 'solo.yaml');
    writeFileSync(scriptPath, ['version: 1', 'agents:', '  A:', '    steps:', ...agentSteps('A'), ''].join('\n'));
    const before = await repo.git.headCommit();
    const cli = await runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--json'], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(cli.code, cli.stderr).toBe(0);
    const lines = cli.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; result?: { success: boolean; state: string } });
    expect(lines[0]?.type).toBeDefined();
    expect(lines.map((line) => line.type)).toEqual(expect.arrayContaining(['wave-run-start', 'agent-launch', 'agent-end', 'wave-run-end', 'run-wave-result']));
    expect(lines.at(-1)).toMatchObject({ type: 'run-wave-result', result: { success: true, state: 'WAVE_VERIFIED' } });
    // No worktree, no agent branch: the agent committed on main itself, after the wave base.
    expect(await repo.git.worktreeList()).toHaveLength(1);
    expect(await repo.git.listBranches('polywave/')).toEqual([]);
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toContain("'a'");
    expect((await repo.run(['log', '--format=%s', `${before}..HEAD`])).split('\n')).toContain('feat(A): letter a');
    const finalize = (lines.at(-1) as { result?: { finalize?: { gate_results?: Record<string, Array<{ passed: boolean; command: string }>> } } }).result?.finalize;
    expect(finalize?.gate_results?.['.']?.map((result) => result.passed)).toEqual([true]);

    // The same solo wave with a failing gate: BLOCKED, not verified.
    const failing = await createTestRepo({ files: { 'docs/IMPL/IMPL-letters.yaml': solo('node -e "process.exit(4)"'), 'src/index.ts': 'export {};\n' } });
    const blocked = await runCli(['run-wave', failing.path('docs/IMPL/IMPL-letters.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic'], { cwd: failing.dir, env: failing.env as Record<string, string>, timeoutMs: 120_000 });
    expect(blocked.code, blocked.stderr).toBe(1);
    expect(JSON.parse(blocked.stdout)).toMatchObject({ success: false, finalize: { failed_step: { step: 'run-post-merge-gates' } } });
    expect(parseImpl(readFileSync(failing.path('docs/IMPL/IMPL-letters.yaml'), 'utf8')).manifest!.state).toBe('BLOCKED');
  }, 180_000);

  it('a solo wave in a checkout the user has changed is refused before any agent runs (working_dir_check), the user\'s files left as they were; clean, it runs', async () => {
    const yaml = implYaml().replace(/( {4}- file: src\/[bcd]\.(?:test\.)?ts\n {6}agent: [BCD]\n {6}wave: 1\n {6}action: new\n)/g, '').replace(/ {8}- id: [BCD]\n(?: {10}.*\n)+? {12}- src\/[bcd]\.test\.ts\n/g, '');
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-letters.yaml': yaml, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\n' } });
    repo.write('notes.txt', 'my own notes\n');
    repo.write('README.md', '# test repository\nedited by the user, not committed\n');
    const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-script-')), 'solo.yaml');
    writeFileSync(scriptPath, ['version: 1', 'agents:', '  A:', '    steps:', ...agentSteps('A'), ''].join('\n'));
    const launches: string[] = [];
    const bus = new EventBus();
    bus.subscribe((event) => {
      if (event.type === 'agent-launch') launches.push(String(event.agent));
    });
    const options = { implPath: repo.path('docs/IMPL/IMPL-letters.yaml'), wave: 1, model: `script:${scriptPath}`, env: repo.env, events: bus, skipCritic: true, gitAt: (dir: string) => createGit(dir, { env: repo.env }) };
    const refused = await runWave(options);
    expect(refused.success).toBe(false);
    expect(refused.prepare?.steps).toEqual([expect.objectContaining({ step: 'working_dir_check', status: 'failed', detail: expect.stringContaining('working tree has uncommitted changes: README.md, notes.txt') })]);
    expect(launches).toEqual([]);
    expect(repo.read('notes.txt')).toBe('my own notes\n');
    expect(repo.read('README.md')).toBe('# test repository\nedited by the user, not committed\n');
    expect(parseImpl(readFileSync(options.implPath, 'utf8')).manifest!.state).toBe('WAVE_PENDING');

    await repo.run(['add', 'README.md', 'notes.txt']);
    await repo.run(['commit', '-qm', 'the user commits their changes']);
    const ran = await runWave(options);
    expect(ran.success, JSON.stringify(ran.prepare ?? ran.blocked)).toBe(true);
    expect(launches).toEqual(['A']);
  }, 180_000);
});
