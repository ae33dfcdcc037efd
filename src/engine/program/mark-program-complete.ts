import { existsSync, statSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { mergeProjectContext, type ContextEntries } from '../../protocol/context-md.js';
import { checkProgramTransition } from '../../protocol/program/program-state-machine.js';
import type { ProgramManifest } from '../../protocol/schema/program-schema.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import { updateFileLocked, withFileLock } from '../../store/locked-write.js';
import { canonicalPath } from '../worktrees.js';
import { completionEdits } from './completion-edits.js';
import { editProgram, loadProgramManifest, relativePosix } from './program-file.js';

/** The mark-program-complete JSON (Go `MarkProgramCompleteResult` keys, plus `warnings`). */
export interface MarkProgramCompleteResult {
  completed: boolean;
  program_slug: string;
  date: string;
  /** The manifest path as given. */
  manifest_path: string;
  context_updated: boolean;
  context_path?: string;
  archived_path?: string;
  commit_sha?: string;
  /** Number of tiers (all complete). */
  tiers_complete: number;
  /** Number of IMPLs (all complete). */
  impls_complete: number;
  /** Advisory steps that failed (CONTEXT.md merge, commit); the program is marked and archived regardless. */
  warnings?: string[];
}

/** Go's code for "not every tier is complete". */
export const tiersIncompleteCode = 'N039_VERIFY_TIERS_INCOMPLETE';

function isFile(filePath: string): boolean {
  try {
    return statSync(filePath).isFile();
  } catch {
    return false;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Where the manifest is and where it goes: `docs/PROGRAM/PROGRAM-x.yaml` (or the legacy
 * `docs/PROGRAM-x.yaml`) → `docs/PROGRAM/complete/PROGRAM-x.yaml`. A path already under
 * `complete/`, or one that was moved there by an earlier run, is found there (re-runs finish).
 */
function locateProgram(programPath: string, root: string): { activePath: string; archivedPath: string; currentPath: string; archived: boolean } {
  const absolute = path.resolve(programPath);
  const directory = path.dirname(absolute);
  if (path.basename(directory) === 'complete' && isFile(absolute)) {
    return { activePath: path.join(path.dirname(directory), path.basename(absolute)), archivedPath: absolute, currentPath: absolute, archived: true };
  }
  const programDirectory = path.basename(directory) === 'PROGRAM' ? directory : path.join(root, 'docs', 'PROGRAM');
  const archivedPath = path.join(programDirectory, 'complete', path.basename(absolute));
  if (isFile(absolute)) {
    if (existsSync(archivedPath)) {
      throw new PolywaveError({ code: tiersIncompleteCode, message: `both ${absolute} and the archived ${archivedPath} exist; remove the stale one and re-run`, exitCode: 1 });
    }
    return { activePath: absolute, archivedPath, currentPath: absolute, archived: false };
  }
  if (isFile(archivedPath)) return { activePath: absolute, archivedPath, currentPath: archivedPath, archived: true };
  throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `PROGRAM manifest not found: ${absolute} (nor archived at ${archivedPath})` });
}

/** IMPLs of the tiers that are not `complete` ("slug (status: x)"), in tier order. */
export function incompleteTierImpls(manifest: ProgramManifest): string[] {
  const statusOf = new Map<string, string | undefined>();
  for (const impl of manifest.impls) if (impl.slug !== undefined && !statusOf.has(impl.slug)) statusOf.set(impl.slug, impl.status);
  const incomplete: string[] = [];
  for (const tier of manifest.tiers) {
    for (const slug of tier.impls) {
      const status = statusOf.get(slug);
      if (status !== 'complete') incomplete.push(`${slug} (status: ${status ?? 'not in impls'})`);
    }
  }
  return incomplete;
}

/** E18 for a program: one `features_completed` entry `PROGRAM-<slug>` and its program contracts as established interfaces. */
export function contextEntriesFromProgram(manifest: ProgramManifest, options: { programDoc: string; date: string }): ContextEntries {
  const slug = `PROGRAM-${manifest.program_slug ?? ''}`;
  return {
    feature: { slug, impl_doc: options.programDoc, waves: manifest.completion?.total_waves ?? 0, agents: manifest.completion?.total_agents ?? 0, date: options.date },
    decisions: [],
    interfaces: manifest.program_contracts
      .filter((contract) => (contract.name ?? '').trim() !== '')
      .map((contract) => ({ name: contract.name!.trim(), path: (contract.location ?? '').trim(), signature: (contract.definition ?? '').replace(/\s+$/, ''), introduced_in: slug })),
  };
}

/**
 * Commits the archive: the deletion of the original path (when git tracks it), the archived
 * manifest and CONTEXT.md (unless git-ignored) — only those paths (`commit -- paths`, other staged
 * work stays staged). Null when nothing differs from HEAD (an earlier run committed it).
 */
async function commitArchive(git: Git, root: string, paths: string[], message: string): Promise<string | null> {
  const relative = [...new Set(paths.map((filePath) => relativePosix(root, filePath)))];
  const existing = relative.filter((item) => existsSync(path.join(root, item)));
  const gone = relative.filter((item) => !existing.includes(item));
  if (gone.length > 0) {
    const tracked = (await git.run(['--literal-pathspecs', 'ls-files', '-z', '--', ...gone])).stdout.split('\0').filter((item) => item !== '');
    if (tracked.length > 0) await git.run(['--literal-pathspecs', 'rm', '--cached', '--quiet', '--', ...tracked]);
  }
  const ignored = new Set(await git.checkIgnore(existing));
  const toAdd = existing.filter((item) => !ignored.has(item));
  if (toAdd.length > 0) await git.add(toAdd);
  const candidates = relative.filter((item) => !ignored.has(item));
  const head = await git.tryRevParse('HEAD');
  const listing = head === undefined
    ? await git.run(['--literal-pathspecs', 'ls-files', '-z', '--', ...candidates])
    : await git.run(['--literal-pathspecs', 'diff', '--cached', '--name-only', '-z', '--no-renames', head, '--', ...candidates]);
  const changed = listing.stdout.split('\0').filter((item) => item !== '');
  if (changed.length === 0) return null;
  return git.commit({ message, paths: changed, env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
}

/**
 * Closes a PROGRAM (Go `mark-program-complete`, the E15 analogue), re-runnable after a crash:
 * 1. refuse (nothing changed): not a git repository (D011, exit 2); an IMPL of a tier not
 *    `complete` (N039, exit 1); a state from which COMPLETE is illegal — only TIER_VERIFIED (the
 *    last tier's gate passed) moves to COMPLETE — unless `force` (N008, exit 1);
 * 2. mark: `state: COMPLETE`, `completion_date` (an existing one is kept) and the completion
 *    counters, through the locked format-preserving write (no bare marker line, unlike Go: the
 *    file stays YAML);
 * 3. archive: rename into `docs/PROGRAM/complete/` under the manifest's lock;
 * 4. E18: record `PROGRAM-<slug>` and the program contracts in docs/CONTEXT.md (advisory);
 * 5. one commit `chore: mark PROGRAM <slug> complete` of exactly the moved manifest and
 *    CONTEXT.md (POLYWAVE_ALLOW_MAIN_COMMIT=1; advisory: a failure is a warning).
 * `date` defaults to today (UTC). The IMPL docs are not touched (finalize-tier closes them).
 */
export async function markProgramComplete(options: { programPath: string; repoRoot: string; date?: string; env?: NodeJS.ProcessEnv; force?: boolean }): Promise<MarkProgramCompleteResult> {
  const date = options.date ?? new Date().toISOString().slice(0, 10);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--date must be YYYY-MM-DD, got "${date}"` });
  const gitOptions = options.env ? { env: options.env } : {};
  let root: string;
  try {
    root = await canonicalPath(await createGit(options.repoRoot, gitOptions).topLevel());
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') {
      throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${options.repoRoot} is not inside a git repository (mark-program-complete commits the archive; pass --repo-dir)` });
    }
    throw error;
  }
  const git = createGit(root, gitOptions);
  const location = locateProgram(await canonicalPath(options.programPath), root);
  const { manifest: initial } = await loadProgramManifest(location.currentPath);
  const incomplete = incompleteTierImpls(initial);
  if (incomplete.length > 0) {
    throw new PolywaveError({ code: tiersIncompleteCode, message: `not all tiers complete — incomplete IMPLs: ${incomplete.join(', ')}`, exitCode: 1 });
  }
  const warnings: string[] = [];

  const marked = await editProgram(location.currentPath, (manifest) => {
    const edits: YamlEdit[] = [];
    if (manifest.state !== 'COMPLETE') {
      const check = checkProgramTransition(manifest.state, 'COMPLETE');
      if (!check.ok) {
        if (!options.force) throw new PolywaveError({ code: check.finding.code, message: `${check.finding.message} (run the last tier's gate first, or use --force)`, exitCode: 1 });
        warnings.push(`forced: ${check.finding.message}`);
      }
      edits.push({ path: ['state'], value: 'COMPLETE' });
    }
    const existingDate = (manifest.completion_date ?? '').trim();
    if (existingDate === '') edits.push({ path: ['completion_date'], value: date });
    edits.push(...completionEdits(manifest, ['tiers_complete', 'tiers_total', 'impls_complete', 'impls_total']));
    return { edits, outcome: { date: existingDate === '' ? date : existingDate } };
  });
  if (marked.date !== date) warnings.push(`completion_date already set to ${marked.date}; kept`);

  if (!location.archived) {
    await mkdir(path.dirname(location.archivedPath), { recursive: true });
    await withFileLock(location.activePath, () => rename(location.activePath, location.archivedPath));
  }
  const { manifest } = await loadProgramManifest(location.archivedPath);

  const contextPath = path.join(root, 'docs', 'CONTEXT.md');
  let contextUpdated = false;
  try {
    await mkdir(path.dirname(contextPath), { recursive: true });
    const entries = contextEntriesFromProgram(manifest, { programDoc: relativePosix(root, location.archivedPath), date: marked.date });
    const written = await updateFileLocked(contextPath, (current) => mergeProjectContext(existsSync(contextPath) ? current : undefined, entries, { date: marked.date }).text, { allowMissing: true });
    contextUpdated = written.changed;
  } catch (error) {
    warnings.push(`update_context: ${errorText(error)}`);
  }

  let commitSha: string | null = null;
  try {
    commitSha = await commitArchive(git, root, [location.activePath, location.archivedPath, ...(existsSync(contextPath) ? [contextPath] : [])], `chore: mark PROGRAM ${manifest.program_slug ?? ''} complete`);
  } catch (error) {
    warnings.push(`commit failed: ${errorText(error)} (re-run mark-program-complete to finish)`);
  }

  return {
    completed: true,
    program_slug: manifest.program_slug ?? '',
    date: marked.date,
    manifest_path: options.programPath,
    context_updated: contextUpdated,
    ...(existsSync(contextPath) ? { context_path: contextPath } : {}),
    archived_path: location.archivedPath,
    ...(commitSha !== null ? { commit_sha: commitSha } : {}),
    tiers_complete: manifest.tiers.length,
    impls_complete: manifest.impls.length,
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}
