import { PolywaveError } from '../errors/polywave-error.js';
import type { ModelSpec } from './contract.js';
import { resolveModelSpec } from './model-spec.js';

/** Code of the refusal when a model backend has no credentials (exit 2, nothing changed). */
export const credentialsMissingCode = 'AGENT_CREDENTIALS_MISSING';

const nonEmpty = (value: string | undefined): boolean => value !== undefined && value.trim() !== '';

/**
 * What a backend needs from the environment before anything starts (issue 13), or undefined
 * when it has it (or needs nothing we can check). The claude-code backend runs Claude Code with
 * an isolated HOME, so a `claude login` session is never visible to it: only the environment
 * counts. Local servers (ollama, lmstudio, openai-compatible), scripts and external agent CLIs
 * (their own login) are not checked.
 */
export function missingCredential(spec: ModelSpec, env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (spec.backend === 'claude-code') {
    const has = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX'].some((name) => nonEmpty(env[name]));
    return has ? undefined : 'ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`; a `claude login` session is not used)';
  }
  if (spec.backend === 'ai-sdk' && spec.provider === 'anthropic') return nonEmpty(env.ANTHROPIC_API_KEY) || nonEmpty(env.ANTHROPIC_AUTH_TOKEN) ? undefined : 'ANTHROPIC_API_KEY';
  if (spec.backend === 'ai-sdk' && spec.provider === 'openai') return nonEmpty(env.OPENAI_API_KEY) ? undefined : 'OPENAI_API_KEY';
  return undefined;
}

/** A role and the model string it would run with (undefined: auto-detected from the environment). */
export interface RoleModel {
  role: string;
  model: string | undefined;
}

/**
 * Issue 13, first run without credentials: before anything starts, says which backend and model
 * each role would use and exactly what to set. Throws `AGENT_CREDENTIALS_MISSING` (exit 2) when a
 * role's backend lacks its credentials; returns the resolved specs otherwise. Bad model strings
 * throw their own `AGENT_MODEL_INVALID`.
 */
export function requireModelCredentials(roles: readonly RoleModel[], env: Readonly<Record<string, string | undefined>>): ModelSpec[] {
  const specs = roles.map((role) => resolveModelSpec(role.model, env));
  const problems: string[] = [];
  roles.forEach((role, index) => {
    const spec = specs[index]!;
    const missing = missingCredential(spec, env);
    if (missing === undefined) return;
    const model = spec.backend === 'claude-code' ? (spec.modelId ?? "Claude Code's default model") : spec.backend === 'ai-sdk' ? spec.modelId : spec.raw;
    problems.push(`${role.role} would run on the ${spec.backend === 'ai-sdk' ? `${spec.provider} API` : `${spec.backend} backend`} (model ${model}${role.model ? '' : ', auto-detected: no ANTHROPIC_API_KEY or OPENAI_API_KEY set'}), which needs ${missing}`);
  });
  if (problems.length === 0) return specs;
  const unique = [...new Set(problems)];
  throw new PolywaveError({
    code: credentialsMissingCode,
    message:
      `no model credentials — ${unique.join('; ')}. Set one of: ANTHROPIC_API_KEY (Anthropic API, --model anthropic:<model>), ` +
      'OPENAI_API_KEY (--model openai:<model>), CLAUDE_CODE_OAUTH_TOKEN (claude-code backend, from `claude setup-token`), ' +
      'or run a local model with --model ollama:<model> (or lmstudio:<model>). Nothing was started or changed.',
  });
}

// The credential filter lives below agents/ (gates and finalize strip credentials too).
export { isCredentialVariable, withoutCredentials } from '../sandbox/credential-variables.js';
