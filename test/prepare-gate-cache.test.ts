import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { editImpl } from '../src/store/manifest-file.js';
import { createWaveFixture } from './support/wave-fixture.js';

// Issue 13, item 6 / E38: in a repository where `init` never ran (no info/exclude, no .gitignore
// entry), prepare-wave's state commit must not take .polywave-state/gate-cache.json (nor any other
// runtime state) to main. Real repository, real prepare-wave.

describe('prepare-wave never commits the gate cache (E38, issue 13)', () => {
  it('commits the IMPL state change but not .polywave-state/**, and the runtime state does not block', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], testCommand: 'true', lintCommand: 'true' });
    // As in a repository where init never ran: nothing excludes Polywave's runtime state.
    writeFileSync(path.join(fixture.repo.dir, '.git', 'info', 'exclude'), '');
    // What an earlier run-gates / stopped prepare-wave leaves behind.
    mkdirSync(fixture.repo.path('.polywave-state'), { recursive: true });
    writeFileSync(fixture.repo.path('.polywave-state/gate-cache.json'), '{"version":1,"entries":{}}\n');
    // A state change of the IMPL that --commit-state (default) must commit.
    await editImpl(fixture.implPath, () => ({ edits: [{ path: ['state'], value: 'WAVE_PENDING' }], outcome: undefined }));
    expect((await fixture.repo.git.status()).map((entry) => entry.path).sort()).toContain('docs/IMPL/IMPL-demo.yaml');
    expect((await fixture.repo.git.status()).some((entry) => entry.path.startsWith('.polywave-state'))).toBe(true);

    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(result.success, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe(true);
    const working = result.steps.find((step) => step.step === 'working_dir_check');
    expect((working?.data as { committed?: Array<{ files: string[] }> } | undefined)?.committed?.[0]?.files).toEqual(['docs/IMPL/IMPL-demo.yaml']);
    const everCommitted = await fixture.repo.run(['log', '--all', '--name-only', '--format=']);
    expect(everCommitted).not.toContain('.polywave-state');
    expect(await fixture.repo.run(['ls-tree', '-r', '--name-only', 'HEAD'])).not.toContain('gate-cache.json');
  });
});
