import { readBlobs, blobSpec, scanStubText, type StubHit } from '../analysis/index.js';
import type { Git } from '../git/git-port.js';
import type { CompletionReportRecord } from '../protocol/completion-report.js';
import type { Jail } from './jail/types.js';

/** One unmet obligation found when an agent stops. */
export interface StopProblem {
  /** E42 sub-check: I1, I4 (report), I5 (commit), E20 (stub in a complete report), E42 (uncommitted work). */
  code: 'E42_I1_OWNERSHIP' | 'E42_I4_NO_REPORT' | 'E42_I5_NO_COMMIT' | 'E42_I5_COMMIT_NOT_ON_BRANCH' | 'E42_UNCOMMITTED' | 'E42_E20_STUBS' | 'E42_BRANCH_MOVED';
  message: string;
  files?: string[];
}

/** The result of {@link checkAgentStop}. */
export interface StopCheck {
  ok: boolean;
  problems: StopProblem[];
  /** Marker comments (TODO/FIXME…) in the agent's files: shown, never blocking. */
  markers: StubHit[];
  /** Files the branch changed relative to the base (committed and not). */
  changedFiles: string[];
  /** 1 when the branch has commits beyond the base, else 0 (not a count: one fewer git process per agent). */
  commits: number;
}

/** A stub pattern that is a marker comment (TODO, FIXME, XXX, HACK…), not stub code. */
function isMarker(hit: StubHit): boolean {
  return /^[A-Z]+$/.test(hit.pattern);
}

/**
 * E42 for a wave agent, whatever the backend: run when the agent stops, before its report counts.
 * - I4: a completion report is on record;
 * - I1: nothing outside the agent's ownership changed in its worktree (jail audit vs the base);
 * - I5: a `complete` report has at least one commit beyond the base on the agent's branch, and its
 *   `commit` is on that branch; no owned change is left uncommitted;
 * - E20: a `complete` report has no stub code (`NotImplementedError`, `todo!()`, `throw new
 *   Error("not implemented")`…) in the files it changed — marker comments are only reported.
 */
export async function checkAgentStop(options: {
  git: Git;
  jail: Jail;
  baseCommit: string;
  report: CompletionReportRecord | undefined;
}): Promise<StopCheck> {
  const { git, jail, baseCommit, report } = options;
  const problems: StopProblem[] = [];
  const audit = await jail.audit({ baseCommit });
  // The audit proves the base is an ancestor of HEAD (else JAIL_BRANCH_MOVED), so HEAD ≠ base ⇔ commits beyond it.
  const commits = audit.head !== undefined && audit.head !== baseCommit ? 1 : 0;
  for (const violation of audit.violations) {
    problems.push({
      code: violation.code === 'JAIL_BRANCH_MOVED' ? 'E42_BRANCH_MOVED' : 'E42_I1_OWNERSHIP',
      message: violation.code === 'JAIL_BRANCH_MOVED' ? violation.reason : `I1 violation: ${violation.reason}`,
      ...(violation.path ? { files: [violation.path] } : {}),
    });
  }
  if (report === undefined) {
    problems.push({ code: 'E42_I4_NO_REPORT', message: 'I4: no completion report in the IMPL doc (the agent must call set_completion / polywave set-completion)' });
  }
  const markers: StubHit[] = [];
  if (report?.status === 'complete') {
    if (commits === 0) problems.push({ code: 'E42_I5_NO_COMMIT', message: 'I5 violation: completion report written but no commits found beyond the wave base' });
    const commit = report.commit?.trim();
    if (commits > 0 && commit && commit !== 'uncommitted' && commit !== audit.head) {
      const onBranch = await git.run(['merge-base', '--is-ancestor', commit, 'HEAD'], { allowExitCodes: [1, 128] });
      if (onBranch.exitCode !== 0) problems.push({ code: 'E42_I5_COMMIT_NOT_ON_BRANCH', message: `I5: the reported commit ${commit} is not on the agent's branch` });
    }
    const owned = new Set(jail.policy.ownedFiles);
    const dirty = audit.uncommittedFiles.filter((file) => owned.has(file));
    if (dirty.length > 0) problems.push({ code: 'E42_UNCOMMITTED', message: `uncommitted changes to owned files: ${dirty.join(', ')} (commit before reporting complete, I5)`, files: dirty });
    const files = [...new Set([...(report.files_changed ?? []), ...(report.files_created ?? [])])].filter((file) => file.trim() !== '');
    if (files.length > 0 && commits > 0) {
      const texts = await readBlobs(git, files.map((file) => blobSpec('HEAD', file)));
      const stubs: StubHit[] = [];
      for (const file of files) {
        const text = texts.get(blobSpec('HEAD', file));
        if (text === undefined) continue;
        for (const hit of scanStubText(file, text)) (isMarker(hit) ? markers : stubs).push(hit);
      }
      if (stubs.length > 0) {
        problems.push({
          code: 'E42_E20_STUBS',
          message: `E20: a complete report with stub code left in ${stubs.map((hit) => `${hit.file}:${hit.line} (${hit.pattern})`).join(', ')}`,
          files: [...new Set(stubs.map((hit) => hit.file))],
        });
      }
    }
  }
  return { ok: problems.length === 0, problems, markers, changedFiles: audit.changedFiles, commits };
}
