import { PolywaveError } from '../errors/polywave-error.js';
import type { AiSdkProvider, ModelSpec } from './contract.js';

const aiSdkPrefixes: ReadonlySet<string> = new Set<AiSdkProvider>(['anthropic', 'openai', 'ollama', 'lmstudio', 'openai-compatible']);

/** Default base URLs of the local OpenAI-compatible servers (reference/agents.md §2.2). */
export const localBaseUrls: Readonly<Record<'ollama' | 'lmstudio', string>> = Object.freeze({
  ollama: 'http://localhost:11434/v1',
  lmstudio: 'http://localhost:1234/v1',
});

function invalid(model: string, why: string): PolywaveError {
  return new PolywaveError({ code: 'AGENT_MODEL_INVALID', message: `model "${model}": ${why}` });
}

/**
 * Parses a model string into the backend that runs it. The prefix before the first colon picks
 * the backend (so `ollama:qwen2.5-coder:32b` keeps its tag):
 * `claude-code:[model]`, `anthropic:M`, `openai:M`, `ollama:M`, `lmstudio:M`,
 * `openai-compatible:<url>#M`,
 * `cli:<name>[:model]` (claude, codex, or a command template name), `script:[path]`.
 * A bare model name (no known prefix) is resolved by {@link resolveModelSpec} from the environment.
 */
export function parseModelSpec(model: string): ModelSpec | undefined {
  const raw = model.trim();
  if (raw === '') throw invalid(model, 'empty');
  if (raw.length > 500 || /[\s\0]/.test(raw)) throw invalid(model, 'must be one word of at most 500 characters');
  const colon = raw.indexOf(':');
  if (colon < 0) return undefined;
  const prefix = raw.slice(0, colon);
  const rest = raw.slice(colon + 1);
  if (prefix === 'openai-compatible') {
    const hash = rest.lastIndexOf('#');
    if (hash < 0) throw invalid(model, 'openai-compatible needs a base URL and a model: openai-compatible:http://host:port/v1#model-id');
    const baseURL = rest.slice(0, hash);
    const modelId = rest.slice(hash + 1);
    if (!/^https?:\/\//.test(baseURL) || modelId === '') throw invalid(model, 'openai-compatible needs a base URL and a model: openai-compatible:http://host:port/v1#model-id');
    return { backend: 'ai-sdk', provider: 'openai-compatible', baseURL, modelId, raw };
  }
  if (aiSdkPrefixes.has(prefix)) {
    if (rest === '') throw invalid(model, `${prefix}: needs a model id (e.g. ${prefix}:${prefix === 'anthropic' ? 'claude-sonnet-4-5' : prefix === 'openai' ? 'gpt-4o' : 'qwen2.5-coder:32b'})`);
    const provider = prefix as AiSdkProvider;
    const baseURL = provider === 'ollama' || provider === 'lmstudio' ? localBaseUrls[provider] : undefined;
    return { backend: 'ai-sdk', provider, modelId: rest, ...(baseURL ? { baseURL } : {}), raw };
  }
  if (prefix === 'claude-code') return { backend: 'claude-code', ...(rest ? { modelId: rest } : {}), raw };
  if (prefix === 'cli') {
    const [command, ...modelParts] = rest.split(':');
    if (!command) throw invalid(model, 'cli: needs an agent CLI name (claude, codex) or a template name from polywave.config.json');
    const modelId = modelParts.join(':');
    return { backend: 'cli', command, ...(modelId ? { modelId } : {}), raw };
  }
  if (prefix === 'script') return { backend: 'script', ...(rest ? { scriptPath: rest } : {}), raw };
  if (prefix === 'bedrock') throw invalid(model, 'the bedrock backend is not available in this build; use anthropic:, claude-code: or an openai-compatible gateway');
  return undefined;
}

/**
 * Resolves any model string, auto-detecting the backend for a bare model name from the
 * environment: `ANTHROPIC_API_KEY` → anthropic, `OPENAI_API_KEY` → openai, else claude-code.
 */
export function resolveModelSpec(model: string | undefined, env: Readonly<Record<string, string | undefined>>): ModelSpec {
  const value = model?.trim() || env.POLYWAVE_MODEL?.trim() || '';
  if (value !== '') {
    const parsed = parseModelSpec(value);
    if (parsed?.backend === 'ai-sdk' && parsed.provider === 'ollama') {
      const host = ollamaBaseUrl(env.OLLAMA_HOST);
      if (host !== undefined) return { ...parsed, baseURL: host };
    }
    if (parsed) return parsed;
  }
  const bare = value;
  if (env.ANTHROPIC_API_KEY) return { backend: 'ai-sdk', provider: 'anthropic', modelId: bare || 'claude-sonnet-4-5', raw: `anthropic:${bare || 'claude-sonnet-4-5'}` };
  if (env.OPENAI_API_KEY && !/^claude/.test(bare)) return { backend: 'ai-sdk', provider: 'openai', modelId: bare || 'gpt-4o', raw: `openai:${bare || 'gpt-4o'}` };
  return { backend: 'claude-code', ...(bare ? { modelId: bare } : {}), raw: `claude-code:${bare}` };
}

/**
 * The OpenAI-compatible base URL of the Ollama server OLLAMA_HOST names (as the `ollama` CLI reads
 * it: `host`, `host:port`, `http(s)://host[:port]`; port 11434 by default; the bind-all address
 * 0.0.0.0 means this machine), or undefined when it is unset or unusable.
 */
export function ollamaBaseUrl(value: string | undefined): string | undefined {
  const trimmed = value?.trim() ?? '';
  if (trimmed === '') return undefined;
  try {
    const url = new URL(/^https?:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`);
    if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1';
    if (url.hostname === '[::]') url.hostname = '[::1]';
    const explicitPort = /^(https?:\/\/)?(\[[^\]]*\]|[^/:]*):\d+/i.test(trimmed);
    if (!explicitPort && url.protocol === 'http:') url.port = '11434';
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}/v1`;
  } catch {
    return undefined;
  }
}
