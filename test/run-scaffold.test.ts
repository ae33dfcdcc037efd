import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import { runScaffold } from '../src/orchestrator/run-scaffold.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

// E22 run-scaffold with the script backend on real repositories: the agent writes through the
// real jailed tools, commits for real, and the orchestrator checks every file and builds it again.

const scriptDir = mkdtempSync(path.join(os.tmpdir(), 'pw-scaffold-script-'));
afterAll(() => rmSync(scriptDir, { recursive: true, force: true }));

const typesContent = "export const Shapes = Object.freeze(['circle', 'square']);\n";
const kindsContent = 'export const Kinds = Object.freeze({ round: 1, square: 2 });\n';

function implYaml(options: { state?: string; scaffolds?: string[] } = {}): string {
  return [
    '# scaffold demo (this comment must survive)',
    'title: Shapes',
    'feature_slug: shapes',
    'verdict: SUITABLE',
    `state: ${options.state ?? 'REVIEWED'}`,
    'quality_gates:',
    '    level: standard',
    '    gates:',
    '        - type: build',
    '          command: "node --check src/types.mjs && node --check src/shared/kinds.mjs"',
    '          required: true',
    'scaffolds:',
    ...(options.scaffolds ?? [
      '    - file_path: src/types.mjs',
      '      contents: |',
      "          export const Shapes = Object.freeze(['circle', 'square']);",
      '      status: pending',
      '    - file_path: src/shared/kinds.mjs',
      '      contents: |',
      '          export const Kinds = Object.freeze({ round: 1, square: 2 });',
    ]),
    'file_ownership:',
    '    - file: src/shape.mjs',
    '      agent: A',
    '      wave: 1',
    '      action: new',
    'waves:',
    '    - number: 1',
    '      agents:',
    '        - id: A',
    '          task: Implement src/shape.mjs on the scaffolded types.',
    '          files:',
    '            - src/shape.mjs',
    '',
  ].join('\n');
}

let scriptCount = 0;
function writeScript(lines: string[]): string {
  scriptCount += 1;
  const file = path.join(scriptDir, `scaffold-${scriptCount}.yaml`);
  writeFileSync(file, ['version: 1', 'agents:', '  scaffold:', '    steps:', ...lines.map((line) => `      ${line}`), ''].join('\n'));
  return file;
}

async function setup(yaml = implYaml()): Promise<{ repo: TestRepo; implPath: string }> {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-shapes.yaml': yaml } });
  return { repo, implPath: repo.path('docs/IMPL/IMPL-shapes.yaml') };
}

function manifestOf(implPath: string) {
  return parseImpl(readFileSync(implPath, 'utf8')).manifest!;
}

const json = (value: string) => JSON.stringify(value);

describe('run-scaffold (E22) with the script backend', () => {
  it('commits every scaffold: statuses `committed (<sha>)`, WAVE_PENDING, the manifest committed, a write outside the scaffolds refused', async () => {
    const { repo, implPath } = await setup();
    const before = await repo.git.headCommit();
    const script = writeScript([
      '- bash: "git rev-parse --show-toplevel"',
      `- write: { path: src/types.mjs, content: ${json(typesContent)} }`,
      `- write: { path: src/shared/kinds.mjs, content: ${json(kindsContent)} }`,
      '- write: { path: src/shape.mjs, content: "export const x = 1;\\n" }',
      '  expect: error',
      '- bash: "node --check src/types.mjs && node --check src/shared/kinds.mjs"',
      '  expect: ok',
      '- commit: "scaffold: add shared types for shapes [Polywave:scaffold:shapes]"',
      `- text: ${json('```yaml\nscaffold_results:\n  - file: src/types.mjs\n    status: committed (abc1234)\n  - file: src/shared/kinds.mjs\n    status: committed (abc1234)\n```')}`,
    ]);
    const events: PolywaveEvent[] = [];
    const bus = new EventBus();
    bus.subscribe((event) => events.push(event));

    const result = await runScaffold({ implPath, repoDir: repo.dir, model: `script:${script}`, env: repo.env, events: bus });

    expect(result.success, JSON.stringify(result, null, 2)).toBe(true);
    expect(result.agent?.outcome).toBe('finished');
    // The scaffold agent's commit is the one before the manifest commit.
    const commits = (await repo.run(['log', '--format=%h %s', `${before}..HEAD`])).trim().split('\n');
    expect(commits).toHaveLength(2);
    expect(commits[0]).toMatch(/^\w+ chore: scaffold status for shapes \(committed\) \[Polywave:scaffold:shapes\]$/);
    expect(commits[1]).toMatch(/^\w+ scaffold: add shared types for shapes/);
    const agentSha = commits[1]!.split(' ')[0]!;
    expect(result.scaffolds).toEqual([
      { file: 'src/types.mjs', status: `committed (${agentSha})` },
      { file: 'src/shared/kinds.mjs', status: `committed (${agentSha})` },
    ]);
    expect(result.state).toBe('WAVE_PENDING');
    expect(result.impl_commit).toBe(await repo.git.headCommit());
    expect(result.build).toMatchObject({ passed: true, exit_code: 0 });
    expect(result.violations).toEqual([]);

    // The write outside the scaffold paths was refused by the jail: the file does not exist.
    expect(existsSync(repo.path('src/shape.mjs'))).toBe(false);
    expect(result.agent?.denials.map((denial) => denial.code)).toEqual(['JAIL_NOT_OWNED']);

    // The manifest on disk (and committed): statuses, state, comment kept; the tree is clean.
    const manifest = manifestOf(implPath);
    expect(manifest.state).toBe('WAVE_PENDING');
    expect(manifest.scaffolds?.map((scaffold) => scaffold.status)).toEqual([`committed (${agentSha})`, `committed (${agentSha})`]);
    expect(readFileSync(implPath, 'utf8')).toContain('# scaffold demo (this comment must survive)');
    expect((await repo.git.status()).filter((entry) => !entry.path.startsWith('.polywave-state/'))).toEqual([]);
    expect(readFileSync(repo.path('src/types.mjs'), 'utf8')).toBe(typesContent);
    expect(events.map((event) => event.type)).toContain('agent-launch');
    expect(events.at(-1)).toMatchObject({ type: 'agent-end', agent: 'scaffold', status: 'finished' });
  }, 60_000);

  it('a scaffold that fails the build: the orchestrator’s own build check marks it `FAILED: …` and the IMPL BLOCKED', async () => {
    const { repo, implPath } = await setup();
    // The agent ignores its failing build and commits anyway; the orchestrator builds again.
    const script = writeScript([
      '- write: { path: src/types.mjs, content: "export const = ;\\n" }',
      `- write: { path: src/shared/kinds.mjs, content: ${json(kindsContent)} }`,
      '- bash: "node --check src/types.mjs"',
      '- commit: "scaffold: add shared types for shapes"',
    ]);
    const result = await runScaffold({ implPath, repoDir: repo.dir, model: `script:${script}`, env: repo.env });

    expect(result.success).toBe(false);
    expect(result.state).toBe('BLOCKED');
    expect(result.build).toMatchObject({ passed: false, command: 'node --check src/types.mjs && node --check src/shared/kinds.mjs' });
    const [types, kinds] = result.scaffolds;
    // The error names src/types.mjs only: that file is FAILED with the error's first lines, the other stays committed.
    expect(types?.status).toMatch(/^FAILED: build check `node --check src\/types\.mjs && node --check src\/shared\/kinds\.mjs` failed: .*src\/types\.mjs.*SyntaxError/);
    expect(kinds?.status).toMatch(/^committed \(\w+\)$/);
    const manifest = manifestOf(implPath);
    expect(manifest.state).toBe('BLOCKED');
    expect(manifest.scaffolds?.[0]?.status).toBe(types?.status);
    expect(result.impl_commit).toBe(await repo.git.headCommit());
  }, 60_000);

  it('an agent that follows E22 (build fails → commit nothing, report FAILED): each file `FAILED: … not committed — agent: …`, BLOCKED', async () => {
    const { repo, implPath } = await setup();
    const before = await repo.git.headCommit();
    const script = writeScript([
      '- write: { path: src/types.mjs, content: "export const = ;\\n" }',
      '- bash: "node --check src/types.mjs"',
      '  expect: error',
      `- text: ${json('scaffold_results:\n  - file: src/types.mjs\n    status: "FAILED: src/types.mjs:1 SyntaxError: Unexpected token \'=\'"\n  - file: src/shared/kinds.mjs\n    status: pending')}`,
    ]);
    const result = await runScaffold({ implPath, repoDir: repo.dir, model: `script:${script}`, env: repo.env });

    expect(result.success).toBe(false);
    expect(result.state).toBe('BLOCKED');
    expect(result.build).toBeUndefined();
    expect(result.scaffolds).toEqual([
      { file: 'src/types.mjs', status: "FAILED: the file was created but not committed — agent: src/types.mjs:1 SyntaxError: Unexpected token '='" },
      { file: 'src/shared/kinds.mjs', status: 'FAILED: the scaffold agent did not create the file' },
    ]);
    // Only the manifest update was committed.
    expect((await repo.run(['log', '--format=%s', `${before}..HEAD`])).trim()).toBe('chore: scaffold status for shapes (FAILED) [Polywave:scaffold:shapes]');
    expect(manifestOf(implPath).state).toBe('BLOCKED');
  }, 60_000);

  it('runs no agent when every scaffold is committed, and moves SCAFFOLD_PENDING → WAVE_PENDING', async () => {
    const { repo, implPath } = await setup(implYaml({ state: 'SCAFFOLD_PENDING', scaffolds: ['    - file_path: src/types.mjs', '      status: committed (abc1234)'] }));
    const result = await runScaffold({ implPath, repoDir: repo.dir, model: 'script:/nonexistent.yaml', env: repo.env });
    expect(result).toMatchObject({ success: true, agent_launched: false, state: 'WAVE_PENDING', scaffolds: [{ file: 'src/types.mjs', status: 'committed (abc1234)' }] });
    expect(manifestOf(implPath).state).toBe('WAVE_PENDING');
  });

  it('needs a clean tree: a user change blocks the run (nothing written); a dirty IMPL is committed first so the agent’s bash calls pass their audit', async () => {
    const { repo, implPath } = await setup();
    const script = writeScript([
      `- write: { path: src/types.mjs, content: ${json(typesContent)} }`,
      `- write: { path: src/shared/kinds.mjs, content: ${json(kindsContent)} }`,
      '- bash: "node --check src/types.mjs"',
      '  expect: ok',
      '- commit: "scaffold: add shared types for shapes"',
    ]);
    repo.write('notes.txt', 'work in progress\n');
    const text = readFileSync(implPath, 'utf8');
    const blocked = await runScaffold({ implPath, repoDir: repo.dir, model: `script:${script}`, env: repo.env });
    expect(blocked).toMatchObject({ success: false, agent_launched: false, state: 'REVIEWED' });
    expect(blocked.error).toMatch(/uncommitted changes .*notes\.txt/);
    expect(readFileSync(implPath, 'utf8')).toBe(text);

    repo.remove('notes.txt');
    writeFileSync(implPath, `${text}# edited by hand, not committed\n`);
    const result = await runScaffold({ implPath, repoDir: repo.dir, model: `script:${script}`, env: repo.env });
    expect(result.success, JSON.stringify(result.agent, null, 2)).toBe(true);
    expect(result.agent?.denials).toEqual([]);
    expect((await repo.run(['log', '--format=%s', '-3'])).trim().split('\n')).toEqual([
      'chore: scaffold status for shapes (committed) [Polywave:scaffold:shapes]',
      'scaffold: add shared types for shapes',
      'chore: commit Polywave state before the scaffold agent for shapes [Polywave:scaffold:shapes]',
    ]);
    expect(readFileSync(implPath, 'utf8')).toContain('# edited by hand, not committed');
  }, 60_000);

  it('refuses an IMPL that is not reviewed yet', async () => {
    const { repo, implPath } = await setup(implYaml({ state: 'SCOUT_PENDING' }));
    await expect(runScaffold({ implPath, repoDir: repo.dir, env: repo.env })).rejects.toMatchObject({ code: 'N008_STATE_TRANSITION', exitCode: 1 });
  });

  it('polywave run-scaffold prints the result JSON and exits 0 (CLI, in process)', async () => {
    const { repo, implPath } = await setup();
    const script = writeScript([
      `- write: { path: src/types.mjs, content: ${json(typesContent)} }`,
      `- write: { path: src/shared/kinds.mjs, content: ${json(kindsContent)} }`,
      '- commit: "scaffold: add shared types for shapes"',
    ]);
    let out = '';
    let err = '';
    const io: CommandIo = { cwd: repo.dir, env: repo.env, now: () => new Date('2026-01-01T00:00:00Z'), stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: async () => '' };
    expect(await main(['run-scaffold', 'docs/IMPL/IMPL-shapes.yaml', '--model', `script:${script}`], io), err).toBe(0);
    const result = JSON.parse(out) as Record<string, unknown>;
    expect(Object.keys(result)).toEqual(expect.arrayContaining(['impl_path', 'slug', 'scaffolds', 'success', 'state', 'agent_launched', 'agent', 'build', 'violations', 'impl_commit', 'duration_ms']));
    expect(result).toMatchObject({ impl_path: implPath, slug: 'shapes', success: true, state: 'WAVE_PENDING', agent_launched: true });
    expect(err).toContain('run-scaffold: launching the scaffold agent');
  }, 60_000);
});
