import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import type { YamlEdit } from '../../protocol/yaml/edit.js';
import { editImpl } from '../../store/manifest-file.js';
import { locateRepository, tamperDirectory } from '../tamper-record.js';

/** What {@link retireEarlierAttempt} did (nothing when `retired` is empty and `refused` unset). */
export interface RetiredAttempt {
  /** `old → refs/polywave/retired/…` for every branch moved out of the way. */
  retired: string[];
  /** Worktrees removed (they were clean). */
  worktrees: string[];
  /** Where the prepare records, hooks snapshots and journals of the earlier attempt were moved. */
  kept?: string;
  /** Set when nothing was done because a worktree of the earlier attempt holds uncommitted work. */
  refused?: string;
}

/** polywave's own untracked support files in an agent or IMPL worktree (not the agent's work). */
const supportFile = /^(?:\.polywave-[^/]*|\.claude\/)/;

/** The IMPL doc fields an attempt's waves wrote (prepare-wave, the agents' reports, finalize-wave). */
const attemptFields = ['worktrees_created_at', 'frozen_contracts_hash', 'frozen_scaffolds_hash', 'completion_reports', 'stub_reports', 'wiring_validation_reports', 'integration_reports', 'merge_state'] as const;

/**
 * Outside attack P13-18 (retirement left open by the P13 round): an IMPL that a tier's attempt left BLOCKED, then moved to
 * another tier by a re-plan (E34) and set REVIEWED again by a human, kept its earlier attempt — the IMPL branch of the
 * other tier (`polywave/program/<program>/tier<M>-impl-<impl>`), its worktree, the agent branches and worktrees of its
 * waves, prepare-wave's records (`tamper-<impl>-wave<N>.json`), the journals, and the doc's `base_commit`s and reports.
 * The new tier's run then took the old wave as begun and stopped TAMPER_DETECTED (main had moved on), and only
 * `--accept-changes` got past it. Retired here, before the tier makes the IMPL's new branch: no branch is deleted —
 * each is kept as `refs/polywave/retired/<stamp>/<branch>` (its commits stay reachable; `git branch <name> <ref>` brings
 * one back); a worktree is removed only when it holds no uncommitted work (else nothing is done and `refused` says
 * which); records and journals are moved under `<git common dir>/polywave/retired/<stamp>/`; the doc's attempt fields
 * are cleared so its waves start again from the new tier's base.
 *
 * Runs only when such a branch exists and the doc is REVIEWED (or SCOUT_COMPLETE) — the human's decision to run it again.
 */
/** One step of a retirement, reported after it changed something (before, for `worktree-removing`). */
export type RetirementStep = { kind: 'intent' | 'worktree-removing' | 'worktree-removed' | 'pruned' | 'kept-ref' | 'branch-deleted' | 'record-moved' | 'journal-moved' | 'doc-cleared' | 'done'; path?: string };

/**
 * Test hook for crash safety (P16-06): `POLYWAVE_TEST_CRASH_IN_RETIREMENT=<k>` SIGKILLs this process right after the k-th
 * step of an earlier attempt's retirement that changed something; `<k>:torn` right before git removes the k-th worktree,
 * after deleting every other file of it as a `git worktree remove` killed half way leaves it (`.git` kept); `<k>:torn-git`
 * the same with the worktree's `.git` file deleted too.
 */
export function retirementCrashHookFromEnv(env: Readonly<Record<string, string | undefined>>): ((step: RetirementStep) => Promise<void>) | undefined {
  const value = env.POLYWAVE_TEST_CRASH_IN_RETIREMENT?.trim();
  if (!value) return undefined;
  const match = /^(\d+)(?::(torn|torn-git))?$/.exec(value);
  if (!match) throw new Error(`POLYWAVE_TEST_CRASH_IN_RETIREMENT must be <k>, <k>:torn or <k>:torn-git, got "${value}"`);
  const wanted = Number(match[1]);
  const mode = match[2];
  let count = 0;
  return async (step) => {
    if ((mode === undefined) === (step.kind === 'worktree-removing')) return;
    count += 1;
    if (count !== wanted) return;
    if (mode !== undefined && step.path) {
      const files: string[] = [];
      const walk = async (directory: string): Promise<void> => {
        for (const entry of (await readdir(directory, { withFileTypes: true })).sort((left, right) => left.name.localeCompare(right.name))) {
          const full = path.join(directory, entry.name);
          if (entry.isDirectory()) await walk(full);
          else if (full !== path.join(step.path!, '.git')) files.push(full);
        }
      };
      await walk(step.path);
      for (const [index, file] of files.entries()) if (index % 2 === 0) await rm(file, { force: true });
      if (mode === 'torn-git') await rm(path.join(step.path, '.git'), { force: true });
    }
    process.kill(process.pid, 'SIGKILL');
  };
}

export async function retireEarlierAttempt(options: { git: Git; repoDir: string; programSlug: string; tier: number; implSlug: string; implPath: string; now?: () => Date; onStep?: (step: RetirementStep) => Promise<void> }): Promise<RetiredAttempt> {
  const step = options.onStep ?? (async () => undefined);
  const { git, programSlug, tier, implSlug } = options;
  const escaped = implSlug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const listed = (await git.run(['for-each-ref', '--format=%(refname)', `refs/heads/polywave/program/${programSlug}/`, `refs/heads/polywave/${implSlug}/`])).stdout.split('\n').filter(Boolean);
  const implBranch = new RegExp(`^refs/heads/polywave/program/[^/]+/tier(\\d+)-impl-${escaped}$`);
  const earlier = listed.filter((ref) => {
    const match = implBranch.exec(ref);
    return match !== null && Number(match[1]) !== tier;
  });
  if (earlier.length === 0) return { retired: [], worktrees: [] };
  const agentBranches = listed.filter((ref) => ref.startsWith(`refs/heads/polywave/${implSlug}/`));
  const branches = [...earlier, ...agentBranches].map((ref) => ref.slice('refs/heads/'.length));

  // Their worktrees: removed only when clean (polywave's own support files aside).
  const worktrees = (await git.worktreeList()).filter((entry) => entry.branch !== undefined && branches.includes(entry.branch));
  for (const entry of worktrees) {
    if (!existsSync(entry.path)) continue;
    const status = (await git.run(['-C', entry.path, 'status', '--porcelain', '--untracked-files=all']).catch(() => ({ stdout: '?? (unreadable)' }))).stdout;
    const work = status.split('\n').filter((line) => line.trim() !== '' && !supportFile.test(line.slice(3)));
    if (work.length > 0) {
      return {
        retired: [],
        worktrees: [],
        refused: `the earlier attempt's worktree ${path.relative(options.repoDir, entry.path)} (branch ${entry.branch}) holds uncommitted changes (${work.slice(0, 3).map((line) => line.slice(3)).join(', ')}${work.length > 3 ? ', …' : ''}): commit or remove them there, then re-run (its branches are then kept under refs/polywave/retired/)`,
      };
    }
  }
  const stamp = (options.now ?? (() => new Date()))().toISOString().replace(/[:.]/g, '-');
  const removed: string[] = [];
  for (const entry of worktrees) {
    if (existsSync(entry.path)) {
      await step({ kind: 'worktree-removing', path: entry.path });
      await git.worktreeRemove(entry.path, { force: true });
      await step({ kind: 'worktree-removed', path: entry.path });
    }
    removed.push(entry.path);
  }
  await git.worktreePrune().catch(() => undefined);
  await step({ kind: 'pruned' });
  const retired: string[] = [];
  for (const branch of branches) {
    const sha = (await git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { allowExitCodes: [1] })).stdout.trim();
    if (sha === '') continue;
    const keep = `refs/polywave/retired/${stamp}/${branch}`;
    // Kept first, then removed only if it still is that commit (nothing lost if either step fails).
    await git.run(['update-ref', keep, sha, '']);
    await step({ kind: 'kept-ref', path: keep });
    await git.run(['update-ref', '-d', `refs/heads/${branch}`, sha]);
    await step({ kind: 'branch-deleted', path: branch });
    retired.push(`${branch} → ${keep}`);
  }

  // prepare-wave's records and hooks snapshots of the IMPL's waves, and its journals: moved aside, not deleted.
  const { commonDir } = await locateRepository(git);
  const directory = tamperDirectory(commonDir);
  const keptDir = path.join(directory, 'retired', stamp);
  const records = (await readdir(directory).catch(() => [] as string[])).filter((name) => new RegExp(`^(?:tamper-${escaped}-wave\\d+\\.json|hooks-${escaped}-wave\\d+)$`).test(name));
  const journal = path.join(options.repoDir, '.polywave-state', implSlug);
  if (records.length > 0 || existsSync(journal)) await mkdir(keptDir, { recursive: true });
  for (const name of records) {
    await rename(path.join(directory, name), path.join(keptDir, name));
    await step({ kind: 'record-moved', path: name });
  }
  if (existsSync(journal)) {
    await mkdir(path.join(keptDir, 'polywave-state'), { recursive: true });
    await rename(journal, path.join(keptDir, 'polywave-state', implSlug));
    await step({ kind: 'journal-moved' });
  }

  // The doc's record of the attempt: its waves start again from this tier's base.
  await editImpl(options.implPath, (parsed) => {
    const manifest = parsed.manifest;
    if (!manifest) return { edits: [], outcome: undefined };
    const edits: YamlEdit[] = [];
    for (const field of attemptFields) if ((manifest as Record<string, unknown>)[field] !== undefined) edits.push({ path: [field], delete: true });
    (manifest.waves ?? []).forEach((wave, index) => {
      if (wave.base_commit !== undefined) edits.push({ path: ['waves', index, 'base_commit'], delete: true });
    });
    return { edits, outcome: undefined };
  });
  await step({ kind: 'doc-cleared' });
  return { retired, worktrees: removed, kept: path.relative(options.repoDir, keptDir) };
}
