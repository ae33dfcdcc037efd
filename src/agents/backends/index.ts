import type { AgentBackend, BackendName } from '../contract.js';

/**
 * Backends load lazily: `polywave --help` must not pay for the AI SDK, and the claude-code
 * backend's SDK is an optional dependency (its native binary is ~400 MB).
 */
export async function loadBackend(name: BackendName): Promise<AgentBackend> {
  switch (name) {
    case 'ai-sdk':
      return (await import('./ai-sdk.js')).createAiSdkBackend();
    case 'claude-code':
      return (await import('./claude-code.js')).createClaudeCodeBackend();
    case 'cli':
      return (await import('./cli.js')).createCliBackend();
    case 'script':
      return (await import('./script.js')).createScriptBackend();
  }
}
