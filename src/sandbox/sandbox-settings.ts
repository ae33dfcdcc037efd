/**
 * The `sandbox` section of polywave.config.json (network allow-list, extra writable directories),
 * shared by agents and gates.
 */
import { configuredSandbox, locateProjectConfig, readProjectConfig } from '../store/project-config.js';
import type { SandboxSettings } from './sandbox-plan.js';

/** The `sandbox` settings of the polywave.config.json found from `directory` upwards (empty when there is none or it is unreadable). */
export async function readSandboxSettings(directory: string): Promise<SandboxSettings> {
  try {
    const configPath = await locateProjectConfig(directory);
    if (configPath === undefined) return {};
    const { config } = await readProjectConfig(configPath);
    return configuredSandbox(config);
  } catch {
    return {};
  }
}

