/**
 * The Planner prompt: the PROGRAM manifest (program-manifest.txt §3–§15) — IMPLs, tiers, program
 * contracts with freeze points, tier gates, pre-mortem — under P1–P5, plus E34 re-planning and
 * the validation-correction loop.
 */
import type { PromptFinding, RenderedPrompt } from './index.js';

export const version = '1.0.0';

/** The top-level keys of a PROGRAM manifest (program-manifest.txt §3). */
export const programManifestKeys = [
  'title',
  'program_slug',
  'state',
  'created',
  'updated',
  'requirements',
  'program_contracts',
  'impls',
  'tiers',
  'tier_gates',
  'completion',
  'pre_mortem',
] as const;

/** An IMPL that already exists on disk and may be imported (§13.4). */
export interface ExistingImplRef {
  slug: string;
  /** Its `state` field. */
  state?: string;
  path?: string;
  title?: string;
}

/** E34: a re-plan after a tier gate failure or on request. */
export interface PlannerReplanInput {
  /** The current PROGRAM manifest text. */
  currentManifest: string;
  reason: string;
  failedTier?: number;
  failedImpl?: string;
  /** The failing gate command and its output. */
  gateOutput?: string;
  /** Completion reports of the failed tier's IMPLs (text). */
  completionReports?: string;
}

export interface PlannerPromptInput {
  /** The project description. */
  description: string;
  /** Absolute repository root. */
  repoRoot: string;
  /** Where the manifest goes: `docs/PROGRAM/PROGRAM-<slug>.yaml`. */
  outputPath: string;
  /** Defaults to the `<slug>` of `outputPath`. */
  programSlug?: string;
  /** Content of the requirements document (e.g. docs/REQUIREMENTS.md). */
  requirements?: string;
  /** Repository-relative path of the requirements document, for the `requirements` field. */
  requirementsPath?: string;
  /** docs/CONTEXT.md content (project memory). */
  contextMd?: string;
  /** Existing IMPL docs that may be imported instead of re-planned. */
  existingImpls?: readonly ExistingImplRef[];
  /** Today's date (YYYY-MM-DD) for `created`/`updated`. */
  today?: string;
  replan?: PlannerReplanInput;
  /** `validate-program` findings of the previous attempt. */
  validationErrors?: readonly PromptFinding[];
  attempt?: number;
  maxAttempts?: number;
}

function fence(text: string, language = ''): string {
  let marker = '```';
  while (text.includes(marker)) marker += '`';
  return `${marker}${language}\n${text.replace(/\n+$/, '')}\n${marker}`;
}

/** `…/PROGRAM-<slug>.yaml` → `<slug>`. */
export function slugFromProgramPath(programPath: string): string | undefined {
  return /PROGRAM-([^/\\]+?)\.ya?ml$/.exec(programPath)?.[1];
}

const systemPrompt = `# Role: Polywave Planner (prompt v${version})

You split a project that is too large for one feature plan into features, order them into tiers, and define the contracts between them. The result is the PROGRAM manifest. Later a Scout plans each feature as its own IMPL manifest, and wave agents implement it. You write no IMPL manifests and no code, and you launch no agents.

## Output: one file
- Write exactly one file: the PROGRAM manifest at the path under "PROGRAM Output Path" in the task. Create its directory if needed. Touch no other file.
- Plain YAML, no markdown around it. Use only these top-level keys: ${programManifestKeys.join(', ')}. Any other key is reported as an unknown key.
- The manifest is the record (P4: the PROGRAM manifest is the source of truth for program state); put every decision in it.

## Step 1: read
Read the requirements and the project description, docs/CONTEXT.md when given (established interfaces, decisions, conventions), the repository layout and the build tooling.

## Step 2: program suitability gate
Answer four questions with evidence:
1. Independent features: does the project split into three or more features that can each be planned and built as its own IMPL?
2. Ordering: do some features need others' output, so that the work falls into tiers (or into one tier of independent features)?
3. Cross-feature contracts: can the types and APIs shared between features be defined now, before any feature is scouted?
4. Size: is the total work larger than one IMPL handles well (more than about 8 agents in all)?
Verdict:
- PROGRAM_SUITABLE: yes to 1, 3 and 4; the answer to 2 shapes the tiers. Write the full manifest.
- SINGLE_IMPL_SUFFICIENT: the work fits one IMPL (fewer than three features, or about 8 agents or fewer).
- NOT_DECOMPOSABLE: the features cannot be separated (they all change the same files, or the shared interfaces cannot be fixed in advance).
For the last two, write a minimal manifest: \`title\`, \`program_slug\`, \`state: NOT_SUITABLE\`, \`impls: []\`, \`tiers: []\`, \`completion\` with every count 0. Explain the verdict and the alternative in your final message.

## Step 3: the plan
- \`impls\`: one entry per feature: \`slug\` (kebab-case; becomes \`IMPL-<slug>.yaml\`), \`title\`, \`tier\`, \`depends_on\` (slugs of IMPLs in earlier tiers), \`estimated_agents\`, \`estimated_waves\`, \`key_outputs\` (files, directories or symbols it produces), \`status: pending\`. An IMPL that already exists on disk (listed in the task) is imported, not re-planned: \`reviewed\` when its state is SCOUT_COMPLETE or REVIEWED or later, \`complete\` when COMPLETE, otherwise \`pending\`.
- \`tiers\`: \`number\` (1, 2, 3… without gaps), \`impls\` (each IMPL in exactly one tier, matching its \`tier\`), \`description\` (why these belong together). Prefer 2–3 tiers and 3–6 IMPLs; order features by what they produce for others.
- \`program_contracts\`: every type or API used by more than one IMPL: \`name\`, \`description\`, \`definition\` (exact code), \`location\` (one file per contract; two contracts never share a location), \`consumers\` (\`impl\`, \`usage\`), \`freeze_at\` as \`tier-N\`, where N is the tier whose completion freezes the contract: the tier of the IMPL that produces it, and earlier than every tier that only consumes it.
- \`tier_gates\`: quality gates run after each tier (\`type\`, \`command\`, \`required\`, \`description\`): full-project build and test commands of the real toolchain, since they are what proves the tier's IMPLs fit together.
- \`pre_mortem\`: a list of \`scenario\`, \`likelihood\`, \`impact\` (low | medium | high), \`mitigation\` (a concrete step).
- \`completion\`: \`tiers_complete: 0\`, \`tiers_total\` (number of tiers), \`impls_complete\` (imported complete IMPLs), \`impls_total\` (number of impls), \`total_agents\` and \`total_waves\` (sums of the estimates).
- \`title\`, \`program_slug\` (kebab-case, equal to the slug in the output path), \`state: PLANNING\`, \`created\` and \`updated\` (today's date), \`requirements\` (path of the requirements document, when there is one).

## Program invariants
- P1 intra-tier independence: no IMPL depends on another IMPL of its own tier, and no two IMPLs of one tier own the same file. Features that touch the same files go to different tiers.
- P2 contract immutability: program contracts are materialised as code and frozen before the Scouts of any consuming tier run; a frozen contract is never redefined. Every IMPL that consumes a contract it does not produce runs in a tier after the contract's freeze tier.
- P3 tier gate sequencing: tier N+1 starts only after every IMPL of tier N is complete and the tier gates pass.
- P4: the PROGRAM manifest is the single source of truth for program state.
- P5 IMPL branch isolation: during a tier each IMPL merges into its own branch, so IMPLs of one tier never see each other's work; plan nothing that relies on it.
- Within each IMPL the invariants I1–I6 still hold; leave the agent-level split to its Scout.

## Before you finish
Check: every \`depends_on\` names an IMPL of an earlier tier; every contract consumer names an existing IMPL; tiers are numbered from 1; each IMPL appears in exactly one tier; \`completion\` counts match the lists; no dependency cycle. If you can run commands, run \`polywave validate-program <path>\` and fix every error before you stop.
`;

function findingLines(findings: readonly PromptFinding[]): string {
  return findings
    .map((finding, index) => {
      const where = [finding.field ? `field \`${finding.field}\`` : '', finding.line !== undefined ? `line ${finding.line}` : ''].filter((part) => part !== '').join(', ');
      return `${index + 1}. [${finding.code}]${where ? ` ${where}:` : ''} ${finding.message.replace(/\s*\n\s*/g, ' ')}`;
    })
    .join('\n');
}

function replanSection(replan: PlannerReplanInput): string {
  const out = ['## Re-plan (E34)', '', `Reason: ${replan.reason.trim()}`];
  if (replan.failedTier !== undefined) out.push(`Failed tier: ${replan.failedTier}`);
  if (replan.failedImpl) out.push(`Failed IMPL: \`${replan.failedImpl}\``);
  out.push(
    '',
    'Revise the current manifest below so the failure cannot recur: change program contracts, move IMPLs between tiers, split or merge pending IMPLs. Keep completed tiers and IMPLs with status `complete` exactly as they are, and never change a frozen program contract (P2). Write the revised manifest to the output path with `state: PLANNING`; a human reviews it before any tier runs again.',
    '',
    '### Current manifest',
    '',
    fence(replan.currentManifest, 'yaml'),
  );
  if (replan.gateOutput) out.push('', '### Failing gate output', '', fence(replan.gateOutput));
  if (replan.completionReports) out.push('', '### Completion reports of the failed tier', '', fence(replan.completionReports));
  return out.join('\n');
}

/** Renders the Planner prompt. */
export function renderPlannerPrompt(input: PlannerPromptInput): RenderedPrompt {
  const slug = input.programSlug ?? slugFromProgramPath(input.outputPath) ?? '';
  const out: string[] = [];
  const errors = input.validationErrors ?? [];
  if (errors.length > 0) {
    out.push(
      `## Validation Errors: correction attempt ${input.attempt ?? 2} of ${input.maxAttempts ?? 3}`,
      '',
      `The manifest you wrote to \`${input.outputPath}\` failed validation:`,
      '',
      findingLines(errors),
      '',
      'Fix exactly these and keep everything else. Edit the file in place and change only what these findings name.',
      '',
    );
  }
  out.push('## Project', '', input.description.trim(), '');
  out.push('## Repository Root', '', `\`${input.repoRoot}\``, '');
  out.push('## PROGRAM Output Path', '', `\`${input.outputPath}\``, '', `program_slug: \`${slug}\``);
  if (input.today) out.push(`Today: ${input.today}`);
  out.push('');
  if (input.requirements) out.push(`## Requirements${input.requirementsPath ? ` (\`${input.requirementsPath}\`)` : ''}`, '', fence(input.requirements, 'markdown'), '');
  if (input.contextMd) out.push('## Project Memory: docs/CONTEXT.md', '', fence(input.contextMd, 'yaml'), '');
  const existing = input.existingImpls ?? [];
  if (existing.length > 0) {
    out.push('## Existing IMPL Docs (import candidates)', '', '| Slug | State | Path | Title |', '|------|-------|------|-------|');
    for (const impl of existing) out.push(`| ${impl.slug} | ${impl.state ?? ''} | ${impl.path ?? ''} | ${(impl.title ?? '').replace(/\|/g, '\\|')} |`);
    out.push('');
  }
  if (input.replan) out.push(replanSection(input.replan), '');
  return { system: systemPrompt, user: `${out.join('\n').replace(/\n+$/, '')}\n` };
}
