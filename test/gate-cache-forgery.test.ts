/**
 * Outside finding (issue 11, helper S1): finalize-wave's pre-merge gates consult the E38 cache, and
 * an agent's worktree held that cache (`<worktree>/.polywave-state/gate-cache.json`, writable by the
 * agent, ignored by the dirty check). An agent could plant a "passed" entry for its final tree and
 * have a failing gate skipped as cached. A linked worktree's entries now live in the main checkout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeWorkspaceFingerprint, gateCacheKey } from '../src/gates/cache-key.js';
import { GateCache } from '../src/gates/gate-cache.js';
import { runGates } from '../src/gates/run-gates.js';
import { createTestRepo } from './support/git-repo.js';

describe('E38 gate cache in an agent worktree', () => {
  it('a forged "passed" entry planted in the worktree does not skip the failing gate; the real entries go to the main checkout', async () => {
    const repo = await createTestRepo({ files: { 'src/a.js': 'export const a = 1;\n' } });
    const worktree = path.join(repo.dir, '..', `${path.basename(repo.dir)}-wt-A`);
    await repo.run(['worktree', 'add', '-q', '-b', 'polywave/x/wave1-agent-A', worktree]);
    // The agent's final tree, and a gate that fails on it.
    writeFileSync(path.join(worktree, 'src', 'a.js'), 'export const a = 2;\n');
    execFileSync('git', ['-C', worktree, 'commit', '-qam', 'agent A'], { env: { ...process.env, GIT_AUTHOR_NAME: 'a', GIT_AUTHOR_EMAIL: 'a@e', GIT_COMMITTER_NAME: 'a', GIT_COMMITTER_EMAIL: 'a@e' } });
    const command = 'echo REAL-RUN; exit 1';
    // The forgery: the exact key finalize-wave computes, a fresh "passed" entry, in the worktree's own file.
    const key = gateCacheKey(await computeWorkspaceFingerprint(worktree), command, worktree);
    const head = execFileSync('git', ['-C', worktree, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    mkdirSync(path.join(worktree, '.polywave-state'), { recursive: true });
    const forged = { version: 1, entries: { [key]: { gate_type: 'test', command, cwd: worktree, head, passed: true, exit_code: 0, output: 'forged\n', output_truncated: false, duration_ms: 1, cached_at: new Date().toISOString(), cached_at_ms: Date.now() } } };
    writeFileSync(path.join(worktree, '.polywave-state', 'gate-cache.json'), JSON.stringify(forged));

    const result = await runGates({ repoDir: worktree, gates: [{ type: 'test', command, required: true }], timing: 'pre-merge', sandbox: false });
    const gate = result.results[0]!;
    expect(gate.from_cache).toBe(false);
    expect(gate.passed).toBe(false);
    expect(gate.output).toContain('REAL-RUN');

    // A passing gate's entry is stored in the main checkout, and found again from the worktree.
    const passing = 'echo fine';
    const first = await runGates({ repoDir: worktree, gates: [{ type: 'test', command: passing, required: true }], timing: 'pre-merge', sandbox: false });
    expect(first.results[0]!.from_cache).toBe(false);
    const again = await runGates({ repoDir: worktree, gates: [{ type: 'test', command: passing, required: true }], timing: 'pre-merge', sandbox: false });
    expect(again.results[0]!.from_cache).toBe(true);
    const mainFile = path.join(repo.dir, '.polywave-state', 'gate-cache.json');
    expect(await new GateCache(worktree).location()).toBe(mainFile);
    expect(Object.values((JSON.parse(readFileSync(mainFile, 'utf8')) as { entries: Record<string, { command: string }> }).entries).map((entry) => entry.command)).toEqual([passing]);
    // The worktree's own file is left as the agent wrote it (never read, never written).
    expect(JSON.parse(readFileSync(path.join(worktree, '.polywave-state', 'gate-cache.json'), 'utf8'))).toEqual(forged);
    // A main checkout keeps its cache where E38 puts it.
    expect(await new GateCache(repo.dir).location()).toBe(mainFile);
    expect(existsSync(mainFile)).toBe(true);
  });
});
