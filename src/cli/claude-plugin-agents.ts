/**
 * The agent definitions of the Claude Code plugin (claude-plugin/agents/*.md), generated from our
 * own role prompts (src/agents/prompts/) so the plugin's agents follow exactly the rules our
 * backends give theirs. `node scripts/build-claude-plugin.mjs` writes them (after `npm run build`);
 * test/claude-plugin.test.ts fails when the files on disk differ from what this renders.
 *
 * Differences from our backends, stated in each file's preamble: the agent reports with
 * `polywave set-completion` (the CLI) instead of the `set_completion` tool, commits with git
 * itself, and learns its worktree, IMPL and branch from the launch prompt the skill writes.
 */
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { renderCriticPrompt } from '../agents/prompts/critic.js';
import { renderIntegrationPrompt } from '../agents/prompts/integration.js';
import { renderScaffoldPrompt } from '../agents/prompts/scaffold.js';
import { renderScoutPrompt } from '../agents/prompts/scout.js';
import { renderWavePrompt } from '../agents/prompts/wave.js';

/** One generated agent file. */
export interface PluginAgentFile {
  /** File name under claude-plugin/agents/. */
  file: string;
  /** The subagent name (frontmatter `name`, also the `subagent_type`). */
  name: string;
  content: string;
}

const placeholder = {
  impl: '<IMPL path from your launch prompt>',
  worktree: '<worktree from your launch prompt>',
  branch: '<branch from your launch prompt>',
  repo: '<repository root>',
  slug: '<slug>',
};

const emptyManifest = { feature_slug: placeholder.slug, title: placeholder.slug, waves: [] } as unknown as ImplManifest;

function frontmatter(fields: Record<string, string>): string {
  return `---\n${Object.entries(fields).map(([key, value]) => `${key}: ${value.includes(':') || value.includes('"') ? JSON.stringify(value) : value}`).join('\n')}\n---\n`;
}

function launchPreamble(lines: string[]): string {
  return `## How you are launched (Claude Code plugin)\n${lines.map((line) => `- ${line}`).join('\n')}\n`;
}

const tagLine = (tag: string) => `The first line of your launch prompt is your tag and the IMPL path, e.g. \`${tag}\`. The plugin's hooks read it: keep it as it is.`;

/** Renders every agent file of the plugin. */
export function renderPluginAgents(): PluginAgentFile[] {
  const wave = renderWavePrompt({ brief: '', agentId: '<ID>', wave: 1, implPath: placeholder.impl, ownedFiles: [], worktreePath: placeholder.worktree, branch: placeholder.branch, reportVia: 'cli' }).system;
  const scout = renderScoutPrompt({ feature: '', repoRoot: placeholder.repo, implPath: placeholder.impl }).system;
  const critic = renderCriticPrompt({ manifest: emptyManifest, implPath: placeholder.impl, repoRoots: placeholder.repo, reportVia: 'cli' }).system;
  const integration = renderIntegrationPrompt({ mode: 'planned', manifest: emptyManifest, implPath: placeholder.impl, repoRoot: placeholder.repo, wave: 1, agent: { id: '<ID>' } as NonNullable<Parameters<typeof renderIntegrationPrompt>[0]['agent']>, reportVia: 'cli' }).system;
  const scaffold = renderScaffoldPrompt({ manifest: emptyManifest, implPath: placeholder.impl, repoRoot: placeholder.repo }).system;

  const files: Array<Omit<PluginAgentFile, 'content'> & { description: string; tools: string; preamble: string[]; body: string }> = [
    {
      file: 'polywave-wave-agent.md',
      name: 'polywave-wave-agent',
      description: 'Polywave wave agent: implements one agent\'s share of a planned wave in its own git worktree, only in the files it owns, commits, and files its completion report with `polywave set-completion`. Launched by the /polywave skill, one per agent of a wave.',
      tools: 'Read, Write, Edit, MultiEdit, Glob, Grep, Bash',
      preamble: [
        tagLine('[polywave:wave1:agent-A] IMPL=/abs/repo/docs/IMPL/IMPL-<slug>.yaml'),
        'The prompt names your worktree and branch. Read `<worktree>/.polywave-agent-brief.md` first: it is your brief (task, owned files, contracts, gates).',
        'Use absolute paths under your worktree for every file tool, and start every shell command with `cd <worktree> && ` — the PreToolUse hook refuses writes outside your worktree or outside your owned files (E43, I1), and shell commands that leave the worktree.',
        'Commit with git yourself (`git add <your files> && git commit -m …`), then report with `polywave set-completion` (or `npx polywave set-completion`). When you stop, the SubagentStop hook checks your report, ownership, commits and stubs (E42) and sends you back if one fails.',
      ],
      body: wave,
    },
    {
      file: 'polywave-scout.md',
      name: 'polywave-scout',
      description: 'Polywave Scout: analyses the repository and plans a feature into docs/IMPL/IMPL-<slug>.yaml (waves of agents with disjoint file ownership, interface contracts, scaffolds, quality gates), or declares it NOT_SUITABLE. Writes only its IMPL manifest.',
      tools: 'Read, Write, Edit, Glob, Grep, Bash',
      preamble: [
        tagLine('[polywave:scout:<slug>] IMPL=/abs/repo/docs/IMPL/IMPL-<slug>.yaml'),
        'The prompt carries the feature and the IMPL output path. You may write only that file (I6): other writes are refused by the PreToolUse hook.',
        'Every write of the manifest is validated (PostToolUse, E16): fix what it reports. When you stop, the manifest must pass `polywave validate` (E42).',
      ],
      body: scout,
    },
    {
      file: 'polywave-critic.md',
      name: 'polywave-critic',
      description: 'Polywave critic (E37): reviews every agent brief of an IMPL against the actual code before a wave runs, records the review with `polywave set-critic-review` and commits the IMPL (E48). Edits no source file.',
      tools: 'Read, Glob, Grep, Bash',
      preamble: [
        tagLine('[polywave:critic:<slug>] IMPL=/abs/repo/docs/IMPL/IMPL-<slug>.yaml'),
        'The orchestrator may paste the output of `polywave run-critic <impl> --backend agent-tool` as your task: it lists the agents, files and contracts to review.',
        'You edit no file (the hook refuses Write/Edit); when you stop, the IMPL must hold your `critic_report` and be committed (E42, E48).',
      ],
      body: critic,
    },
    {
      file: 'polywave-integration-agent.md',
      name: 'polywave-integration-agent',
      description: 'Polywave integration agent (E26, E27, E47): wires a merged wave\'s exports into their callers on the merged result, editing only the files it is allowed to (integration connectors, its planned files, or the E47 hotfix files).',
      tools: 'Read, Write, Edit, MultiEdit, Glob, Grep, Bash',
      preamble: [
        tagLine('[polywave:integration:<slug>] IMPL=/abs/repo/docs/IMPL/IMPL-<slug>.yaml'),
        'The prompt says which situation this is (E26 gaps, E27 planned integration wave, E47 hotfix) and lists the files you may edit. For a planned integration wave, the orchestrator ran `polywave prepare-agent <impl> --wave <n> --agent <ID> --no-worktree` and your brief is the file it printed.',
      ],
      body: integration,
    },
    {
      file: 'polywave-scaffold-agent.md',
      name: 'polywave-scaffold-agent',
      description: 'Polywave scaffold agent (E22): turns an IMPL\'s pending scaffolds (shared types and interfaces) into committed source files before the first wave, and records each as committed or FAILED.',
      tools: 'Read, Write, Edit, Glob, Grep, Bash',
      preamble: [
        tagLine('[polywave:scaffold:<slug>] IMPL=/abs/repo/docs/IMPL/IMPL-<slug>.yaml'),
        'Read the scaffolds (and their contents) from the IMPL manifest at that path.',
      ],
      body: scaffold,
    },
  ];

  return files.map((entry) => ({
    file: entry.file,
    name: entry.name,
    content: `${frontmatter({ name: entry.name, description: entry.description, tools: entry.tools, model: 'inherit' })}\n<!-- Generated by scripts/build-claude-plugin.mjs from src/agents/prompts/ — do not edit by hand. -->\n\n${launchPreamble(entry.preamble)}\n${entry.body.replace(/\n+$/, '')}\n`,
  }));
}
