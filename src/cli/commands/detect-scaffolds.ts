import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import { loadImpl } from '../../store/manifest-file.js';
import { requireRepoRoot } from '../../scout-tools/repo-root.js';
import { detectScaffoldsPostAgent, detectScaffoldsPreAgent } from '../../scout-tools/scaffolds.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { implPathFrom, requireManifest } from './shared.js';
import { analysisCall } from '../../analysis/engine/scope.js';

/**
 * `detect-scaffolds <impl> --stage pre-agent|post-agent [--wave N] [--repo-dir]` (E45).
 * pre-agent: the shared types to scaffold before Wave 1 (`{scaffolds_needed[…]}`, exit 0).
 * post-agent: types that two agents of a wave both defined on their branches
 * (`{conflicts[…]}`, exit 1 when there are any).
 */
export function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(args, options, io));
}

async function runCall(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const stage = typeof options.stage === 'string' ? options.stage : '';
  if (stage !== 'pre-agent' && stage !== 'post-agent') {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --stage value: ${stage || '(none)'} (must be 'pre-agent' or 'post-agent')` });
  }
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  if (stage === 'pre-agent') {
    // The code side needs a repository; without one only the manifest is read (as Go).
    const repoRoot = await requireRepoRoot(repoDirOption(options, io) ?? path.dirname(implPath)).catch(() => undefined);
    printJson(io, await detectScaffoldsPreAgent(manifest, repoRoot ? { repoRoot: await topLevel(repoRoot) } : {}));
    return 0;
  }
  const repoRoot = await requireRepoRoot(repoDirOption(options, io) ?? path.dirname(implPath));
  const git = createGit(repoRoot);
  const wave = typeof options.wave === 'number' && options.wave > 0 ? options.wave : undefined;
  const result = await detectScaffoldsPostAgent({ git, manifest, base: 'HEAD', ...(wave !== undefined ? { wave } : {}) });
  printJson(io, result);
  return result.conflicts.length > 0 ? 1 : 0;
}

/** The work tree's top level (file_ownership paths are relative to it). */
async function topLevel(dir: string): Promise<string> {
  return (await createGit(dir).run(['rev-parse', '--show-toplevel'])).stdout.trim();
}
