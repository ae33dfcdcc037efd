import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseModelSpec, resolveModelSpec } from './model-spec.js';

describe('model strings', () => {
  it.each([
    ['anthropic:claude-sonnet-4-5', { backend: 'ai-sdk', provider: 'anthropic', modelId: 'claude-sonnet-4-5' }],
    ['openai:gpt-4o', { backend: 'ai-sdk', provider: 'openai', modelId: 'gpt-4o' }],
    ['ollama:qwen2.5-coder:32b', { backend: 'ai-sdk', provider: 'ollama', modelId: 'qwen2.5-coder:32b', baseURL: 'http://localhost:11434/v1' }],
    ['lmstudio:qwen3', { backend: 'ai-sdk', provider: 'lmstudio', modelId: 'qwen3', baseURL: 'http://localhost:1234/v1' }],
    ['openai-compatible:http://127.0.0.1:8000/v1#my-model', { backend: 'ai-sdk', provider: 'openai-compatible', modelId: 'my-model', baseURL: 'http://127.0.0.1:8000/v1' }],
    ['claude-code:claude-opus-4-1', { backend: 'claude-code', modelId: 'claude-opus-4-1' }],
    ['claude-code:', { backend: 'claude-code' }],
    ['cli:codex:gpt-5', { backend: 'cli', command: 'codex', modelId: 'gpt-5' }],
    ['cli:claude', { backend: 'cli', command: 'claude' }],
    ['script:/tmp/a.yaml', { backend: 'script', scriptPath: '/tmp/a.yaml' }],
  ])('%s', (model, expected) => {
    expect(parseModelSpec(model)).toEqual({ ...expected, raw: model });
  });

  it.each(['', 'anthropic:', 'openai-compatible:http://x/v1', 'openai-compatible:ftp://x#m', 'cli:', 'bedrock:claude-sonnet-4-5', 'a b'])('rejects %j with a coded error', (model) => {
    try {
      parseModelSpec(model);
      expect.unreachable();
    } catch (error) {
      expect(PolywaveError.isInstance(error)).toBe(true);
      expect((error as PolywaveError).code).toBe('AGENT_MODEL_INVALID');
    }
  });

  it('auto-detects the backend of a bare model from the environment', () => {
    expect(resolveModelSpec('claude-sonnet-4-5', { ANTHROPIC_API_KEY: 'k' })).toMatchObject({ backend: 'ai-sdk', provider: 'anthropic', modelId: 'claude-sonnet-4-5' });
    expect(resolveModelSpec('gpt-4o', { OPENAI_API_KEY: 'k' })).toMatchObject({ backend: 'ai-sdk', provider: 'openai', modelId: 'gpt-4o' });
    expect(resolveModelSpec(undefined, {})).toMatchObject({ backend: 'claude-code' });
    expect(resolveModelSpec(undefined, { POLYWAVE_MODEL: 'ollama:llama3' })).toMatchObject({ provider: 'ollama', modelId: 'llama3' });
    expect(resolveModelSpec('openai:gpt-4o', { ANTHROPIC_API_KEY: 'k' })).toMatchObject({ provider: 'openai' });
  });
});
