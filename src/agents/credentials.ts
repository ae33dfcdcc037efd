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

/** Words of an environment variable's name that make it a secret (`OPENAI_API_KEY`, `GH_TOKEN`, `PGPASSWORD`…). */
const secretNameWords = new Set(['token', 'secret', 'secrets', 'password', 'passwd', 'passphrase', 'apikey', 'credential', 'credentials', 'bearer', 'privatekey', 'accesskey', 'secretkey', 'sessionid', 'cookie']);
/** A word followed by `key` that makes a secret: `*_API_KEY`, `*_ACCESS_KEY(_ID)`, `*_PRIVATE_KEY`… */
const keyPrefixWords = new Set(['api', 'access', 'secret', 'private', 'signing', 'encryption']);

/**
 * True for an environment variable that holds a credential (the words of src/serve's secret-key
 * redaction, for names): any `*_API_KEY`, `*_AUTH_TOKEN`, `*_ACCESS_TOKEN`, `CLAUDE_CODE_OAUTH_TOKEN`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_ACCESS_KEY_ID`, `AWS_SESSION_TOKEN`, `GH_TOKEN`, `GITHUB_TOKEN`,
 * `NPM_TOKEN`, `*PASSWORD*`, `*SECRET*`, `*CREDENTIALS*`… `SSH_AUTH_SOCK` or `ANTHROPIC_BASE_URL` are not.
 */
export function isCredentialVariable(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    if (secretNameWords.has(word) || /^(pg|my|db)?passw(or)?d$/.test(word)) return true;
    if (words[index + 1] === 'key' && keyPrefixWords.has(word)) return true;
  }
  return false;
}

/**
 * `env` without its credentials ({@link isCredentialVariable}): the environment of the tools
 * polywave runs for an agent (bash, the sandboxed tool executor, git under the tools). The backend
 * that talks to the model keeps the full environment; what the agent runs — prompt-injected
 * commands, a dispatched job's script — cannot print, commit or send the machine's keys.
 */
export function withoutCredentials<T extends string | undefined>(env: Readonly<Record<string, T>>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [name, value] of Object.entries(env)) if (!isCredentialVariable(name)) out[name] = value;
  return out;
}
