import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseImpl } from '../protocol/parse-impl.js';
import { freezeRecord } from '../protocol/freeze.js';
import { agentBranch, createFixtureRepo, doAgentWork, manifestText, runPolywave, type Fixture } from '../../test/support/closing-fixture.js';
import { amendBlockedCode, amendImpl, checkAmendment, immutableChanges, type AmendOperation } from './amend-impl.js';

function amend(fixture: Fixture, operation: AmendOperation) {
  return amendImpl({ implPath: fixture.manifest, operation, env: fixture.repo.env });
}

function read(fixture: Fixture): string {
  return readFileSync(fixture.manifest, 'utf8');
}

describe('amend-impl --add-wave (E36a)', () => {
  it('appends the next wave with its first agent, keeps every other byte, and the result validates (issue 13)', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const before = read(fixture);
    const result = await amend(fixture, { kind: 'add-wave', agent: { id: 'D', task: 'Wire the new module in.' } });
    expect(result).toMatchObject({ success: true, operation: 'add-wave', new_wave_number: 3, agent_id: 'D', warnings: [] });
    const after = read(fixture);
    const [head] = before.split('state: WAVE_EXECUTING');
    expect(after.startsWith(head!.trimEnd())).toBe(true);
    const parsed = parseImpl(after);
    const manifest = parsed.manifest!;
    expect(manifest.waves.map((wave) => [wave.number, wave.agents.length])).toEqual([[1, 2], [2, 1], [3, 1]]);
    expect(manifest.waves[2]!.agents[0]).toMatchObject({ id: 'D', task: 'Wire the new module in.' });
    expect(manifest.state).toBe('WAVE_EXECUTING');
    const validate = await runPolywave(['validate', fixture.manifest], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(validate.stdout).not.toContain('V005_REQUIRED_FIELDS_MISSING');
  });

  it('without a first agent it is refused (P013, E36a: an empty wave fails validate with V005) and nothing is written (issue 13)', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const before = read(fixture);
    const result = await amend(fixture, { kind: 'add-wave' });
    expect(result).toMatchObject({ success: false, operation: 'add-wave', code: amendBlockedCode });
    expect(result.error).toContain('V005_REQUIRED_FIELDS_MISSING');
    expect(result.error).toContain('--agent');
    expect(read(fixture)).toBe(before);
  });

  it('an invalid agent ID for the new wave is refused by validation (P013), nothing written', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const before = read(fixture);
    const result = await amend(fixture, { kind: 'add-wave', agent: { id: 'not an id', task: 't' } });
    expect(result).toMatchObject({ success: false, code: amendBlockedCode });
    expect(read(fixture)).toBe(before);
  });

  it('is blocked (P013) for a complete IMPL: completion_date, state COMPLETE, or the marker — file unchanged', async () => {
    for (const options of [{ state: 'WAVE_VERIFIED', completionDate: '2026-05-01' }, { state: 'COMPLETE' }, { state: 'WAVE_VERIFIED', extra: '# polywave:complete 2026-05-01\n' }]) {
      const fixture = await createFixtureRepo(options);
      const before = read(fixture);
      const result = await amend(fixture, { kind: 'add-wave' });
      expect(result).toMatchObject({ success: false, operation: 'add-wave', code: amendBlockedCode });
      expect(read(fixture)).toBe(before);
      // extend-scope obeys the same preconditions
      expect(await amend(fixture, { kind: 'extend-scope' })).toMatchObject({ success: false, code: amendBlockedCode });
    }
  });
});

describe('amend-impl --redirect-agent (E36b)', () => {
  it('replaces the task and clears a partial report', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING', reports: { C: { status: 'partial', failure_type: 'fixable' } } });
    const result = await amend(fixture, { kind: 'redirect-agent', agentId: 'C', wave: 2, newTask: 'Write src/c.ts\nusing the Greeter interface' });
    expect(result).toMatchObject({ success: true, operation: 'redirect-agent', agent_id: 'C' });
    expect(result.warnings).toContain('cleared the partial completion report of agent C');
    const manifest = parseImpl(read(fixture)).manifest!;
    expect(manifest.waves[1]!.agents[0]!.task).toBe('Write src/c.ts\nusing the Greeter interface');
    expect(manifest.completion_reports).toEqual({});
  });

  it('allows an agent whose branch has no commits beyond the base, and warns about the stale brief', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const base = (await fixture.repo.run(['rev-parse', 'HEAD'])).trim();
    await fixture.repo.run(['worktree', 'add', '--quiet', '-b', agentBranch(1, 'B'), fixture.repo.path('.claude/worktrees/polywave/closing-test/wave1-agent-B'), base]);
    fixture.writeManifest({ state: 'WAVE_EXECUTING', bases: { 1: base } });
    const result = await amend(fixture, { kind: 'redirect-agent', agentId: 'B', wave: 1, newTask: 'New task' });
    expect(result.success).toBe(true);
    expect(result.warnings.join()).toContain('its brief is stale');
  });

  it('refuses a complete agent, a committed agent, and an agent not in that wave', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const base = (await fixture.repo.run(['rev-parse', 'HEAD'])).trim();
    const a = await doAgentWork(fixture.repo, { wave: 1, id: 'A', file: 'src/a.ts', base });
    await doAgentWork(fixture.repo, { wave: 1, id: 'B', file: 'src/b.ts', base });
    fixture.writeManifest({ state: 'WAVE_EXECUTING', bases: { 1: base }, reports: { A: { status: 'complete', commit: a } } });
    const before = read(fixture);

    const complete = await amend(fixture, { kind: 'redirect-agent', agentId: 'A', wave: 1, newTask: 'x' });
    expect(complete).toMatchObject({ success: false, code: amendBlockedCode });
    expect(complete.error).toContain('complete completion report');

    const committed = await amend(fixture, { kind: 'redirect-agent', agentId: 'B', wave: 1, newTask: 'x' });
    expect(committed).toMatchObject({ success: false, code: amendBlockedCode });
    expect(committed.error).toContain(`1 commit(s) on branch ${agentBranch(1, 'B')}`);

    const elsewhere = await amend(fixture, { kind: 'redirect-agent', agentId: 'C', wave: 1, newTask: 'x' });
    expect(elsewhere.error).toBe('agent C is in wave 2, not wave 1');
    expect(read(fixture)).toBe(before);
  });

  it('without base_commit, commits not in HEAD still block', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    await doAgentWork(fixture.repo, { wave: 1, id: 'B', file: 'src/b.ts' });
    const result = await amend(fixture, { kind: 'redirect-agent', agentId: 'B', wave: 1, newTask: 'x' });
    expect(result).toMatchObject({ success: false, code: amendBlockedCode });
  });
});

describe('E36a validation and E2 freeze guards', () => {
  it('refuses an edit that introduces a validation error, accepts the allowed one', () => {
    const text = manifestText({ state: 'WAVE_EXECUTING' });
    const parsed = parseImpl(text);
    expect(() => checkAmendment(text, parsed, [{ path: ['waves', 0, 'agents', 0, 'id'], value: 'lower' }], () => false)).toThrow(expect.objectContaining({ code: amendBlockedCode }));
    const ok = checkAmendment(text, parsed, [{ path: ['waves', 2], value: { number: 3, agents: [] } }], (finding) => finding.field === 'waves[2].agents');
    expect(ok.warnings).toHaveLength(1);
  });

  it('frozen contracts and completed waves are immutable', () => {
    const base = parseImpl(manifestText({ state: 'WAVE_EXECUTING', reports: { A: { status: 'complete', commit: 'a' }, B: { status: 'complete', commit: 'b' } } })).manifest!;
    const frozen = { ...base, ...freezeRecord(base, new Date('2026-05-01T00:00:00Z')) };
    const changedContract = { ...frozen, interface_contracts: [{ ...frozen.interface_contracts[0]!, definition: 'changed' }] };
    expect(immutableChanges(frozen, changedContract).join()).toContain('E2');
    const changedWave = { ...frozen, waves: [{ ...frozen.waves[0]!, agents: [{ ...frozen.waves[0]!.agents[0]!, task: 'other' }, frozen.waves[0]!.agents[1]!] }, frozen.waves[1]!] };
    expect(immutableChanges(frozen, changedWave)).toEqual(['wave 1 is complete and immutable']);
    expect(immutableChanges(frozen, frozen)).toEqual([]);
  });
});

describe('amend-impl CLI', () => {
  it('prints {success:false,…} with P013 and exits 1 when blocked (Go checks the wrong code)', async () => {
    const fixture = await createFixtureRepo({ state: 'COMPLETE', completionDate: '2026-05-01' });
    const run = await runPolywave(['amend-impl', fixture.manifest, '--add-wave'], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ success: false, operation: 'add-wave', code: 'P013_AMEND_BLOCKED' });
    expect(run.stderr).toMatch(/^polywave: error\[P013_AMEND_BLOCKED\]: IMPL is complete/m);
  });

  it('reads the new task from stdin; needs exactly one operation; extend-scope is a hint', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_PENDING' });
    const { repo } = fixture;
    const redirect = await runPolywave(['amend-impl', fixture.manifest, '--redirect-agent', 'C', '--wave', '2'], { cwd: repo.dir, env: repo.env, input: 'Task from stdin\n' });
    expect(redirect.code, redirect.stderr).toBe(0);
    expect(JSON.parse(redirect.stdout)).toEqual({ success: true, operation: 'redirect-agent', agent_id: 'C', warnings: [] });
    expect(parseImpl(read(fixture)).manifest!.waves[1]!.agents[0]!.task).toBe('Task from stdin');

    for (const argv of [[], ['--add-wave', '--extend-scope'], ['--redirect-agent', 'C']]) {
      const bad = await runPolywave(['amend-impl', fixture.manifest, ...argv], { cwd: repo.dir, env: repo.env, input: 'x' });
      expect(bad.code, argv.join(' ')).toBe(2);
      expect(bad.stderr).toMatch(/^polywave: error\[X001_INVALID_INPUT\]/);
    }

    const before = read(fixture);
    const hint = await runPolywave(['amend-impl', fixture.manifest, '--extend-scope'], { cwd: repo.dir, env: repo.env });
    expect(JSON.parse(hint.stdout)).toEqual({ success: true, operation: 'extend-scope', manifest_path: fixture.manifest, message: `Re-engage Scout with --impl-context ${fixture.manifest}`, warnings: [] });
    expect(read(fixture)).toBe(before);
    writeFileSync(fixture.manifest, before);
  });
});
