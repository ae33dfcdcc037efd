import { mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createScriptBackend } from '../src/agents/backends/script.js';
import { defaultAgentLimits } from '../src/agents/contract.js';
import { createJail } from '../src/agents/jail/jail.js';
import { PolywaveError } from '../src/errors/polywave-error.js';
import { saveCompletionReport } from '../src/store/completion-report-file.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createWaveFixture } from './support/wave-fixture.js';

// Issue 13, outside attack F3 (attack-compat-5-repros/repro-report-files.sh): a `complete` report
// without files_created/files_changed made finalize-wave refuse the whole wave at predict-conflicts
// (E11 "changed but not reported"); Go merges it. Now the set_completion tool (what a model calls)
// and `polywave set-completion` without --files-* fill the lists from the branch diff, and a report
// that still lists no files is taken as its branch diff (a warning, not a block). One wave, three
// agents, one per way of reporting: the script backend's raw set_completion tool call (A), the CLI
// in the agent's worktree (B), the CLI from elsewhere with an explicit commit (C: no lists). Real git.

/** runCliInProcess takes the repository's environment as plain strings. */
const cliEnv = (env: Readonly<Record<string, string | undefined>>): Record<string, string> => env as Record<string, string>;

describe('a complete report without file lists (issue 13, F3)', () => {
  it('is filled from git by the set_completion tool and by set-completion; one that still lists none is its branch diff; finalize merges the wave', async () => {
    const fixture = await createWaveFixture(
      { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'], modify: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }]], testCommand: 'true', lintCommand: 'true' },
      { 'src/b.ts': 'export const b = 0;\n' },
    );
    const { repo } = fixture;
    const base = await fixture.startWave(1);

    // A: the script backend's raw tool call, as a model makes it: status and verification only.
    const script = repo.sibling('script.yaml');
    writeFileSync(script, 'version: 1\nagents:\n  A: {steps: [{write: {path: src/a.ts, content: "export const a = 1;\\n"}}, {commit: "A"}, {tool: {name: set_completion, input: {status: complete, verification: PASS}}}]}\n');
    const scratchDir = repo.sibling('scratch-A');
    mkdirSync(scratchDir, { recursive: true });
    const outcome = await createScriptBackend().run({
      agentId: 'A', role: 'wave', wave: 1, attempt: 1,
      model: { backend: 'script', scriptPath: script, raw: `script:${script}` },
      systemPrompt: '', prompt: '',
      cwd: fixture.worktree('A'), branch: fixture.branch('A'), baseCommit: base,
      jail: await createJail({ root: fixture.worktree('A'), ownedFiles: ['src/a.ts'], branch: fixture.branch('A') }, { env: repo.env }),
      limits: defaultAgentLimits, env: repo.env, scratchDir, signal: new AbortController().signal, onEvent: () => {},
      reportCompletion: async (input) => {
        try {
          return { ok: true, status: (await saveCompletionReport(fixture.implPath, 'A', input)).status ?? '' };
        } catch (error) {
          return PolywaveError.isInstance(error) ? { ok: false, code: error.code, message: error.message } : { ok: false, code: 'X001_INVALID_INPUT', message: String(error) };
        }
      },
    });
    expect(outcome.status, JSON.stringify(outcome)).toBe('finished');
    const headA = (await repo.run(['rev-parse', fixture.branch('A')])).trim();
    expect(fixture.manifest().completion_reports?.A).toMatchObject({ status: 'complete', files_created: ['src/a.ts'], files_changed: [], branch: fixture.branch('A'), commit: headA });

    // B: `polywave set-completion` without --files-* in its own worktree.
    await fixture.work('B', { 'src/b.ts': 'export const b = 1;\n' });
    const setB = await runCliInProcess(['set-completion', fixture.implPath, '--agent', 'B', '--status', 'complete', '--verification', 'PASS'], { cwd: fixture.worktree('B'), env: cliEnv(repo.env) });
    expect(setB.code, setB.stderr).toBe(0);
    expect(fixture.manifest().completion_reports?.B).toMatchObject({ files_created: [], files_changed: ['src/b.ts'], branch: fixture.branch('B') });

    // C: reports from the main checkout with an explicit commit — nothing is filled in, no file lists.
    const commitC = await fixture.work('C', { 'src/c.ts': 'export const c = 1;\n' });
    const setC = await runCliInProcess(['set-completion', fixture.implPath, '--agent', 'C', '--status', 'complete', '--verification', 'PASS', '--commit', commitC, '--branch', fixture.branch('C')], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(setC.code, setC.stderr).toBe(0);
    const reportC = fixture.manifest().completion_reports?.C;
    expect([...(reportC?.files_created ?? []), ...(reportC?.files_changed ?? [])]).toEqual([]);

    const predicted = await runCliInProcess(['predict-conflicts', fixture.implPath, '--wave', '1'], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(predicted.code, predicted.stdout + predicted.stderr).toBe(0);
    const prediction = JSON.parse(predicted.stdout) as { report_mismatches: unknown[]; warnings?: string[] };
    expect(prediction.report_mismatches).toEqual([]);
    expect(prediction.warnings).toEqual(["agent C's report lists no files; its branch diff is taken as the report (src/c.ts)"]);

    const finalized = await fixture.finalize(1);
    expect(finalized.success, JSON.stringify(finalized.failed_step)).toBe(true);
    for (const id of ['a', 'b', 'c']) expect(await repo.git.showFile('HEAD', `src/${id}.ts`)).toBe(`export const ${id} = 1;\n`);
  });
});
