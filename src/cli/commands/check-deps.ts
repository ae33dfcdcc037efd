import { checkDependencies, type DependencyFile } from '../../analysis/dependency-check.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { fileInside, implRepoRoot, repoDirectories } from './impl-repo.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `check-deps <impl> [--wave N]` — before a wave: the third-party packages the wave's owned
 * files import (TS/JS, Go, Python, Rust) must be declared or locked, and declarations and lock
 * files must agree. `--wave 0` or no `--wave`: every wave. Files that do not exist yet (new
 * files) are skipped. Prints `{missing_deps[{agent, package, required_by, available_version}],
 * version_conflicts[{agents, package, versions, resolution_needed}], recommendations[]}`.
 * Exit 0 none, 1 missing packages or conflicts, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const wave = typeof options.wave === 'number' ? options.wave : 0;
  const root = await implRepoRoot(implPath, options, io);
  const directoryOf = await repoDirectories(manifest, root, implPath);
  const seen = new Set<string>();
  const files: DependencyFile[] = [];
  for (const row of manifest.file_ownership) {
    if (!row.file || !row.agent || (wave > 0 && row.wave !== wave) || fileInside(directoryOf(row.repo), row.file) === undefined) continue;
    const key = `${row.repo ?? ''}\0${row.file}`;
    if (seen.has(key)) continue;
    seen.add(key);
    files.push({ file: row.file, agent: row.agent, root: directoryOf(row.repo) });
  }
  const report = await checkDependencies({ files, env: io.env });
  printJson(io, report);
  return report.missing_deps.length > 0 || report.version_conflicts.length > 0 ? 1 : 0;
}
