import type { Finding } from '../../errors/finding.js';
import { completionStatuses, failureTypes, type CompletionReport, type ImplManifest } from '../schema/impl-schema.js';
import type { ImplRule, ImplRuleContext } from './rule.js';
import { goQuote, isBlank, report, sortedKeys } from './rule-helpers.js';

/** Completion reports in agent-ID order (Go iterated the map). */
function eachReport(manifest: ImplManifest, visit: (agentId: string, completion: CompletionReport) => void): void {
  const reports = manifest.completion_reports ?? {};
  for (const agentId of sortedKeys(reports)) {
    const completion = reports[agentId];
    if (completion) visit(agentId, completion);
  }
}

/**
 * I5: agents commit before reporting — every report (any status) has a commit that is not
 * empty and not the literal `uncommitted`.
 */
export const commitBeforeReport: ImplRule = {
  name: 'commit-before-report',
  reference: 'I5',
  codes: ['G003_COMMIT_MISSING'],
  check(context) {
    const findings: Finding[] = [];
    eachReport(context.manifest, (agentId, completion) => {
      const commit = completion.commit ?? '';
      if (!isBlank(commit) && commit !== 'uncommitted') return;
      findings.push(
        report(context, {
          code: 'G003_COMMIT_MISSING',
          message: `agent ${agentId} completion report has no valid commit (commit=${goQuote(commit)}) — agents must commit before reporting`,
          path: ['completion_reports', agentId, 'commit'],
        }),
      );
    });
    return findings;
  },
};

/**
 * Branch names (E5): `polywave/{slug}/wave{N}-agent-{ID}` or the legacy `wave{N}-agent-{ID}`.
 * Also accepted, unlike Go: `saw/{slug}/wave{N}-agent-{ID}`, the same scheme as written by the
 * protocol's Claude Code implementation (SAW) — most of the Go project's own completed
 * manifests carry such branches, and E5 says tools accept the older formats.
 */
const branchPattern = /^(?:(?:polywave|saw)\/[a-z0-9][-a-z0-9]*\/)?wave(\d+)-agent-([A-Z][2-9]?)$/;

/** Wave number and size of the wave each agent is in (last declaration wins). */
function agentWaves(manifest: ImplManifest): Map<string, { wave: number; solo: boolean }> {
  const sizes = new Map<number, number>();
  for (const wave of manifest.waves) sizes.set(wave.number ?? 0, wave.agents.length);
  const result = new Map<string, { wave: number; solo: boolean }>();
  for (const wave of manifest.waves) {
    const number = wave.number ?? 0;
    for (const agent of wave.agents) result.set(agent.id ?? '', { wave: number, solo: sizes.get(number) === 1 });
  }
  return result;
}

function branchFindings(context: ImplRuleContext, agentId: string, wave: number, branch: string): Finding[] {
  const path = ['completion_reports', agentId, 'branch'];
  const match = branchPattern.exec(branch);
  if (!match) {
    return [
      report(context, {
        code: 'V042_INVALID_WORKTREE_NAME',
        message: `agent ${agentId} branch ${goQuote(branch)} does not match pattern wave{N}-agent-{ID} or polywave/{slug}/wave{N}-agent-{ID}`,
        path,
      }),
    ];
  }
  const findings: Finding[] = [];
  const expected = `wave${wave}-agent-${agentId}`;
  if (match[1] !== String(wave)) {
    findings.push(
      report(context, {
        code: 'V042_INVALID_WORKTREE_NAME',
        message: `agent ${agentId} (wave ${wave}) branch ${goQuote(branch)} has wrong wave number (expected ${expected})`,
        path,
      }),
    );
  }
  if (match[2] !== agentId) {
    findings.push(
      report(context, {
        code: 'V042_INVALID_WORKTREE_NAME',
        message: `agent ${agentId} branch ${goQuote(branch)} has wrong agent ID (expected ${expected})`,
        path,
      }),
    );
  }
  return findings;
}

/**
 * E5: a report's `branch` is `[polywave/{slug}/]wave{N}-agent-{ID}` for its own wave and ID, and
 * its `worktree` path has a segment `wave{N}-agent-{ID}`. Solo waves are exempt (the agent
 * works on the main branch); reports of agents that are in no wave are left to V038.
 */
export const worktreeNames: ImplRule = {
  name: 'worktree-names',
  reference: 'E5',
  codes: ['V042_INVALID_WORKTREE_NAME'],
  check(context) {
    const places = agentWaves(context.manifest);
    const findings: Finding[] = [];
    eachReport(context.manifest, (agentId, completion) => {
      const place = places.get(agentId);
      if (!place || place.solo) return;
      const branch = completion.branch ?? '';
      if (!isBlank(branch)) findings.push(...branchFindings(context, agentId, place.wave, branch));
      const worktree = completion.worktree ?? '';
      if (isBlank(worktree)) return;
      const expected = `wave${place.wave}-agent-${agentId}`;
      if (worktree.replaceAll('\\', '/').split('/').includes(expected)) return;
      findings.push(
        report(context, {
          code: 'V042_INVALID_WORKTREE_NAME',
          message: `agent ${agentId} worktree path ${goQuote(worktree)} does not contain expected segment ${goQuote(expected)}`,
          path: ['completion_reports', agentId, 'worktree'],
        }),
      );
    });
    return findings;
  },
};

/** E10: a non-empty `verification` contains the word PASS or FAIL (case-sensitive). */
export const verificationFormat: ImplRule = {
  name: 'verification-format',
  reference: 'E10',
  codes: ['V043_INVALID_VERIFICATION'],
  check(context) {
    const findings: Finding[] = [];
    eachReport(context.manifest, (agentId, completion) => {
      const verification = completion.verification ?? '';
      if (isBlank(verification) || /\b(PASS|FAIL)\b/.test(verification)) return;
      findings.push(
        report(context, {
          code: 'V043_INVALID_VERIFICATION',
          message: `agent ${agentId} verification field ${goQuote(verification)} does not match format 'PASS' or 'FAIL (details)'`,
          path: ['completion_reports', agentId, 'verification'],
        }),
      );
    });
    return findings;
  },
};

/** Completion report `status` is complete, partial or blocked (empty is invalid). */
export const completionStatus: ImplRule = {
  name: 'completion-status',
  reference: 'E14',
  codes: ['V036_INVALID_ENUM'],
  check(context) {
    const findings: Finding[] = [];
    eachReport(context.manifest, (agentId, completion) => {
      const status = completion.status ?? '';
      if ((completionStatuses as readonly string[]).includes(status)) return;
      findings.push(
        report(context, {
          code: 'V036_INVALID_ENUM',
          message: `agent ${agentId} completion report has invalid status ${goQuote(status)} — must be one of: ${completionStatuses.join(', ')}`,
          path: ['completion_reports', agentId, 'status'],
        }),
      );
    });
    return findings;
  },
};

/** E19: a non-empty `failure_type` is one of the five failure types (`unknown` is rejected). */
export const failureTypeValue: ImplRule = {
  name: 'failure-type-value',
  reference: 'E19',
  codes: ['V022_INVALID_FAILURE_TYPE'],
  check(context) {
    const findings: Finding[] = [];
    eachReport(context.manifest, (agentId, completion) => {
      const failureType = completion.failure_type ?? '';
      if (failureType === '' || (failureTypes as readonly string[]).includes(failureType)) return;
      findings.push(
        report(context, {
          code: 'V022_INVALID_FAILURE_TYPE',
          message: `agent ${agentId} completion report has invalid failure_type ${goQuote(failureType)} — must be one of: ${failureTypes.join(', ')}`,
          path: ['completion_reports', agentId, 'failure_type'],
        }),
      );
    });
    return findings;
  },
};
