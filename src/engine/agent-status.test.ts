import { describe, expect, it } from 'vitest';
import { agentBranch, createFixtureRepo, doAgentWork, mergeBranch, runPolywave } from '../../test/support/closing-fixture.js';
import { agentStatus, agentStatusOf, formatAgentStatusTable } from './agent-status.js';

describe('agent-status (E50)', () => {
  it('lists every agent of every wave — also with a critic report (Go drops waves ≥ 2)', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const { repo } = fixture;
    const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const a = await doAgentWork(repo, { wave: 1, id: 'A', file: 'src/a.ts', base });
    await mergeBranch(repo, agentBranch(1, 'A')); // merged but branch kept: still complete
    await doAgentWork(repo, { wave: 1, id: 'B', file: 'src/b.ts', base }); // committed, no report
    fixture.writeManifest({ state: 'WAVE_EXECUTING', bases: { 1: base }, critic: true, reports: { A: { status: 'complete', commit: a }, C: { status: 'blocked', failure_type: 'needs_replan' } } });
    await repo.commitAll('critic review [polywave:critic:closing-test]');

    const result = await agentStatus({ implPath: fixture.manifest, env: repo.env });
    expect(result).toEqual({
      impl_slug: 'closing-test',
      state: 'WAVE_EXECUTING',
      agents: [
        { id: 'A', role: 'wave1', branch: agentBranch(1, 'A'), commit_count: 1, has_report: true, status: 'complete' },
        { id: 'B', role: 'wave1', branch: agentBranch(1, 'B'), commit_count: 1, has_report: false, status: 'in_progress' },
        { id: 'critic', role: 'critic', branch: '(main)', commit_count: 1, has_report: true, status: 'complete' },
        { id: 'C', role: 'wave2', branch: agentBranch(2, 'C'), commit_count: 0, has_report: true, status: 'blocked' },
      ],
    });

    const text = await runPolywave(['agent-status', fixture.manifest], { cwd: repo.dir, env: repo.env });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe(formatAgentStatusTable(result));
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe('IMPL: closing-test  State: WAVE_EXECUTING');
    expect(lines[2]).toMatch(/^Agent\s{2,}Role\s{2,}Branch\s{2,}Commits\s{2,}Report\s{2,}Status$/);
    expect(lines[3]).toMatch(/^A\s+wave1\s+polywave\/closing-test\/wave1-agent-A\s+1\s+yes\s+complete$/);

    const json = await runPolywave(['agent-status', fixture.manifest, '--json'], { cwd: repo.dir, env: repo.env });
    expect(JSON.parse(json.stdout)).toEqual(result);
  });

  it('statuses and the table for an IMPL without agents / unknown critic count', () => {
    expect(agentStatusOf({ has_report: false, branch_exists: true, commit_count: 0 })).toBe('not_started');
    expect(agentStatusOf({ has_report: true, report_status: 'partial', branch_exists: true, commit_count: 3 })).toBe('blocked');
    expect(formatAgentStatusTable({ impl_slug: 'x', state: 'REVIEWED', agents: [] })).toBe('IMPL: x  State: REVIEWED\n\n(no agents)\n');
    const table = formatAgentStatusTable({ impl_slug: 'x', state: 'REVIEWED', agents: [{ id: 'critic', role: 'critic', branch: '(main)', commit_count: -1, has_report: true, status: 'complete' }] });
    expect(table.split('\n')[3]).toBe('critic  critic  (main)  -        yes     complete');
  });
});
