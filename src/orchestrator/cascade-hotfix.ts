import { lstat, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { missingCredential } from '../agents/credentials.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { runAgent } from '../agents/run-agent.js';
import type { FinalizeWaveResult } from '../engine/finalize/context.js';
import { journalPaths } from '../engine/journal.js';
import { pinnedGitConfig, vouchForTargetCommit } from '../engine/tamper-record.js';
import { createGit } from '../git/git-cli.js';
import { implSlugFromPath } from '../protocol/names.js';
import type { FinalizeAgentRunOptions } from './gate-repair.js';

/**
 * E47 between-wave caller cascade hotfix (the CLI path): when finalize-wave's verify-build fails
 * and every located error is in a file of a later wave or of nobody (`caller_cascade_only`), a
 * hotfix agent fixes exactly those callers on the merge target — jailed to the files the errors
 * name — and the orchestrator commits the fix as
 * `[Polywave:wave{N}:integration-hotfix] fix caller cascade after wave N signature changes`; then
 * finalize-wave runs again. A build that still fails is reported as a genuine failure (E7/E8).
 */
/** The main checkout (`repoRoot`) must have the merge target checked out; `finalize` accepts the hotfix commit. */
export type CascadeHotfixOptions = FinalizeAgentRunOptions;

export interface CascadeHotfixReport {
  files: string[];
  /** The agent's outcome, or why it was not launched. */
  outcome: string;
  commit?: string;
  /** The build after the hotfix still fails. */
  still_failing?: boolean;
  skipped?: string;
}

export function hotfixCommitMessage(wave: number): string {
  return `[Polywave:wave${wave}:integration-hotfix] fix caller cascade after wave ${wave} signature changes`;
}

export async function applyCascadeHotfix(first: FinalizeWaveResult, options: CascadeHotfixOptions): Promise<{ result: FinalizeWaveResult; hotfix: CascadeHotfixReport }> {
  const errors = first.caller_cascade_errors ?? [];
  // Paths come from build output: only plain repository-relative paths, never .git or .polywave-state.
  const files = [...new Set(errors.map((error) => error.file))]
    .filter((file) => {
      const normal = path.posix.normalize(file.split(path.sep).join('/'));
      return normal === file && !path.isAbsolute(file) && !normal.startsWith('../') && normal !== '..' && !/^(\.git|\.polywave-state|\.claude)(\/|$)/.test(normal);
    })
    .sort();
  if (files.length === 0) return { result: first, hotfix: { files, outcome: 'not launched', skipped: 'E47 hotfix not run: no caller file inside the repository to fix' } };
  const skip = (skipped: string) => {
    options.log(skipped);
    return { result: first, hotfix: { files, outcome: 'not launched', skipped } };
  };
  const spec = resolveModelSpec(options.model, options.env);
  const missing = spec.backend === 'script' ? undefined : missingCredential(spec, options.env);
  if (missing) return skip(`E47 hotfix not run: no credentials for ${spec.raw} (${missing}); pass --model, or fix the callers by hand`);
  // No hook runs for the orchestrator's git calls here (worktree add/remove, the hotfix commit): an agent could have planted one.
  const git = createGit(options.repoRoot, { env: options.env }).withConfig(() => pinnedGitConfig(undefined));
  const targets = Object.values(first.merge_target ?? {});
  const current = await git.currentBranch().catch(() => undefined);
  const target = targets.length === 1 ? String(targets[0]) : undefined;
  if (!current || (target !== undefined && target !== current)) return skip(`E47 hotfix not run: the merge target ${target ?? '(several)'} is not checked out in ${options.repoRoot}`);
  if ((await git.status()).some((entry) => files.includes(entry.path))) return skip(`E47 hotfix not run: ${files.join(', ')} has uncommitted changes in ${options.repoRoot}`);
  const before = await git.headCommit();
  const slug = implSlugFromPath(options.implPath, options.manifest);
  const listing = errors.map((error) => `- ${error.file}${error.line ? `:${error.line}` : ''}: ${error.message}`).join('\n');
  // The agent works in a scratch checkout of the target, never in the main checkout: the
  // orchestrator's state (.polywave-state/, the manifest) is not in its reach, and only the
  // named files' new content is taken back.
  const scratch = path.join(options.repoRoot, '.claude', 'worktrees', 'polywave', slug, `hotfix-wave${options.wave}`);
  await git.run(['worktree', 'remove', '--force', '--', scratch]).catch(() => undefined);
  await rm(scratch, { recursive: true, force: true });
  await git.run(['worktree', 'add', '--quiet', '--detach', '--', scratch, before]);
  options.log(`E47 caller cascade hotfix: agent on ${files.join(', ')} (in ${path.relative(options.repoRoot, scratch)})`);
  let run: Awaited<ReturnType<typeof runAgent>>;
  const taken = new Map<string, Buffer>();
  try {
    run = await runAgent({
      agentId: 'hotfix',
      role: 'integration',
      wave: options.wave,
      model: spec,
      systemPrompt: [
        `You are the Polywave E47 hotfix agent after wave ${options.wave}. Wave ${options.wave} changed exported signatures; the merged build now fails only in callers that later waves own or nobody owns.`,
        `Change only these files: ${files.join(', ')}. Apply the minimal caller fix (new parameters, changed return types, renamed or deleted symbols). Do not change the wave's own code, tests' expectations or the build configuration.`,
        'Do not commit: the orchestrator commits your fix and re-runs the build.',
      ].join('\n'),
      prompt: `The merged build fails with these errors:\n${listing}\n\nBuild output tail:\n${Object.values(first.verify_build ?? {}).map((data) => `${data.test_output ?? ''}\n${data.lint_output ?? ''}`.slice(-3000)).join('\n')}`,
      cwd: scratch,
      baseCommit: before,
      implPath: options.implPath,
      policy: { root: scratch, ownedFiles: files, frozenPaths: [], readablePaths: [options.implPath] },
      env: { ...options.env, POLYWAVE_REPO_ROOT: options.repoRoot },
      journal: journalPaths(options.repoRoot, slug, options.wave, 'hotfix'),
      ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // Only the named files, only as regular files inside the scratch checkout.
    for (const file of files) {
      const source = path.join(scratch, file);
      const info = await lstat(source).catch(() => undefined);
      if (!info?.isFile()) continue;
      const content = await readFile(source);
      const original = await git.run(['show', `${before}:${file}`]).then((out) => Buffer.from(out.stdout)).catch(() => undefined);
      // A caller the build names is a tracked file of the target: nothing new is created through this path.
      if (original !== undefined && !original.equals(content)) taken.set(file, content);
    }
  } finally {
    await git.run(['worktree', 'remove', '--force', '--', scratch]).catch(() => undefined);
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
  if (taken.size === 0) return { result: first, hotfix: { files, outcome: `${run.outcome.status}; no file changed` } };
  for (const [file, content] of taken) await writeFile(path.join(options.repoRoot, file), content);
  const changed = [...taken.keys()].sort();
  const commit = await git.commit({ message: hotfixCommitMessage(options.wave), env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' }, paths: changed });
  // The tamper record vouches for this one commit of ours (not for anything else the agent may have touched).
  await vouchForTargetCommit({ git, slug, wave: options.wave, branch: current, commit, parent: before });
  const result = await options.finalize();
  const stillFailing = !result.success && result.failed_step?.step === 'verify-build';
  if (stillFailing) options.log('apply-cascade-hotfix: build still fails after hotfix — a genuine build failure (E7/E8)');
  return { result, hotfix: { files, outcome: run.outcome.status, commit, ...(stillFailing ? { still_failing: true } : {}) } };
}
