import { readdirSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import { parseProgram } from '../protocol/parse-program.js';
import { programBranchName } from '../protocol/names.js';
import { readTextFile } from '../store/read-text.js';
import { projectRootOf } from '../store/program-impl-docs.js';

/**
 * P12-11: an IMPL of a PROGRAM tier runs its waves on its IMPL branch
 * (`polywave/program/<program>/tier<N>-impl-<slug>`, E28B/P5), merged into main only by finalize-tier.
 * Run on the main checkout without `--merge-target` (`polywave run docs/IMPL/IMPL-x.yaml`,
 * run-wave, finalize-wave, close-impl…), the wave engine looks for the merges on main and finds
 * none: finalize-wave called the merged agent commits lost ("deleted without merging"), close-impl
 * "not merged — use --force". Refused up front instead, naming the PROGRAM command that resumes it.
 *
 * Only while the PROGRAM is not COMPLETE, the IMPL is not `complete` there and its IMPL branch
 * exists. Costs one `readdir` when no PROGRAM is there (the usual case).
 *
 * Outside round P14 (P14-20): an IMPL of an approved PROGRAM (REVIEWED or later, not COMPLETE) whose tier the loop has
 * not started (no IMPL branch yet) was run by hand on main — tier-2 code before tier 1 even began (P3: a tier starts
 * after the previous tier's gate; P5: main is updated only by finalize-tier) — and the loop then adopted it as
 * `complete`. Refused too (E28B_IMPL_OF_PROGRAM): the tier loop runs it. P14-03: reconcile-state and run-scaffold
 * (no `--merge-target`) are guarded as well.
 */
/** The PROGRAM states after its plan was approved (PROGRAM_REVIEWED, E28) and before COMPLETE: its IMPLs are the loop's. */
const approvedStates = new Set(['REVIEWED', 'SCAFFOLD', 'TIER_EXECUTING', 'TIER_VERIFIED', 'BLOCKED', 'REPLANNING']);

export async function refuseImplOfRunningProgram(implPath: string, options: { command: string; cwd: string; repoDir?: string; mergeTarget?: unknown; env?: NodeJS.ProcessEnv; noMergeTarget?: boolean }): Promise<void> {
  const mergeTarget = typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '';
  const slug = /^IMPL-(.+)\.ya?ml$/i.exec(path.basename(implPath))?.[1];
  if (slug === undefined) return;
  const root = options.repoDir ?? projectRootOf(implPath, path.dirname(path.resolve(implPath)));
  const directory = path.join(root, 'docs', 'PROGRAM');
  let names: string[];
  try {
    names = readdirSync(directory).filter((name) => /^PROGRAM-.+\.ya?ml$/i.test(name)).sort();
  } catch {
    return;
  }
  for (const name of names) {
    let text: string;
    try {
      text = await readTextFile(path.join(directory, name));
    } catch {
      continue;
    }
    const manifest = parseProgram(text).manifest;
    if (!manifest || manifest.state === 'COMPLETE') continue;
    const approved = approvedStates.has(String(manifest.state ?? '').trim());
    // By hand on its IMPL branch (--merge-target) is allowed once the loop made that branch — not before (P14-20).
    if (mergeTarget && !approved) continue;
    const entry = manifest.impls.find((impl) => impl.slug === slug);
    if (entry === undefined || entry.status === 'complete') continue;
    const tier = manifest.tiers.find((candidate) => candidate.impls.includes(slug))?.number ?? entry.tier;
    if (typeof tier !== 'number' || typeof manifest.program_slug !== 'string') continue;
    let branch: string;
    try {
      branch = programBranchName(manifest.program_slug, tier, slug);
    } catch {
      continue;
    }
    const git = createGit(root, options.env ? { env: options.env } : {});
    const programPath = path.relative(options.cwd, path.join(directory, name)) || path.join(directory, name);
    const started = (await git.tryRevParse(`refs/heads/${branch}`)) !== undefined;
    if (started && mergeTarget) continue;
    if (!started && !approved) continue;
    if (!started) {
      throw new PolywaveError({
        code: 'E28B_IMPL_OF_PROGRAM',
        exitCode: 2,
        message: `${options.command}: IMPL ${slug} belongs to tier ${tier} of PROGRAM ${manifest.program_slug} (${programPath}, ${String(manifest.state ?? '').trim()}), which the tier loop has not started: it runs on its IMPL branch ${branch} once ${tier > 1 ? `tier ${tier - 1}'s gate passed (P3)` : 'the loop starts it'}, and reaches main only through finalize-tier (P5); nothing changed — run \`polywave program-execute ${programPath}\`, or take the IMPL out of the PROGRAM (\`polywave program-replan\`) to run it on its own`,
        details: { program: programPath, impl: slug, tier, branch },
      });
    }
    throw new PolywaveError({
      code: 'E28B_IMPL_OF_PROGRAM',
      exitCode: 2,
      message: `${options.command}: IMPL ${slug} belongs to tier ${tier} of PROGRAM ${manifest.program_slug} (${programPath}): its waves merge into its IMPL branch ${branch}, not the current branch (nothing is lost) — resume it with \`polywave program-execute ${programPath}\`${options.noMergeTarget ? '; nothing changed' : `, or pass --merge-target ${branch} to work on that branch by hand`}`,
      details: { program: programPath, impl: slug, tier, branch },
    });
  }
}

/**
 * Outside round P16 (P16-01): a human's edit of an IMPL doc of a PROGRAM (set-impl-state, amend-impl,
 * update-agent-prompt) takes the IMPL's run lock — which the tier loop holds only while it runs the IMPL's waves, not
 * while its tier is scouted and reviewed: a BLOCKED written then (its Scout done, the tier's other Scout still running)
 * was put back by the loop as "another Scout's" change and the IMPL run to COMPLETE. Runs `body` holding the run lock of
 * every PROGRAM (not COMPLETE) in `docs/PROGRAM/` that lists the IMPL too — RUN_IN_PROGRESS (exit 2, nothing written)
 * while the tier loop (or a re-plan) holds one. One `readdir` when no PROGRAM is there.
 */
export async function withProgramsOfImpl<T>(implPath: string, cwd: string, body: () => Promise<T>): Promise<T> {
  const slug = /^IMPL-(.+)\.ya?ml$/i.exec(path.basename(implPath))?.[1];
  const root = projectRootOf(implPath, cwd);
  const directory = path.join(root, 'docs', 'PROGRAM');
  let names: string[];
  try {
    names = slug === undefined ? [] : readdirSync(directory).filter((name) => /^PROGRAM-.+\.ya?ml$/i.test(name)).sort();
  } catch {
    names = [];
  }
  const programs: string[] = [];
  for (const name of names) {
    try {
      const manifest = parseProgram(await readTextFile(path.join(directory, name))).manifest;
      if (manifest && manifest.state !== 'COMPLETE' && manifest.impls.some((impl) => impl.slug === slug)) programs.push(path.join(directory, name));
    } catch {
      // unreadable: not a PROGRAM that lists it
    }
  }
  if (programs.length === 0) return body();
  const { acquireRunLock } = await import('./run-lock.js');
  const releases: Array<() => void> = [];
  try {
    for (const program of programs) releases.push(acquireRunLock(root, program));
    return await body();
  } finally {
    for (const release of releases.reverse()) release();
  }
}
