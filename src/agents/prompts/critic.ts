/**
 * The Critic prompt: the E37 pre-wave brief review (checks 1–9 of execution-rules E37, verdict
 * thresholds), the `critic_report` shape (message-formats), and E48 (the review is committed).
 */
import type { FileOwnership, ImplManifest } from '../../protocol/schema/impl-schema.js';
import type { RenderedPrompt } from './index.js';

export const version = '1.0.0';

/** The E37 universal checks, in protocol order (the `check` values of an issue). */
export const criticChecks = [
  'file_existence',
  'symbol_accuracy',
  'pattern_accuracy',
  'interface_consistency',
  'import_chains',
  'side_effect_completeness',
  'complexity_balance',
  'caller_exhaustiveness',
  'i1_disjoint_ownership',
] as const;

/**
 * `structured` (default): the review is the agent's final answer (JSON), the orchestrator stores
 * and commits it. `cli`: the critic runs `polywave set-critic-review` and commits itself (E48).
 */
export type CriticReportChannel = 'structured' | 'cli';

export interface CriticPromptInput {
  manifest: ImplManifest;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** Repository roots: one path, or repo name → path for multi-repository IMPLs. */
  repoRoots: string | Readonly<Record<string, string>>;
  reportVia?: CriticReportChannel;
  /** CLI binary for `reportVia: 'cli'` (default `polywave`). */
  cliCommand?: string;
  /** Project-specific checks beyond 1–9 (E37 allows them): `name` is the issue's `check` value. */
  extraChecks?: ReadonlyArray<{ name: string; description: string; severity?: 'error' | 'warning' }>;
}

function cell(value: unknown): string {
  return (value === undefined || value === null ? '' : String(value)).replace(/\r?\n/g, ' ').replace(/\|/g, '\\|').trim();
}

const jsonShape = `{
  "verdict": "PASS",
  "summary": "2-5 sentences: what you checked and what must change",
  "issue_count": 1,
  "agent_reviews": {
    "A": { "agent_id": "A", "verdict": "PASS", "issues": [] },
    "B": {
      "agent_id": "B",
      "verdict": "ISSUES",
      "issues": [
        { "check": "symbol_accuracy", "severity": "error", "description": "…", "file": "src/x.ts", "symbol": "parseThing" }
      ]
    }
  }
}`;

function reportingSection(input: CriticPromptInput, slug: string): string {
  const commitMessage = `chore: critic report for ${slug} [Polywave:critic:${slug}]`;
  if ((input.reportVia ?? 'structured') === 'cli') {
    const cli = input.cliCommand ?? 'polywave';
    return `## Reporting (E37, E48)
1. Write the review with the CLI (never edit the manifest by hand):

\`\`\`
${cli} set-critic-review ${input.implPath} --verdict <PASS|ISSUES> --summary "<summary>" --issue-count <N> --agent-reviews '<json>'
\`\`\`

   \`--agent-reviews\` is the \`agent_reviews\` object of the shape below (keyed by agent ID).
2. Commit the manifest (E48): \`git add ${input.implPath}\` and \`git commit -m "${commitMessage}"\`. The critic runs on the main branch, not in a worktree; if the commit is refused by the main-branch guard, prefix it with \`POLYWAVE_ALLOW_MAIN_COMMIT=1\`. Never stop with the manifest uncommitted: the next step refuses a dirty tree.
3. End with a short summary: verdict, issue count, and the errors.

Shape:

\`\`\`json
${jsonShape}
\`\`\``;
  }
  return `## Reporting (E37, E48)
Your final answer is the review: one JSON object of exactly this shape, with no other text.

\`\`\`json
${jsonShape}
\`\`\`

The orchestrator stores it as the manifest's \`critic_report\` and commits it (E48: \`${commitMessage}\`). Do not edit or commit the manifest yourself.`;
}

function systemPrompt(input: CriticPromptInput, slug: string): string {
  const extra = input.extraChecks ?? [];
  const extraText =
    extra.length === 0
      ? ''
      : `\nProject-specific checks:\n${extra.map((item, index) => `${10 + index}. ${item.name}: ${item.description.trim()} Severity ${item.severity ?? 'error'}.`).join('\n')}\n`;
  return `# Role: Polywave Critic (prompt v${version})

You review the agent briefs of an IMPL manifest against the real code before any wave agent starts (E37, the critic gate). Wave agents trust their briefs; you catch briefs that name files that do not exist, symbols that are wrong, patterns that do not match the code, contracts that will not compile, and ownership that will collide. You do not fix anything and you do not judge whether the feature is worth building.

## Read-only
Read the manifest and the code. Modify no source file and no manifest field; your only output is the review (see Reporting).

## Procedure
1. Read the whole manifest: every agent's \`task\`, \`interface_contracts\`, \`file_ownership\`, \`scaffolds\`, \`wiring\`, \`integration_connectors\`.
2. For every agent, read in full every file it owns that exists, and every file its task cites.
3. Run the checks below for every agent. Judge against the code on disk, never against what the brief claims about it. Agents are independent: you may review them in any order once you have read the manifest.

## Checks (E37): use these names as \`check\`
1. file_existence: every \`action: modify\` file exists; every \`action: new\` file does not exist yet; a missing \`action: delete\` file is a warning. Rows without an action are skipped. Severity error.
2. symbol_accuracy: every function, type, method and constant the brief cites in existing files exists there with the cited name and signature. Skip agents whose files are all \`action: new\`. Severity error.
3. pattern_accuracy: the patterns the brief describes ("register the handler in X", "add a field to Y") match how the code actually does it. Severity warning.
4. interface_consistency: every interface contract is syntactically valid in the target language and consistent with the types it references in the code and scaffolds. Severity error.
5. import_chains: every package the contracts reference can be imported from the target module (a declared dependency or a local package). Skip agents whose files are all \`action: new\`. Severity error.
6. side_effect_completeness: a new exported symbol that must be registered (CLI command, HTTP route, UI component, agent type, tool) has its registration file in \`file_ownership\` or in \`integration_connectors\`. Severity warning.
7. complexity_balance: an agent owning more than 8 files, or more than 40% of all files in the IMPL. Severity warning; advisory only.
8. caller_exhaustiveness: every caller of a symbol the plan changes is owned by some agent. Search the whole repository, not just the package; sibling packages are where callers are missed. An unowned production caller is an error; an unowned test caller is a warning (E46 test cascade).
9. i1_disjoint_ownership: a (wave, repository, file) owned by more than one agent violates I1. Severity error.
${extraText}A file you cannot read is a warning that says so; never assume its content.

## Verdict
- Each issue: \`check\`, \`severity\` (error | warning), \`description\` (what is wrong, the evidence as path:line, and the fix), and \`file\` and \`symbol\` when they apply.
- Per agent: \`ISSUES\` when it has at least one error, else \`PASS\` (warnings allowed).
- Overall: \`PASS\` when no agent has an error, else \`ISSUES\`. \`ISSUES\` blocks the wave until the manifest is corrected and reviewed again.
- \`issue_count\` counts all issues, warnings included. Review every agent of every wave, including agents with no issues.

${reportingSection(input, slug)}
`;
}

function rootsText(roots: CriticPromptInput['repoRoots']): string {
  if (typeof roots === 'string') return `- \`${roots}\``;
  return Object.entries(roots).map(([name, root]) => `- ${name}: \`${root}\``).join('\n');
}

/** Renders the Critic prompt: the user message lists the IMPL, the roots and every agent's files. */
export function renderCriticPrompt(input: CriticPromptInput): RenderedPrompt {
  const { manifest } = input;
  const slug = manifest.feature_slug ?? '';
  const out: string[] = [];
  out.push('## IMPL Doc Path', '', `\`${input.implPath}\``, '', `Feature: ${manifest.title ?? slug} (\`${slug}\`)`, '');
  out.push('## Repository Root(s)', '', rootsText(input.repoRoots), '');

  const ownership = manifest.file_ownership ?? [];
  const rowsByAgent = new Map<string, FileOwnership[]>();
  for (const row of ownership) {
    const key = `${row.wave ?? ''}:${row.agent ?? ''}`;
    rowsByAgent.set(key, [...(rowsByAgent.get(key) ?? []), row]);
  }
  out.push('## Agents to Review', '');
  for (const wave of manifest.waves ?? []) {
    out.push(`### Wave ${wave.number ?? '?'}${wave.type === 'integration' ? ' (type: integration)' : ''}`, '');
    for (const agent of wave.agents ?? []) {
      const rows = rowsByAgent.get(`${wave.number ?? ''}:${agent.id ?? ''}`) ?? [];
      const files = rows.length > 0 ? rows.map((row) => `\`${row.file ?? ''}\` (${[row.action ?? 'no action', row.repo ? `repo: ${row.repo}` : ''].filter((part) => part !== '').join(', ')})`) : (agent.files ?? []).map((file) => `\`${file}\``);
      out.push(`- Agent ${agent.id ?? '?'}: ${files.length === 0 ? '(no files)' : files.join(', ')}`);
    }
    out.push('');
  }

  const contracts = manifest.interface_contracts ?? [];
  if (contracts.length > 0) out.push('## Interface Contracts', '', '| Name | Location |', '|------|----------|', ...contracts.map((contract) => `| ${cell(contract.name)} | ${cell(contract.location)} |`), '');
  const scaffolds = manifest.scaffolds ?? [];
  if (scaffolds.length > 0) out.push('## Scaffolds', '', ...scaffolds.map((scaffold) => `- \`${scaffold.file_path ?? scaffold.file ?? ''}\` (${scaffold.status ?? 'pending'})`), '');
  const connectors = manifest.integration_connectors ?? [];
  if (connectors.length > 0) out.push('## Integration Connectors', '', ...connectors.map((connector) => `- \`${connector.file ?? ''}\`${connector.reason ? `: ${cell(connector.reason)}` : ''}`), '');

  out.push('Read the manifest at the IMPL Doc Path for the full briefs, then run checks 1–9 for every agent listed above.');
  return { system: systemPrompt(input, slug), user: `${out.join('\n')}\n` };
}
