import { describe, expect, it } from 'vitest';
import type { FinalizeWaveResult } from '../src/engine/finalize-wave.js';
import { createWaveFixture, type FixtureSpec, type WaveFixture } from './support/wave-fixture.js';

// Issue 13, item 6: finalize-wave leaves a clean tree — the state change it wrote to the IMPL is
// committed (as prepare-wave --commit-state does), except with --no-commit-state and inside a
// PROGRAM tier (concurrentRefs), where the main checkout must not move. Real repositories.

const spec: FixtureSpec = {
  waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }], [{ id: 'C', files: ['src/c.ts'] }]],
  testCommand: 'true',
  lintCommand: 'true',
};

async function doneWave(): Promise<WaveFixture> {
  const fixture = await createWaveFixture(spec);
  await fixture.startWave(1);
  for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
  return fixture;
}

function commitStep(result: FinalizeWaveResult) {
  return result.steps.find((step) => step.step === 'commit-state');
}

describe('finalize-wave commits its state change (issue 13)', () => {
  it('leaves the main checkout clean after a verified wave; a re-run (E9) still passes the tamper check', async () => {
    const fixture = await doneWave();
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(result.failed_step)).toBe(true);
    expect(commitStep(result)?.status).toBe('success');
    expect(await fixture.repo.git.status()).toEqual([]);
    expect((await fixture.repo.run(['log', '-1', '--format=%s'])).trim()).toBe('chore: update Polywave state after wave 1 (finalize-wave)');
    expect((await fixture.repo.run(['show', '--name-only', '--format=', 'HEAD'])).trim()).toBe('docs/IMPL/IMPL-demo.yaml');
    expect((await fixture.repo.run(['show', 'HEAD:docs/IMPL/IMPL-demo.yaml']))).toContain('state: WAVE_VERIFIED');
    const again = await fixture.finalize(1);
    expect(again.success, JSON.stringify(again.failed_step)).toBe(true);
  });

  it('--no-commit-state (commitState: false) leaves the state change uncommitted', async () => {
    const fixture = await doneWave();
    const result = await fixture.finalize(1, { commitState: false });
    expect(result.success).toBe(true);
    expect(commitStep(result)?.status).toBe('skipped');
    expect((await fixture.repo.git.status()).map((entry) => entry.path)).toEqual(['docs/IMPL/IMPL-demo.yaml']);
  });

  it('inside a PROGRAM tier (concurrentRefs) main does not move for the state', async () => {
    const fixture = await doneWave();
    const result = await fixture.finalize(1, { concurrentRefs: ['refs/heads/polywave/other/'] });
    expect(result.success, JSON.stringify(result.failed_step)).toBe(true);
    expect(commitStep(result)?.status).toBe('skipped');
    expect(commitStep(result)?.detail).toMatch(/PROGRAM tier/);
    expect((await fixture.repo.run(['log', '-1', '--format=%s'])).trim()).not.toMatch(/Polywave state/);
    expect((await fixture.repo.git.status()).map((entry) => entry.path)).toEqual(['docs/IMPL/IMPL-demo.yaml']);
  });

  it('a failed finalize commits nothing', async () => {
    const fixture = await createWaveFixture(spec);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    const head = await fixture.head();
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    expect(commitStep(result)).toBeUndefined();
    expect(await fixture.head()).toBe(head);
  });
});
