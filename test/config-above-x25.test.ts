/**
 * Outside attacks X25-21, X25-25 and X25-11 (issue 11): where the settings that decide every sandbox come from.
 * - X25-21: a repository without a polywave.config.json of its own took its sandbox, setup, dispatch and the daemon's
 *   autonomy from a config above it "as on disk" — under a shared directory, another local user's file. A config
 *   another user controls (owned by another uid than ours and root, writable by anyone, or in a directory anyone may
 *   write without the sticky bit) is now ignored, with a warning naming it.
 * - X25-25: an agent deleted the repository's own config; finalize saw no change in the watched keys and the config
 *   above took over (`sandbox.writable: ["~"]`). The deletion now blocks the wave like a change.
 * - X25-11: `autonomy` (the daemon's level without --autonomy) and `budget_usd` were not watched.
 * Real git, the real finalize pipeline in-process.
 */
import { chmodSync, chownSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { budgetFrom } from '../src/cli/budget-option.js';
import { findConfigFile } from '../src/gates/config.js';
import { locateProjectConfig } from '../src/store/project-config.js';
import { configBlockInEffect, loadTrustedConfig } from '../src/store/trusted-config.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture } from './support/wave-fixture.js';

const isRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;

describe('a polywave.config.json above the repository (X25-21)', () => {
  it('is used only when it is this user\'s (or root\'s), not writable by anyone, in a directory not open to anyone', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export {};\n' } });
    // <root>/repo is the repository: <root>/polywave.config.json is above it (<root> stands for a shared /tmp/proj's parent).
    const target = repo.dir;
    const above = path.join(path.dirname(target), 'polywave.config.json');
    writeFileSync(above, `${JSON.stringify({ sandbox: { writable: ['~'], network: { allow: ['attacker.example.com'] } } })}\n`);
    chmodSync(above, 0o644);
    expect((await loadTrustedConfig(target)).path).toBe(above);
    expect(await locateProjectConfig(target)).toBe(above);

    chmodSync(above, 0o666);
    expect((await loadTrustedConfig(target)).path).toBeUndefined();
    expect(await locateProjectConfig(target)).toBeUndefined();
    chmodSync(above, 0o644);

    const directoryMode = 0o777;
    chmodSync(path.dirname(above), directoryMode);
    expect((await loadTrustedConfig(target)).path, 'a directory anyone may write, no sticky bit').toBeUndefined();
    chmodSync(path.dirname(above), directoryMode | 0o1000);
    expect((await loadTrustedConfig(target)).path, 'sticky (/tmp): the owner decides').toBe(above);

    // X26-03: group-writable (umask 002, a team directory) — trusted only when the group is our own.
    const gid = process.getegid?.() ?? 0;
    chmodSync(above, 0o664);
    expect((await loadTrustedConfig(target)).path, 'group-writable, our group').toBe(above);
    if (isRoot) {
      chownSync(above, 0, 1);
      expect((await loadTrustedConfig(target)).path, 'group-writable by group 1').toBeUndefined();
      expect(await findConfigFile(target), 'the gates\' repo registry (X26-12)').toBeUndefined();
      chownSync(above, 0, gid);
      chmodSync(above, 0o644);
      chownSync(path.dirname(above), 0, 1);
      chmodSync(path.dirname(above), 0o775);
      expect((await loadTrustedConfig(target)).path, 'a directory group 1 may write').toBeUndefined();
      chmodSync(path.dirname(above), 0o755);
      chownSync(path.dirname(above), 0, gid);
    }
    chmodSync(above, 0o644);
    chmodSync(above, 0o666);
    expect(await findConfigFile(target), 'the gates\' repo registry (X26-12): writable by anyone').toBeUndefined();
    chmodSync(above, 0o644);
    expect(await findConfigFile(target)).toBe(above);

    if (isRoot) {
      chownSync(above, 1, 1);
      expect((await loadTrustedConfig(target)).path, 'owned by uid 1').toBeUndefined();
      expect(await locateProjectConfig(target)).toBeUndefined();
      chownSync(above, 0, 0);
      expect((await loadTrustedConfig(target)).path).toBe(above);
    }
    chmodSync(path.dirname(above), 0o755);
  });
});

describe('the budget of run-wave (X26-10)', () => {
  it('comes from the repository root\'s committed config, never from a nested one next to the IMPL an agent may own', async () => {
    const repo = await createTestRepo({ files: { 'polywave.config.json': `${JSON.stringify({ budget_usd: { run: 5, wave: 2, agent: 1 } })}\n`, 'docs/IMPL/polywave.config.json': `${JSON.stringify({ budget_usd: 1_000_000 })}\n`, 'docs/IMPL/IMPL-x.yaml': 'title: x\n' } });
    const tracker = await budgetFrom({}, repo.path('docs/IMPL/IMPL-x.yaml'));
    expect(tracker?.limits).toMatchObject({ runUsd: 5, waveUsd: 2, agentUsd: 1 });
  });
});

describe('finalize-wave and the repository\'s own config (X25-25, X25-11)', () => {
  it('an agent deleting the repository\'s config while one above would take over blocks the wave, and the block stays in effect', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['polywave.config.json', 'src/a.ts'], modify: ['polywave.config.json'] }, { id: 'B', files: ['src/b.ts'] }]] }, { 'polywave.config.json': '{}\n' });
    const above = path.join(path.dirname(fixture.repo.dir), 'polywave.config.json');
    writeFileSync(above, `${JSON.stringify({ sandbox: { writable: ['~'] } })}\n`);
    expect((await loadTrustedConfig(fixture.repo.dir)).path).toBe(path.join(fixture.repo.dir, 'polywave.config.json'));
    await fixture.startWave(1);
    await fixture.complete('A', { 'polywave.config.json': null, 'src/a.ts': "export const a = 'a';\n" });
    await fixture.complete('B', { 'src/b.ts': "export const b = 'b';\n" });
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    expect(result.failed_step?.step).toBe('check-config-change');
    const detail = result.steps.find((step) => step.step === 'check-config-change')?.detail ?? '';
    expect(detail).toContain('SANDBOX_CONFIG_CHANGED');
    expect(detail).toContain(`polywave.config.json deleted: ${above} (above the repository) would set its settings`);
    // Every later command: the block is in effect, and the settings read are the accepted ones (the repository's {}), not the config above.
    const block = await configBlockInEffect(fixture.repo.dir);
    expect(block?.keys.join('; ')).toContain('deleted');
    const trusted = await loadTrustedConfig(fixture.repo.dir);
    expect(trusted.blocked).toBe(true);
    expect(trusted.config?.sandbox).toBeUndefined();
  }, 120_000);

  it('an agent raising the daemon\'s autonomy or the budget in the config blocks the wave', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['polywave.config.json', 'src/a.ts'], modify: ['polywave.config.json'] }]] }, { 'polywave.config.json': `${JSON.stringify({ autonomy: { level: 'gated' }, budget_usd: 5 })}\n` });
    await fixture.startWave(1);
    await fixture.complete('A', { 'polywave.config.json': `${JSON.stringify({ autonomy: { level: 'autonomous', max_auto_retries: 50 }, budget_usd: 5000 })}\n`, 'src/a.ts': "export const a = 'a';\n" });
    const result = await fixture.finalize(1);
    expect(result.failed_step?.step).toBe('check-config-change');
    const detail = result.steps.find((step) => step.step === 'check-config-change')?.detail ?? '';
    expect(detail).toMatch(/in autonomy; budget_usd/);
  }, 120_000);
});
