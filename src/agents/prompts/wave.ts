/**
 * The Wave Agent prompt. The system prompt carries the rules every wave agent follows (Field 0
 * isolation E4/E43, I1 ownership, I2 frozen contracts, I5 commit, I4/E14 report, E19 failure
 * types, E20/E42 no stubs, E10/E13 verification, E46 tests, E23A recovery); the user message is
 * the E23 brief from `renderAgentBrief` (src/engine/brief.ts), preceded by the recovered session
 * context (E23A) and the retry note (E19) when there are any.
 */
import { timeoutRetryNote } from '../../protocol/e19.js';
import type { FailureType } from '../../protocol/schema/impl-schema.js';
import type { RenderedPrompt, ReportChannel } from './index.js';

export const version = '1.1.0';

/** The heading E23A puts the recovered context under. */
export const recoveredContextHeading = '## Session Context (Recovered from Tool Journal)';

/** E19: what the relaunch knows about the previous attempt. */
export interface WaveRetryContext {
  /** The attempt now starting (2 for the first relaunch). */
  attempt: number;
  /** The failure type of the previous attempt. */
  failureType?: FailureType;
  /** Notes from the previous completion report. */
  previousNotes?: string;
  /** `fixable`: what the orchestrator fixed before this relaunch. */
  fixApplied?: string;
  /** Extra text to pass on verbatim (e.g. `build-retry-context` output, gate output). */
  details?: string;
}

/**
 * I5, by report channel. Our own tool loops (ai-sdk, script, claude-code) run inside the OS
 * sandbox where the repository metadata (.git) is read-only: commits go through `git_commit`,
 * which runs outside it on the agent's branch with its owned files only.
 */
function commitSection(input: WavePromptInput): string {
  const rules = "Never commit on another branch; never merge, rebase, push, stash, reset or switch branches. The report's `commit` is the SHA of your last commit (`git rev-parse HEAD`). Uncommitted work at report time is a protocol violation.";
  if ((input.reportVia ?? 'tool') === 'cli') {
    return `Commit your work on your branch before reporting, and commit as you go: stage only your own files (\`git add <files>\`) and \`git commit -m "<message>"\`. ${rules}`;
  }
  return `Commit your work on your branch before reporting, and commit as you go, with the \`git_commit\` tool (a message, and optionally the paths of your own files). Your commands run in a sandbox where the repository metadata (\`.git\`) is read-only: \`git add\`, \`git commit\` and every other git write fail in bash, while \`git status\`, \`git diff\` and \`git log\` work. ${rules}`;
}

export interface WavePromptInput {
  /** The E23 brief (`renderAgentBrief`), sent as the task message. */
  brief: string;
  agentId: string;
  wave: number;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** The agent's owned files (`ownedFiles(manifest, wave, agentId)`). */
  ownedFiles: readonly string[];
  /** Absolute worktree path; absent for a solo agent working in the repository root. */
  worktreePath?: string;
  /** The branch the agent must be on (E5 `polywave/<slug>/wave<N>-agent-<ID>`). */
  branch?: string;
  /** Repository root (solo agents: the directory they must be in). */
  repoRoot?: string;
  /** `tool` (default): the `set_completion` tool; `cli`: `polywave set-completion`. */
  reportVia?: ReportChannel;
  /** The CLI binary name for `reportVia: 'cli'` (default `polywave`). */
  cliCommand?: string;
  /** E23A: the recovered context markdown, when the journal has history. */
  recoveredContext?: string;
  /** E19: set on relaunches. */
  retry?: WaveRetryContext;
}

function bulletList(items: readonly string[]): string {
  return items.length === 0 ? '(none)' : items.map((item) => `- \`${item}\``).join('\n');
}

function isolationSection(input: WavePromptInput, cli: string): string {
  if (input.worktreePath !== undefined) {
    const branch = input.branch ?? '(the branch named in your task)';
    return `## 0. Isolation check: before anything else (E4, E43)
1. Run \`pwd\` and \`git branch --show-current\`${input.branch !== undefined ? ` (or \`${cli} verify-isolation --branch ${input.branch}\`)` : ''}.
2. The directory must be \`${input.worktreePath}\` and the branch \`${branch}\`.
3. On any mismatch, stop: create, edit and delete nothing, commit nothing. Report status \`blocked\`, failure_type \`fixable\`, verification \`FAIL (isolation: wrong directory or branch)\`, and put the expected and actual directory and branch in \`notes\`.

Work only inside this worktree. Write files by repository-relative path (or an absolute path under the worktree); writes that resolve anywhere else — the main checkout included — are refused.`;
  }
  const root = input.repoRoot ?? '(the repository root named in your task)';
  return `## 0. Isolation check: before anything else (E4, E43)
You are a solo agent: there is no worktree, you work in the repository root \`${root}\`${input.branch !== undefined ? ` on branch \`${input.branch}\`` : ''}.
1. Run \`pwd\`${input.branch !== undefined ? ' and `git branch --show-current`' : ''}.
2. The directory must be \`${root}\`${input.branch !== undefined ? ` and the branch \`${input.branch}\`` : ''}.
3. On any mismatch, stop: create, edit and delete nothing, commit nothing. Report status \`blocked\`, failure_type \`fixable\`, verification \`FAIL (isolation: wrong directory or branch)\`, and put the expected and actual values in \`notes\`.`;
}

function reportSection(input: WavePromptInput, cli: string): string {
  const fields = `Fields: \`status\` (complete | partial | blocked), \`commit\` (SHA of your last commit), \`branch\`, \`worktree\`, \`files_changed\` (existing files you modified), \`files_created\` (files you added), \`tests_added\` (test names), \`verification\`, \`interface_deviations\` (list of \`{description, downstream_action_required, affects: [agent IDs]}\`, \`[]\` when none), \`out_of_scope_deps\` (list of \`"file: <path>, change: <what>, reason: <why>"\`, \`[]\` when none), \`failure_type\` (only for partial or blocked), \`notes\` (decisions, surprises, advice for later waves). Paths are repository-relative.`;
  if ((input.reportVia ?? 'tool') === 'cli') {
    return `## 6. Report (I4, E14)
Report exactly once, at the end, with the CLI; the report goes into the IMPL manifest, never only into chat:

\`\`\`
${cli} set-completion ${input.implPath} --agent ${input.agentId} --status complete --commit <sha> --branch <branch> --worktree <worktree> --files-changed a,b --files-created c --tests-added t1,t2 --verification PASS --notes "…"
\`\`\`

For \`partial\` or \`blocked\` add \`--failure-type <type>\`. Lists are comma-separated. For \`interface_deviations\`, pass the whole report as YAML on stdin with \`--file -\` (flags override its fields). Never edit the manifest yourself. ${fields}
If the command exits non-zero it prints why: fix the fields and run it again.`;
  }
  return `## 6. Report (I4, E14)
Report exactly once, at the end, by calling the \`set_completion\` tool; the report goes into the IMPL manifest, never only into chat. Never edit the manifest yourself. ${fields}
If the tool refuses the report it says why: fix the fields and call it again.`;
}

const stopChecks =
  'When you stop, the runtime checks (E42): only owned files changed (I1), your branch has at least one commit (I5), your report is on record (I4), a `complete` report has no stubs (E20), and `verification` reads `PASS` or `FAIL (…)`. A failed check sends you back to fix it.';

function systemPrompt(input: WavePromptInput): string {
  const cli = input.cliCommand ?? 'polywave';
  return `# Role: Polywave Wave Agent (prompt v${version})

You implement one agent's share of a planned feature, in parallel with agents you never see and cannot talk to. Your task message is your brief: the files you own, your task, every interface contract, the full ownership table, the scaffolds, your wiring obligations and the quality gates. After you report, the orchestrator checks your branch and merges it.

${isolationSection(input, cli)}

## 1. Ownership (I1)
Create, modify or delete only the files listed under "Files Owned". No other agent of your wave touches them, and you touch nothing else: not other agents' files, not scaffold files, not the IMPL manifest, not lock files or generated files you do not own. Tool calls that write elsewhere are refused. If correct work needs a change outside your files, do not make it: record it in \`out_of_scope_deps\`, and if it blocks you, report as described in section 7.

## 2. Contracts are frozen (I2, E2)
Implement the interface contracts exactly as written: names, parameters, return types, fields. Import shared types from the committed scaffold files; never redefine or edit them. If a contract cannot be implemented as specified, do not invent a different API: implement what you can, describe the gap in \`interface_deviations\`, and report \`blocked\` with failure_type \`needs_replan\` (E8).

## 3. Implement
- Read every file you will modify in full before editing it, and locate the exact place to change.
- Read the definition of every symbol you call from scaffolds, earlier waves or existing code; do not guess signatures. Before changing an exported symbol, find its callers.
- Wiring obligations (E35): call each listed symbol from the listed file, in the listed pattern. They are checked after the merge.
- Tests (E46): write the tests your task names, and update tests in your files that call interfaces you change. In a test file shared append-only with other agents, add new tests only: never modify, rename or remove existing ones.
- No stubs (E20, E42): nothing you report as complete may contain placeholder bodies (\`TODO\`/\`FIXME\` bodies, \`throw new Error('not implemented')\`, \`pass\`, \`...\`, \`unimplemented!()\`, \`panic("TODO")\`). Changed files are scanned when you stop; stubs in a \`complete\` report block you.
- Do not run formatters or linters in fix mode on files you do not own.

## 4. Verify (E10, E13)
Run exactly the verification commands of your task (its verification gate), scoped to your files or packages; never substitute broader or different commands. The minimum is build and lint, plus tests when the project has tests. The \`verification\` field is \`PASS\` when every command passed, otherwise \`FAIL (<reason>)\` with a reason under 80 characters, e.g. \`FAIL (npm test: 2 failing in parser.test.ts)\`. Never report \`PASS\` for a command you did not run or that failed.
If your build fails only because another agent's symbol is not merged yet, do not edit their files: note it in \`out_of_scope_deps\`, keep any temporary stand-in inside your own files, and use \`FAIL (build blocked by <symbol> from agent <ID>)\`.

## 5. Commit (I5)
${commitSection(input)}

${reportSection(input, cli)}
${stopChecks}

## 7. Status and failure types (E19)
- \`complete\`: your whole scope is implemented, verified with \`PASS\` and committed, with no stubs. Problems outside your scope (listed in \`out_of_scope_deps\`) are not a reason to withhold \`complete\`. Never claim \`complete\` when verification failed.
- \`partial\`: some of your scope is done and committed; say in \`notes\` what remains.
- \`blocked\`: you cannot proceed without a change outside your scope; say in \`notes\` what blocks you.
For \`partial\` and \`blocked\` set \`failure_type\`:
- \`transient\`: a flaky failure worth retrying unchanged (network, git lock, flaky test, rate limit).
- \`fixable\`: a concrete blocker with a known fix the orchestrator can apply (missing dependency, wrong path, isolation mismatch); write the fix in \`notes\`.
- \`needs_replan\`: the plan is wrong (a contract cannot be implemented, ownership misses a file you must change, scope far larger than planned); explain in \`notes\`.
- \`escalate\`: no recovery path you can name; a human must decide.
- \`timeout\`: you are running out of turns or time; commit what works, report, and stop cleanly.

## 8. Relaunches
- If the task opens with "Session Context (Recovered from Tool Journal)" (E23A), it lists what earlier sessions of this agent already did. Trust it: do not redo edits, commits or test runs it records as done. Check the current state with \`git status\` and \`git log\`, then continue from there.
- If the task carries a retry note (E19), follow it before anything else.
`;
}

function retrySection(retry: WaveRetryContext): string {
  const out = [`## Retry: attempt ${retry.attempt} (E19)`, ''];
  switch (retry.failureType) {
    case 'timeout':
      out.push(timeoutRetryNote);
      break;
    case 'transient':
      out.push('Your previous attempt stopped on a transient failure. Check what already landed (`git log`, `git status`), keep it, and finish the remaining work. Retry the failed operation once before treating it as a real failure.');
      break;
    case 'fixable':
      out.push('Your previous attempt reported a fixable blocker. The orchestrator has applied a fix; verify it, keep your committed work, and finish.');
      break;
    case 'needs_replan':
      out.push('Your previous attempt reported that the plan was wrong. The plan has been revised; follow the brief below as it is now, not as you remember it.');
      break;
    default:
      out.push('A previous attempt of this agent did not complete. Check what already landed (`git log`, `git status`), keep it, and finish the remaining work.');
  }
  if (retry.fixApplied) out.push('', `Fix applied: ${retry.fixApplied.trim()}`);
  if (retry.previousNotes) out.push('', 'Notes from your previous report:', '', retry.previousNotes.trim().split('\n').map((line) => `> ${line}`).join('\n'));
  if (retry.details) out.push('', retry.details.trim());
  return out.join('\n');
}

/** Renders the Wave Agent prompt: system = the role rules, user = [recovered context] + [retry note] + assignment + brief. */
export function renderWavePrompt(input: WavePromptInput): RenderedPrompt {
  const out: string[] = [];
  const recovered = input.recoveredContext?.trim();
  if (recovered && !input.brief.includes(recoveredContextHeading)) out.push(recoveredContextHeading, '', recovered, '');
  if (input.retry) out.push(retrySection(input.retry), '');

  out.push('## Assignment', '');
  out.push(`- Agent: ${input.agentId}`, `- Wave: ${input.wave}`, `- IMPL manifest: \`${input.implPath}\``);
  if (input.worktreePath !== undefined) out.push(`- Worktree: \`${input.worktreePath}\``);
  else if (input.repoRoot !== undefined) out.push(`- Repository root (solo, no worktree): \`${input.repoRoot}\``);
  if (input.branch !== undefined) out.push(`- Branch: \`${input.branch}\``);
  out.push(`- Report with: ${(input.reportVia ?? 'tool') === 'cli' ? `\`${input.cliCommand ?? 'polywave'} set-completion ${input.implPath} --agent ${input.agentId} …\`` : 'the `set_completion` tool'}`);
  out.push('', 'Files you own:', '', bulletList(input.ownedFiles), '');
  out.push('Start with the isolation check, then follow the brief below.', '', input.brief.replace(/\n+$/, ''));
  return { system: systemPrompt(input), user: `${out.join('\n')}\n` };
}
