import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { looksLikeManifestPath } from '../src/cli/commands/run.js';
import { editImpl } from '../src/store/manifest-file.js';
import { repoRoot } from './support/cli.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createWaveFixture, implRelative } from './support/wave-fixture.js';

// Issue 13, outside attack round 2 (/work/coord/attack-compat-6.md), findings N2, N10 and N12, on one
// real repository: agent A committed on its branch and reported complete, the state says
// WAVE_VERIFIED, and nothing was merged (the orchestrator stopped before finalize-wave).
// - N2: mark-complete closed such an IMPL as COMPLETE and archived it (close-impl already refused);
//   `polywave run <that path>` afterwards took the missing path as feature text and started a Scout.
// - N12: the kept-worktree detail said "not reachable from HEAD or refs/heads/m" (a ref cut like a SHA).
// - N10: `polywave close-impl … 2>&1 | head` exited at its first write after the reader left: the IMPL
//   was archived but never committed, with exit 0. Now the work finishes (the process test).

const env = (values: Readonly<Record<string, string | undefined>>): Record<string, string> => values as Record<string, string>;

describe('issue 13 outside attack round 2: N2, N10, N12', () => {
  it('mark-complete refuses reported-but-unmerged work (WAVE_NOT_MERGED, nothing changed), --force still marks; run <missing manifest path> is N005; the kept-worktree detail names whole refs; a close-impl whose reader left still commits', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }]], testCommand: 'true', lintCommand: 'true' });
    const { repo } = fixture;
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    await editImpl(fixture.implPath, () => ({ edits: [{ path: ['state'], value: 'WAVE_VERIFIED' }], outcome: undefined }));
    await repo.run(['add', implRelative]);
    await repo.run(['-c', 'core.hooksPath=/dev/null', 'commit', '-q', '-m', 'reported, not merged']);
    const snapshot = async () => ({ manifest: readFileSync(fixture.implPath, 'utf8'), head: await fixture.head(), status: await repo.run(['status', '--porcelain']), archived: existsSync(repo.path('docs/IMPL/complete')) });
    const before = await snapshot();

    // N2: exit 1, N037 naming WAVE_NOT_MERGED, the agent and the finalize-wave command; nothing changed.
    const refused = await runCliInProcess(['mark-complete', implRelative, '--date', '2026-05-12'], { cwd: repo.dir, env: env(repo.env) });
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^polywave: error\[N037_MARK_COMPLETE_FAILED\]: .*WAVE_NOT_MERGED: agent work not merged into main: A \(wave 1: polywave\/demo\/wave1-agent-A at [0-9a-f]{12}\)/);
    expect(refused.stderr).toContain('run `polywave finalize-wave docs/IMPL/IMPL-demo.yaml --wave 1` first');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(await snapshot()).toEqual(before);
    // set-impl-state --state COMPLETE refuses it the same way (it had set COMPLETE; then `run` said "already COMPLETE").
    const state = await runCliInProcess(['set-impl-state', implRelative, '--state', 'COMPLETE'], { cwd: repo.dir, env: env(repo.env) });
    expect(state.code, state.stderr).toBe(1);
    expect(state.stderr).toMatch(/^polywave: error\[WAVE_NOT_MERGED\]: IMPL demo cannot be COMPLETE: agent work not merged into main: A \(wave 1/);
    expect(await snapshot()).toEqual(before);

    // N2 follow-on: a manifest path that does not exist is N005 (exit 2, nothing changed), never a feature
    // description — checked before credentials or anything else (no model is configured here).
    const gone = await runCliInProcess(['run', 'docs/IMPL/IMPL-gone.yaml', '--yes'], { cwd: repo.dir, env: env(repo.env) });
    expect(gone.code, gone.stderr).toBe(2);
    expect(gone.stderr).toMatch(/^polywave: error\[N005_IMPL_NOT_FOUND\]: manifest not found: docs\/IMPL\/IMPL-gone\.yaml /);
    expect(await snapshot()).toEqual(before);
    expect([looksLikeManifestPath('IMPL-x.yml'), looksLikeManifestPath('docs/IMPL/IMPL-x'), looksLikeManifestPath('add read/write locks to config.yaml'), looksLikeManifestPath('caching')]).toEqual([true, true, false, false]);

    // --force still marks and archives (a stderr warning says what was forced). The unmerged worktree is
    // kept, and the detail names the whole ref (N12: it said "refs/heads/m").
    const forced = await runCliInProcess(['mark-complete', implRelative, '--force', '--date', '2026-05-12'], { cwd: repo.dir, env: env(repo.env) });
    expect(forced.code, forced.stderr).toBe(0);
    const archived = repo.path('docs/IMPL/complete/IMPL-demo.yaml');
    expect(JSON.parse(forced.stdout)).toMatchObject({ marked: true, archived: true, path: archived, worktrees_cleaned: 0 });
    expect(forced.stderr).toContain('mark-complete: forced: WAVE_NOT_MERGED: agent work not merged into main: A (wave 1');
    expect(forced.stderr).toMatch(/mark-complete: worktree \S+ kept: HEAD [0-9a-f]{12} has commits not reachable from HEAD or refs\/heads\/main;/);
    expect(readFileSync(archived, 'utf8')).toMatch(/^state: COMPLETE$/m);

    // The old path now lives in docs/IMPL/complete/: run says so (N005, exit 2) instead of planning "docs-impl-impl-demo-yaml".
    const moved = await runCliInProcess(['run', implRelative, '--yes'], { cwd: repo.dir, env: env(repo.env) });
    expect(moved.code, moved.stderr).toBe(2);
    expect(moved.stderr).toMatch(/^polywave: error\[N005_IMPL_NOT_FOUND\]: manifest not found: docs\/IMPL\/IMPL-demo\.yaml — it was archived to docs\/IMPL\/complete\/IMPL-demo\.yaml \(the IMPL is closed; nothing to run\)/);
    expect(readdirSync(repo.path('docs/IMPL'))).toEqual(['complete']);

    // N10: the real process, its reader gone before the first byte (`| true`): close-impl finishes the
    // archive commit anyway, exits with its own code and prints no EPIPE trace.
    const bin = path.join(repoRoot, 'bin', 'polywave.js');
    const piped = spawnSync('bash', ['-c', `node "${bin}" close-impl "${archived}" --date 2026-05-12 2>&1 | true; echo "rc=\${PIPESTATUS[0]}"`], { cwd: repo.dir, env: { ...process.env, ...repo.env }, encoding: 'utf8' });
    expect(piped.stderr).toBe('');
    expect(piped.stdout.trim()).toBe('rc=0');
    expect((await repo.run(['log', '-1', '--format=%s'])).trim()).toBe('chore: close-impl demo [polywave:complete]');
    expect((await repo.run(['status', '--porcelain', '--', 'docs'])).trim()).toBe('');
  });
});
