/**
 * The role prompts (DESIGN §1: agents get their real role prompt). Each role file exports a
 * semver `version` and a `render…Prompt(input)` returning `{system, user}`: `system` is the role
 * prompt (stable per role and mode, so it caches), `user` is the task message with the concrete
 * inputs. Prompts are TypeScript template strings so they ship in dist/ — nothing is read from
 * disk at run time. Rule references are spelled as in the protocol texts (I1–I6, E-numbers,
 * P1–P5) so `grep` finds every place a rule is carried.
 */
import type { AgentRole } from '../contract.js';
import type { Finding } from '../../errors/finding.js';
import { renderCriticPrompt, version as criticVersion, type CriticPromptInput } from './critic.js';
import { renderIntegrationPrompt, version as integrationVersion, type IntegrationPromptInput } from './integration.js';
import { renderPlannerPrompt, version as plannerVersion, type PlannerPromptInput } from './planner.js';
import { renderScaffoldPrompt, version as scaffoldVersion, type ScaffoldPromptInput } from './scaffold.js';
import { renderScoutPrompt, version as scoutVersion, type ScoutPromptInput } from './scout.js';
import { renderWavePrompt, version as waveVersion, type WavePromptInput } from './wave.js';

/** A rendered prompt: the system (role) prompt and the user (task) message. */
export interface RenderedPrompt {
  system: string;
  user: string;
}

/**
 * A validation finding handed back to an agent for correction (E16 correction loop). A protocol
 * {@link Finding} fits as is.
 */
export type PromptFinding = Pick<Finding, 'code' | 'message'> & Partial<Pick<Finding, 'field' | 'line' | 'column' | 'severity' | 'suggestion'>>;

/** How an agent files its report: our `set_completion` tool, or the CLI (agents run by an external CLI). */
export type ReportChannel = 'tool' | 'cli';

/** The input of each role's renderer. */
export interface RolePromptInputs {
  scout: ScoutPromptInput;
  scaffold: ScaffoldPromptInput;
  wave: WavePromptInput;
  critic: CriticPromptInput;
  integration: IntegrationPromptInput;
  planner: PlannerPromptInput;
}

/** The prompt version of every role (recorded with each agent run). */
export const promptVersions: Readonly<Record<AgentRole, string>> = Object.freeze({
  scout: scoutVersion,
  scaffold: scaffoldVersion,
  wave: waveVersion,
  critic: criticVersion,
  integration: integrationVersion,
  planner: plannerVersion,
});

/** Renders the prompt of `role` from its input. */
export function renderRolePrompt<Role extends AgentRole>(role: Role, input: RolePromptInputs[Role]): RenderedPrompt {
  // Each branch narrows `role`; the cast carries that narrowing to `input` (TypeScript cannot correlate the two).
  switch (role) {
    case 'scout':
      return renderScoutPrompt(input as ScoutPromptInput);
    case 'scaffold':
      return renderScaffoldPrompt(input as ScaffoldPromptInput);
    case 'wave':
      return renderWavePrompt(input as WavePromptInput);
    case 'critic':
      return renderCriticPrompt(input as CriticPromptInput);
    case 'integration':
      return renderIntegrationPrompt(input as IntegrationPromptInput);
    case 'planner':
      return renderPlannerPrompt(input as PlannerPromptInput);
    default: {
      const unknownRole: never = role;
      throw new Error(`unknown agent role: ${String(unknownRole)}`);
    }
  }
}

export { renderCriticPrompt, renderIntegrationPrompt, renderPlannerPrompt, renderScaffoldPrompt, renderScoutPrompt, renderWavePrompt };
export type { CriticPromptInput, IntegrationPromptInput, PlannerPromptInput, ScaffoldPromptInput, ScoutPromptInput, WavePromptInput };
