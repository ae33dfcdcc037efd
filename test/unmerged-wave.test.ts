import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { detectResumable } from '../src/engine/resume-detect.js';
import { unmergedAgents } from '../src/engine/wave-merged.js';
import { runAutopilot } from '../src/orchestrator/autopilot.js';
import { isWaveFinished } from '../src/protocol/waves.js';
import { editImpl } from '../src/store/manifest-file.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture, implRelative, slug, type WaveFixture } from './support/wave-fixture.js';
import type { ImplManifest } from '../src/protocol/schema/impl-schema.js';

// Issue 13, outside attack F1 (attack-compat-5-repros/repro-unmerged-wave.sh): wave 1 is finalized
// (WAVE_VERIFIED, merge_state completed); wave 2's agent commits on its branch and reports complete,
// then the orchestrator stops before finalize-wave. The manifest alone says "merged and verified";
// git says the work is only on the agent branch. Before: prepare-wave/run-wave refused with
// WAVE_ALREADY_VERIFIED, `polywave run` skipped the wave and closed the IMPL COMPLETE without src/c.ts,
// and close-impl closed it too. Real repositories, real merges, the script backend.

async function reportedButUnmerged(): Promise<WaveFixture> {
  const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }], [{ id: 'C', files: ['src/c.ts'] }]], testCommand: 'true', lintCommand: 'true' });
  await fixture.startWave(1);
  for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
  // Wave 1 as finalize-wave leaves it (its own tests cover it; doing it by hand keeps this test cheap):
  // one --no-ff merge per agent, WAVE_VERIFIED with merge_state completed, committed.
  for (const id of ['A', 'B']) await fixture.repo.run(['merge', '-q', '--no-ff', '-m', `Merge ${fixture.branch(id)}`, fixture.branch(id)]);
  await editImpl(fixture.implPath, () => ({ edits: [{ path: ['state'], value: 'WAVE_VERIFIED' }, { path: ['merge_state'], value: 'completed' }], outcome: undefined }));
  await fixture.repo.run(['add', implRelative]);
  await fixture.repo.run(['-c', 'core.hooksPath=/dev/null', 'commit', '-q', '-m', 'wave 1 state']);
  await fixture.startWave(2);
  await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' }, { wave: 2 });
  return fixture;
}

/** runCliInProcess takes the repository's environment as plain strings. */
const cliEnv = (env: Readonly<Record<string, string | undefined>>): Record<string, string> => env as Record<string, string>;

describe('a wave that reported complete but was never merged (issue 13, F1)', () => {
  it('is not "finished": prepare-wave and close-impl refuse with WAVE_NOT_MERGED (nothing changed); polywave run finalizes it, then closes', async () => {
    const fixture = await reportedButUnmerged();
    const { repo } = fixture;
    const manifest = fixture.manifest();
    // The manifest alone claims wave 2 is done (the state and merge_state of wave 1's finalize).
    expect(manifest.state).toBe('WAVE_VERIFIED');
    expect(manifest.merge_state).toBe('completed');
    expect(isWaveFinished(manifest, 2)).toBe(true);
    // Git does not: C's branch is not in main. Wave 1's agents are (their commits are reachable).
    expect(await unmergedAgents(repo.git, manifest, slug, [1, 2])).toEqual([{ agent: 'C', wave: 2, ref: expect.stringMatching(/^polywave\/demo\/wave2-agent-C at [0-9a-f]{12}$/) }]);
    const before = { manifest: readFileSync(fixture.implPath, 'utf8'), head: await fixture.head(), worktrees: (await repo.git.worktreeList()).length };

    // prepare-wave: refused at state_check with the exact way out (no new worktree, base_commit kept).
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 2, env: repo.env, gitAt: fixture.gitAt });
    const failed = prepared.steps.find((step) => step.status === 'failed');
    expect(failed?.step).toBe('state_check');
    expect(failed?.detail).toMatch(/^WAVE_NOT_MERGED: every agent of wave 2 reported complete but its work is not merged into HEAD: C \(wave 2: polywave\/demo\/wave2-agent-C at /);
    expect(failed?.detail).toContain('run `polywave finalize-wave docs/IMPL/IMPL-demo.yaml --wave 2`');
    expect((failed?.data as { code?: string }).code).toBe('WAVE_NOT_MERGED');

    // close-impl (CLI): exit 1, coded, nothing changed — not archived, not COMPLETE.
    const closed = await runCliInProcess(['close-impl', fixture.implPath, '--date', '2026-05-12'], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(closed.code, closed.stderr).toBe(1);
    expect(closed.stderr).toMatch(/N037_MARK_COMPLETE_FAILED.*WAVE_NOT_MERGED: agent work not merged into main: C \(wave 2/);
    expect(closed.stderr).not.toMatch(/\n\s+at /);
    expect({ manifest: readFileSync(fixture.implPath, 'utf8'), head: await fixture.head(), worktrees: (await repo.git.worktreeList()).length }).toEqual(before);
    expect(existsSync(repo.path('docs/IMPL/complete/IMPL-demo.yaml'))).toBe(false);

    // resume-detect points at finalize-wave, not at close-impl.
    const [candidate] = await detectResumable({ git: repo.git, gitAt: fixture.gitAt, checkDirty: false });
    expect(candidate).toMatchObject({ wave: 2, resume_command: `polywave finalize-wave ${candidate?.impl_path} --wave 2`, suggested_action: expect.stringMatching(/^wave 2: every agent reported complete but its work is not merged \(C \(wave 2: polywave\/demo\/wave2-agent-C at /) });

    // polywave run <impl>: wave 1 skipped (merged), wave 2 finalized (not skipped, no agent relaunched), then closed.
    const script = path.join(repo.dir, '..', `${path.basename(repo.dir)}-script.yaml`);
    writeFileSync(script, 'version: 1\nagents: {}\n');
    const run = await runAutopilot({ implPath: fixture.implPath, repoDir: repo.dir, auto: true, env: repo.env, model: `script:${script}`, now: () => new Date('2026-05-12T10:00:00Z') });
    expect(run.phases.map((phase) => `${phase.phase}${phase.wave ? ` ${phase.wave}` : ''}:${phase.status}`), JSON.stringify(run.phases)).toEqual(['wave 1:skipped', 'wave 2:done', 'close:done']);
    expect(run.state).toBe('COMPLETE');
    expect(run.waves[0]?.agents ?? []).toEqual([]);
    expect(await repo.git.showFile('HEAD', 'src/c.ts')).toBe('export const c = 1;\n');
    expect(readFileSync(repo.path('docs/IMPL/complete/IMPL-demo.yaml'), 'utf8')).toMatch(/^state: COMPLETE$/m);
  });

  it('decides per agent from its evidence: an unmerged branch counts; a merged short SHA, a solo commit on main and an agent git knows nothing of do not; a report naming the target as its branch is judged by its commit', async () => {
    const repo = await createTestRepo({ files: { 'src/base.ts': 'export const base = 1;\n' } });
    const mainCommit = await repo.git.headCommit();
    await repo.git.createBranch('polywave/demo/wave1-agent-A', 'HEAD');
    await repo.run(['checkout', '-q', 'polywave/demo/wave1-agent-A']);
    writeFileSync(repo.path('src/a.ts'), 'export const a = 1;\n');
    const commitA = await repo.commitAll('A');
    await repo.run(['checkout', '-q', 'main']);
    writeFileSync(repo.path('src/d.ts'), 'export const d = 1;\n');
    const commitD = await repo.commitAll('D, a solo agent on main');
    const manifest: ImplManifest = {
      waves: [{ number: 1, agents: [{ id: 'A' }, { id: 'B' }, { id: 'C' }, { id: 'D' }, { id: 'E' }, { id: 'F' }] }],
      completion_reports: {
        A: { status: 'complete', commit: commitA },
        B: { status: 'complete', commit: mainCommit.slice(0, 9) },
        C: { status: 'complete', commit: 'deadbeefdeadbeef', branch: 'polywave/demo/wave1-agent-C' },
        D: { status: 'complete', commit: commitD, branch: 'main' },
        // Names the target as its branch: that branch's tip is no evidence, its commit (A's, unmerged) is.
        F: { status: 'complete', commit: commitA, branch: 'main' },
      },
    } as unknown as ImplManifest;
    expect(await unmergedAgents(repo.git, manifest, slug, [1])).toEqual([
      { agent: 'A', wave: 1, ref: `polywave/demo/wave1-agent-A at ${commitA.slice(0, 12)}` },
      { agent: 'F', wave: 1, ref: `commit ${commitA.slice(0, 12)}` },
    ]);
    // Against A's branch as the target (a PROGRAM tier's IMPL branch), D's solo commit on main is the unmerged one.
    expect((await unmergedAgents(repo.git, manifest, slug, [1], 'polywave/demo/wave1-agent-A')).map((agent) => agent.agent)).toEqual(['D']);
    await repo.run(['merge', '-q', '--no-ff', '-m', 'merge A', 'polywave/demo/wave1-agent-A']);
    expect(await unmergedAgents(repo.git, manifest, slug, [1])).toEqual([]);
  });
});
