import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runWave } from '../src/orchestrator/run-wave.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createWaveFixture } from './support/wave-fixture.js';

// Issue 13, outside attack F3 (attack-compat-5-repros/repro-report-files.sh): a `complete` report
// without files_created/files_changed made finalize-wave refuse the whole wave at predict-conflicts
// (E11 "changed but not reported"); Go merges it. Now the set_completion tool (what a model calls)
// and `polywave set-completion` without --files-* fill the lists from the branch diff, and a report
// that still lists no files is taken as its branch diff (a warning, not a block). Real git, the
// script backend's raw tool call, the CLI in this process.

const spec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'], modify: ['src/b.ts'] }]], testCommand: 'true', lintCommand: 'true' };

/** runCliInProcess takes the repository's environment as plain strings. */
const cliEnv = (env: Readonly<Record<string, string | undefined>>): Record<string, string> => env as Record<string, string>;

describe('a complete report without file lists (issue 13, F3)', () => {
  it('the set_completion tool, called raw with only status and verification, fills the lists from git and the wave merges', async () => {
    const fixture = await createWaveFixture({ ...spec, state: 'WAVE_PENDING' }, { 'src/b.ts': 'export const b = 0;\n' });
    const { repo } = fixture;
    const script = path.join(repo.dir, '..', `${path.basename(repo.dir)}-script.yaml`);
    const agent = (id: string, file: string) =>
      `  ${id}: {steps: [{write: {path: ${file}, content: "export const ${id.toLowerCase()} = 1;\\n"}}, {commit: "${id}"}, {tool: {name: set_completion, input: {status: complete, verification: PASS}}}]}`;
    writeFileSync(script, ['version: 1', 'agents:', agent('A', 'src/a.ts'), agent('B', 'src/b.ts'), ''].join('\n'));
    const result = await runWave({ implPath: fixture.implPath, wave: 1, model: `script:${script}`, env: repo.env, skipCritic: true, gitAt: fixture.gitAt });
    expect(result.success, JSON.stringify(result.finalize?.failed_step ?? result.blocked ?? result.prepare)).toBe(true);
    const reports = fixture.manifest().completion_reports ?? {};
    expect(reports.A).toMatchObject({ status: 'complete', files_created: ['src/a.ts'], files_changed: [], branch: 'polywave/demo/wave1-agent-A', commit: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(reports.B).toMatchObject({ status: 'complete', files_created: [], files_changed: ['src/b.ts'], branch: 'polywave/demo/wave1-agent-B' });
    expect(await repo.git.showFile('HEAD', 'src/a.ts')).toBe('export const a = 1;\n');
    expect(await repo.git.showFile('HEAD', 'src/b.ts')).toBe('export const b = 1;\n');
  });

  it('set-completion without --files-* fills them in the agent worktree; a report that still lists none is its branch diff (warning), and finalize merges', async () => {
    const fixture = await createWaveFixture(spec, { 'src/b.ts': 'export const b = 0;\n' });
    const { repo } = fixture;
    await fixture.startWave(1);
    await fixture.work('A', { 'src/a.ts': 'export const a = 1;\n' });
    const setA = await runCliInProcess(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete', '--verification', 'PASS'], { cwd: fixture.worktree('A'), env: cliEnv(repo.env) });
    expect(setA.code, setA.stderr).toBe(0);
    expect(fixture.manifest().completion_reports?.A).toMatchObject({ files_created: ['src/a.ts'], files_changed: [], branch: 'polywave/demo/wave1-agent-A' });
    // B reports from outside its worktree with an explicit commit: nothing is filled in, no file lists.
    const commitB = await fixture.work('B', { 'src/b.ts': 'export const b = 1;\n' });
    const setB = await runCliInProcess(['set-completion', fixture.implPath, '--agent', 'B', '--status', 'complete', '--verification', 'PASS', '--commit', commitB, '--branch', fixture.branch('B')], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(setB.code, setB.stderr).toBe(0);
    const reportB = fixture.manifest().completion_reports?.B;
    expect(reportB?.files_created ?? []).toEqual([]);
    expect(reportB?.files_changed ?? []).toEqual([]);

    const predicted = await runCliInProcess(['predict-conflicts', fixture.implPath, '--wave', '1'], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(predicted.code, predicted.stdout + predicted.stderr).toBe(0);
    const prediction = JSON.parse(predicted.stdout) as { report_mismatches: unknown[]; warnings?: string[] };
    expect(prediction.report_mismatches).toEqual([]);
    expect(prediction.warnings).toContain("agent B's report lists no files; its branch diff is taken as the report (src/b.ts)");

    const finalized = await fixture.finalize(1);
    expect(finalized.success, JSON.stringify(finalized.failed_step)).toBe(true);
    expect(await repo.git.showFile('HEAD', 'src/b.ts')).toBe('export const b = 1;\n');
  });
});
