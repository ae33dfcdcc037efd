import { chmod, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../git/git-port.js';
import { formatTimestamp } from '../protocol/freeze.js';
import { acquireKernelLock } from '../store/kernel-lock.js';
import { writeTextAtomic } from './prepare/write-text.js';

/**
 * E4 layer 0 / E43: the pre-commit isolation guard.
 *
 * Where it lives: git runs hooks from the *common* hooks directory for every worktree (a hook
 * written to `.git/worktrees/<name>/hooks/` — where the Go tool puts it — is never run), so the
 * guard goes into the effective hooks directory of the main checkout (`core.hooksPath`
 * honoured). An existing user hook is kept and still runs: a shell hook gets the guard block
 * inserted after its `#!` line (between markers, so re-installing replaces only our block); any
 * other hook (python, node, binary) is moved aside to `pre-commit.polywave-chained` and our hook
 * `exec`s it after the guard.
 *
 * When `core.hooksPath` points into the working tree (husky's `.husky`, a tracked `.githooks`),
 * writing there would dirty a tracked file and linked worktrees would run their own checked-out
 * copy anyway. Then the guard goes into `<common-dir>/polywave-hooks/`, which delegates every
 * hook the user has to the original directory OF THE MAIN CHECKOUT (never a linked worktree's
 * copy, which its agent writes: outside attack X8 #1), and each worktree (main included) points at
 * it with a per-worktree `core.hooksPath` (`extensions.worktreeConfig`).
 *
 * What it enforces (only while `.polywave-state/active-wave` exists in the main checkout, except
 * the agent-branch rule which always holds in an agent worktree):
 * - no commit on the wave's merge target branch (the marker's `target_branch=` lines);
 * - in an agent worktree (`…/.claude/worktrees/polywave/<slug>/wave<N>-agent-<ID>`), no commit on
 *   any branch but `polywave/<slug>/wave<N>-agent-<ID>`;
 * - `POLYWAVE_ALLOW_MAIN_COMMIT=1` lets the orchestrator through (the user hook still runs).
 */

/** First line of the guard block; also what `verify-hook-installed` looks for. */
export const guardBeginMarker = '# >>> polywave isolation guard >>>';
export const guardEndMarker = '# <<< polywave isolation guard <<<';
/** Text the Go `verify-hook-installed` accepts as "has logic"; our block contains both. */
export const guardSignature = 'Polywave pre-commit guard';
/** Name an existing non-shell hook is moved to. */
export const chainedHookName = 'pre-commit.polywave-chained';
/** Directory (in the common git dir) used when core.hooksPath points into the working tree. */
export const wrapperHooksDirName = 'polywave-hooks';
/** The active-wave marker, relative to the main checkout. */
export const activeWaveMarkerPath = '.polywave-state/active-wave';
/** The active-IMPL pointer read by the E42/E48 hooks, relative to the main checkout. */
export const activeImplPath = '.polywave-state/active-impl';

/** The guard block (POSIX sh, runs in a subshell so it never disturbs the hook around it). */
export function guardBlock(): string {
  return `${guardBeginMarker}
# ${guardSignature} (E4 layer 0, E43) v1 — managed by polywave; this block is rewritten on install.
# While a wave is active (.polywave-state/active-wave in the main checkout) it refuses commits to the
# wave's merge target; in an agent worktree it refuses commits on any branch but the agent's own.
# The orchestrator's own commits set POLYWAVE_ALLOW_MAIN_COMMIT=1.
if [ "\${POLYWAVE_ALLOW_MAIN_COMMIT:-}" != "1" ]; then
  (
    top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0
    branch=$(git symbolic-ref --quiet --short HEAD 2>/dev/null) || branch=""
    expected=""
    case "$top" in
      */.claude/worktrees/polywave/*/wave*-agent-*)
        slug=\${top%/*}; slug=\${slug##*/}
        expected="polywave/$slug/\${top##*/}" ;;
      *)
        if [ -f "$top/.polywave-worktree-env" ]; then
          expected=$(sed -n 's/^POLYWAVE_BRANCH=//p' "$top/.polywave-worktree-env" | head -n 1)
        fi ;;
    esac
    if [ -n "$expected" ]; then
      [ "$branch" = "$expected" ] && exit 0
      echo "[Polywave] commit refused (E4 layer 0): $top is the worktree of $expected; commits on '\${branch:-detached HEAD}' are not allowed here." >&2
      echo "[Polywave] switch back with: git -C \\"$top\\" switch $expected" >&2
      exit 1
    fi
    main=$(git worktree list --porcelain 2>/dev/null | sed -n '1s/^worktree //p')
    marker="$main/${activeWaveMarkerPath}"
    if [ -z "$main" ] || [ -z "$branch" ] || [ ! -f "$marker" ]; then exit 0; fi
    sed -n 's/^target_branch=//p' "$marker" | grep -qxF -e "$branch" || exit 0
    slug=$(awk -v b="$branch" '/^slug=/{s=substr($0,6)} /^target_branch=/{if (substr($0,15)==b) {print s; exit}}' "$marker")
    wave=$(awk -v b="$branch" '/^wave=/{w=substr($0,6)} /^target_branch=/{if (substr($0,15)==b) {print w; exit}}' "$marker")
    echo "[Polywave] commit refused (E4 layer 0): wave $wave of '$slug' is active and '$branch' is its merge target." >&2
    echo "[Polywave] wave agents commit in their own worktree: $main/.claude/worktrees/polywave/$slug/wave$wave-agent-<ID> (check with: polywave verify-isolation --branch polywave/$slug/wave$wave-agent-<ID>)." >&2
    echo "[Polywave] the orchestrator sets POLYWAVE_ALLOW_MAIN_COMMIT=1 for its own commits." >&2
    exit 1
  ) || exit 1
fi
${guardEndMarker}
`;
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** How the guard was installed. */
export type HookInstallMode = 'hooks-dir' | 'worktree-config';

/** Result of {@link installIsolationHook} (the `install-hooks` JSON). */
export interface HookInstallResult {
  /** The pre-commit file git runs (for `worktree-config`: the wrapper directory's). */
  hook_path: string;
  mode: HookInstallMode;
  /** created: no hook before; inserted: guard added to a user shell hook; chained: user hook moved aside and chained; updated: our block replaced; unchanged. */
  action: 'created' | 'inserted' | 'chained' | 'updated' | 'unchanged';
  /** The user hook our hook runs after the guard, when one exists. */
  chained_hook?: string;
  warnings: string[];
}

async function readIfExists(filePath: string): Promise<string | undefined> {
  try {
    return await readFile(filePath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function exists(filePath: string): Promise<boolean> {
  try {
    await stat(filePath);
    return true;
  } catch {
    return false;
  }
}

/** Writes a hook atomically with `mode` (executable by default). */
function writeExecutable(filePath: string, content: string, mode = 0o755): Promise<void> {
  return writeTextAtomic(filePath, content, { mode });
}

const shellShebang = /^#!\s*\S*\b(?:env\s+)?(?:sh|bash|dash|zsh|ksh|ash|mksh)\b/;

function replaceBlock(text: string): string | undefined {
  const begin = text.indexOf(guardBeginMarker);
  const endAt = text.indexOf(guardEndMarker, begin);
  if (begin < 0 || endAt < 0) return undefined;
  let end = endAt + guardEndMarker.length;
  if (text[end] === '\n') end += 1;
  return `${text.slice(0, begin)}${guardBlock()}${text.slice(end)}`;
}

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * Installs (or refreshes) the guard into one pre-commit file. Idempotent: a file holding our
 * markers gets its block replaced; nothing else of the user's hook changes.
 */
async function installIntoHookFile(hookPath: string): Promise<Pick<HookInstallResult, 'action' | 'chained_hook'>> {
  const current = await readIfExists(hookPath);
  const chainedPath = path.join(path.dirname(hookPath), chainedHookName);
  if (current === undefined) {
    await writeExecutable(hookPath, `#!/bin/sh\n${guardBlock()}`);
    return { action: 'created' };
  }
  const replaced = replaceBlock(current);
  if (replaced !== undefined) {
    const chained = (await exists(chainedPath)) && current.includes(chainedHookName) ? { chained_hook: chainedPath } : {};
    if (replaced === current) {
      const mode = (await stat(hookPath)).mode;
      if ((mode & 0o111) === 0) await chmod(hookPath, mode | 0o755);
      return { action: 'unchanged', ...chained };
    }
    await writeExecutable(hookPath, replaced, ((await stat(hookPath)).mode & 0o777) | 0o755);
    return { action: 'updated', ...chained };
  }
  const firstLine = current.split('\n', 1)[0] ?? '';
  if (!firstLine.startsWith('#!') || shellShebang.test(firstLine)) {
    // A shell hook: the guard goes first, the user's content stays exactly as it was.
    const next = firstLine.startsWith('#!') ? `${firstLine}\n${guardBlock()}${current.slice(firstLine.length + 1)}` : `${guardBlock()}${current}`;
    await writeExecutable(hookPath, next, ((await stat(hookPath)).mode & 0o777) | 0o755);
    return { action: 'inserted' };
  }
  // Another interpreter: keep the file byte for byte under a new name and chain to it.
  let target = chainedPath;
  for (let index = 2; await exists(target); index += 1) target = `${chainedPath}-${index}`;
  await rename(hookPath, target);
  const wrapper = `#!/bin/sh\n${guardBlock()}# polywave: the repository's own pre-commit hook, kept as ${path.basename(target)}\nexec "$(dirname "$0")/${path.basename(target)}" "$@"\n`;
  await writeExecutable(hookPath, wrapper);
  return { action: 'chained', chained_hook: target };
}

/** Git hook names (githooks(5)) for which a wrapper is written when the user's directory has one. */
const knownHookNames = [
  'applypatch-msg', 'pre-applypatch', 'post-applypatch', 'pre-commit', 'pre-merge-commit', 'prepare-commit-msg', 'commit-msg',
  'post-commit', 'pre-rebase', 'post-checkout', 'post-merge', 'pre-push', 'pre-receive', 'update', 'proc-receive', 'post-receive',
  'post-update', 'reference-transaction', 'push-to-checkout', 'pre-auto-gc', 'post-rewrite', 'sendemail-validate',
  'fsmonitor-watchman', 'p4-changelist', 'p4-prepare-changelist', 'p4-post-changelist', 'p4-pre-submit', 'post-index-change',
];

/** Where `core.hooksPath` leads, and whether the guard can be written there. */
export interface HooksLocation {
  /** Hooks directory as the main checkout resolves it. */
  directory: string;
  /** `core.hooksPath` as configured (undefined when unset). */
  configured?: string;
  /** True when the directory is inside the working tree (tracked hooks: husky, .githooks). */
  inTree: boolean;
  commonDir: string;
  mainRoot: string;
}

/** Resolves the effective hooks directory of the repository whose main checkout is `git.cwd`. */
export async function locateHooks(git: Git): Promise<HooksLocation> {
  const [mainRoot, commonDirRaw, configured, hooksDir] = await Promise.all([git.topLevel(), git.commonDir(), git.configGet('core.hooksPath'), git.hooksPath()]);
  const commonDir = path.resolve(mainRoot, commonDirRaw);
  const directory = path.resolve(mainRoot, hooksDir);
  const trimmed = configured?.trim();
  if (trimmed === undefined || trimmed === '') return { directory, inTree: false, commonDir, mainRoot };
  // A relative core.hooksPath resolves against each worktree's own root: in-tree by definition.
  const relative = !path.isAbsolute(trimmed) && !trimmed.startsWith('~');
  const inTree = relative || (isInside(mainRoot, directory) && !isInside(commonDir, directory));
  return { directory, configured: trimmed, inTree, commonDir, mainRoot };
}

/**
 * E4 layer 0: installs the guard where git runs it for the main checkout and every linked
 * worktree (see the file comment). Idempotent. In `worktree-config` mode the caller must also
 * call {@link attachWorktreeHooks} for every linked worktree it creates.
 */
export async function installIsolationHook(git: Git): Promise<HookInstallResult> {
  const location = await locateHooks(git);
  const warnings: string[] = [];
  if (!location.inTree) {
    if (location.configured !== undefined && !isInside(location.mainRoot, location.directory) && !isInside(location.commonDir, location.directory)) {
      warnings.push(`core.hooksPath points outside this repository (${location.directory}); the guard there is inert for repositories without an active wave`);
    }
    const hookPath = path.join(location.directory, 'pre-commit');
    const outcome = await installIntoHookFile(hookPath);
    return { hook_path: hookPath, mode: 'hooks-dir', ...outcome, warnings };
  }

  // core.hooksPath inside the working tree: wrapper directory + per-worktree core.hooksPath.
  const wrapperDir = path.join(location.commonDir, wrapperHooksDirName);
  const original = location.configured ?? '';
  // X8 #1: a relative core.hooksPath is read from the MAIN checkout (its path recorded here), never
  // from the worktree git runs in: an agent writes its own worktree, so `$(git rev-parse
  // --show-toplevel)/.husky/_/pre-commit` would be the agent's code, run wherever that worktree is committed.
  const mainCheckout = (await git.worktreeList()).find((entry) => !entry.bare)?.path ?? location.mainRoot;
  const originalDir = path.isAbsolute(original) ? shellQuote(original) : shellQuote(path.join(mainCheckout, original));
  let userHooks: string[];
  try {
    userHooks = (await readdir(location.directory)).filter((name) => knownHookNames.includes(name));
  } catch {
    userHooks = [];
  }
  for (const name of new Set([...userHooks, 'pre-commit'])) {
    const delegate = `hook=${originalDir}/${name}\nif [ -x "$hook" ]; then exec "$hook" "$@"; fi\nexit 0\n`;
    const content = name === 'pre-commit' ? `#!/bin/sh\n${guardBlock()}${delegate}` : `#!/bin/sh\n# polywave: delegates to the repository's core.hooksPath (${original})\n${delegate}`;
    await writeExecutable(path.join(wrapperDir, name), content);
  }
  await git.configSet('extensions.worktreeConfig', 'true');
  await git.configSet('core.hooksPath', wrapperDir, { worktree: true });
  warnings.push(`core.hooksPath (${original}) is inside the working tree; the guard lives in ${wrapperDir} and each worktree points there (extensions.worktreeConfig), delegating to the original hooks`);
  return { hook_path: path.join(wrapperDir, 'pre-commit'), mode: 'worktree-config', action: 'updated', warnings };
}

/** `worktree-config` mode: points a linked worktree at the wrapper hooks directory. */
export async function attachWorktreeHooks(worktreeGit: Git, install: HookInstallResult): Promise<void> {
  if (install.mode !== 'worktree-config') return;
  await worktreeGit.configSet('core.hooksPath', path.dirname(install.hook_path), { worktree: true });
}

/** The `verify-hook-installed` JSON. */
export interface HookVerification {
  valid: boolean;
  reason?: string;
  hook_path: string;
  executable: boolean;
  has_logic: boolean;
}

/** Checks one pre-commit file: exists, executable, holds the guard. */
export async function inspectHookFile(hookPath: string): Promise<HookVerification> {
  let mode: number;
  try {
    mode = (await stat(hookPath)).mode;
  } catch {
    return { valid: false, reason: `no pre-commit hook at ${hookPath}`, hook_path: hookPath, executable: false, has_logic: false };
  }
  const executable = (mode & 0o111) !== 0;
  const text = (await readIfExists(hookPath)) ?? '';
  const hasLogic = text.includes(guardBeginMarker) && text.includes(guardEndMarker);
  const reason = !executable ? 'pre-commit hook is not executable' : !hasLogic ? 'pre-commit hook does not contain the Polywave isolation guard' : undefined;
  return { valid: reason === undefined, ...(reason ? { reason } : {}), hook_path: hookPath, executable, has_logic: hasLogic };
}

/**
 * H10 / E4 layer 0: is the guard in the pre-commit hook git runs *in this worktree*? Resolved by
 * git itself (`rev-parse --git-path hooks/pre-commit`), so core.hooksPath and per-worktree config
 * count exactly as they do for a commit.
 */
export async function verifyHookInstalled(worktreeGit: Git): Promise<HookVerification> {
  const { stdout } = await worktreeGit.run(['rev-parse', '--path-format=absolute', '--git-path', 'hooks/pre-commit']);
  return inspectHookFile(stdout.trim());
}

/** What the active-wave marker says. */
export interface ActiveWave {
  slug: string;
  wave: number;
  target_branch: string;
  impl: string;
  base_commit?: string;
  started_at?: string;
}

function markerRecordLines(wave: ActiveWave, now: Date): string[] {
  return [
    `slug=${wave.slug}`,
    `wave=${wave.wave}`,
    `target_branch=${wave.target_branch}`,
    `impl=${wave.impl}`,
    ...(wave.base_commit ? [`base_commit=${wave.base_commit}`] : []),
    `started_at=${wave.started_at ?? formatTimestamp(now)}`,
  ];
}

/** The marker's records: each starts at a `slug=` line (the first is what one-wave readers see). */
function parseMarker(text: string): ActiveWave[] {
  const records: Array<Map<string, string>> = [];
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)=(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === 'slug' || records.length === 0) records.push(new Map());
    const record = records[records.length - 1]!;
    if (!record.has(match[1]!)) record.set(match[1]!, match[2]!);
  }
  return records.map((values) => {
    const base = values.get('base_commit');
    const started = values.get('started_at');
    return {
      slug: values.get('slug') ?? '',
      wave: Number(values.get('wave') ?? 0),
      target_branch: values.get('target_branch') ?? '',
      impl: values.get('impl') ?? '',
      ...(base ? { base_commit: base } : {}),
      ...(started ? { started_at: started } : {}),
    };
  });
}

/** Read-modify-write of the marker under a kernel lock (several IMPLs of a PROGRAM tier arm and disarm it at once). */
async function updateMarker(mainRoot: string, change: (records: ActiveWave[]) => ActiveWave[], now: Date): Promise<{ before: ActiveWave[]; after: ActiveWave[] }> {
  const filePath = path.join(mainRoot, activeWaveMarkerPath);
  await mkdir(path.dirname(filePath), { recursive: true });
  const lock = await acquireKernelLock(`${filePath}.lock`, { target: filePath });
  try {
    const text = await readIfExists(filePath);
    const before = text === undefined ? [] : parseMarker(text);
    const after = change(before);
    if (after.length === 0) {
      if (text !== undefined) await rm(filePath, { force: true });
    } else {
      const lines = [
        '# Polywave active wave (E4 layer 0): the pre-commit guard refuses commits to every target_branch while this file exists.',
        '# Written by prepare-wave, removed by finalize-wave (one record per active IMPL wave). Orchestrator bypass: POLYWAVE_ALLOW_MAIN_COMMIT=1.',
        ...after.flatMap((record) => markerRecordLines(record, now)),
      ];
      await writeTextAtomic(filePath, `${lines.join('\n')}\n`);
    }
    return { before, after };
  } finally {
    await lock.release();
  }
}

/**
 * Arms the guard for one IMPL's wave: its record in `.polywave-state/active-wave` in the main
 * checkout (replacing an earlier record of the same IMPL, keeping other IMPLs'). From now on the
 * guard refuses commits to `targetBranch`. finalize-wave removes the record ({@link clearActiveWave}).
 */
export async function writeActiveWave(mainRoot: string, wave: ActiveWave, now: Date): Promise<string> {
  const stamped = { ...wave, started_at: wave.started_at ?? formatTimestamp(now) };
  await updateMarker(mainRoot, (records) => [...records.filter((record) => record.slug !== wave.slug), stamped], now);
  return path.join(mainRoot, activeWaveMarkerPath);
}

/** Every active wave the marker records (one per IMPL); empty when none is active. */
export async function readActiveWaves(mainRoot: string): Promise<ActiveWave[]> {
  const text = await readIfExists(path.join(mainRoot, activeWaveMarkerPath));
  return text === undefined ? [] : parseMarker(text);
}

/** The first active wave the marker records; undefined when no wave is active. */
export async function readActiveWave(mainRoot: string): Promise<ActiveWave | undefined> {
  return (await readActiveWaves(mainRoot))[0];
}

/**
 * Disarms the guard for `slug`'s wave (its record only; the file goes with the last record), or
 * for every wave without `slug`. Returns whether a record was removed.
 */
export async function clearActiveWave(mainRoot: string, options: { slug?: string } = {}): Promise<boolean> {
  if ((await readIfExists(path.join(mainRoot, activeWaveMarkerPath))) === undefined) return false;
  const { before, after } = await updateMarker(mainRoot, (records) => (options.slug === undefined ? [] : records.filter((record) => record.slug !== options.slug)), new Date());
  return after.length < before.length;
}

/** Writes `.polywave-state/active-impl` (the IMPL path, read by the E42/E48 hooks). */
export async function writeActiveImpl(mainRoot: string, implPath: string): Promise<string> {
  const filePath = path.join(mainRoot, activeImplPath);
  await writeTextAtomic(filePath, `${implPath}\n`);
  return filePath;
}

/** The `verify-isolation` JSON. */
export interface IsolationCheck {
  ok: boolean;
  branch: string;
  errors?: string[];
}

/**
 * E4 layer 3 / E12: an agent's self-check — the working directory is a linked worktree under
 * `.claude/worktrees/`, its branch is `expectedBranch`, and git lists it as a worktree.
 */
export async function verifyIsolation(git: Git, expectedBranch: string): Promise<IsolationCheck> {
  const errors: string[] = [];
  let top = '';
  try {
    top = await git.topLevel();
  } catch (error) {
    return { ok: false, branch: expectedBranch, errors: [`not inside a git worktree: ${error instanceof Error ? error.message : String(error)}`] };
  }
  const normalized = top.split(path.sep).join('/');
  if (!normalized.includes('/.claude/worktrees/')) errors.push(`working directory ${top} is not an agent worktree (expected a path under .claude/worktrees/)`);
  const branch = (await git.currentBranch()) ?? '';
  if (branch !== expectedBranch) errors.push(`on branch ${branch === '' ? '(detached HEAD)' : branch}, expected ${expectedBranch}`);
  const listed = (await git.worktreeList()).some((entry) => samePath(entry.path, top));
  if (!listed) errors.push(`${top} is not listed by git worktree list`);
  return errors.length === 0 ? { ok: true, branch: expectedBranch } : { ok: false, branch: expectedBranch, errors };
}

function samePath(left: string, right: string): boolean {
  return path.resolve(left) === path.resolve(right);
}
