import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { closeImpl } from '../src/engine/close-impl.js';
import type { FinalizeWaveResult } from '../src/engine/finalize-wave.js';
import { runCli } from './support/cli.js';
import { createWaveFixture, type WaveFixture } from './support/wave-fixture.js';

// End to end on a real repository: a 2-wave IMPL with 3 + 2 agents. Agents commit in their own
// worktrees, report through the real `set-completion` CLI, and each wave is finalized (wave 1 by
// the CLI, wave 2 by the engine API); the IMPL is then closed.

const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/** Commits the agent's files in its worktree, then reports through `polywave set-completion`. */
async function agentDelivers(fixture: WaveFixture, agent: string, wave: number, files: Record<string, string>, created: string[]): Promise<string> {
  const commit = await fixture.work(agent, files, { wave });
  const changed = Object.keys(files).filter((file) => !created.includes(file));
  const args = ['set-completion', fixture.implPath, '--agent', agent, '--status', 'complete', '--commit', commit, '--branch', fixture.branch(agent, wave), '--worktree', fixture.worktree(agent, wave), '--verification', 'PASS'];
  if (created.length > 0) args.push('--files-created', created.join(','));
  if (changed.length > 0) args.push('--files-changed', changed.join(','));
  const result = await runCli(args, { cwd: fixture.worktree(agent, wave), env, timeoutMs: 60_000 });
  expect(result.code, result.stderr).toBe(0);
  expect(JSON.parse(result.stdout)).toEqual({ agent, status: 'complete', saved: true });
  return commit;
}

describe('e2e: two waves (3 + 2 agents) from worktrees to a closed IMPL', () => {
  it('merges everyone with one --no-ff merge each, verifies, cleans up, and is COMPLETE-ready', async () => {
    const fixture = await createWaveFixture({
      waves: [
        [
          { id: 'A', files: ['src/a.ts'] },
          { id: 'B', files: ['src/b.ts'] },
          { id: 'C', files: ['src/c.ts'] },
        ],
        [
          { id: 'D', files: ['src/a.ts', 'src/d.ts'], modify: ['src/a.ts'] },
          { id: 'E', files: ['src/e.ts'] },
        ],
      ],
      testCommand: 'for f in a b c; do test -f src/$f.ts || exit 1; done',
      lintCommand: '! grep -rn "console.log" src',
    });
    const start = await fixture.head();

    // Wave 1.
    await fixture.startWave(1);
    const tips = new Map<string, string>();
    tips.set('A', await agentDelivers(fixture, 'A', 1, { 'src/a.ts': 'export function a(): string {\n  return "a";\n}\n' }, ['src/a.ts']));
    tips.set('B', await agentDelivers(fixture, 'B', 1, { 'src/b.ts': 'export const b = "b";\n' }, ['src/b.ts']));
    tips.set('C', await agentDelivers(fixture, 'C', 1, { 'src/c.ts': 'export const c = "c";\n' }, ['src/c.ts']));
    const wave1 = await runCli(['finalize-wave', fixture.implPath, '--wave', '1'], { cwd: fixture.repo.dir, env, timeoutMs: 120_000 });
    expect(wave1.code, wave1.stderr).toBe(0);
    const result1 = JSON.parse(wave1.stdout) as FinalizeWaveResult;
    expect(result1.success).toBe(true);
    expect(result1.state).toBe('WAVE_VERIFIED');
    expect(result1.final_wave).toBe(false);
    expect(result1.complete_ready).toBe(false);
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');
    expect(await fixture.repo.git.listBranches('polywave/')).toEqual([]);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(1);

    // Wave 2 starts from the merged wave 1 (I3) and builds on it.
    const base2 = await fixture.startWave(2);
    expect(await fixture.repo.git.isAncestor(tips.get('C')!, base2)).toBe(true);
    tips.set('D', await agentDelivers(fixture, 'D', 2, { 'src/a.ts': 'export function a(): string {\n  return "a2";\n}\n', 'src/d.ts': 'import { a } from "./a";\nexport const d = a();\n' }, ['src/d.ts']));
    tips.set('E', await agentDelivers(fixture, 'E', 2, { 'src/e.ts': 'export const e = "e";\n' }, ['src/e.ts']));
    const result2 = await fixture.finalize(2);
    expect(result2.success, JSON.stringify(result2.failed_step)).toBe(true);
    expect(result2.final_wave).toBe(true);
    expect(result2.complete_ready).toBe(true);
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');
    expect(fixture.manifest().merge_state).toBe('completed');

    // Everyone's work is in the final tree.
    expect(fixture.repo.read('src/a.ts')).toContain('"a2"');
    for (const file of ['b', 'c', 'd', 'e']) expect(existsSync(fixture.repo.path(`src/${file}.ts`))).toBe(true);
    // History: exactly one --no-ff merge per agent, each merging that agent's tip.
    const merges = (await fixture.repo.run(['rev-list', '--merges', '--parents', `${start}..HEAD`])).split('\n').filter(Boolean);
    expect(merges).toHaveLength(5);
    const secondParents = merges.map((line) => line.split(' ')[2]).sort();
    expect(secondParents).toEqual([...tips.values()].sort());
    for (const line of merges) expect(line.split(' ')).toHaveLength(3);
    // Nothing left behind.
    expect(await fixture.repo.git.listBranches()).toEqual([expect.objectContaining({ name: 'main' })]);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(1);

    // close-impl: WAVE_VERIFIED → COMPLETE, archived, committed.
    const closed = await closeImpl({ implPath: fixture.implPath, date: '2026-05-12', env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(closed.marked).toBe(true);
    expect(closed.committed).toBe(true);
    expect(existsSync(fixture.repo.path('docs/IMPL/complete/IMPL-demo.yaml'))).toBe(true);
  });
});
