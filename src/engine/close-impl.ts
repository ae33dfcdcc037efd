import { existsSync, statSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { isMap, isScalar } from 'yaml';
import { createGit } from '../git/git-cli.js';
import type { Git, WorktreeEntry } from '../git/git-port.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { contextEntriesFromImpl, mergeProjectContext } from '../protocol/context-md.js';
import { canonicalJson } from '../protocol/freeze.js';
import { implSlugFromPath, parseBranchName } from '../protocol/names.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { checkTransition } from '../protocol/state-machine.js';
import { parseYamlSafe, toPlain } from '../protocol/yaml/index.js';
import { updateFileLocked, withFileLock } from '../store/locked-write.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';
import { clearActiveWave } from './isolation-hook.js';
import { describeUnmerged, unmergedAgents } from './wave-merged.js';
import { codes } from '../errors/codes.js';
import { requireParsedManifest } from './reconcile-state.js';
import { cleanStaleWorktrees, detectStaleWorktrees } from './stale-worktrees.js';
import type { StepResult } from './step.js';
import { canonicalPath } from './worktrees.js';
import { activityEvent, type ActivityEvent } from '../protocol/e40.js';

/** Refusals of close-impl (not finished, ambiguous files, on an agent branch): the Go N037 code. */
export const closeRefusedCode = 'N037_MARK_COMPLETE_FAILED';

/**
 * E15 completion marker in a YAML manifest. The protocol's marker is an HTML comment in a
 * markdown IMPL doc; a YAML manifest cannot hold one, so we write the YAML comment line
 * `# polywave:complete YYYY-MM-DD` on the line right after the `title:` line (same place, same
 * single-regex grep-ability: `polywave:complete`).
 */
export const completionMarkerPattern = /^[ \t]*(?:#|<!--)[ \t]*polywave:complete\b/m;

/** The marker line for `date` (without line ending). */
export function completionMarkerLine(date: string): string {
  return `# polywave:complete ${date}`;
}

/**
 * Inserts the E15 marker after the title line (after the whole `title:` value when it spans
 * lines), or at the top when the manifest has no top-level title. Pure. A text that already has
 * a marker line is returned unchanged ("if the marker is already present, do not overwrite").
 * The result is verified by re-parsing: the data must be unchanged; throws otherwise.
 */
export function insertCompletionMarker(text: string, date: string): string {
  if (completionMarkerPattern.test(text)) return text;
  const lineEnding = text.includes('\r\n') ? '\r\n' : '\n';
  const marker = `${completionMarkerLine(date)}${lineEnding}`;
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) throw new PolywaveError({ code: closeRefusedCode, message: `cannot write the completion marker: ${parsed.findings[0]?.message ?? 'the manifest does not parse'}`, exitCode: 2 });
  const before = canonicalJson(toPlain(parsed.document));
  const positions: number[] = [];
  const contents = parsed.document.contents;
  if (isMap(contents)) {
    const pair = contents.items.find((item) => isScalar(item.key) && item.key.value === 'title');
    const node = (pair?.value ?? pair?.key) as { range?: [number, number, number] } | undefined;
    if (node?.range) {
      let end = node.range[1];
      while (end > node.range[0] && /\s/.test(text[end - 1]!)) end -= 1;
      const newline = text.indexOf('\n', end);
      positions.push(newline === -1 ? text.length : newline + 1);
    }
  }
  positions.push(text.charCodeAt(0) === 0xfeff ? 1 : 0);
  for (const position of positions) {
    const head = text.slice(0, position);
    const needsBreak = head !== '' && head !== '\uFEFF' && !head.endsWith('\n');
    const candidate = `${head}${needsBreak ? lineEnding : ''}${marker}${text.slice(position)}`;
    const reparsed = parseYamlSafe(candidate);
    if (reparsed.ok && canonicalJson(toPlain(reparsed.document)) === before) return candidate;
  }
  throw new PolywaveError({ code: closeRefusedCode, message: 'cannot place the completion marker without changing the manifest data', exitCode: 2 });
}

/** Is the IMPL finished (E15 trigger: final wave verified)? */
export interface CloseReadiness {
  finished: boolean;
  /** Why not (empty when finished). */
  reasons: string[];
}

/**
 * E15 trigger check: every agent of every wave has a `complete` report, and the state is
 * WAVE_VERIFIED (or COMPLETE already), or another state from which COMPLETE is a legal move
 * without skipping a multi-agent wave's merge (REVIEWED, BLOCKED, a solo-wave WAVE_EXECUTING).
 */
export function closeReadiness(manifest: ImplManifest): CloseReadiness {
  const reasons: string[] = [];
  const agents = (manifest.waves ?? []).flatMap((wave) => (wave.agents ?? []).map((agent) => ({ wave: wave.number, id: agent.id ?? '' })));
  if (agents.length === 0) reasons.push('the manifest has no agents');
  const incomplete = agents.filter((agent) => manifest.completion_reports?.[agent.id]?.status !== 'complete');
  if (incomplete.length > 0) {
    reasons.push(`agent(s) without a complete report: ${incomplete.map((agent) => `${agent.id} (wave ${agent.wave}, ${manifest.completion_reports?.[agent.id]?.status ?? 'no report'})`).join(', ')}`);
  }
  const state = (manifest.state ?? '').trim();
  if (state !== 'WAVE_VERIFIED' && state !== 'COMPLETE') {
    const check = checkTransition(state, 'COMPLETE', manifest);
    if (!check.ok) reasons.push(`state ${state || '(none)'}: ${check.finding.message}`);
    else if (check.warnings.length > 0) reasons.push(`state ${state}: ${check.warnings.map((warning) => warning.message).join('; ')}`);
  }
  return { finished: reasons.length === 0, reasons };
}

/** Options of {@link closeImpl}. */
export interface CloseImplOptions {
  /** Absolute path of the IMPL: the active one, the archived one, or the active path after a crash moved it. */
  implPath: string;
  /** Completion date YYYY-MM-DD (an existing completion_date wins: the marker is never overwritten). */
  date: string;
  /** Close even when the IMPL is not finished (and force the state to COMPLETE). */
  force?: boolean;
  /** Project root (default: the repository holding the manifest). */
  repoDir?: string;
  env?: Readonly<Record<string, string | undefined>>;
  gitAt?: (directory: string) => Git;
  /** Called after every step (the CLI prints progress to stderr). */
  onStep?: (step: StepResult) => void;
  /** Receives the E40 `impl_complete` activity when the IMPL is marked COMPLETE. */
  events?: { emit(event: ActivityEvent): void };
  /** The PROGRAM the IMPL belongs to (a label of the E40 event). */
  program?: string;
  /**
   * What the caller already read from the project root's git, after the last change to it (a PROGRAM
   * tier closes all its IMPLs in a row without committing in between, so one read serves them all):
   * the checked-out branch (undefined = detached) and the `worktree list`. Absent: read here.
   */
  known?: { branch: string | undefined; worktrees?: readonly WorktreeEntry[] };
  /**
   * false: leave the commit (step 6) to the caller, who commits several closes at once with
   * {@link commitClosedImpls} (finalize-tier: one commit per tier instead of one per IMPL); the
   * files to commit are in `commit_paths`. Default true.
   */
  commit?: boolean;
}

/** The close-impl JSON. */
export interface CloseImplResult {
  marked: boolean;
  date: string;
  archived_path: string;
  /** CONTEXT.md holds this feature (written now or already before). */
  context_updated: boolean;
  context_path: string;
  worktrees_cleaned: number;
  committed: boolean;
  commit_sha: string | null;
  /** Why the commit failed (the files are archived and marked; re-run close-impl to commit). */
  commit_error?: string;
  /** The manifest was already COMPLETE when the command started (a re-run). */
  already_complete: boolean;
  /** `.polywave-state/active-wave` named this IMPL and was removed. */
  active_wave_cleared: boolean;
  warnings: string[];
  /** What each step did (`{step, status, detail, duration_ms}`, DESIGN §3). */
  steps: StepResult[];
  /** The files step 6 commits (absolute): the original path, the archived manifest, CONTEXT.md. */
  commit_paths: string[];
}

/** Where the manifest is: before or after archiving. */
interface ManifestLocation {
  activePath: string;
  archivedPath: string;
  /** The file that exists now. */
  currentPath: string;
  archived: boolean;
}

function isFile(filePath: string): boolean {
  try {
    return statSync(filePath).isFile();
  } catch {
    return false;
  }
}

function refused(message: string, exitCode: 1 | 2 = 1): PolywaveError {
  return new PolywaveError({ code: closeRefusedCode, message, exitCode });
}

/**
 * Finds the manifest before or after the archive step (so a re-run after a crash continues):
 * `<dir>/IMPL-x.yaml` → `<dir>/complete/IMPL-<slug>.yaml`. The archived name uses the slug (so
 * `polywave <cmd> <slug>` still finds it); a path that no longer exists is looked up in
 * `complete/`.
 */
async function locateManifest(implPath: string): Promise<ManifestLocation> {
  const absolute = path.resolve(implPath);
  if (existsSync(absolute) && !isFile(absolute)) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${absolute} is not a file` });
  const inComplete = path.basename(path.dirname(absolute)) === 'complete';
  if (inComplete && isFile(absolute)) {
    return { activePath: path.join(path.dirname(path.dirname(absolute)), path.basename(absolute)), archivedPath: absolute, currentPath: absolute, archived: true };
  }
  if (isFile(absolute)) {
    const { parsed } = await loadImpl(absolute);
    const slug = implSlugFromPath(absolute, parsed.manifest ?? undefined);
    const archivedPath = path.join(path.dirname(absolute), 'complete', `IMPL-${slug}.yaml`);
    if (existsSync(archivedPath)) {
      throw refused(`both ${absolute} and the archived ${archivedPath} exist; remove the stale one and re-run`);
    }
    return { activePath: absolute, archivedPath, currentPath: absolute, archived: false };
  }
  const moved = path.join(path.dirname(absolute), 'complete', path.basename(absolute));
  if (isFile(moved)) return { activePath: absolute, archivedPath: moved, currentPath: moved, archived: true };
  throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `file not found: ${absolute} (nor archived at ${moved})` });
}

async function projectRootOf(git: Git): Promise<string> {
  try {
    return await canonicalPath(await git.topLevel());
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') {
      throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${git.cwd} is not inside a git repository (close-impl commits the archive; pass --repo-dir)` });
    }
    throw error;
  }
}

function toPosix(relative: string): string {
  return relative.split(path.sep).join('/');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The project root of a manifest when none is given: the top level of the repository holding
 * it, else the directory above `docs/IMPL` (`<root>/docs/IMPL[/complete]/IMPL-x.yaml`).
 */
export async function defaultProjectRoot(implPath: string, gitAt: (directory: string) => Git): Promise<string> {
  try {
    return await canonicalPath(await gitAt(path.dirname(implPath)).topLevel());
  } catch (error) {
    if (!PolywaveError.isInstance(error) || error.code !== 'G000_NOT_A_REPOSITORY') throw error;
  }
  let directory = path.dirname(path.resolve(implPath));
  if (path.basename(directory) === 'complete') directory = path.dirname(directory);
  return path.dirname(path.dirname(directory));
}

/** Options of {@link updateProjectContext}. */
export interface UpdateContextOptions {
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** Project root holding docs/CONTEXT.md. */
  projectRoot: string;
  /** Completion date (default: the manifest's completion_date, else `fallbackDate`). */
  date?: string;
  fallbackDate: string;
  /** IMPL doc path recorded in features_completed (default: implPath relative to the root). */
  implDoc?: string;
}

/** The update-context JSON (the Go keys). */
export interface UpdateContextResult {
  context_path: string;
  /** CONTEXT.md changed. */
  updated: boolean;
  /** What was added (`features_completed:<slug>`, `established_interfaces:<name>`, `decisions:<text>`). */
  new_entries: string[];
}

/**
 * E18 update-context: creates or updates `<root>/docs/CONTEXT.md` (see protocol/context-md.ts)
 * under the file lock, atomically; no commit. Idempotent.
 */
export async function updateProjectContext(options: UpdateContextOptions): Promise<UpdateContextResult> {
  const { parsed } = await loadImpl(options.implPath);
  const manifest = requireParsedManifest(parsed.manifest, options.implPath);
  const [implPath, projectRoot] = await Promise.all([canonicalPath(options.implPath), canonicalPath(options.projectRoot)]);
  return writeProjectContext(manifest, { ...options, implPath, projectRoot });
}

async function writeProjectContext(manifest: ImplManifest, options: UpdateContextOptions): Promise<UpdateContextResult> {
  const slug = implSlugFromPath(options.implPath, manifest);
  const date = options.date ?? ((manifest.completion_date ?? '').trim() || options.fallbackDate);
  const implDoc = options.implDoc ?? toPosix(path.relative(options.projectRoot, options.implPath));
  const entries = contextEntriesFromImpl(manifest, { slug, implDoc, date });
  const contextPath = path.join(options.projectRoot, 'docs', 'CONTEXT.md');
  await mkdir(path.dirname(contextPath), { recursive: true });
  let added: string[] = [];
  const result = await updateFileLocked(
    contextPath,
    (current) => {
      const merged = mergeProjectContext(existsSync(contextPath) ? current : undefined, entries, { date });
      added = merged.added;
      return merged.text;
    },
    { allowMissing: true },
  );
  return { context_path: contextPath, updated: result.changed, new_entries: result.changed ? added : [] };
}

/**
 * E15 + E18 close-impl, re-runnable after a crash at any step:
 * 1. refuse (exit 1, nothing changed) an IMPL that is not finished ({@link closeReadiness})
 *    unless `force`, or when HEAD is on an agent branch;
 * 2. mark: `state: COMPLETE` and `completion_date` through editImpl, then the marker comment
 *    line after the title (same lock, data verified unchanged);
 * 3. archive: rename to `<dir>/complete/IMPL-<slug>.yaml` under the manifest's lock;
 * 4. E18: update docs/CONTEXT.md;
 * 5. E4a: remove the slug's stale worktrees (never dirty or unmerged ones);
 * 6. one commit `chore: close-impl <slug> [polywave:complete]` (POLYWAVE_ALLOW_MAIN_COMMIT=1)
 *    holding exactly the deletion of the original path, the archived manifest and CONTEXT.md
 *    (other staged changes are left staged, not committed);
 * 7. remove `.polywave-state/active-wave` when it names this slug.
 * Steps that are already done are skipped; a failure of steps 4, 5 or 7 is a warning.
 */
export async function closeImpl(options: CloseImplOptions): Promise<CloseImplResult> {
  const gitAt = options.gitAt ?? ((directory: string) => createGit(directory, options.env ? { env: options.env } : {}));
  // Canonical paths: git reports the root with symlinks resolved, and the commit needs paths inside it.
  const location = await locateManifest(await canonicalPath(options.implPath));
  const root = await projectRootOf(gitAt(options.repoDir ?? path.dirname(location.currentPath)));
  if (path.relative(root, location.activePath).startsWith('..') || path.isAbsolute(path.relative(root, location.activePath))) {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${location.currentPath} is not inside the project root ${root}` });
  }
  const git = gitAt(root);
  const warnings: string[] = [];

  const { parsed } = await loadImpl(location.currentPath);
  const initial = requireParsedManifest(parsed.manifest, location.currentPath);
  const slug = implSlugFromPath(location.activePath, initial);
  const alreadyComplete = (initial.state ?? '').trim() === 'COMPLETE';

  const branch = options.known ? options.known.branch : await git.currentBranch();
  if (branch !== undefined && parseBranchName(branch) !== undefined) {
    throw refused(`HEAD is on the agent branch ${branch}; check out the branch the waves merged into, then re-run close-impl`);
  }
  if (!alreadyComplete) {
    const readiness = closeReadiness(initial);
    if (!readiness.finished) {
      if (!options.force) throw refused(`IMPL ${slug} is not finished: ${readiness.reasons.join('; ')} (use --force to close anyway)`);
      warnings.push(`forced: ${readiness.reasons.join('; ')}`);
    }
    // Issue 13 (F1): reports are not merges — every agent's commit must be in the branch being closed on.
    const unmerged = await unmergedAgents(git, initial, slug, (initial.waves ?? []).map((wave) => wave.number ?? 0), 'HEAD');
    if (unmerged.length > 0) {
      const reason = `${codes.waveNotMerged}: agent work not merged into ${branch ?? 'HEAD'}: ${describeUnmerged(unmerged)} — run \`polywave finalize-wave ${path.relative(root, location.currentPath)} --wave ${unmerged[0]!.wave}\` first`;
      if (!options.force) throw refused(`IMPL ${slug} is not finished: ${reason} (use --force to close anyway)`);
      warnings.push(`forced: ${reason}`);
    }
  }

  const steps: StepResult[] = [];
  const record = (step: string, status: StepResult['status'], detail: string, started: number) => {
    const result: StepResult = { step, status, detail, duration_ms: Math.round(performance.now() - started) };
    steps.push(result);
    options.onStep?.(result);
  };
  /** Runs a step; a required step's failure is recorded and rethrown, an advisory one becomes a warning. */
  const runStep = async <Value>(step: string, advisory: boolean, action: () => Promise<{ value: Value; detail: string; status?: StepResult['status'] }>): Promise<Value | undefined> => {
    const started = performance.now();
    try {
      const { value, detail, status } = await action();
      record(step, status ?? 'success', detail, started);
      return value;
    } catch (error) {
      record(step, advisory ? 'warning' : 'failed', errorText(error), started);
      if (!advisory) throw error;
      warnings.push(`${step}: ${errorText(error)}`);
      return undefined;
    }
  };

  // 2. mark (E15): state + completion_date through editImpl, then the marker comment.
  const date = (await runStep('mark_complete', false, async () => {
    const written = await editImpl(location.currentPath, (current) => {
      const manifest = requireParsedManifest(current.manifest, location.currentPath);
      const edits: Array<{ path: string[]; value: string }> = [];
      const existingDate = (manifest.completion_date ?? '').trim();
      if ((manifest.state ?? '').trim() !== 'COMPLETE') edits.push({ path: ['state'], value: 'COMPLETE' });
      if (existingDate === '') edits.push({ path: ['completion_date'], value: options.date });
      return { edits, outcome: { date: existingDate === '' ? options.date : existingDate, changed: edits.length > 0 } };
    });
    const marker = await updateFileLocked(location.currentPath, (text) => insertCompletionMarker(text, written.date));
    const done = written.changed || marker.changed;
    return { value: written.date, status: done ? 'success' : 'skipped', detail: done ? `state COMPLETE, completion_date ${written.date}, marker written` : 'already marked complete' };
  }))!;
  if (date !== options.date) warnings.push(`completion_date already set to ${date}; kept (E15: the marker is not overwritten)`);
  // E40: the IMPL reached COMPLETE (not on a re-run of an IMPL that already was).
  if (!alreadyComplete) options.events?.emit(activityEvent('impl_complete', { slug, ...(options.program ? { program: options.program } : {}), details: `completion_date ${date}${options.force ? ' (forced)' : ''}` }));

  // 3. archive
  const archivedPath = location.archivedPath;
  await runStep('archive', false, async () => {
    if (location.archived) return { value: undefined, status: 'skipped', detail: `already archived at ${archivedPath}` };
    await mkdir(path.dirname(archivedPath), { recursive: true });
    await withFileLock(location.activePath, () => rename(location.activePath, archivedPath));
    return { value: undefined, detail: `moved to ${archivedPath}` };
  });

  // 4. E18 CONTEXT.md (advisory: a CONTEXT.md we cannot merge must not block the close)
  const contextPath = path.join(root, 'docs', 'CONTEXT.md');
  const context = await runStep('update_context', true, async () => {
    const { parsed: archivedParsed } = await loadImpl(archivedPath);
    const manifest = requireParsedManifest(archivedParsed.manifest, archivedPath);
    const result = await writeProjectContext(manifest, { implPath: archivedPath, projectRoot: root, date, fallbackDate: date, implDoc: toPosix(path.relative(root, archivedPath)) });
    return { value: result, status: result.updated ? 'success' : 'skipped', detail: result.updated ? `added ${result.new_entries.join(', ')}` : `${contextPath} already records ${slug}` };
  });

  // 5. E4a stale worktrees of this slug (never dirty or unmerged ones)
  const worktreesCleaned = (await runStep('clean_worktrees', true, async () => {
    const stale = await detectStaleWorktrees({ git, slug, ...(options.known?.worktrees ? { entries: options.known.worktrees } : {}) });
    if (stale.length === 0) return { value: 0, status: 'skipped', detail: 'no stale worktrees' };
    const bases = ['HEAD'];
    for (const name of ['main', 'master']) if (await git.branchExists(name)) bases.push(`refs/heads/${name}`);
    const cleanup = await cleanStaleWorktrees(stale, { git, gitAt, bases });
    for (const skipped of cleanup.skipped) warnings.push(`worktree ${skipped.worktree_path} kept: ${skipped.detail}`);
    for (const failure of cleanup.errors) warnings.push(`worktree ${failure.worktree}: ${failure.error}`);
    const kept = cleanup.skipped.length + cleanup.errors.length;
    return { value: cleanup.cleaned.length, status: kept > 0 ? 'warning' : 'success', detail: `removed ${cleanup.cleaned.length} of ${stale.length} stale worktree(s)${kept > 0 ? `, kept ${kept}` : ''}` };
  })) ?? 0;

  // 6. one commit: the original path's deletion, the archived manifest, CONTEXT.md
  let commitError: string | undefined;
  let commitSha: string | null = null;
  const commitPaths = [location.activePath, archivedPath, ...(existsSync(contextPath) ? [contextPath] : [])];
  if (options.commit !== false) {
    try {
      commitSha = (await runStep('commit', false, async () => {
        const sha = await commitClose(git, { root, paths: commitPaths, message: `chore: close-impl ${slug} [polywave:complete]` });
        return { value: sha, status: sha === null ? 'skipped' : 'success', detail: sha === null ? 'nothing to commit (already committed)' : `committed ${sha}` };
      })) ?? null;
    } catch (error) {
      commitError = errorText(error);
      warnings.push(`commit failed: ${commitError} (re-run close-impl to finish)`);
    }
  }

  // 7. the wave guard of this IMPL is no longer needed
  let activeWaveCleared = false;
  if (commitError === undefined) {
    activeWaveCleared =
      (await runStep('clear_active_wave', true, async () => {
        const cleared = await clearActiveWave(root, { slug });
        return { value: cleared, status: cleared ? 'success' : 'skipped', detail: cleared ? 'removed .polywave-state/active-wave' : `no active-wave marker for ${slug}` };
      })) ?? false;
  }

  return {
    marked: true,
    date,
    archived_path: archivedPath,
    context_updated: context !== undefined,
    context_path: contextPath,
    worktrees_cleaned: worktreesCleaned,
    committed: commitSha !== null,
    commit_sha: commitSha,
    ...(commitError !== undefined ? { commit_error: commitError } : {}),
    already_complete: alreadyComplete,
    active_wave_cleared: activeWaveCleared,
    warnings,
    steps,
    commit_paths: commitPaths,
  };
}

/**
 * Step 6 of several closes at once (closeImpl with `commit: false`): one commit of their
 * `commit_paths` on the root's branch. Null when there is nothing to commit (already committed).
 */
export function commitClosedImpls(git: Git, options: { root: string; paths: string[]; message: string }): Promise<string | null> {
  return commitClose(git, options);
}

/**
 * Stages the close (deletion of the original path when git tracks it, the archived manifest,
 * CONTEXT.md) and commits exactly those paths that changed against HEAD (`git commit --only`
 * semantics, so unrelated staged changes stay staged). Returns the commit SHA, or null when
 * there is nothing to commit (an earlier run committed it).
 */
async function commitClose(git: Git, options: { root: string; paths: string[]; message: string }): Promise<string | null> {
  const relative = [...new Set(options.paths.map((filePath) => toPosix(path.relative(options.root, filePath))))];
  const existing = relative.filter((item) => existsSync(path.join(options.root, item)));
  const missing = relative.filter((item) => !existing.includes(item));
  if (missing.length > 0) {
    // The original path after the rename: stage its deletion when the index still has it.
    const { stdout } = await git.run(['--literal-pathspecs', 'ls-files', '-z', '--', ...missing]);
    const tracked = stdout.split('\0').filter((item) => item !== '');
    if (tracked.length > 0) await git.run(['--literal-pathspecs', 'rm', '--cached', '--quiet', '--', ...tracked]);
  }
  // A git-ignored CONTEXT.md stays out of the commit (the user chose not to track it).
  const ignored = new Set(await git.checkIgnore(existing));
  const toAdd = existing.filter((item) => !ignored.has(item));
  if (toAdd.length > 0) await git.add(toAdd);
  const head = await git.tryRevParse('HEAD');
  const candidates = relative.filter((item) => !ignored.has(item));
  if (candidates.length === 0) return null;
  const listing = head === undefined
    ? await git.run(['--literal-pathspecs', 'ls-files', '-z', '--', ...candidates])
    : await git.run(['--literal-pathspecs', 'diff', '--cached', '--name-only', '-z', '--no-renames', head, '--', ...candidates]);
  const changed = listing.stdout.split('\0').filter((item) => item !== '');
  if (changed.length === 0) return null;
  return git.commit({ message: options.message, paths: changed, env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
}
