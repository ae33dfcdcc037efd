import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { prepareWave, preWaveValidate } from '../src/engine/prepare-wave.js';
import { createWaveFixture, implYaml, type FixtureSpec } from './support/wave-fixture.js';

// Issue 13, item 6: E41 is checked in prepare-wave's pre-flight too ("before worktree creation;
// blocks wave launch"), not only before the merge. Real repositories, real prepare-wave.

function withContract(spec: FixtureSpec, contract: { name: string; definition: string; location: string }): string {
  return implYaml(spec).replace(
    'interface_contracts:\n',
    `interface_contracts:\n    - name: ${contract.name}\n      description: Shared settings.\n      definition: ${JSON.stringify(contract.definition)}\n      location: ${contract.location}\n`,
  );
}

const spec: FixtureSpec = {
  waves: [[{ id: 'A', files: ['src/lib/a.ts'] }, { id: 'B', files: ['src/lib/b.ts'], modify: ['src/lib/b.ts'] }]],
  state: 'WAVE_PENDING',
  testCommand: 'true',
  lintCommand: 'true',
};

describe('E41 in prepare-wave pre-flight (issue 13)', () => {
  it('a contract declaring in A\'s file a name that B\'s file in the same namespace already exports blocks the wave before any worktree', async () => {
    const fixture = await createWaveFixture(spec, { 'src/lib/b.ts': 'export const Config = { y: 1 };\n' });
    fixture.repo.write('docs/IMPL/IMPL-demo.yaml', withContract(spec, { name: 'Config', definition: 'export interface Config { x: number }', location: 'src/lib/a.ts' }));
    await fixture.repo.commitAll('plan');
    const manifestBefore = readFileSync(fixture.implPath, 'utf8');
    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(result.success).toBe(false);
    const failed = result.steps.find((step) => step.status === 'failed');
    expect(failed?.step).toBe('type_collision');
    expect(failed?.detail).toMatch(/^E41: 1 declaration collision\(s\) across owners of wave 1: Config in src\/lib \(A, B: src\/lib\/a\.ts, src\/lib\/b\.ts\)/);
    expect((failed?.data as { valid: boolean }).valid).toBe(false);
    expect(result.worktrees).toEqual([]);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(1);
    expect(readFileSync(fixture.implPath, 'utf8')).toBe(manifestBefore);
    // pre-wave-validate reports the same check.
    const checked = await preWaveValidate({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(checked.checks.find((check) => check.name === 'type_collision')?.status).toBe('failed');
  });

  it('the same name in another namespace (directory) is no collision', async () => {
    const other: FixtureSpec = { ...spec, waves: [[{ id: 'A', files: ['src/lib/a.ts'] }, { id: 'B', files: ['src/other/b.ts'], modify: ['src/other/b.ts'] }]] };
    const fixture = await createWaveFixture(other, { 'src/other/b.ts': 'export const Config = { y: 1 };\n' });
    fixture.repo.write('docs/IMPL/IMPL-demo.yaml', withContract(other, { name: 'Config', definition: 'export interface Config { x: number }', location: 'src/lib/a.ts' }));
    await fixture.repo.commitAll('plan');
    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    const step = result.steps.find((item) => item.step === 'type_collision');
    expect(step?.status, JSON.stringify(step)).toBe('success');
  });
});
