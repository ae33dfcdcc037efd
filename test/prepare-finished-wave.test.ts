import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { runWave } from '../src/orchestrator/run-wave.js';
import { PolywaveError } from '../src/errors/polywave-error.js';
import { createWaveFixture, type FixtureSpec, type WaveFixture } from './support/wave-fixture.js';

// Issue 13, item 6: prepare-wave / run-wave on a wave that is already merged and verified must
// refuse (WAVE_ALREADY_VERIFIED, exit 1) and change nothing — no worktrees, base_commit and
// merge_state untouched — unless --rerun is given. Real repositories, real merges.

const spec: FixtureSpec = {
  waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]],
  testCommand: 'true',
  lintCommand: 'true',
};

async function verifiedWave(): Promise<WaveFixture> {
  const fixture = await createWaveFixture(spec);
  await fixture.startWave(1);
  for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
  const finalized = await fixture.finalize(1);
  expect(finalized.success, JSON.stringify(finalized.steps.find((step) => step.status === 'failed'))).toBe(true);
  return fixture;
}

async function snapshot(fixture: WaveFixture) {
  return {
    manifest: readFileSync(fixture.implPath, 'utf8'),
    head: await fixture.head(),
    worktrees: (await fixture.repo.git.worktreeList()).length,
    branches: await fixture.repo.git.listBranches('polywave/'),
    status: await fixture.repo.git.status(),
  };
}

describe('a finished wave is refused (issue 13)', () => {
  it('prepare-wave refuses a merged and verified wave with WAVE_ALREADY_VERIFIED and changes nothing; --rerun lets it through', async () => {
    const fixture = await verifiedWave();
    const manifest = fixture.manifest();
    expect(manifest.state).toBe('WAVE_VERIFIED');
    expect(manifest.merge_state).toBe('completed');
    const before = await snapshot(fixture);

    const refused = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(refused.success).toBe(false);
    const failed = refused.steps.find((step) => step.status === 'failed');
    expect(failed?.step).toBe('state_check');
    expect(failed?.detail).toMatch(/^WAVE_ALREADY_VERIFIED: wave 1 is already merged and verified/);
    expect(failed?.data).toEqual({ code: 'WAVE_ALREADY_VERIFIED' });
    expect(refused.worktrees).toEqual([]);
    expect(await snapshot(fixture)).toEqual(before);
    expect(fixture.manifest().waves?.[0]?.base_commit).toBe(manifest.waves?.[0]?.base_commit);

    const rerun = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, rerun: true });
    expect(rerun.steps.find((step) => step.step === 'state_check')?.status).toBe('success');
  });

  it('run-wave refuses it before anything starts (exit 1, coded)', async () => {
    const fixture = await verifiedWave();
    const before = await snapshot(fixture);
    const error = await runWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, model: 'script:/nonexistent.yaml' }).catch((caught: unknown) => caught);
    expect(PolywaveError.isInstance(error)).toBe(true);
    expect((error as PolywaveError).code).toBe('WAVE_ALREADY_VERIFIED');
    expect((error as PolywaveError).exitCode).toBe(1);
    expect(await snapshot(fixture)).toEqual(before);
  });

  it('a wave whose agents are done but whose merge is not verified is still E9 re-entry (not refused)', async () => {
    const fixture = await createWaveFixture(spec);
    await fixture.startWave(1);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(result.steps.find((step) => step.step === 'state_check')?.status).toBe('success');
  });
});
