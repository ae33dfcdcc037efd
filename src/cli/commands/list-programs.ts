import path from 'node:path';
import { parseProgram } from '../../protocol/parse-program.js';
import { listManifestFiles } from '../../store/list-manifests.js';
import { readTextFile } from '../../store/read-text.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

/**
 * `list-programs [--dir docs] [--repo-dir R]` — `[{path, slug, state, title}]` from docs/PROGRAM/
 * (+complete/) and docs/PROGRAM-*.yaml. An explicit --dir is taken from the current directory; the
 * default is R/docs (Go ignores --repo-dir here).
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const docsDirectory = typeof options.dir === 'string' ? path.resolve(io.cwd, options.dir) : path.join(repoDirOption(options, io) ?? io.cwd, 'docs');
  const files = [...listManifestFiles(path.join(docsDirectory, 'PROGRAM'), 'PROGRAM'), ...listManifestFiles(docsDirectory, 'PROGRAM').filter((file) => path.dirname(file) === docsDirectory)];
  const programs: Array<{ path: string; slug: string; state: string; title: string }> = [];
  for (const file of [...new Set(files)].sort((left, right) => path.basename(left).localeCompare(path.basename(right)) || left.localeCompare(right))) {
    try {
      const parsed = parseProgram(await readTextFile(file));
      if (!parsed.manifest) continue;
      programs.push({ path: file, slug: parsed.manifest.program_slug ?? '', state: parsed.manifest.state ?? '', title: parsed.manifest.title ?? '' });
    } catch {
      // unreadable files are skipped, as in the Go tool
    }
  }
  printJson(io, programs);
  return 0;
}
