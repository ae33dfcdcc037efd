import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { installIsolationHook, writeActiveWave } from '../src/engine/isolation-hook.js';
import { contextHeaderLine } from '../src/protocol/context-md.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { agentBranch, createFinishedRepo, createFixtureRepo, fixtureManifestPath, fixtureSlug, runPolywave, type Fixture } from './support/closing-fixture.js';

const archivedRelative = `docs/IMPL/complete/IMPL-${fixtureSlug}.yaml`;

async function close(fixture: Fixture, ...extra: string[]) {
  return runPolywave(['close-impl', fixtureManifestPath, '--date', '2026-05-12', ...extra], { cwd: fixture.repo.dir, env: fixture.repo.env });
}

async function head(fixture: Fixture): Promise<string> {
  return (await fixture.repo.run(['rev-parse', 'HEAD'])).trim();
}

async function committedFiles(fixture: Fixture): Promise<string[]> {
  const output = await fixture.repo.run(['show', '--name-status', '--format=', '-M', 'HEAD']);
  return output.split('\n').filter((line) => line !== '').map((line) => line.replace(/^R\d+/, 'R').replace(/\t/g, ' '));
}

function contextOf(fixture: Fixture) {
  return parse(fixture.repo.read('docs/CONTEXT.md'));
}

describe('close-impl (E15 + E18)', () => {
  it('marks, archives, updates CONTEXT.md, cleans worktrees — all in one commit', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    // An unrelated staged change must stay staged, not ride along in the close commit.
    repo.write('unrelated.txt', 'work in progress\n');
    await repo.run(['add', 'unrelated.txt']);
    mkdirSync(repo.path('.polywave-state'), { recursive: true });
    writeFileSync(repo.path('.polywave-state/active-wave'), `slug=${fixtureSlug}\nwave=2\ntarget_branch=main\nimpl=${fixture.manifest}\n`);
    const worktreesBefore = (await repo.git.worktreeList()).length;
    expect(worktreesBefore).toBe(4);

    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n')).toHaveLength(1); // compact JSON, like Go
    const json = JSON.parse(result.stdout);
    expect(json).toMatchObject({
      marked: true,
      date: '2026-05-12',
      archived_path: repo.path(archivedRelative),
      context_updated: true,
      context_path: repo.path('docs/CONTEXT.md'),
      worktrees_cleaned: 3,
      committed: true,
      commit_sha: await head(fixture),
      already_complete: false,
      active_wave_cleared: true,
    });

    const names = ['mark_complete', 'archive', 'update_context', 'clean_worktrees', 'commit', 'clear_active_wave'];
    expect(json.steps.map((step: { step: string; status: string }) => [step.step, step.status])).toEqual(names.map((name) => [name, 'success']));
    expect(result.stderr).toContain('close-impl: [archive] success — moved to');

    // ONE commit: the rename of the manifest (with its edits) and CONTEXT.md, nothing else.
    expect(await committedFiles(fixture)).toEqual(['A docs/CONTEXT.md', `R ${fixtureManifestPath} ${archivedRelative}`]);
    expect((await repo.run(['log', '-1', '--format=%s'])).trim()).toBe(`chore: close-impl ${fixtureSlug} [polywave:complete]`);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('A  unrelated.txt');

    // The archived manifest: state, date and the marker line right after the title.
    expect(existsSync(fixture.manifest)).toBe(false);
    const archived = repo.read(archivedRelative);
    const lines = archived.split('\n');
    expect(lines[lines.indexOf('title: Closing test feature') + 1]).toBe('# polywave:complete 2026-05-12');
    const manifest = parseImpl(archived).manifest!;
    expect(manifest.state).toBe('COMPLETE');
    expect(manifest.completion_date).toBe('2026-05-12');

    // CONTEXT.md (message-formats.txt schema).
    expect(repo.read('docs/CONTEXT.md').split('\n')[0]).toBe(contextHeaderLine);
    const context = contextOf(fixture);
    expect(context.features_completed).toEqual([{ slug: fixtureSlug, impl_doc: archivedRelative, waves: 2, agents: 3, date: '2026-05-12' }]);
    expect(context.established_interfaces).toEqual([
      { name: 'Greeter', path: 'src/a.ts', signature: 'export interface Greeter {\n  greet(name: string): string;\n}', introduced_in: fixtureSlug },
    ]);

    // E4a: the merged agent worktrees and branches are gone; the guard is disarmed.
    expect(await repo.git.worktreeList()).toHaveLength(1);
    expect(await repo.git.branchExists(agentBranch(1, 'A'))).toBe(false);
    expect(existsSync(repo.path('.polywave-state/active-wave'))).toBe(false);

    // Re-running is a no-op: nothing new to commit, CONTEXT.md not duplicated.
    const before = await head(fixture);
    const contextText = repo.read('docs/CONTEXT.md');
    const again = await close(fixture);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ committed: false, commit_sha: null, already_complete: true, context_updated: true, worktrees_cleaned: 0 });
    expect(JSON.parse(again.stdout).steps.map((step: { status: string }) => step.status)).toEqual(names.map(() => 'skipped'));
    expect(await head(fixture)).toBe(before);
    expect(repo.read('docs/CONTEXT.md')).toBe(contextText);
    // …also when called with the archived path or the slug
    expect((await runPolywave(['close-impl', fixtureSlug], { cwd: repo.dir, env: repo.env })).code).toBe(0);
    expect(await head(fixture)).toBe(before);
  });

  it('refuses an unfinished IMPL (exit 1) and changes nothing; --force closes it', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING', reports: { A: { status: 'complete', commit: 'abc' }, B: { status: 'partial', failure_type: 'fixable' } } });
    const { repo } = fixture;
    const before = readFileSync(fixture.manifest, 'utf8');
    const sha = await head(fixture);
    const refused = await close(fixture);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^polywave: error\[N037_MARK_COMPLETE_FAILED\]: IMPL closing-test is not finished: .*B \(wave 1, partial\).*C \(wave 2, no report\)/);
    expect(readFileSync(fixture.manifest, 'utf8')).toBe(before);
    expect(await head(fixture)).toBe(sha);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
    expect(existsSync(repo.path('docs/CONTEXT.md'))).toBe(false);

    const forced = await close(fixture, '--force');
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toContain('close-impl: warning: forced:');
    expect(JSON.parse(forced.stdout)).toMatchObject({ committed: true, archived_path: repo.path(archivedRelative) });
    expect(parseImpl(repo.read(archivedRelative)).manifest!.state).toBe('COMPLETE');
  });

  it('continues after a crash between archive and commit (original path given)', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    // Simulate a crash: marked and archived on disk, CONTEXT.md written, nothing staged/committed.
    const text = readFileSync(fixture.manifest, 'utf8').replace('state: WAVE_VERIFIED', 'state: COMPLETE\ncompletion_date: "2026-05-10"');
    mkdirSync(repo.path('docs/IMPL/complete'), { recursive: true });
    writeFileSync(fixture.manifest, text);
    renameSync(fixture.manifest, repo.path(archivedRelative));
    const updated = await runPolywave(['update-context', archivedRelative], { cwd: repo.dir, env: repo.env });
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ updated: true, new_entries: [`features_completed:${fixtureSlug}`, 'established_interfaces:Greeter'] });

    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(result.stdout);
    // The date already written wins (E15: never overwritten).
    expect(json).toMatchObject({ date: '2026-05-10', committed: true, already_complete: true, archived_path: repo.path(archivedRelative) });
    expect(await committedFiles(fixture)).toEqual(['A docs/CONTEXT.md', `R ${fixtureManifestPath} ${archivedRelative}`]);
    expect(repo.read(archivedRelative)).toContain('title: Closing test feature\n# polywave:complete 2026-05-10\n');
    expect(contextOf(fixture).features_completed).toHaveLength(1);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  });

  it('continues after a crash right after marking (manifest still at its original path)', async () => {
    const fixture = await createFinishedRepo();
    writeFileSync(fixture.manifest, readFileSync(fixture.manifest, 'utf8').replace('state: WAVE_VERIFIED', 'state: COMPLETE\ncompletion_date: "2026-05-11"'));
    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ date: '2026-05-11', committed: true });
    expect(await committedFiles(fixture)).toEqual(['A docs/CONTEXT.md', `R ${fixtureManifestPath} ${archivedRelative}`]);
  });

  it('keeps a hand-written markdown CONTEXT.md and adds the memory block once', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    const userText = '# Project Context\n\nOur architecture notes.\n';
    repo.write('docs/CONTEXT.md', userText);
    await repo.commitAll('user context');
    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    const text = repo.read('docs/CONTEXT.md');
    expect(text.startsWith(userText)).toBe(true);
    expect(text.match(/```yaml polywave-context/g)).toHaveLength(1);
    expect(await committedFiles(fixture)).toEqual(['M docs/CONTEXT.md', `R ${fixtureManifestPath} ${archivedRelative}`]);
  });

  it('leaves the active-wave marker of another IMPL alone and refuses to run on an agent branch', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    mkdirSync(repo.path('.polywave-state'), { recursive: true });
    writeFileSync(repo.path('.polywave-state/active-wave'), 'slug=other\nwave=1\ntarget_branch=main\nimpl=x\n');
    await repo.run(['checkout', '--quiet', '-b', 'wave9-agent-Z']);
    const refused = await close(fixture);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('agent branch wave9-agent-Z');
    await repo.run(['checkout', '--quiet', 'main']);
    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).active_wave_cleared).toBe(false);
    expect(existsSync(repo.path('.polywave-state/active-wave'))).toBe(true);
  });

  it('commits through an armed isolation guard (POLYWAVE_ALLOW_MAIN_COMMIT=1) and disarms it', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    await installIsolationHook(repo.git);
    await writeActiveWave(repo.dir, { slug: fixtureSlug, wave: 2, target_branch: 'main', impl: fixture.manifest }, new Date());
    // The guard is armed: an ordinary commit on main is refused.
    repo.write('x.txt', 'x\n');
    await repo.run(['add', 'x.txt']);
    // (with plain git, as a user commits: polywave's own git runs no repository hook)
    expect(() => execFileSync('git', ['commit', '--quiet', '-m', 'user commit'], { cwd: repo.dir, env: { ...process.env, ...repo.env }, stdio: 'pipe' })).toThrow(/commit refused/);
    await repo.run(['reset', '--quiet', '--', 'x.txt']);
    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ committed: true, active_wave_cleared: true });
    expect(await committedFiles(fixture)).toEqual(['A docs/CONTEXT.md', `R ${fixtureManifestPath} ${archivedRelative}`]);
  });

  it('never removes a worktree holding uncommitted work', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    const worktree = path.join(repo.dir, '.claude', 'worktrees', 'polywave', fixtureSlug, 'wave1-agent-B');
    writeFileSync(path.join(worktree, 'scratch.txt'), 'unsaved\n');
    const result = await close(fixture);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).worktrees_cleaned).toBe(2);
    expect(existsSync(path.join(worktree, 'scratch.txt'))).toBe(true);
    expect(result.stderr).toContain('uncommitted changes');
  });

  it('bad input is a coded error with exit 2', async () => {
    const fixture = await createFinishedRepo();
    const bad = await runPolywave(['close-impl', fixtureManifestPath, '--date', '2026-13-01'], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^polywave: error\[X001_INVALID_INPUT\]/);
    const missing = await runPolywave(['close-impl', 'docs/IMPL/IMPL-nope.yaml'], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/N005_IMPL_NOT_FOUND/);
  });
});

describe('update-context (E18)', () => {
  it('creates, then leaves CONTEXT.md alone on a re-run; no commit', async () => {
    const fixture = await createFinishedRepo();
    const { repo } = fixture;
    const sha = await head(fixture);
    const first = await runPolywave(['update-context', fixtureManifestPath, '--date', '2026-05-12'], { cwd: repo.dir, env: repo.env });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ context_path: repo.path('docs/CONTEXT.md'), updated: true, new_entries: [`features_completed:${fixtureSlug}`, 'established_interfaces:Greeter'] });
    expect(contextOf(fixture).features_completed).toEqual([{ slug: fixtureSlug, impl_doc: fixtureManifestPath, waves: 2, agents: 3, date: '2026-05-12' }]);
    const second = await runPolywave(['update-context', fixtureManifestPath, '--project-root', repo.dir], { cwd: repo.dir, env: repo.env });
    expect(JSON.parse(second.stdout)).toEqual({ context_path: repo.path('docs/CONTEXT.md'), updated: false, new_entries: [] });
    expect(await head(fixture)).toBe(sha);
  });
});
