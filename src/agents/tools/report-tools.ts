/**
 * git_commit (stage owned changes and commit on the agent branch) and set_completion (the
 * agent's completion report, through the same locked writer as `polywave set-completion`).
 */
import path from 'node:path';
import { z } from 'zod';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { statusWithBranch } from '../../git/status-with-branch.js';

export { statusWithBranch } from '../../git/status-with-branch.js';
import { noHooksGitConfig } from '../../git/harden.js';
import { completionStatuses, failureTypes } from '../../protocol/schema/impl-schema.js';
import { isProtocolOwnedPath } from '../../protocol/conflicts.js';
import { isAgentSupportPath } from '../jail/jail.js';
import { denialResult, defineTool, errorMessage, errorResult, okResult, plural } from './shared.js';
import type { AgentTool, ReportGitFacts } from './types.js';

export type { ReportGitFacts } from './types.js';

const agentCommitGitConfig: Readonly<Record<string, string>> = Object.freeze({ ...noHooksGitConfig, 'maintenance.auto': 'false' });

const gitCommitInput = z.object({
  message: z.string().min(1).describe('The commit message.'),
  paths: z.array(z.string().min(1)).optional().describe('Files to commit (default: every changed file you own).'),
});

export const gitCommitTool: AgentTool = defineTool<z.infer<typeof gitCommitInput>>({
  name: 'git_commit',
  description: 'Stage and commit your changes on your agent branch: the given paths, or every changed file you own (files you do not own are left alone). Returns the short commit id.',
  inputSchema: gitCommitInput,
  async execute(input, context) {
    const jail = context.jail;
    // X8 #1: outside the sandbox, on the agent's tree: no hook runs (an in-tree core.hooksPath is the agent's to write).
    // No `maintenance run --auto` process after each agent commit either: the wave's last merge
    // (merge.ts), or the repository's next commit, runs it once for all of them.
    const git = createGit(jail.root, { env: context.env, config: () => agentCommitGitConfig });
    const branch = context.branch ?? jail.policy.branch;
    try {
      // Branch and status in one process (`status --branch`): this runs once per commit of every agent of a wave.
      const { branch: current, entries: status } = input.paths !== undefined && input.paths.length > 0 ? { branch: await git.currentBranch(), entries: [] } : await statusWithBranch(git);
      if (current === undefined || (branch !== undefined && current !== branch)) {
        const where = current === undefined ? 'HEAD is detached' : `HEAD is on "${current}"`;
        const reason = branch !== undefined ? `${where}, not on the agent branch "${branch}", so nothing was committed (worktree isolation E4/E43).` : `${where}, so nothing was committed.`;
        return denialResult('git_commit', { code: 'JAIL_BRANCH_MOVED', reason }, branch ?? 'HEAD');
      }
      const files: string[] = [];
      const skipped: string[] = [];
      if (input.paths !== undefined && input.paths.length > 0) {
        for (const requested of input.paths) {
          const decision = await jail.checkWrite(requested);
          if (!decision.allowed) return denialResult('git_commit', decision, requested);
          if (!files.includes(decision.relative)) files.push(decision.relative);
        }
      } else {
        const candidates = new Set<string>();
        for (const entry of status) {
          candidates.add(entry.path);
          if (entry.from !== undefined) candidates.add(entry.from);
        }
        for (const candidate of [...candidates].sort()) {
          if (isAgentSupportPath(candidate)) continue;
          const decision = await jail.checkWrite(candidate);
          if (decision.allowed) files.push(decision.relative);
          else skipped.push(candidate);
        }
      }
      const skippedNote = skipped.length > 0 ? `\nLeft uncommitted (not yours to commit): ${skipped.join(', ')}.` : '';
      if (files.length === 0) return errorResult(`Nothing to commit: no changed file you own.${skippedNote}`);
      await git.add(files);
      // What was staged, not what was checked (outside attack X18-20): a file swapped for a link to outside the
      // worktree between the jail's check and `git add` is taken out of the index again and nothing is committed.
      const escaping = await stagedLinksOutside(git, jail.root, files);
      if (escaping.length > 0) {
        await git.run(['reset', '-q', '--', ...escaping]);
        return denialResult('git_commit', { code: 'JAIL_OUTSIDE_ROOT', reason: `${escaping.join(', ')} became a symbolic link pointing outside the worktree, or at a path the repository does not hold, after it was checked; nothing was committed (worktree isolation E4/E43).` }, escaping[0]!);
      }
      const sha = await git.commit({ message: input.message, paths: files });
      const short = sha.slice(0, 12);
      return okResult(`Committed ${short} on ${current}: ${plural(files.length, 'file')} (${files.join(', ')}).${skippedNote}`);
    } catch (error) {
      return errorResult(`git commit failed: ${errorMessage(error)}`);
    }
  },
});

/**
 * The staged paths among `files` that are symbolic links (mode 120000) whose target, as staged, lies outside
 * `root` or inside its `.git`, or names anything but a regular file the index holds (an untracked or ignored file —
 * the main checkout's `.env` once merged —, a directory, another link) — read from the index, so a swap after the
 * check cannot hide it.
 */
export async function stagedLinksOutside(git: Git, root: string, files: readonly string[]): Promise<string[]> {
  if (files.length === 0) return [];
  const { stdout: staged } = await git.run(['ls-files', '-s', '-z', '--', ...files]);
  const escaping: string[] = [];
  for (const record of staged.split('\0')) {
    const match = /^120000 ([0-9a-f]+) \d\t(.+)$/s.exec(record);
    if (!match) continue;
    const target = (await git.run(['cat-file', 'blob', match[1]!])).stdout;
    const resolved = path.resolve(root, path.dirname(match[2]!), target);
    const relative = path.relative(root, resolved);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative) || relative.split(path.sep)[0] === '.git') escaping.push(match[2]!);
    // Inside the worktree but at nothing the repository holds (outside attack X19-12: `src/a.ts -> ../.env` passes the
    // lexical check, and once merged points at the main checkout's ignored `.env`): only a link to a tracked (or
    // staged) path is committed.
    else {
      // ... and only at a regular tracked file (X20-04: a tracked directory, or a tracked link such as a monorepo's
      // `packages/web/.env -> ../../.env`, passed the index check and leads on to what the repository does not hold).
      const target = relative.split(path.sep).join('/');
      const entry = (await git.run(['ls-files', '-s', '-z', '--', `:(literal)${target}`])).stdout.split('\0').filter((line) => line !== '');
      if (entry.length !== 1 || !/^100(?:644|755) [0-9a-f]+ 0\t/.test(entry[0]!) || entry[0]!.slice(entry[0]!.indexOf('\t') + 1) !== target) escaping.push(match[2]!);
    }
  }
  return escaping;
}

const interfaceDeviation = z.object({
  description: z.string(),
  downstream_action_required: z.boolean().optional(),
  affects: z.array(z.string()).optional(),
});

const blank = (value: unknown): boolean => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/** Where a report is filed from: the agent's checkout, its branch and the wave's base commit. */
export interface ReportOrigin {
  /** The agent's worktree (or the repository root for a solo agent). */
  cwd: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** The branch the agent must be on (a commit is taken from HEAD only while HEAD is there). */
  branch?: string;
  /** The wave's base commit: the file lists come from `git diff --name-status <base>..HEAD`. */
  baseCommit?: string;
}

/**
 * What git says about a report's origin, read lazily and each at most once, shared by the check and
 * the filling of one report (set_completion asked HEAD twice, the branch and the diff two times each).
 */
export function reportGitFacts(origin: Pick<ReportOrigin, 'cwd' | 'env'>): ReportGitFacts {
  const git = createGit(origin.cwd, origin.env ? { env: origin.env } : {});
  let headAndBranch: Promise<{ head: string | undefined; branch: string | undefined }> | undefined;
  const diffs = new Map<string, Promise<Array<{ status: string; path: string; from?: string }> | undefined>>();
  return {
    headAndBranch() {
      headAndBranch ??= readHeadAndBranch(git);
      return headAndBranch;
    },
    diffFromBase(base) {
      let diff = diffs.get(base);
      if (diff === undefined) {
        diff = git.diffNameStatus(`${base}..HEAD`).catch(() => undefined);
        diffs.set(base, diff);
      }
      return diff;
    },
  };
}

/**
 * HEAD's commit and branch in one process (`rev-parse HEAD --symbolic-full-name HEAD`: the commit,
 * then `refs/heads/<branch>` or `HEAD` when detached); an unborn HEAD (no commit) falls back to
 * `branch --show-current`, which names the unborn branch. Same answers as tryRevParse('HEAD') and
 * currentBranch().
 */
export async function readHeadAndBranch(git: Git): Promise<{ head: string | undefined; branch: string | undefined }> {
  const result = await git.run(['rev-parse', 'HEAD^{commit}', '--symbolic-full-name', 'HEAD'], { allowExitCodes: [128] }).catch(() => undefined);
  const [headLine = '', refLine = ''] = result?.exitCode === 0 ? result.stdout.split('\n') : [];
  const head = /^[0-9a-f]{40,64}$/.test(headLine.trim()) ? headLine.trim() : undefined;
  if (head === undefined) return { head: undefined, branch: await git.currentBranch().catch(() => undefined) };
  const ref = refLine.trim();
  return { head, branch: ref.startsWith('refs/heads/') && ref.length > 'refs/heads/'.length ? ref.slice('refs/heads/'.length) : undefined };
}

/**
 * Issue 13: `commit`, `branch`, `worktree` and (F3) the file lists are facts git knows — fill what
 * the model left out (as the script backend does), so a `complete` report is not refused for a
 * missing commit (G003) nor for files it did not list (E11 "changed but not reported"), and the
 * model need not copy a SHA. What the model gave wins. The commit is HEAD only while HEAD is on
 * the agent's branch (else it stays empty and the writer says what is wrong); the file lists are
 * filled only for a `complete` report that names neither list, from `base..HEAD` on that branch
 * (added → files_created, anything else → files_changed, the protocol's own paths left out).
 */
export async function fillReportFromGit(report: Record<string, unknown>, origin: ReportOrigin, facts: ReportGitFacts = reportGitFacts(origin)): Promise<void> {
  const noFiles = report.status === 'complete' && blankList(report.files_changed) && blankList(report.files_created) && origin.baseCommit !== undefined;
  if (!blank(report.commit) && !blank(report.branch) && !blank(report.worktree) && !noFiles) return;
  const expected = origin.branch;
  const { head, branch: current } = await facts.headAndBranch();
  const onBranch = head !== undefined && current !== undefined && (expected === undefined || current === expected);
  if (blank(report.branch) && (current ?? expected) !== undefined) report.branch = current ?? expected;
  if (blank(report.commit) && onBranch) report.commit = head;
  if (blank(report.worktree)) report.worktree = origin.cwd;
  if (noFiles && onBranch) {
    const entries = await facts.diffFromBase(origin.baseCommit!);
    if (entries !== undefined) {
      // As finalize sees it (--no-renames): a rename or copy creates its new path; a rename changes (deletes) its old one.
      const created: string[] = [];
      const changed: string[] = [];
      for (const entry of entries) {
        (/^[ACR]/.test(entry.status) ? created : changed).push(entry.path);
        if (entry.status.startsWith('R') && entry.from !== undefined) changed.push(entry.from);
      }
      const keep = (file: string) => !isAgentSupportPath(file) && !isProtocolOwnedPath(file);
      report.files_created = created.filter(keep);
      report.files_changed = [...new Set(changed)].filter(keep);
    }
  }
}

/**
 * Outside attack N5: what the model wrote that git contradicts, as the error it sees (so it can
 * correct itself in the same session), or undefined. A `commit` must be a commit reachable from
 * the worktree's HEAD; for a `complete` report on the agent's branch, every file named in
 * `files_created` / `files_changed` must be in the branch's diff against the wave base (finalize
 * would refuse the report with E11 otherwise). Git's facts are not substituted silently: the
 * model is told, and omitting the field lets git fill it.
 */
export async function reportContradictsGit(report: Record<string, unknown>, origin: ReportOrigin, facts: ReportGitFacts = reportGitFacts(origin)): Promise<string | undefined> {
  const commit = typeof report.commit === 'string' ? report.commit.trim() : '';
  const lists = [report.files_created, report.files_changed].filter((value): value is unknown[] => Array.isArray(value));
  const named = [...new Set(lists.flat().filter((file): file is string => typeof file === 'string' && file.trim() !== '').map((file) => file.trim().replace(/^\.\//, '')))];
  const checkFiles = report.status === 'complete' && named.length > 0 && origin.baseCommit !== undefined;
  if ((commit === '' || commit === 'uncommitted') && !checkFiles) return undefined;
  const { head, branch: current } = await facts.headAndBranch();
  if (head === undefined) return undefined;
  const git = createGit(origin.cwd, origin.env ? { env: origin.env } : {});
  if (commit !== '' && commit !== 'uncommitted') {
    // HEAD's own full id (what git fills in) needs no second rev-parse: it resolves to itself.
    const resolved = commit === head ? head : /^[0-9a-f]{4,64}$/i.test(commit) || /^[\w./-]+$/.test(commit) ? await git.tryRevParse(commit).catch(() => undefined) : undefined;
    const reachable = resolved !== undefined && (resolved === head || (await git.isAncestor(resolved, head).catch(() => false)));
    if (!reachable) {
      return `commit "${commit.slice(0, 80)}" is ${resolved === undefined ? 'not a commit in this repository' : 'not reachable from your HEAD'} (HEAD is ${head.slice(0, 12)}). Omit commit (it is filled in from git) or give a SHA from \`git log\`.`;
    }
  }
  if (checkFiles && origin.baseCommit !== undefined) {
    if (current === undefined || (origin.branch !== undefined && current !== origin.branch)) return undefined;
    const entries = await facts.diffFromBase(origin.baseCommit);
    if (entries === undefined) return undefined;
    const inDiff = new Set(entries.flatMap((entry) => (entry.from !== undefined ? [entry.path, entry.from] : [entry.path])));
    const missing = named.filter((file) => !inDiff.has(file));
    if (missing.length > 0) {
      return `not changed by your commits (not in git diff ${origin.baseCommit.slice(0, 12)}..HEAD): ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', …' : ''}. Commit those files first, or list only files your commits changed — or omit files_created and files_changed (they are filled in from git).`;
    }
  }
  return undefined;
}

const blankList = (value: unknown): boolean => value === undefined || value === null || (Array.isArray(value) && value.length === 0);

const setCompletionInput = z.object({
  status: z.enum(completionStatuses).describe('complete, partial or blocked.'),
  failure_type: z.enum(failureTypes).optional().describe('Required for partial/blocked: transient, fixable, needs_replan, escalate or timeout.'),
  commit: z.string().optional().describe('The commit holding your work (default: your branch HEAD, filled in from git).'),
  branch: z.string().optional().describe('Default: your branch, filled in from git.'),
  worktree: z.string().optional().describe('Default: your worktree, filled in.'),
  files_changed: z.array(z.string()).optional().describe('Default (when neither list is given): the files your commits changed, filled in from git.'),
  files_created: z.array(z.string()).optional().describe('Default (when neither list is given): the files your commits added, filled in from git.'),
  tests_added: z.array(z.string()).optional(),
  interface_deviations: z.array(interfaceDeviation).optional(),
  out_of_scope_deps: z.array(z.string()).optional(),
  verification: z.string().optional().describe('What you ran and its result, e.g. "PASS (npm test)".'),
  notes: z.string().optional(),
});

export const setCompletionTool: AgentTool = defineTool<z.infer<typeof setCompletionInput>>({
  name: 'set_completion',
  description: 'File your completion report (I4/I5) once your work is committed: status complete, partial or blocked (partial/blocked need a failure_type). Errors say what to fix.',
  inputSchema: setCompletionInput,
  async execute(input, context) {
    if (!context.reportCompletion) return errorResult('this role does not file completion reports.');
    const report: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(input)) if (value !== undefined) report[key] = value;
    try {
      const origin: ReportOrigin = { cwd: context.jail.root, env: context.env, ...((context.branch ?? context.jail.policy.branch) !== undefined ? { branch: (context.branch ?? context.jail.policy.branch)! } : {}), ...(context.baseCommit ? { baseCommit: context.baseCommit } : {}) };
      // One read of HEAD, the branch and the diff for both the check and the filling (nothing is committed in between).
      const facts = context.reportFacts ?? reportGitFacts(origin);
      const contradiction = await reportContradictsGit(report, origin, facts);
      if (contradiction !== undefined) return errorResult(`Completion report refused (E42_REPORT_CONTRADICTS_GIT): ${contradiction}`);
      await fillReportFromGit(report, origin, facts);
      const result = await context.reportCompletion(report);
      if (result.ok) return okResult(`Completion report saved (status: ${result.status}).`);
      return errorResult(`Completion report refused (${result.code}): ${result.message}`);
    } catch (error) {
      return errorResult(`Completion report failed: ${errorMessage(error)}`);
    }
  },
});
