import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { briefSymbolCandidates, validateBriefs } from '../../protocol/brief-validation.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { fileInside, implRepoRoot, readRepoText, repoDirectories } from './impl-repo.js';
import { implPathFrom, requireManifest } from './shared.js';

/** Symbols of `candidates` that occur as whole words in tracked source files (one `git grep`; IMPL docs and prose excluded). */
async function symbolsInRepository(root: string, candidates: readonly string[], io: CommandIo): Promise<Set<string> | undefined> {
  if (candidates.length === 0) return new Set();
  const git = createGit(root, { env: io.env });
  if (!(await git.isRepository())) return undefined;
  const patterns = candidates.flatMap((symbol) => ['-e', symbol]);
  // Source files only: the IMPL docs and prose mention every symbol a brief cites.
  const pathspecs = ['--', '.', ':(exclude)docs/IMPL/**', ':(exclude)*.md', ':(exclude)*.markdown', ':(exclude)*.txt', ':(exclude)*.rst'];
  const { stdout } = await git.run(['grep', '-I', '-h', '-o', '-w', '-F', '--no-color', ...patterns, ...pathspecs], { allowExitCodes: [1] });
  return new Set(stdout.split('\n').map((line) => line.trim()).filter((line) => line !== ''));
}

/**
 * `validate-briefs <impl>` — E37 checks 2–3 before the critic: symbols and line numbers the
 * agents' tasks cite exist (in their owned files, else anywhere in the repository), "Wave N
 * Agent X" references match the waves. Prints `{valid, agent_results{ID: {agent_id, passed,
 * issues[{check, severity, description, file?, symbol?, line_number?, suggestions?}]}}, summary}`.
 * Exit 0 valid, 1 an error-severity issue, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const root = await implRepoRoot(implPath, options, io);
  const directoryOf = await repoDirectories(manifest, root, implPath);
  const repoSymbols = await symbolsInRepository(root, briefSymbolCandidates(manifest), io);
  const result = validateBriefs(manifest, {
    read: (file, repo) => {
      const inside = fileInside(directoryOf(repo), file);
      return inside === undefined ? undefined : readRepoText(inside);
    },
    ...(repoSymbols ? { repoSymbols } : {}),
    display: (file, repo) => path.resolve(directoryOf(repo), file),
  });
  printJson(io, result);
  return result.valid ? 0 : 1;
}
