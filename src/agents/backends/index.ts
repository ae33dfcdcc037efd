import type { AgentBackend, BackendName } from '../contract.js';
import type { CliBackendOptions } from './cli.js';

/** Options of {@link loadBackend}: what a backend needs from the repository's configuration. */
export interface LoadBackendOptions {
  /** The `cli` backend's command templates (polywave.config.json `agent_clis`, read by agents/agent-cli-templates.ts). */
  templates?: CliBackendOptions['templates'];
}

/**
 * Backends load lazily: `polywave --help` must not pay for the AI SDK, and the claude-code
 * backend's SDK is an optional dependency (its native binary is ~400 MB).
 */
export async function loadBackend(name: BackendName, options: LoadBackendOptions = {}): Promise<AgentBackend> {
  switch (name) {
    case 'ai-sdk':
      return (await import('./ai-sdk.js')).createAiSdkBackend();
    case 'claude-code':
      return (await import('./claude-code.js')).createClaudeCodeBackend();
    case 'cli':
      return (await import('./cli.js')).createCliBackend(options.templates ? { templates: options.templates } : {});
    case 'script':
      return (await import('./script.js')).createScriptBackend();
  }
}
