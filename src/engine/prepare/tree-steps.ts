import path from 'node:path';
import { runBaselineGates } from '../../gates/run-gates.js';
import type { StatusEntry } from '../../git/git-port.js';
import { isManifestScratchPath } from '../../store/atomic-file.js';
import { isSoloWave } from '../../protocol/waves.js';
import type { StepDefinition, StepOutcome } from '../step.js';
import { cleanStaleWorktrees, detectStaleWorktrees, type StaleCleanupResult } from '../stale-worktrees.js';
import { canonicalPath } from '../worktrees.js';
import { excludeLeftOut, splitBaselineFiles } from './baseline-files.js';
import { resolveBases } from './preflight-steps.js';
import { listForDetail, manifestOf, short, type PrepareContext, type RepoContext } from './context.js';

/** Paths under these prefixes belong to the worktrees living inside the main checkout, not to the user. */
const worktreePrefixes = ['.claude/worktrees/'];

function normalizeRelative(relativePath: string): string {
  return relativePath.replace(/\\/g, '/').replace(/^\.\//, '');
}

/**
 * Files Polywave itself writes in a repository and may commit on its own (`--commit-state`):
 * the IMPL file, anything under `docs/IMPL/` or `docs/PROGRAM/`, and `docs/CONTEXT.md`.
 * Runtime state under `.polywave-state/` is Polywave's too but never committed ({@link isRuntimeState}).
 */
export function isPolywaveOwned(relativePath: string, implRelative: string | undefined): boolean {
  const normalized = normalizeRelative(relativePath);
  if (implRelative !== undefined && normalized === implRelative) return true;
  return normalized.startsWith('docs/IMPL/') || normalized.startsWith('docs/PROGRAM/') || normalized === 'docs/CONTEXT.md';
}

/**
 * The orchestrator's runtime state (`.polywave-state/**`: the E38 gate cache, journals, merge logs,
 * tamper records): never committed (E38: the gate cache "is not committed to version control"),
 * never blocking. prepare-wave lists it in `info/exclude`; in a repository where that has not
 * happened yet (no `init`, a first prepare that stopped at its baseline gates), `git status`
 * still shows it and it must not end up in a state commit (issue 13).
 */
export function isRuntimeState(relativePath: string): boolean {
  const normalized = normalizeRelative(relativePath);
  return normalized.startsWith('.polywave-state/') || normalized === '.polywave-state';
}

function entryPaths(entry: StatusEntry): string[] {
  return entry.from !== undefined ? [entry.path, entry.from] : [entry.path];
}

/** Classification of a dirty working tree. */
export interface DirtyTree {
  /** User files: block the wave. */
  blocking: string[];
  /** Polywave's own files: committable with --commit-state. */
  owned: string[];
  /** The untracked files among `blocking` (--commit-baseline leaves secrets and setup copies of them out). */
  untracked: string[];
}

/** Splits `status()` (ignored files already excluded) into user files and Polywave's own. */
export async function classifyDirtyTree(repo: Pick<RepoContext, 'git' | 'root'> & Partial<RepoContext>, implPath: string): Promise<DirtyTree> {
  const entries = await repo.git.status();
  const implCanonical = await canonicalPath(implPath);
  const relative = path.relative(repo.root, implCanonical).split(path.sep).join('/');
  const implRelative = relative.startsWith('..') || path.isAbsolute(relative) ? undefined : relative;
  const blocking: string[] = [];
  const owned: string[] = [];
  const untracked: string[] = [];
  for (const entry of entries) {
    for (const file of entryPaths(entry)) {
      if (worktreePrefixes.some((prefix) => file.startsWith(prefix) || `${file}/` === prefix)) continue;
      if (file === '.claude/' || file === '.claude') continue;
      // A manifest write's temp file (or an old lock file) is ours and transient: never committed, never blocking.
      if (isManifestScratchPath(file)) continue;
      if (isRuntimeState(file)) continue;
      if (isPolywaveOwned(file, implRelative)) owned.push(file);
      else {
        blocking.push(file);
        if (entry.code === '??') untracked.push(file);
      }
    }
  }
  return { blocking: [...new Set(blocking)].sort(), owned: [...new Set(owned)].sort(), untracked: [...new Set(untracked)].sort() };
}

/**
 * The main checkout must be clean: user changes block the wave (listed); Polywave's own files
 * are committed with `--commit-state` (default on, as in Go; the commit passes the isolation
 * guard with POLYWAVE_ALLOW_MAIN_COMMIT=1; the repository's own hooks still run).
 */
export const workingDirStep: StepDefinition<PrepareContext> = {
  name: 'working_dir_check',
  async run(context) {
    const blocking: Array<{ repo: string; files: string[] }> = [];
    const committed: Array<{ repo: string; files: string[]; commit: string }> = [];
    const uncommitted: Array<{ repo: string; files: string[] }> = [];
    const leftOut: Array<{ repo: string; file: string; reason: string }> = [];
    for (const repo of context.repos) {
      const dirty = await classifyDirtyTree(repo, context.implPath);
      const name = repo.key || path.basename(repo.root);
      if (dirty.blocking.length > 0 && context.options.commitBaseline === true && !context.readOnly && !context.options.leaveStateUncommitted) {
        // Go --commit-baseline: the user's changes become the wave's baseline (one commit with Polywave's own files) —
        // except untracked secrets (.env, keys, credentials) and the setup's `copy` files, which stay out of history
        // and out of git's sight (info/exclude), so that finalize-wave does not take them for foreign changes.
        const split = await splitBaselineFiles({ git: repo.git, root: repo.root, primary: repo.primary, files: [...dirty.blocking, ...dirty.owned].sort(), untracked: new Set(dirty.untracked) });
        leftOut.push(...split.leftOut.map((item) => ({ repo: name, ...item })));
        await excludeLeftOut(repo.git, repo.root, split.leftOut.map((item) => item.file));
        const files = split.commit;
        if (files.length === 0) continue;
        await repo.git.add(files, { force: true });
        const commit = await repo.git.commit({ message: `chore: fix baseline for wave ${context.wave}`, paths: files, env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
        committed.push({ repo: name, files, commit });
        continue;
      }
      if (dirty.blocking.length > 0) {
        blocking.push({ repo: name, files: dirty.blocking });
        continue;
      }
      if (dirty.owned.length === 0) continue;
      if (context.options.leaveStateUncommitted) continue;
      if (context.options.commitState === false || context.readOnly) {
        uncommitted.push({ repo: name, files: dirty.owned });
        continue;
      }
      await repo.git.add(dirty.owned, { force: true });
      const commit = await repo.git.commit({
        message: `chore: update Polywave state for wave ${context.wave} preparation`,
        paths: dirty.owned,
        env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' },
      });
      committed.push({ repo: name, files: dirty.owned, commit });
    }
    if (blocking.length > 0) {
      const files = blocking.flatMap((item) => item.files.map((file) => (context.repos.length > 1 ? `${item.repo}:${file}` : file)));
      return {
        status: 'failed',
        detail: `working tree has uncommitted changes: ${listForDetail(files, 30)} — commit or stash them before preparing wave ${context.wave} (or pass --commit-baseline to commit them as the wave's baseline)`,
        data: { files, repos: blocking },
      };
    }
    if (uncommitted.length > 0) {
      const files = uncommitted.flatMap((item) => item.files);
      if (context.readOnly) return { status: 'warning', detail: `Polywave state files are uncommitted: ${listForDetail(files)} (prepare-wave --commit-state commits them)`, data: { files } };
      return { status: 'failed', detail: `Polywave state files are uncommitted: ${listForDetail(files, 30)} — commit them or run with --commit-state`, data: { files } };
    }
    const leftOutNote =
      leftOut.length > 0
        ? `; left out of the baseline commit (untracked, kept on disk, now in .git/info/exclude): ${listForDetail(leftOut.map((item) => `${context.repos.length > 1 ? `${item.repo}:` : ''}${item.file} (${item.reason})`), 20)}`
        : '';
    const leftOutData = leftOut.length > 0 ? { left_out: leftOut.map((item) => ({ ...(context.repos.length > 1 ? { repo: item.repo } : {}), file: item.file, reason: item.reason })) } : {};
    if (committed.length > 0) {
      // The worktrees branch from the commit that holds the state (unless E9 keeps the recorded base).
      const failure = await resolveBases(context);
      if (failure !== undefined) return { status: 'failed', detail: failure };
      return {
        status: leftOut.length > 0 ? 'warning' : 'success',
        detail: `committed Polywave state: ${listForDetail(committed.flatMap((item) => item.files))} (${committed.map((item) => short(item.commit)).join(', ')}); base ${short(context.primary.base)} from ${context.baseSource}${leftOutNote}`,
        data: { committed, ...leftOutData },
      };
    }
    if (leftOut.length > 0) return { status: 'warning', detail: `nothing to commit${leftOutNote}`, data: leftOutData };
    return { status: 'success', detail: 'working tree clean' };
  },
};

/** E4a: stale worktrees of this IMPL are cleaned first — never one holding work. Advisory. */
export const staleCleanupStep: StepDefinition<PrepareContext> = {
  name: 'stale_cleanup',
  advisory: true,
  async run(context) {
    const total: StaleCleanupResult = { detected: 0, cleaned: [], skipped: [], errors: [] };
    for (const repo of context.repos) {
      const entries = await repo.git.worktreeList();
      const stale = await detectStaleWorktrees({ git: repo.git, slug: context.slug, entries, currentWave: { slug: context.slug, wave: context.wave, base: repo.base! } });
      if (stale.length === 0) {
        repo.worktreeEntries = entries;
        continue;
      }
      const bases = [repo.base!, ...(repo.targetBranch ? [`refs/heads/${repo.targetBranch}`] : ['HEAD'])];
      const outcome = await cleanStaleWorktrees(stale, { git: repo.git, gitAt: context.gitAt, bases, dryRun: context.readOnly, ...(context.options.signal ? { signal: context.options.signal } : {}) });
      total.detected += outcome.detected;
      total.cleaned.push(...outcome.cleaned);
      total.skipped.push(...outcome.skipped);
      total.errors.push(...outcome.errors);
    }
    if (total.detected === 0) return { status: 'success', detail: 'no stale worktrees' };
    const parts: string[] = [];
    if (total.cleaned.length > 0) parts.push(`cleaned ${total.cleaned.length}: ${listForDetail(total.cleaned.map((item) => `${item.worktree_path} (${item.reason})`), 5)}`);
    if (total.skipped.length > 0) parts.push(`kept ${total.skipped.length}: ${listForDetail(total.skipped.map((item) => `${item.worktree_path} — ${item.detail}`), 5)}`);
    if (total.errors.length > 0) parts.push(`errors: ${listForDetail(total.errors.map((item) => `${item.worktree}: ${item.error}`), 5)}`);
    const status = total.skipped.length > 0 || total.errors.length > 0 ? 'warning' : 'success';
    return { status, detail: `E4a: ${parts.join('; ')}`, data: total };
  },
};

/**
 * E21A: the pre-merge gates must pass on the base before any worktree exists (E21B: in
 * parallel per their groups, through the E38 cache). Solo waves are exempt; no gates = no-op.
 * With a merge target that is not checked out here, the gates run in a temporary detached
 * worktree at the base (the user's checkout is never switched). Sandboxed gates run in a throwaway
 * checkout of that tree (X46-01: the earlier waves' merged code must not write the checkout).
 */
export const baselineGatesStep: StepDefinition<PrepareContext> = {
  name: 'baseline_gates',
  async run(context): Promise<StepOutcome> {
    const manifest = manifestOf(context);
    if (isSoloWave(manifest, context.wave)) return { status: 'skipped', detail: 'solo wave: exempt from E21A baseline verification' };
    const gates = (manifest.quality_gates?.gates ?? []).filter((gate) => (gate.timing ?? '').trim() === '' || gate.timing === 'pre-merge');
    if (gates.length === 0) return { status: 'skipped', detail: 'no pre-merge quality gates (E21A no-op)' };
    if (context.readOnly) return { status: 'skipped', detail: `${gates.length} baseline gate(s) not run by pre-wave-validate` };
    const primary = context.primary;
    let gateDir = primary.root;
    let temporary: string | undefined;
    const target = context.options.mergeTarget;
    if (target && target !== primary.currentBranch) {
      const holder = (await primary.git.worktreeList()).find((entry) => entry.branch === target && !entry.prunable);
      if (holder) gateDir = holder.path;
      else {
        temporary = path.join(primary.root, '.claude', 'worktrees', 'polywave', context.slug, `baseline-wave${context.wave}`);
        // A scratch checkout left by an interrupted run is ours: replace it.
        const leftover = (await primary.git.worktreeList()).find((entry) => path.resolve(entry.path) === temporary);
        if (leftover) await primary.git.worktreeRemove(temporary, { force: true });
        await primary.git.run(['worktree', 'add', '--quiet', '--detach', '--', temporary, primary.base!]);
        gateDir = temporary;
      }
    }
    try {
      const baseline = await runBaselineGates({
        repoDir: gateDir,
        gates,
        // Outside attack X46-01: from wave 2 on the main checkout holds the earlier waves' merged agent code, which these
        // gates run. In place, even sandboxed, it wrote the checkout's ignored files (`.envrc`, `node_modules/.bin/tsc`:
        // run later outside any sandbox) and read its ignored `.env` into the gate output kept in `.polywave-state`. As
        // for the post-merge gates and verify-build (X3 #18): a throwaway checkout of the tree, nothing written persists.
        throwawayCheckout: true,
        ...(context.options.noCache ? { noCache: true } : {}),
        ...(context.options.signal ? { signal: context.options.signal } : {}),
        ...(context.options.events ? { events: context.options.events } : {}),
        ...(context.options.env ? { env: context.options.env } : {}),
        ...(context.options.gateTimeoutMs ? { defaultTimeoutMs: context.options.gateTimeoutMs } : {}),
        now: context.now,
        configSearchDirs: [primary.root],
      });
      if (baseline.passed) {
        return { status: 'success', detail: `E21A: ${baseline.gate_results.length} baseline gate(s) passed${baseline.from_cache ? ' (cached)' : ''}`, data: baseline };
      }
      return {
        status: 'failed',
        detail: `baseline_verification_failed: ${baseline.failing.map((gate) => `${gate.type} \`${gate.command}\` exited ${gate.exit_code}`).join('; ')} — fix the codebase (or the gates) before wave ${context.wave}`,
        data: baseline,
      };
    } finally {
      if (temporary !== undefined) {
        // Our own scratch checkout: only gate outputs live there.
        await primary.git.worktreeRemove(temporary, { force: true }).catch(() => undefined);
      }
    }
  },
};
