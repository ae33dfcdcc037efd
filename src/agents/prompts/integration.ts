/**
 * The Integration Agent prompt, three situations:
 * - `gaps` (E25/E26): wire the exported-but-unused symbols of the E25 report, editing only the
 *   `integration_connectors` files;
 * - `planned` (E27): a `type: integration` wave's agent, working on the merge target;
 * - `hotfix` (E47): fix a caller cascade in files owned by later waves after a wave changed
 *   signatures.
 * All three run on the merged result, not in a worktree (I1 amendment: the only writer, limited
 * to its allowed files), make minimal call-site edits and never change contracts.
 */
import type { Agent, ImplManifest } from '../../protocol/schema/impl-schema.js';
import type { RenderedPrompt, ReportChannel } from './index.js';

export const version = '1.0.0';

/** One E25 gap (`integration_reports.wave{N}.gaps[]`; the analysis layer's `IntegrationGap` fits). */
export type IntegrationGapInput = Partial<NonNullable<ImplManifest['integration_reports']>[string]['gaps'][number]>;

export type IntegrationMode = 'gaps' | 'planned' | 'hotfix';

/** E47: the build failure to repair. */
export interface CascadeHotfixInput {
  /** The erroring files (all owned by later waves or by nobody). */
  files: readonly string[];
  /** The build/vet output. */
  buildError: string;
  /** The command that failed. */
  buildCommand?: string;
}

export interface IntegrationPromptInput {
  mode: IntegrationMode;
  manifest: ImplManifest;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** Absolute repository root (the merged checkout). */
  repoRoot: string;
  /** The wave that just merged (gaps, hotfix) or the integration wave (planned). */
  wave: number;
  /** The branch the wave merged into (P5), when not the current branch. */
  mergeTarget?: string;
  /** Files the agent may write. Default: `integration_connectors` (gaps), the agent's files (planned), the erroring files (hotfix). */
  allowedFiles?: readonly string[];
  /** E25 gaps to wire (mode `gaps`). */
  gaps?: readonly IntegrationGapInput[];
  /** E27: the integration wave's agent (mode `planned`). */
  agent?: Agent;
  /** E47 (mode `hotfix`). */
  hotfix?: CascadeHotfixInput;
  /** Commands that must pass after the edits. Default: the build/typecheck/lint gates, else `lint_command`. */
  verifyCommands?: readonly string[];
  /** Planned mode: how the agent files its completion report (default `tool`). */
  reportVia?: ReportChannel;
  /** CLI binary (default `polywave`). */
  cliCommand?: string;
}

function fence(text: string, language = ''): string {
  let marker = '```';
  while (text.includes(marker)) marker += '`';
  return `${marker}${language}\n${text.replace(/\n+$/, '')}\n${marker}`;
}

/** The files an integration agent may write in `mode` when none are given. */
export function defaultAllowedFiles(input: Pick<IntegrationPromptInput, 'mode' | 'manifest' | 'agent' | 'hotfix' | 'wave'>): string[] {
  switch (input.mode) {
    case 'gaps':
      return (input.manifest.integration_connectors ?? []).map((connector) => connector.file ?? '').filter((file) => file !== '');
    case 'planned': {
      const files = [...(input.agent?.files ?? [])];
      for (const row of input.manifest.file_ownership ?? []) if (row.agent === input.agent?.id && row.wave === input.wave && row.file && !files.includes(row.file)) files.push(row.file);
      return files;
    }
    case 'hotfix':
      return [...(input.hotfix?.files ?? [])];
  }
}

/** Build-type gate commands (build, typecheck, lint; pre-merge timing), else the manifest's lint command. */
export function defaultVerifyCommands(manifest: ImplManifest): string[] {
  const gates = (manifest.quality_gates?.gates ?? []).filter((gate) => gate.command && ['build', 'typecheck', 'lint'].includes(gate.type ?? '') && gate.fix !== true);
  if (gates.length > 0) return gates.map((gate) => gate.command!);
  return manifest.lint_command ? [manifest.lint_command] : [];
}

function commitMessage(mode: IntegrationMode, wave: number, agentId: string | undefined): string {
  if (mode === 'hotfix') return `[Polywave:wave${wave}:integration-hotfix] fix caller cascade after wave ${wave} signature changes`;
  if (mode === 'planned') return `feat(wave${wave}-integration): wire wave ${wave} integration [Polywave:wave${wave}:agent-${agentId ?? '?'}]`;
  return `feat(wave${wave}-integration): wire integration gaps`;
}

function reportSection(input: IntegrationPromptInput): string {
  if (input.mode !== 'planned') {
    return `## Report
Your final answer is one YAML block:

\`\`\`yaml
integration_result:
  commit: <sha, or none>
  files_changed: [<paths>]
  verification: PASS            # or "FAIL (<reason under 80 chars>)"
  items:                        # one per gap (E26) or per erroring file (E47)
    - target: <export name or file>
      result: wired | fixed | not_wired
      detail: <where and how, or why not>
\`\`\`

The orchestrator records it; do not edit the manifest. A failure here is reported to a human and does not block the next wave, so report honestly rather than forcing a change outside your files.`;
  }
  const agentId = input.agent?.id ?? '?';
  const how =
    (input.reportVia ?? 'tool') === 'cli'
      ? `with \`${input.cliCommand ?? 'polywave'} set-completion ${input.implPath} --agent ${agentId} --status <status> --commit <sha> --branch <branch> --files-changed a,b --verification PASS --notes "…"\` (add \`--failure-type\` for partial or blocked)`
      : 'by calling the `set_completion` tool';
  return `## Report (I4, I5)
Commit first, then report exactly once ${how}: \`status\` (complete | partial | blocked), \`commit\`, \`branch\` (the branch you committed on), \`files_changed\`, \`files_created\`, \`verification\` (\`PASS\` or \`FAIL (<reason>)\`), \`out_of_scope_deps\`, \`failure_type\` for partial or blocked (transient | fixable | needs_replan | escalate | timeout, E19), \`notes\`. A wiring you could not complete inside your files is \`partial\` with \`fixable\` and the missing change in \`notes\`.`;
}

function systemPrompt(input: IntegrationPromptInput): string {
  const agentId = input.agent?.id;
  return `# Role: Polywave Integration Agent (prompt v${version})

You connect finished work to the code that must use it. You run after a wave has merged, directly on the merged result${input.mergeTarget ? ` (branch \`${input.mergeTarget}\`)` : ''}, not in a worktree, and no other agent runs at the same time. That is why you are exempt from disjoint ownership (I1 amendment), but only inside the files you are allowed to edit.

## The three situations
- E26, integration gaps: the E25 scan found exported symbols of the wave that nothing calls. Wire each one into the code that should call it, editing only the integration connector files (the manifest's \`integration_connectors\`).
- E27, planned integration wave: the Scout planned a \`type: integration\` wave whose task is wiring earlier waves' exports into existing callers. Your task and files come from the manifest; you run on the merge target, not in a worktree.
- E47, caller cascade hotfix: a wave changed signatures and the post-merge build now fails only in files owned by later waves or by nobody. Repair exactly those call sites.
The task message says which one this is.

## File restriction (strict)
- Write only the files listed under "Allowed Files". A write anywhere else is refused, and an edit you cannot make inside them is reported, not worked around.
- Never edit interface contracts, scaffold files, the IMPL manifest, or the definitions of the symbols you wire or repair. You change call sites, never the API (I2: contracts are frozen).

## How to work
1. Read the definition of every symbol involved, and each allowed file in full.
2. Make the smallest change that does the job, following how the file already does the same thing: constructor or dependency injection, an entry in a registration table, a step in an init sequence, a config field.
   - E26/E27: add the call, registration or field; add the imports it needs.
   - E47: adapt the failing call sites to the new signatures (pass a new parameter such as a context, unwrap a changed return type, replace a removed symbol with its successor). Fix only what the build error names.
3. No refactoring, no renames, no reformatting of lines you do not change, no new features, no new tests beyond what a call-site change requires.
4. Run the verification commands after each file and again at the end; all must pass.
5. Commit once, after verification, with only your allowed files staged:
   \`git commit -m "${commitMessage(input.mode, input.wave, agentId)}"\`
   If the main-branch guard refuses the commit, prefix it with \`POLYWAVE_ALLOW_MAIN_COMMIT=1\`: this commit on the merge target is sanctioned. Never merge, rebase, reset, stash or switch branches.
6. If verification still fails and you cannot fix it inside your allowed files, commit nothing that breaks the build: undo your own edits that cause the failure, commit what passes, and report what remains.

You cannot launch other agents.

${reportSection(input)}
`;
}

function gapLine(gap: IntegrationGapInput, index: number): string {
  const head = `${index + 1}. \`${gap.export_name ?? '?'}\` in \`${gap.file_path ?? '?'}\`${gap.agent_id ? ` (agent ${gap.agent_id})` : ''}: ${gap.severity ?? 'info'}${gap.category ? `, ${gap.category}` : ''}`;
  const details = [gap.reason ? `   - Reason: ${gap.reason.trim()}` : '', gap.suggested_fix ? `   - Suggested fix: ${gap.suggested_fix.trim()}` : ''];
  const search = gap.search_results ?? [];
  if (search.length > 0) details.push(`   - Search results: ${search.map((item) => `\`${item}\``).join(', ')}`);
  return [head, ...details.filter((line) => line !== '')].join('\n');
}

/** Renders the Integration Agent prompt. */
export function renderIntegrationPrompt(input: IntegrationPromptInput): RenderedPrompt {
  const { manifest } = input;
  const slug = manifest.feature_slug ?? '';
  const allowed = input.allowedFiles ?? defaultAllowedFiles(input);
  const verify = input.verifyCommands ?? (input.mode === 'hotfix' && input.hotfix?.buildCommand ? [input.hotfix.buildCommand] : defaultVerifyCommands(manifest));
  const out: string[] = [];
  const title = { gaps: 'E26: wire integration gaps', planned: 'E27: planned integration wave', hotfix: 'E47: caller cascade hotfix' }[input.mode];
  out.push(`## Mode: ${title}`, '');
  out.push(`- IMPL manifest: \`${input.implPath}\` (\`${slug}\`)`, `- Repository root: \`${input.repoRoot}\``, `- Wave: ${input.wave}`);
  if (input.mergeTarget) out.push(`- Merge target (work and commit here): \`${input.mergeTarget}\``);
  out.push('');

  out.push('## Allowed Files', '');
  if (allowed.length === 0) out.push('(none: you may not edit any file. Make no change and report every item as not wired, naming the file that would need the change.)');
  else out.push(...allowed.map((file) => `- \`${file}\``));
  out.push('');
  const connectors = manifest.integration_connectors ?? [];
  if (input.mode === 'gaps' && connectors.some((connector) => connector.reason)) {
    out.push('Connector reasons:', '', ...connectors.filter((connector) => connector.file).map((connector) => `- \`${connector.file}\`: ${(connector.reason ?? '').trim() || '(no reason given)'}`), '');
  }

  if (input.mode === 'gaps') {
    const gaps = input.gaps ?? [];
    out.push(`## Integration Gaps (E25 report, ${gaps.length})`, '');
    out.push(gaps.length === 0 ? '(none)' : gaps.map(gapLine).join('\n'), '');
  } else if (input.mode === 'planned') {
    const agent = input.agent;
    out.push(`## Task: Agent ${agent?.id ?? '?'}`, '', (agent?.task ?? '(no task text)').trim(), '');
    const wiring = (manifest.wiring ?? []).filter((entry) => entry.wave === input.wave && (agent?.id === undefined || entry.agent === agent.id));
    if (wiring.length > 0) {
      out.push('## Wiring Obligations (E35)', '', ...wiring.map((entry) => `- \`${entry.symbol ?? '?'}\` from \`${entry.defined_in ?? '?'}\` must be called from \`${entry.must_be_called_from ?? '?'}\`${entry.integration_pattern ? ` (${entry.integration_pattern})` : ''}`), '');
    }
  } else {
    const hotfix = input.hotfix;
    out.push('## Build Failure (E47)', '');
    if (hotfix?.buildCommand) out.push(`Failing command: \`${hotfix.buildCommand}\``, '');
    out.push(hotfix?.buildError ? fence(hotfix.buildError) : '(no build output given: run the verification commands to see it)', '');
    out.push('These files are owned by later waves or by no agent; the wave that just merged changed the signatures they call. Do not touch the files of the merged wave.', '');
  }

  out.push('## Verification', '');
  out.push(verify.length === 0 ? '(no commands given: build the project with its usual build command)' : verify.map((command) => `- \`${command}\``).join('\n'));
  return { system: systemPrompt(input), user: `${out.join('\n')}\n` };
}
