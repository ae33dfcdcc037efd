import { describe, expect, it } from 'vitest';
import { implModel, type ImplManifest } from './schema/impl-schema.js';
import {
  applyStatusUpdate,
  buildCompletionReport,
  checkCompletion,
  checkReportTarget,
  completionReportKeys,
  dedupePaths,
  hasCommit,
  orderCompletionReport,
} from './completion-report.js';

function manifest(raw: Record<string, unknown>): ImplManifest {
  return implModel.manifest.parse(raw);
}

const impl = manifest({
  waves: [
    { number: 1, agents: [{ id: 'A', task: 't' }, { id: 'B', task: 't' }] },
    { number: 2, agents: [{ id: 'C', task: 't' }] },
  ],
  completion_reports: {
    A: { status: 'partial', commit: 'abc123', failure_type: 'fixable', files_changed: ['a.ts'] },
    B: { status: 'blocked', commit: 'uncommitted', failure_type: 'escalate' },
    C: { status: '' },
  },
});

const codes = (input: Parameters<typeof buildCompletionReport>[0]) => buildCompletionReport(input).findings.map((finding) => finding.code);

// reference §10.24
describe('buildCompletionReport rules', () => {
  it('accepts a complete report with a commit', () => {
    const result = buildCompletionReport({ status: 'complete', commit: 'abc123', files_changed: ['a.ts'], verification: 'PASS' });
    expect(result.ok).toBe(true);
    expect(result.findings).toEqual([]);
  });

  it('accepts partial/blocked reports with a failure type', () => {
    expect(buildCompletionReport({ status: 'partial', failure_type: 'transient' }).ok).toBe(true);
    expect(buildCompletionReport({ status: 'blocked', failure_type: 'needs_replan', commit: 'uncommitted' }).ok).toBe(true);
  });

  it('requires failure_type for partial and blocked', () => {
    for (const status of ['partial', 'blocked']) {
      const result = buildCompletionReport({ status });
      expect(result.ok).toBe(false);
      expect(result.findings).toEqual([
        {
          code: 'V005_REQUIRED_FIELDS_MISSING',
          severity: 'error',
          field: 'failure_type',
          message: `failure_type is required when status is "${status}"`,
          suggestion: 'one of: transient, fixable, needs_replan, escalate, timeout',
        },
      ]);
    }
  });

  it('forbids failure_type on complete', () => {
    const result = buildCompletionReport({ status: 'complete', commit: 'abc', failure_type: 'transient' });
    expect(result.ok).toBe(false);
    expect(result.findings.map((finding) => finding.message)).toEqual(['failure_type must not be set when status is complete']);
  });

  it('requires a real commit for complete (I5)', () => {
    expect(buildCompletionReport({ status: 'complete' }).findings).toEqual([
      { code: 'G003_COMMIT_MISSING', severity: 'error', field: 'commit', message: 'commit is required when status is complete' },
    ]);
    expect(buildCompletionReport({ status: 'complete', commit: '  ' }).findings[0]?.code).toBe('G003_COMMIT_MISSING');
    const uncommitted = buildCompletionReport({ status: 'complete', commit: 'uncommitted' });
    expect(uncommitted.ok).toBe(false);
    expect(uncommitted.findings[0]?.message).toBe('commit "uncommitted" is not a commit: agents must commit before reporting status complete (I5)');
  });

  it('validates the status and failure_type enums (no legacy "unknown")', () => {
    expect(codes({})).toEqual(['V005_REQUIRED_FIELDS_MISSING']);
    expect(buildCompletionReport({}).findings[0]?.message).toBe('status is required');
    expect(codes({ status: 'done' })).toEqual(['V036_INVALID_ENUM']);
    expect(buildCompletionReport({ status: 'Complete' }).findings[0]?.message).toBe('status "Complete" is invalid: must be complete, partial, or blocked');
    expect(codes({ status: 'partial', failure_type: 'unknown' })).toEqual(['V022_INVALID_FAILURE_TYPE']);
    expect(buildCompletionReport({ status: 'blocked', failure_type: 'oops' }).findings[0]?.message).toBe(
      'failure_type "oops" is invalid: must be one of transient, fixable, needs_replan, escalate, timeout',
    );
  });

  it('reports every problem at once', () => {
    expect(codes({ status: 'complete', commit: 'uncommitted', failure_type: 'bogus' })).toEqual([
      'G003_COMMIT_MISSING',
      'V038_CROSS_FIELD',
      'V022_INVALID_FAILURE_TYPE',
    ]);
  });

  it('prefixes fields with the agent when given', () => {
    expect(buildCompletionReport({ status: 'complete' }, { agentId: 'B2' }).findings[0]?.field).toBe('completion_reports.B2.commit');
  });
});

describe('report normalization', () => {
  it('dedupes file lists preserving order and drops blanks', () => {
    const { report } = buildCompletionReport({
      status: 'complete',
      commit: ' abc ',
      files_changed: ['b.ts', 'a.ts', 'b.ts', ' a.ts ', ''],
      files_created: ['c.ts', 'c.ts'],
      tests_added: ['TestX', 'TestX'],
    });
    expect(report.files_changed).toEqual(['b.ts', 'a.ts']);
    expect(report.files_created).toEqual(['c.ts']);
    expect(report.tests_added).toEqual(['TestX']);
    expect(report.commit).toBe('abc');
    expect(dedupePaths(undefined)).toEqual([]);
  });

  it('serializes keys in protocol order and omits empty ones', () => {
    const { report } = buildCompletionReport({
      repo: '/abs/repo',
      notes: 'n',
      failure_type: 'transient',
      verification: 'FAIL (go test)',
      tests_added: [],
      interface_deviations: [{ description: 'd', downstream_action_required: false }],
      files_created: ['new.ts'],
      files_changed: [],
      commit: 'abc',
      branch: 'polywave/x/wave1-agent-A',
      worktree: '',
      status: 'partial',
      dedup_stats: { hits: 1, misses: 2, tokens_saved_estimate: 3 },
    });
    expect(Object.keys(report)).toEqual([
      'status',
      'branch',
      'commit',
      'files_created',
      'interface_deviations',
      'verification',
      'failure_type',
      'notes',
      'dedup_stats',
      'repo',
    ]);
    expect(JSON.stringify(report).startsWith('{"status":"partial","branch":')).toBe(true);
  });

  it('orders arbitrary report objects, keeping extra keys last', () => {
    const ordered = orderCompletionReport({ extra: 1, repo: 'r', commit: 'c', status: 'complete', usage: { cost: 1 }, notes: null });
    expect(Object.keys(ordered)).toEqual(['status', 'commit', 'repo', 'usage', 'extra']);
    expect(Object.keys(orderCompletionReport({}))).toEqual(['status']);
    expect(completionReportKeys[0]).toBe('status');
  });
});

describe('checkReportTarget', () => {
  it('accepts an agent of some wave', () => {
    expect(checkReportTarget(impl, 'C')).toEqual([]);
  });

  it('rejects an empty or unknown agent with N095', () => {
    expect(checkReportTarget(impl, ' ')).toEqual([{ code: 'N095_REPORT_SET_FAILED', severity: 'error', field: 'agent', message: 'agent ID cannot be empty' }]);
    expect(checkReportTarget(impl, 'Z')).toEqual([{ code: 'N095_REPORT_SET_FAILED', severity: 'error', field: 'agent', message: 'agent not found in manifest: Z' }]);
  });
});

describe('applyStatusUpdate', () => {
  it('sets complete with a commit from the existing report and drops the stale failure_type', () => {
    const result = applyStatusUpdate(impl, { wave: 1, agentId: 'A', status: 'complete' });
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.report).toEqual({ status: 'complete', commit: 'abc123', files_changed: ['a.ts'] });
      expect(result.data).toEqual({ wave: 1, agent: 'A', old_status: 'partial', new_status: 'complete', updated: true });
    }
    // the manifest is not mutated
    expect(impl.completion_reports?.A?.status).toBe('partial');
  });

  it('takes the commit from the update over the existing one', () => {
    const result = applyStatusUpdate(impl, { wave: 1, agentId: 'B', status: 'complete', commit: 'def456' });
    expect(result.ok && result.report.commit).toBe('def456');
  });

  it('refuses complete without a real commit (G003)', () => {
    const result = applyStatusUpdate(impl, { wave: 1, agentId: 'B', status: 'complete' });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.finding.code).toBe('G003_COMMIT_MISSING');
      expect(result.finding.field).toBe('completion_reports.B.commit');
      expect(result.finding.message).toContain('commit="uncommitted"');
    }
    const fresh = applyStatusUpdate(impl, { wave: 2, agentId: 'C', status: 'complete' });
    expect(fresh.ok === false && fresh.finding.code).toBe('G003_COMMIT_MISSING');
  });

  it('creates a report for an agent without one and allows partial without a commit', () => {
    const bare = manifest({ waves: [{ number: 1, agents: [{ id: 'A', task: 't' }] }] });
    const result = applyStatusUpdate(bare, { wave: 1, agentId: 'A', status: 'partial' });
    expect(result).toEqual({
      ok: true,
      report: { status: 'partial' },
      data: { wave: 1, agent: 'A', old_status: '', new_status: 'partial', updated: true },
    });
  });

  it('refuses an unknown wave, an agent of another wave and a bad status', () => {
    const noWave = applyStatusUpdate(impl, { wave: 3, agentId: 'A', status: 'partial' });
    expect(noWave.ok === false && noWave.finding).toMatchObject({ code: 'N015_STATUS_UPDATE_FAILED', message: 'wave 3 not found in manifest' });
    const wrongWave = applyStatusUpdate(impl, { wave: 2, agentId: 'A', status: 'partial' });
    expect(wrongWave.ok === false && wrongWave.finding).toMatchObject({ code: 'N015_STATUS_UPDATE_FAILED', message: 'agent A not found in wave 2' });
    const badStatus = applyStatusUpdate(impl, { wave: 1, agentId: 'A', status: 'done' });
    expect(badStatus.ok === false && badStatus.finding.code).toBe('V036_INVALID_ENUM');
  });
});

describe('checkCompletion', () => {
  it('reports a found report with the Go keys', () => {
    expect(checkCompletion(impl, 'A')).toEqual({ found: true, agent_id: 'A', status: 'partial', has_commit: true, files_changed: ['a.ts'] });
  });

  it('does not count "uncommitted" as a commit', () => {
    expect(checkCompletion(impl, 'B')).toEqual({ found: true, agent_id: 'B', status: 'blocked', has_commit: false, files_changed: [] });
    expect(hasCommit('uncommitted')).toBe(false);
    expect(hasCommit(' abc ')).toBe(true);
  });

  it('is not found for a missing report or an empty status', () => {
    expect(checkCompletion(impl, 'C')).toEqual({ found: false, agent_id: 'C', status: '', has_commit: false, files_changed: [] });
    expect(checkCompletion(impl, 'Q')).toEqual({ found: false, agent_id: 'Q', status: '', has_commit: false, files_changed: [] });
    expect(checkCompletion(manifest({}), 'A').found).toBe(false);
  });
});
