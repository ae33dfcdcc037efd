import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { FinalizeWaveResult } from '../src/engine/finalize-wave.js';
import { runCli } from './support/cli.js';
import { createWaveFixture, type WaveFixture } from './support/wave-fixture.js';

// Crash safety (E9): a real child process running the CLI is SIGKILLed right after its k-th
// merge — after the merge log recorded it (`k`) or before (`k:merged`, the hardest window: the
// merge commit exists, the log does not know it). Re-running finishes the wave with every agent
// merged exactly once and no commit lost.

const agents = ['A', 'B', 'C', 'D'];
const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

async function fourAgentWave(): Promise<{ fixture: WaveFixture; tips: Map<string, string>; targetBefore: string }> {
  const fixture = await createWaveFixture({
    waves: [agents.map((id) => ({ id, files: [`src/${id.toLowerCase()}.ts`] }))],
    testCommand: agents.map((id) => `test -f src/${id.toLowerCase()}.ts`).join(' && '),
  });
  await fixture.startWave(1);
  const tips = new Map<string, string>();
  for (const id of agents) tips.set(id, await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = '${id}';\n` }));
  return { fixture, tips, targetBefore: await fixture.head() };
}

/** Merge commits on main, as `merge → [first parent, second parent]`. */
async function mergesByTip(fixture: WaveFixture): Promise<Map<string, number>> {
  const out = await fixture.repo.run(['rev-list', '--merges', '--parents', 'main']);
  const counts = new Map<string, number>();
  for (const line of out.split('\n').filter(Boolean)) {
    const [, , second] = line.split(' ');
    if (second) counts.set(second, (counts.get(second) ?? 0) + 1);
  }
  return counts;
}

describe('finalize-wave crash safety (SIGKILL after each merge, then re-run)', () => {
  const cases = [...agents.map((_, index) => `${index + 1}`), ...['1', '3'].map((k) => `${k}:merged`)];
  it.each(cases)('killed at POLYWAVE_TEST_CRASH_AFTER_MERGE=%s, the re-run finishes the wave exactly once', async (crashAt) => {
    const { fixture, tips, targetBefore } = await fourAgentWave();
    const count = Number(crashAt.split(':')[0]);

    const crashed = await runCli(['finalize-wave', fixture.implPath, '--wave', '1', '--json-only'], { cwd: fixture.repo.dir, env: { ...env, POLYWAVE_TEST_CRASH_AFTER_MERGE: crashAt }, timeoutMs: 90_000 });
    expect(crashed.code, `expected a SIGKILL, got exit ${crashed.code}\n${crashed.stderr}`).toBeNull();
    expect(crashed.stdout).toBe('');
    // Exactly k merges landed, in wave order; the IMPL says a merge is in progress.
    let merged = await mergesByTip(fixture);
    expect([...merged.keys()].sort()).toEqual(agents.slice(0, count).map((id) => tips.get(id)!).sort());
    const manifest = fixture.manifest();
    expect(manifest.state).toBe('WAVE_MERGING');
    expect(manifest.merge_state).toBe('in_progress');
    const logPath = fixture.repo.path('.polywave-state/demo/wave1/merge-log.json');
    const log = (existsSync(logPath) ? JSON.parse(readFileSync(logPath, 'utf8')) : { merges: [] }) as { merges: Array<{ agent: string }> };
    expect(log.merges.map((entry) => entry.agent)).toEqual(agents.slice(0, crashAt.endsWith(':merged') ? count - 1 : count));

    const rerun = await runCli(['finalize-wave', fixture.implPath, '--wave', '1', '--json-only'], { cwd: fixture.repo.dir, env, timeoutMs: 90_000 });
    expect(rerun.code, rerun.stdout.slice(0, 4000)).toBe(0);
    const result = JSON.parse(rerun.stdout) as FinalizeWaveResult;
    const mergeResult = result.merge_result['.'] as { merged_count: number; skipped_count: number; merges: Array<{ agent: string; status: string }> };
    expect(mergeResult.skipped_count).toBe(count);
    expect(mergeResult.merged_count).toBe(agents.length - count);
    expect(mergeResult.merges.map((item) => item.status)).toEqual(agents.map((_, index) => (index < count ? 'already-merged' : 'merged')));

    // Every agent merged exactly once; no commit lost (ancestry); the wave is verified and clean.
    merged = await mergesByTip(fixture);
    for (const id of agents) expect(merged.get(tips.get(id)!), `merges of agent ${id}`).toBe(1);
    expect(merged.size).toBe(agents.length);
    for (const commit of [targetBefore, ...tips.values()]) expect(await fixture.repo.git.isAncestor(commit, 'main')).toBe(true);
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');
    expect(fixture.manifest().merge_state).toBe('completed');
    const finalLog = JSON.parse(readFileSync(fixture.repo.path('.polywave-state/demo/wave1/merge-log.json'), 'utf8')) as { merges: Array<{ agent: string; recovered?: boolean }> };
    expect(finalLog.merges.map((entry) => entry.agent).sort()).toEqual(agents);
    expect(await fixture.repo.git.listBranches('polywave/'), JSON.stringify(result.cleanup_result)).toEqual([]);
    expect(await fixture.repo.git.worktreeList(), JSON.stringify(result.cleanup_result)).toHaveLength(1);
    expect(existsSync(fixture.repo.path('.claude/worktrees/polywave/demo'))).toBe(false);
    for (const id of agents) expect(fixture.repo.read(`src/${id.toLowerCase()}.ts`)).toBe(`export const ${id.toLowerCase()} = '${id}';\n`);
  });
});
