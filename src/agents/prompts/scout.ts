/**
 * The Scout prompt: suitability gate, analysis and the IMPL manifest (execution-rules E16, E17,
 * E35, E45, E46; invariants I1–I4, I6; message-formats "YAML Manifest Structure" and
 * "Suitability Verdict Format"). Correction mode (E16 correction loop) lists every validation
 * finding with code, field and line.
 */
import type { ProgramContract } from '../../protocol/schema/program-schema.js';
import type { PromptFinding, RenderedPrompt } from './index.js';

export const version = '1.0.0';

/**
 * The top-level keys a Scout writes. Everything else in the schema belongs to the orchestrator
 * or to other agents (reports, critic review, freeze hashes, merge state…).
 */
export const scoutManifestKeys = [
  'title',
  'feature_slug',
  'feature',
  'repository',
  'repositories',
  'plan_reference',
  'verdict',
  'suitability_assessment',
  'suitability_reasoning',
  'test_command',
  'lint_command',
  'file_ownership',
  'interface_contracts',
  'scaffolds',
  'waves',
  'quality_gates',
  'wiring',
  'integration_connectors',
  'integration_gap_severity_threshold',
  'post_merge_checklist',
  'pre_mortem',
  'known_issues',
  'reactions',
  'state',
] as const;

/** Keys of the IMPL schema a Scout must never write. */
export const scoutForbiddenKeys = [
  'completion_reports',
  'critic_report',
  'stub_reports',
  'integration_reports',
  'wiring_validation_reports',
  'merge_state',
  'original_branch',
  'worktrees_created_at',
  'frozen_contracts_hash',
  'frozen_scaffolds_hash',
  'completion_date',
  'injection_method',
] as const;

/** A program contract as the Scout sees it (a parsed `ProgramContract` fits). */
export type ScoutProgramContract = Partial<Pick<ProgramContract, 'name' | 'description' | 'definition' | 'location' | 'freeze_at'>>;

/** E31/E28: the PROGRAM this IMPL belongs to. */
export interface ScoutProgramContext {
  /** Path of the PROGRAM manifest. */
  programPath: string;
  programSlug?: string;
  /** This IMPL's slug in the PROGRAM's `impls`. */
  implSlug?: string;
  tier?: number;
  /** P2: contracts already frozen — consume them, never redefine them. */
  frozenContracts?: readonly ScoutProgramContract[];
  /** Program contracts this IMPL produces or consumes that are not frozen yet. */
  contracts?: readonly ScoutProgramContract[];
}

/**
 * `plan` (default): a new IMPL. `refresh-briefs` (E28A stale briefs): keep ownership, waves and
 * contracts, rewrite agent tasks for the current code. `extend-scope` (E36c): append waves
 * without changing existing waves or contracts.
 */
export type ScoutMode = 'plan' | 'refresh-briefs' | 'extend-scope';

export interface ScoutPromptInput {
  /** The feature description (or REQUIREMENTS.md content). */
  feature: string;
  /** Absolute repository root. */
  repoRoot: string;
  /** Where the manifest goes: `docs/IMPL/IMPL-<slug>.yaml` (absolute or repository-relative). */
  implPath: string;
  /** Defaults to the `<slug>` of `implPath`. */
  featureSlug?: string;
  /** E17: the content of docs/CONTEXT.md, when the file exists. */
  contextMd?: string;
  /** H2 `extract-commands`: detected toolchain and build/test/lint/format commands (text as printed). */
  toolchainCommands?: string;
  /** H3 `analyze-deps`: dependency graph / wave candidates (text). */
  dependencyAnalysis?: string;
  /** H1a `analyze-suitability`: DONE/PARTIAL/TODO per requirement (text). */
  suitabilityScan?: string;
  /** E16 correction loop: the findings of the previous attempt. */
  validationErrors?: readonly PromptFinding[];
  /** 1-based attempt number (2+ in correction mode). */
  attempt?: number;
  /** Retry limit of the correction loop (E16 default 3). */
  maxAttempts?: number;
  program?: ScoutProgramContext;
  mode?: ScoutMode;
  /** The current manifest text (refresh-briefs / extend-scope). */
  existingManifest?: string;
}

function fence(text: string, language = ''): string {
  let marker = '```';
  while (text.includes(marker)) marker += '`';
  return `${marker}${language}\n${text.replace(/\n+$/, '')}\n${marker}`;
}

/** `docs/IMPL/IMPL-<slug>.yaml` → `<slug>`. */
export function slugFromImplPath(implPath: string): string | undefined {
  return /IMPL-([^/\\]+?)\.ya?ml$/.exec(implPath)?.[1];
}

/** One numbered line per finding: `[CODE] field \`f\`, line N: message`. */
export function formatFindings(findings: readonly PromptFinding[]): string {
  return findings
    .map((finding, index) => {
      const where = [finding.field ? `field \`${finding.field}\`` : '', finding.line !== undefined ? `line ${finding.line}` : ''].filter((part) => part !== '').join(', ');
      const severity = finding.severity && finding.severity !== 'error' ? ` (${finding.severity})` : '';
      const fix = finding.suggestion ? ` — fix: ${finding.suggestion.replace(/\s*\n\s*/g, ' ')}` : '';
      return `${index + 1}. [${finding.code}]${severity}${where ? ` ${where}:` : ''} ${finding.message.replace(/\s*\n\s*/g, ' ')}${fix}`;
    })
    .join('\n');
}

function contractBlock(contract: ScoutProgramContract): string {
  const lines = [`### ${contract.name ?? '(unnamed)'}`];
  if (contract.location) lines.push(`Location: \`${contract.location}\``);
  if (contract.freeze_at) lines.push(`Freezes at: ${contract.freeze_at}`);
  if (contract.description) lines.push(contract.description.trim());
  if (contract.definition) lines.push(fence(contract.definition));
  return lines.join('\n');
}

const systemPrompt = `# Role: Polywave Scout (prompt v${version})

You plan one feature for parallel implementation. You read the repository, decide whether the work suits parallel agents, and write the IMPL manifest: the plan that the Scaffold Agent, the Wave Agents, the Critic and the Integration Agent execute, and that the orchestrator validates. You implement nothing.

## Output: one file
- Write exactly one file: the IMPL manifest at the path under "IMPL Output Path" in the task (\`docs/IMPL/IMPL-<slug>.yaml\`). Create \`docs/IMPL/\` if it is missing.
- Create or edit no other file: no source, no tests, no scaffold files, no docs/CONTEXT.md. Scaffolds are the Scaffold Agent's work and code is the Wave Agents' work (I6, role separation).
- The manifest is the record (I4: the IMPL doc is the single source of truth). What you only say in chat is lost; every decision goes into the manifest.
- Plain YAML: no markdown around it, no code fences. Use only these top-level keys: ${scoutManifestKeys.join(', ')}. Any other key is reported as V013_UNKNOWN_KEY; a key written twice is E16_DUPLICATE_KEY.
- Never write keys owned by the orchestrator or other agents: ${scoutForbiddenKeys.join(', ')}.

## Step 1: project memory (E17)
If the task includes docs/CONTEXT.md, read it before the suitability gate. Reuse \`established_interfaces\` instead of defining new types for the same thing, respect \`decisions\`, follow \`conventions\` (naming, error handling, testing), and use \`features_completed\` to see how earlier features were split. If the file does not exist, go on without it.

## Step 2: suitability gate
Check the five preconditions in order, each with evidence from the code:
1. File decomposition: the work splits into at least two groups of files that different agents own without sharing a file. A shared file is acceptable only when every agent purely appends independent entries to it (E11b patterns 1–2: test functions, registry entries); any edit of existing lines in a shared file means one owner or separate waves.
2. No investigation-first blockers: nothing needs a root-cause hunt, a spike or an experiment before it can be specified.
3. Interface discoverability: every interface that crosses an agent boundary can be written down now with exact signatures.
4. Pre-implementation scan: classify each requirement as DONE, PARTIAL or TODO against the current code (use the H1a results and CONTEXT.md \`established_interfaces\` when given). Plan only PARTIAL and TODO work; a feature that is already DONE is NOT_SUITABLE.
5. Positive parallelization value: parallel agents finish sooner than one sequential implementer — several independent, non-trivial pieces (about 3+ files per agent) and build/test cycles long enough to matter.

Set \`verdict\`:
- SUITABLE: all five hold.
- SUITABLE_WITH_CAVEATS: all five hold, with risks the reviewer must accept; list them as caveats.
- NOT_SUITABLE: at least one precondition fails.

Write \`suitability_assessment\` as markdown prose: the verdict; one paragraph of rationale; the caveats, or for NOT_SUITABLE each failed precondition by number and name with its evidence and a suggested alternative (sequential implementation, investigate first then re-scout, …); an estimate (scout, each wave with its agent count, merge and verify, Polywave total, sequential baseline, time saved in %); a one-line recommendation.

NOT_SUITABLE: write only title, feature_slug, verdict: NOT_SUITABLE, suitability_assessment and state: NOT_SUITABLE, then stop. No ownership, no waves.

## Step 3: analysis
- Read the build system and CI configuration. Take \`test_command\` and \`lint_command\` from the project's own scripts or CI; prefer the H2 "Toolchain and commands" results when given.
- List every file to create, modify or delete. Build the dependency graph (start from the H3 results when given).
- Search the whole repository for callers of every symbol you change. Callers in sibling packages are the usual miss; each caller file must be owned by some agent.
- E46 test cascade: find the test files that reference any interface whose signature, return type or existence changes, and give each to the agent that changes the interface, in the same wave.
- E35 wiring: when an agent adds an exported symbol that an existing aggregation point must call (registry, router, command table, init sequence) in a file it does not create, give that caller file to the same agent (preferred) and declare the call in \`wiring\`. If that would put one file in two same-wave agents, give the caller file to an agent of a later wave (or of a \`type: integration\` wave, E27) and declare the call in \`wiring\` with that agent.
- Every new command, route, component or tool needs its registration file owned by an agent or listed in \`integration_connectors\`.

## Step 4: the manifest
- \`title\`; \`feature_slug\`: kebab-case, equal to the slug in the output path.
- \`verdict\`, \`suitability_assessment\`; \`test_command\`, \`lint_command\`: exact shell commands.
- \`state: SCOUT_PENDING\` (or NOT_SUITABLE).
- \`file_ownership\`: one row per file: \`file\` (repository-relative), \`agent\`, \`wave\`, \`action\` (new | modify | delete), \`depends_on\` (IDs of agents in earlier waves whose output this file needs), \`repo\` (multi-repository features only, then on every row: MR01).
- \`interface_contracts\`: every interface that crosses an agent boundary: \`name\`, \`description\`, \`definition\` (exact code in the project's language: signatures, fields, types), \`location\` (file path).
- \`scaffolds\` (E45): every type, interface, enum, alias or constant used by two or more agents — including types two same-wave agents need in the same package — gets a scaffold entry: \`file_path\`, \`contents\` (types only, no function bodies), \`import_path\`, \`status: pending\`. Types from external packages, or already present in files nobody owns, need no scaffold.
- \`waves\`: \`number\` (1, 2, 3…), optional \`type: integration\` for a wiring-only wave (E27), \`agents\`: \`id\`, \`task\`, \`files\`, \`dependencies\`, optional \`model\`.
  - Agent IDs match ^[A-Z][2-9]?$ (A, B, C…, or A2, B3…) and are unique across the manifest.
  - \`files\` equals the agent's rows in \`file_ownership\`; \`dependencies\` are agent IDs of earlier waves.
  - \`task\` is the agent's whole brief, in markdown, with these parts: interfaces it must implement (exact signatures); interfaces it may call (exact signatures, from scaffolds, earlier waves or existing code); what to implement (behaviour, with the exact places to change); tests to write (named, one line each); verification gate (exact build, lint and test commands scoped to its own files or packages, E10); constraints (error handling, compatibility, what not to touch). The orchestrator adds isolation, ownership and reporting instructions itself.
  - Aim for 3–8 files per agent; split an agent above 8 files.
- \`quality_gates\`: \`level\` (quick | standard | full) and \`gates\` built from the detected toolchain: \`type\` (build | lint | test | typecheck | format | custom), \`command\`, \`required\`, optional \`description\`, \`timing\` (pre-merge | post-merge), \`phase\` (PRE_VALIDATION | VALIDATION | POST_VALIDATION), \`parallel_group\`, \`fix\` (only in PRE_VALIDATION), \`repo\` (required on every gate when ownership spans two or more repositories: MR02). Linters run in check mode, not fix mode.
- \`wiring\` (E35): \`symbol\`, \`defined_in\`, \`must_be_called_from\`, \`agent\` and \`wave\` (the agent that owns \`must_be_called_from\`, and its wave), \`integration_pattern\` (append | register | inject | call). The wave start refuses a wiring entry whose caller file the named agent does not own.
- \`integration_connectors\`: files the Integration Agent may edit after a merge to wire missed call sites, each with \`file\` and \`reason\`.
- \`pre_mortem\`: \`overall_risk\` (low | medium | high) and \`rows\`: \`scenario\`, \`likelihood\`, \`impact\`, \`mitigation\` (a concrete step, never "be careful").
- \`known_issues\`: pre-existing problems found while scouting: \`title\`, \`description\`, \`status\`, \`workaround\`. Omit when there are none.
- \`post_merge_checklist\` (optional): \`groups\` of \`title\` and \`items\` (\`description\`, \`command\`).
- \`reactions\` (optional, E19.1): per failure type an \`action\` (retry | send-fix-prompt | pause | auto-scout) and \`max_attempts\`.

## Invariants the plan must satisfy
- I1 disjoint ownership: within one wave (and one repository) no file has two owning agents. Overlap that is not purely append-only goes to separate waves.
- I2 interface contracts precede parallel implementation: every cross-agent interface is an interface contract with an exact definition, and every shared type is a scaffold. Agents implement against these and never coordinate; contracts freeze when worktrees are created (E2).
- I3 wave sequencing: waves are numbered from 1 without gaps and run in order; an agent depends only on agents of earlier waves (never the same wave), with no cycles.
- Agents may write only files they own. Anything an agent needs changed elsewhere must be owned by someone in the plan now.
- E10/E13: each agent's verification commands are scoped to its own files or packages; the minimum is build and lint, plus tests when the project has a test suite.

## Before you finish (E16)
Check the written file against this list: the file parses as YAML; every agent file appears in \`file_ownership\` with the same agent and wave; no file has two owners in a wave; every dependency points to an earlier wave; IDs match the pattern; every shared type is scaffolded; every gate command exists in the project. If you can run commands, run \`polywave validate <impl-path>\` and fix every error it reports before you stop. The orchestrator validates the file and sends back any remaining errors.
`;

function modeSection(input: ScoutPromptInput): string | undefined {
  const mode = input.mode ?? 'plan';
  if (mode === 'plan') return undefined;
  const manifest = input.existingManifest ? `\n\nCurrent manifest:\n\n${fence(input.existingManifest, 'yaml')}` : '';
  if (mode === 'refresh-briefs') {
    return `## Mode: refresh agent briefs (E28A)\n\nThe manifest at the output path was planned before earlier work changed the code. Keep \`file_ownership\`, \`waves\` (numbers, agent IDs, files, dependencies), \`interface_contracts\` and \`scaffolds\` exactly as they are. Re-read the code and rewrite only each agent's \`task\` so that every signature, path and line it cites matches the current code.${manifest}`;
  }
  return `## Mode: extend scope (E36c)\n\nThe manifest at the output path is being executed. Append new waves after the last existing wave for the added work. Do not change existing waves, their agents, their \`file_ownership\` rows, \`interface_contracts\` or \`scaffolds\`; those are frozen. New agents get new IDs.${manifest}`;
}

function programSection(program: ScoutProgramContext): string {
  const out = [`## Program Context (E31)`, '', `This IMPL is part of the PROGRAM manifest \`${program.programPath}\`${program.programSlug ? ` (\`${program.programSlug}\`)` : ''}${program.implSlug ? `, entry \`${program.implSlug}\`` : ''}${program.tier !== undefined ? `, tier ${program.tier}` : ''}.`];
  const frozen = program.frozenContracts ?? [];
  out.push('', '### Frozen program contracts (P2)', '');
  if (frozen.length === 0) out.push('(none)');
  else {
    out.push('These exist in the code and are immutable. Import and use them; never redefine, rename or change them, and do not declare an interface contract with the same name.', '');
    out.push(frozen.map(contractBlock).join('\n\n'));
  }
  const contracts = program.contracts ?? [];
  if (contracts.length > 0) {
    out.push('', '### Program contracts this IMPL produces or consumes', '', 'Implement or call these exactly as defined; if this IMPL produces one, its definition becomes an interface contract of this IMPL with the same name, definition and location.', '');
    out.push(contracts.map(contractBlock).join('\n\n'));
  }
  return out.join('\n');
}

function correctionSection(input: ScoutPromptInput, errors: readonly PromptFinding[]): string {
  const attempt = input.attempt ?? 2;
  const max = input.maxAttempts ?? 3;
  return [
    `## Validation Errors: correction attempt ${attempt} of ${max} (E16)`,
    '',
    `The manifest you wrote to \`${input.implPath}\` failed validation with ${errors.length} finding${errors.length === 1 ? '' : 's'}:`,
    '',
    formatFindings(errors),
    '',
    'Fix exactly these and keep everything else. Edit the existing file in place: change only the fields these findings name (and whatever must change with them to stay consistent, such as an agent\'s `files` when you move an ownership row). Do not rewrite, reorder or drop anything else. Then check the file again against the list in "Before you finish".',
  ].join('\n');
}

/** Renders the Scout prompt. */
export function renderScoutPrompt(input: ScoutPromptInput): RenderedPrompt {
  const slug = input.featureSlug ?? slugFromImplPath(input.implPath) ?? '';
  const out: string[] = [];
  const errors = input.validationErrors ?? [];
  if (errors.length > 0) out.push(correctionSection(input, errors), '');

  out.push('## Feature', '', input.feature.trim(), '');
  out.push('## Repository Root', '', `\`${input.repoRoot}\``, '');
  out.push('## IMPL Output Path', '', `\`${input.implPath}\``, '', `feature_slug: \`${slug}\``, '');

  out.push('## Project Memory: docs/CONTEXT.md (E17)', '');
  out.push(input.contextMd !== undefined && input.contextMd.trim() !== '' ? fence(input.contextMd, 'yaml') : 'docs/CONTEXT.md does not exist in this repository. Proceed without it.', '');

  const automation: string[] = [];
  if (input.toolchainCommands) automation.push('### Toolchain and commands (H2 extract-commands)', '', fence(input.toolchainCommands), '');
  if (input.dependencyAnalysis) automation.push('### Dependency analysis (H3 analyze-deps)', '', fence(input.dependencyAnalysis), '');
  if (input.suitabilityScan) automation.push('### Requirement status (H1a analyze-suitability)', '', fence(input.suitabilityScan), '');
  if (automation.length > 0) out.push('## Automation Analysis Results', '', 'Best-effort tool output; verify anything you rely on against the code.', '', ...automation);

  if (input.program) out.push(programSection(input.program), '');
  const mode = modeSection(input);
  if (mode) out.push(mode, '');

  return { system: systemPrompt, user: `${out.join('\n').replace(/\n+$/, '')}\n` };
}
