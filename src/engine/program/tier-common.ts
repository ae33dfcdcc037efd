import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { parseBranchName, parseProgramBranchName } from '../../protocol/names.js';
import { parseProgram } from '../../protocol/parse-program.js';
import type { ProgramManifest } from '../../protocol/schema/program-schema.js';
import { describeFinding, loadManifest } from '../../store/manifest-file.js';
import { canonicalPath } from '../worktrees.js';

/** Options every tier engine function takes (the tier loop calls them directly). */
export interface TierOptions {
  /** Absolute path of the PROGRAM manifest. */
  programPath: string;
  /** The repository's main checkout (a directory inside it is accepted: its top level is used). */
  repoRoot: string;
  /** Tier number (`tiers[].number`). */
  tier: number;
  /** Environment of git and the gates (default: this process's). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** A PROGRAM manifest and one of its tiers, ready to act on. */
export interface LoadedTier {
  programPath: string;
  manifest: ProgramManifest;
  programSlug: string;
  tier: number;
  /** The tier's IMPL slugs in declaration order (duplicates dropped). */
  slugs: string[];
}

function badInput(message: string): PolywaveError {
  return new PolywaveError({ code: 'X001_INVALID_INPUT', message, exitCode: 2 });
}

/**
 * Reads the PROGRAM manifest and finds tier `tier` in it. Coded errors (exit 2): unreadable or
 * structurally broken manifest, no `program_slug`, a tier number that is not a positive integer
 * or not in `tiers`, an empty tier.
 */
export async function loadProgramTier(programPath: string, tier: number): Promise<LoadedTier> {
  if (!Number.isInteger(tier) || tier < 1) throw badInput(`--tier must be a positive integer, got ${tier}`);
  const { parsed } = await loadManifest(programPath, parseProgram);
  const manifest = parsed.manifest;
  if (manifest === null) {
    const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
    throw new PolywaveError({
      code: first?.code ?? 'V001_MANIFEST_INVALID',
      message: first ? `${describeFinding(programPath, first)} (run: polywave validate-program ${path.basename(programPath)})` : `${programPath}: manifest is not usable`,
      findings: parsed.findings,
    });
  }
  const programSlug = (manifest.program_slug ?? '').trim();
  if (programSlug === '') throw new PolywaveError({ code: 'V005_REQUIRED_FIELDS_MISSING', message: `${programPath}: program_slug is missing (the IMPL branch names need it)` });
  const found = manifest.tiers.find((candidate) => candidate.number === tier);
  if (found === undefined) {
    const known = manifest.tiers.map((candidate) => candidate.number).filter((number) => number !== undefined);
    throw badInput(`tier ${tier} not found in ${path.basename(programPath)} (tiers: ${known.length > 0 ? known.join(', ') : 'none'})`);
  }
  const slugs = [...new Set(found.impls.map((slug) => slug.trim()).filter((slug) => slug !== ''))];
  if (slugs.length === 0) throw badInput(`tier ${tier} of ${path.basename(programPath)} lists no IMPLs`);
  return { programPath, manifest, programSlug, tier, slugs };
}

/** The main checkout the tier works in: its git port, top level and the main-line branch. */
export interface MainCheckout {
  git: Git;
  root: string;
  /** The branch checked out there (the main line the tier merges into). */
  branch: string;
  head: string;
  commonDir: string;
}

/**
 * The repository's checkout at `repoRoot`: it must be a git repository (D011, exit 2), on a
 * branch with a commit, and not on a program IMPL branch or an agent branch — the tier's main
 * line is whatever is checked out there (exit 2 otherwise: the user's checkout is never switched).
 */
export async function openMainCheckout(repoRoot: string, env: TierOptions['env']): Promise<MainCheckout> {
  const probe = createGit(repoRoot, env ? { env } : {});
  let root: string;
  try {
    root = await canonicalPath(await probe.topLevel());
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') {
      throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${repoRoot} is not inside a git repository (pass --repo-dir)`, cause: error });
    }
    throw error;
  }
  // The probe already stands at the top level (the usual case): keep it, its layout is known.
  const git = path.resolve(repoRoot) === root ? probe : createGit(root, env ? { env } : {});
  const probeOutput = await git.run(['rev-parse', '--path-format=absolute', '--git-common-dir', 'HEAD', '--symbolic-full-name', 'HEAD'], { allowExitCodes: [128] });
  const [commonDir = '', head = '', ref = ''] = probeOutput.stdout.trim().split('\n');
  if (probeOutput.exitCode !== 0 || !/^[0-9a-f]{40,64}$/.test(head)) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${root} has no commits yet (unborn HEAD): commit something first` });
  }
  if (!ref.startsWith('refs/heads/')) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${root} has a detached HEAD: check out the main-line branch the tier merges into` });
  }
  const branch = ref.slice('refs/heads/'.length);
  if (parseProgramBranchName(branch) !== undefined || parseBranchName(branch) !== undefined) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${root} is on ${branch}, a Polywave branch: check out the main-line branch the tier merges into` });
  }
  return { git, root, branch, head, commonDir: path.resolve(root, commonDir) };
}

/** Path of `file` relative to `root` with `/` separators, or undefined when it is outside. */
export function insideRoot(root: string, file: string): string | undefined {
  const relative = path.relative(root, file);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return undefined;
  return relative.split(path.sep).join('/');
}

/** Environment overrides of the tool's own commits on the main line (isolation hook let through). */
export const mainCommitEnvironment = { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } as const;
