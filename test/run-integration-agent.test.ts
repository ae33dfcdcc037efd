import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { validateIntegration } from '../src/analysis/integration.js';
import { runIntegrationAgent } from '../src/orchestrator/run-integration.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

// E26 / E47 run-integration-agent with the script backend on real repositories: a wave left an
// exported function nobody calls (E25 gap); the integration agent may edit only the caller files.

const scriptDir = mkdtempSync(path.join(os.tmpdir(), 'pw-integration-script-'));
afterAll(() => rmSync(scriptDir, { recursive: true, force: true }));

const featureSource = "export const featureName = 'demo';\n\nexport function registerFeature(registry) {\n  registry.push(featureName);\n}\n";
const mainSource = "import { featureName } from './feature.mjs';\n\nexport const registry = [];\nconsole.log(`${featureName}: ${registry.length}`);\n";

function implYaml(options: { reports?: string[]; connectors?: string[]; testCommand?: string } = {}): string {
  return [
    '# integration demo (this comment must survive)',
    'title: Feature registry',
    'feature_slug: registry',
    'verdict: SUITABLE',
    'state: WAVE_VERIFIED',
    `test_command: ${JSON.stringify(options.testCommand ?? 'node src/main.mjs')}`,
    'file_ownership:',
    '    - file: src/feature.mjs',
    '      agent: A',
    '      wave: 1',
    '      action: new',
    '    - file: src/caller.mjs',
    '      agent: B',
    '      wave: 2',
    '      action: modify',
    'waves:',
    '    - number: 1',
    '      agents:',
    '        - id: A',
    '          task: Add the feature registration.',
    '          files:',
    '            - src/feature.mjs',
    '    - number: 2',
    '      agents:',
    '        - id: B',
    '          task: Use the feature.',
    '          files:',
    '            - src/caller.mjs',
    'completion_reports:',
    '    A:',
    '        status: complete',
    '        commit: HEAD',
    '        files_created:',
    '            - src/feature.mjs',
    '        verification: PASS',
    ...(options.connectors ?? []),
    ...(options.reports ?? [
      'integration_reports:',
      '    wave1:',
      '        wave: 1',
      '        gaps:',
      '            - export_name: registerFeature',
      '              file_path: src/feature.mjs',
      '              agent_id: A',
      '              category: function_call',
      '              severity: error',
      '              reason: exported func "registerFeature" has no call-sites outside its defining file',
      '              suggested_fix: Add call to registerFeature in src/main.mjs',
      '              search_results:',
      '                - src/main.mjs',
      '        valid: false',
      '        summary: "Wave 1: 1 integration gap(s) detected, 1 error(s)"',
    ]),
    '',
  ].join('\n');
}

let scriptCount = 0;
function writeScript(lines: string[]): string {
  scriptCount += 1;
  const file = path.join(scriptDir, `integrator-${scriptCount}.yaml`);
  writeFileSync(file, ['version: 1', 'agents:', '  integration:', '    steps:', ...lines.map((line) => `      ${line}`), ''].join('\n'));
  return file;
}

async function setup(yaml = implYaml(), files: Record<string, string> = {}): Promise<{ repo: TestRepo; implPath: string }> {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-registry.yaml': yaml, 'src/feature.mjs': featureSource, 'src/main.mjs': mainSource, 'src/other.mjs': 'export const other = 1;\n', ...files } });
  return { repo, implPath: repo.path('docs/IMPL/IMPL-registry.yaml') };
}

const json = (value: string) => JSON.stringify(value);

/** The script steps that wire registerFeature into src/main.mjs. */
const wireSteps = [
  `- edit: { path: src/main.mjs, old: ${json("import { featureName } from './feature.mjs';")}, new: ${json("import { featureName, registerFeature } from './feature.mjs';")} }`,
  '  expect: ok',
  `- edit: { path: src/main.mjs, old: ${json('export const registry = [];')}, new: ${json('export const registry = [];\nregisterFeature(registry);')} }`,
  '  expect: ok',
  '- bash: "node src/main.mjs"',
  '  expect: ok',
  '- commit: "feat(wave1-integration): wire integration gaps"',
];

describe('run-integration-agent (E26) with the script backend', () => {
  it('the fixture really has the gap E25 reports', async () => {
    const { repo, implPath } = await setup();
    const manifest = parseImpl(readFileSync(implPath, 'utf8')).manifest!;
    const report = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'HEAD' });
    expect(report.gaps.map((gap) => [gap.export_name, gap.severity, gap.search_results])).toEqual([['registerFeature', 'error', ['src/main.mjs']]]);
  });

  it('wires the gap in the allowed caller file: gaps 1 → 0, writes elsewhere refused, the report refreshed and committed', async () => {
    const { repo, implPath } = await setup();
    const before = await repo.git.headCommit();
    const script = writeScript([
      '- write: { path: src/other.mjs, content: "export const other = 2;\\n" }',
      '  expect: error',
      '- edit: { path: src/feature.mjs, old: "registry.push", new: "registry.unshift" }',
      '  expect: error',
      ...wireSteps,
      '- text: "integration_result: { commit: HEAD, files_changed: [src/main.mjs], verification: PASS }"',
    ]);
    const result = await runIntegrationAgent({ implPath, repoDir: repo.dir, wave: 1, model: `script:${script}`, env: repo.env });

    expect(result.success, JSON.stringify(result, null, 2)).toBe(true);
    expect(result).toMatchObject({ wave: 1, mode: 'gaps', skipped: false, gap_count: 1, agent_launched: true, build_passed: true, gaps_before: 1, gaps_after: 0, allowed_files: ['src/main.mjs'], files_changed: ['src/main.mjs'], violations: [], problems: [] });
    expect(result.remaining_gaps).toEqual([]);
    // The refused writes: the files are unchanged.
    expect(result.agent?.denials.map((denial) => [denial.code, denial.target])).toEqual([
      ['JAIL_NOT_OWNED', 'src/other.mjs'],
      ['JAIL_NOT_OWNED', 'src/feature.mjs'],
    ]);
    expect(readFileSync(repo.path('src/other.mjs'), 'utf8')).toBe('export const other = 1;\n');
    expect(readFileSync(repo.path('src/feature.mjs'), 'utf8')).toBe(featureSource);
    // The agent's commit, then the refreshed report.
    const subjects = (await repo.run(['log', '--format=%s', `${before}..HEAD`])).trim().split('\n');
    expect(subjects).toEqual(['chore: integration report for wave 1 after the integration agent (0 gap(s) left) [Polywave:wave1:integrator]', 'feat(wave1-integration): wire integration gaps']);
    expect(result.commit).toBe((await repo.run(['rev-parse', 'HEAD~1'])).trim());
    expect(result.impl_commit).toBe(await repo.git.headCommit());
    expect(readFileSync(repo.path('src/main.mjs'), 'utf8')).toContain('registerFeature(registry);');
    const manifest = parseImpl(readFileSync(implPath, 'utf8')).manifest!;
    expect(manifest.integration_reports?.wave1).toMatchObject({ wave: 1, valid: true, gaps: [] });
    expect(readFileSync(implPath, 'utf8')).toContain('# integration demo (this comment must survive)');
  }, 60_000);

  it('in a PROGRAM tier (the merge target checked out in the IMPL worktree): works and commits on the IMPL branch, the main line does not move, the refreshed report stays uncommitted in the IMPL', async () => {
    const { repo, implPath } = await setup();
    const implBranch = 'polywave/program/shop/tier1-impl-registry';
    const worktree = repo.path('.claude/worktrees/polywave/program/shop/tier1-impl-registry');
    await repo.run(['worktree', 'add', '-q', '-b', implBranch, worktree]);
    // The main line is elsewhere (another IMPL of the tier merged first); the IMPL's state there is uncommitted.
    repo.write('.gitignore', '.claude/\n.polywave-state/\n');
    repo.write('src/unrelated.mjs', 'export const unrelated = 1;\n');
    const mainHead = await repo.commitAll('another IMPL of the tier');
    const implHead = (await repo.run(['rev-parse', implBranch])).trim();
    writeFileSync(implPath, readFileSync(implPath, 'utf8').replace('state: WAVE_VERIFIED', 'state: WAVE_EXECUTING'));
    const script = writeScript([...wireSteps, '- text: "integration_result: { commit: HEAD, files_changed: [src/main.mjs], verification: PASS }"']);

    const result = await runIntegrationAgent({ implPath, repoDir: repo.dir, workDir: worktree, wave: 1, model: `script:${script}`, env: repo.env });

    expect(result.success, JSON.stringify(result, null, 2)).toBe(true);
    expect(result).toMatchObject({ gaps_before: 1, gaps_after: 0, files_changed: ['src/main.mjs'], violations: [] });
    expect(result.impl_commit).toBeUndefined();
    // The agent's commit is on the IMPL branch, in its worktree; main is where it was, its files untouched.
    expect((await repo.run(['log', '--format=%s', `${implHead}..${implBranch}`])).trim()).toBe('feat(wave1-integration): wire integration gaps');
    expect(result.commit).toBe((await repo.run(['rev-parse', implBranch])).trim());
    expect(readFileSync(path.join(worktree, 'src/main.mjs'), 'utf8')).toContain('registerFeature(registry);');
    expect(await repo.git.headCommit()).toBe(mainHead);
    expect(readFileSync(repo.path('src/main.mjs'), 'utf8')).toBe(mainSource);
    expect((await repo.run(['-C', worktree, 'status', '--porcelain'])).trim()).toBe('');
    // The report is refreshed in the IMPL (in the main checkout) and left for the tier to commit.
    expect(parseImpl(readFileSync(implPath, 'utf8')).manifest!.integration_reports?.wave1).toMatchObject({ valid: true, gaps: [] });
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('M docs/IMPL/IMPL-registry.yaml');
  }, 60_000);

  it('reports the gaps that remain when the agent only tries files it may not edit', async () => {
    const { repo, implPath } = await setup(implYaml({ connectors: ['integration_connectors:', '    - file: src/main.mjs', '      reason: the entry point registers features'] }));
    const script = writeScript(['- edit: { path: src/other.mjs, old: "1", new: "registerFeature" }', '  expect: error']);
    const result = await runIntegrationAgent({ implPath, repoDir: repo.dir, wave: 1, model: `script:${script}`, env: repo.env });
    expect(result).toMatchObject({ success: false, agent_launched: true, gaps_before: 1, gaps_after: 1, build_passed: true, allowed_files: ['src/main.mjs'], files_changed: [] });
    expect(result.commit).toBeUndefined();
    expect(result.remaining_gaps.map((gap) => gap.export_name)).toEqual(['registerFeature']);
    expect(result.error).toMatch(/1 of 1 gap\(s\) remain: registerFeature/);
    expect(readFileSync(repo.path('src/other.mjs'), 'utf8')).toBe('export const other = 1;\n');
  }, 60_000);

  it('wires an E35 wiring declaration (no E25 gap): the declared caller is the allowed file, the wiring re-checked on HEAD', async () => {
    const yaml = implYaml({
      reports: ['integration_reports:', '    wave1:', '        wave: 1', '        gaps: []', '        valid: true'],
      connectors: ['wiring:', '    - symbol: registerFeature', '      defined_in: src/feature.mjs', '      must_be_called_from: src/main.mjs', '      agent: A', '      wave: 1', '      integration_pattern: register'],
    });
    const { repo, implPath } = await setup(yaml);
    const result = await runIntegrationAgent({ implPath, repoDir: repo.dir, wave: 1, model: `script:${writeScript(wireSteps)}`, env: repo.env });
    expect(result.success, JSON.stringify(result, null, 2)).toBe(true);
    expect(result).toMatchObject({ gaps_before: 1, gaps_after: 0, allowed_files: ['src/main.mjs'], files_changed: ['src/main.mjs'] });
    expect(result.wiring_report).toMatchObject({ valid: true, gaps: [] });
    const manifest = parseImpl(readFileSync(implPath, 'utf8')).manifest!;
    expect(manifest.wiring_validation_reports?.wave1).toMatchObject({ valid: true });
  }, 60_000);

  it('skips (no agent) when the wave has no error/warning gaps', async () => {
    const { repo, implPath } = await setup(implYaml({ reports: ['integration_reports:', '    wave1:', '        wave: 1', '        gaps: []', '        valid: true'] }));
    const result = await runIntegrationAgent({ implPath, repoDir: repo.dir, wave: 1, model: 'script:/nonexistent.yaml', env: repo.env });
    expect(result).toMatchObject({ skipped: true, success: true, gap_count: 0, agent_launched: false, gaps_before: 0, gaps_after: 0 });
  });

  it('E47 hotfix: repairs a caller-cascade file, the build command confirms it', async () => {
    const { repo, implPath } = await setup(implYaml({ testCommand: 'node src/caller.mjs', reports: [] }), {
      'src/lib.mjs': 'export function greet(name) {\n  return `hello ${name}`;\n}\n',
      'src/caller.mjs': "import { hello } from './lib.mjs';\nconsole.log(hello('x'));\n",
    });
    const buildError = "file:///repo/src/caller.mjs:1\nimport { hello } from './lib.mjs';\n         ^^^^^\nSyntaxError: The requested module './lib.mjs' does not provide an export named 'hello'";
    const script = writeScript([
      '- edit: { path: src/lib.mjs, old: "greet", new: "hello" }',
      '  expect: error',
      '- edit: { path: src/caller.mjs, old: "import { hello }", new: "import { greet }" }',
      '- edit: { path: src/caller.mjs, old: "hello(\'x\')", new: "greet(\'x\')" }',
      '- commit: "[Polywave:wave1:integration-hotfix] fix caller cascade after wave 1 signature changes"',
    ]);
    const result = await runIntegrationAgent({ implPath, repoDir: repo.dir, wave: 1, model: `script:${script}`, env: repo.env, hotfix: { files: ['src/caller.mjs'], buildError } });
    expect(result.success, JSON.stringify(result, null, 2)).toBe(true);
    expect(result).toMatchObject({ mode: 'hotfix', gaps_before: 1, gaps_after: 0, build_passed: true, allowed_files: ['src/caller.mjs'], files_changed: ['src/caller.mjs'] });
    expect(result.agent?.denials.map((denial) => denial.target)).toEqual(['src/lib.mjs']);
    expect((await repo.run(['log', '-1', '--format=%s'])).trim()).toBe('[Polywave:wave1:integration-hotfix] fix caller cascade after wave 1 signature changes');
    expect(result.verify_build?.test_output).toContain('hello x');
  }, 60_000);

  it('polywave run-integration-agent prints the Go keys and ours (CLI, in process)', async () => {
    const { repo } = await setup();
    const script = writeScript(wireSteps);
    let out = '';
    let err = '';
    const io: CommandIo = { cwd: repo.dir, env: repo.env, now: () => new Date('2026-01-01T00:00:00Z'), stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: async () => '' };
    expect(await main(['run-integration-agent', 'docs/IMPL/IMPL-registry.yaml', '--wave', '1', '--model', `script:${script}`], io), err).toBe(0);
    const result = JSON.parse(out) as Record<string, unknown>;
    expect(Object.keys(result)).toEqual(expect.arrayContaining(['success', 'gap_count', 'agent_launched', 'build_passed', 'wave', 'mode', 'gaps_before', 'gaps_after', 'files_changed', 'commit']));
    expect(result).toMatchObject({ success: true, gap_count: 1, agent_launched: true, build_passed: true, gaps_before: 1, gaps_after: 0 });
    expect(err).toContain('run-integration-agent: launching the integrator agent');

    // --build-error-file without --hotfix-files is bad input.
    err = '';
    expect(await main(['run-integration-agent', 'docs/IMPL/IMPL-registry.yaml', '--wave', '1', '--build-error-file', 'x.log'], io)).toBe(2);
    expect(err).toMatch(/^polywave: error\[X001_INVALID_INPUT\]: --build-error-file goes with --hotfix-files/);
  }, 60_000);
});
