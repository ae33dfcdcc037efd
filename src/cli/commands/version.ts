import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { readPackageVersion } from '../version.js';

/**
 * `version [--json]` — the polywave version (`polywave --version` prints the same line). With
 * `--json`: `{name, version, node, platform, arch}` for scripts and bug reports.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const version = readPackageVersion();
  if (options.json === true) printJson(io, { name: 'polywave', version, node: process.versions.node, platform: process.platform, arch: process.arch });
  else io.stdout(`${version}\n`);
  return 0;
}
