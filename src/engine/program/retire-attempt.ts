import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import type { YamlEdit } from '../../protocol/yaml/edit.js';
import { editImpl } from '../../store/manifest-file.js';
import { disposableLeftovers } from '../cleanup.js';
import { writeTextAtomic } from '../prepare/write-text.js';
import { locateRepository, tamperDirectory } from '../tamper-record.js';
import { canonicalPath } from '../worktrees.js';

/** What {@link retireEarlierAttempt} did (nothing when `retired` is empty and `refused` unset). */
export interface RetiredAttempt {
  /** `old → refs/polywave/retired/…` for every branch moved out of the way. */
  retired: string[];
  /** Worktrees removed (they were clean). */
  worktrees: string[];
  /** Where the prepare records, hooks snapshots and journals of the earlier attempt were moved. */
  kept?: string;
  /** Set when nothing (more) was done because a worktree of the earlier attempt holds uncommitted work, or a branch moved. */
  refused?: string;
  /** An earlier run's retirement, killed part way, was finished (P16-06). */
  resumed?: boolean;
}

/** polywave's own untracked support files in an agent or IMPL worktree (not the agent's work). */
const supportFile = /^(?:\.polywave-[^/]*|\.claude\/)/;

/** The IMPL doc fields an attempt's waves wrote (prepare-wave, the agents' reports, finalize-wave). */
const attemptFields = ['worktrees_created_at', 'frozen_contracts_hash', 'frozen_scaffolds_hash', 'completion_reports', 'stub_reports', 'wiring_validation_reports', 'integration_reports', 'merge_state'] as const;

/**
 * The retirement's intent record (P16-06), `<git common dir>/polywave/retiring/<impl>.json`: written (atomically) once
 * the earlier attempt was found and its worktrees found clean, before anything is changed; removed when all is done.
 * A run killed part way leaves it, and the next run finishes that retirement from it — with its stamp, its branches and
 * their tips, its worktrees — whatever is left of them (the IMPL branch already gone is no longer a sign of it).
 */
interface RetirementIntent {
  version: 1;
  program: string;
  tier: number;
  impl: string;
  stamp: string;
  started_at: string;
  pid: number;
  /** Every branch to keep under `refs/polywave/retired/<stamp>/` and remove, with its tip when the retirement began. */
  branches: Array<{ branch: string; sha: string }>;
  /** Their worktrees, clean when the retirement began (polywave's support files aside), with the commit checked out. */
  worktrees: Array<{ path: string; branch: string; head: string }>;
}

function intentPathOf(commonDir: string, implSlug: string): string {
  return path.join(tamperDirectory(commonDir), 'retiring', `${implSlug}.json`);
}

async function readIntent(file: string): Promise<RetirementIntent | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const intent = JSON.parse(text) as RetirementIntent;
    if (intent.version === 1 && typeof intent.stamp === 'string' && Array.isArray(intent.branches) && Array.isArray(intent.worktrees)) return intent;
  } catch {
    // (written atomically: a torn record cannot be; an unreadable one is refused below)
  }
  throw new Error(`${file}: unreadable record of an interrupted retirement of an earlier attempt — look at it (its branches are listed there), then remove it and re-run`);
}

/** The stamp a retirement gives its kept refs and records directory (an ISO time, `:` and `.` made `-`). */
const stampPattern = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

/**
 * P18-05: why a retirement record read back is not this retirement's (undefined when it is): another PROGRAM, tier or
 * IMPL; a stamp that is not a time (it names a directory: `../../x` moved the records outside the repository); a branch
 * that is neither the IMPL's IMPL branch of another tier nor one of its agent branches (`main`, a human's branch); a
 * worktree that is not one of the loop's for those branches, under the repository's `.claude/worktrees/polywave/` (a directory
 * elsewhere was removed with everything in it).
 */
async function foreignToRetirement(intent: RetirementIntent, repoDir: string, programSlug: string, tier: number, implSlug: string): Promise<string | undefined> {
  if (intent.program !== programSlug || intent.impl !== implSlug || intent.tier !== tier) return `it is for ${String(intent.impl)} of PROGRAM ${String(intent.program)} at tier ${String(intent.tier)}, not ${implSlug} of ${programSlug} at tier ${tier}`;
  if (!stampPattern.test(intent.stamp)) return `its stamp ${JSON.stringify(intent.stamp)} is not a time`;
  const escaped = implSlug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const implBranch = new RegExp(`^polywave/program/${programSlug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/tier(\\d+)-impl-${escaped}$`);
  const agentBranch = new RegExp(`^polywave/${escaped}/\\S+$`);
  const names = new Set<string>();
  for (const entry of intent.branches as unknown[]) {
    const { branch, sha } = (entry ?? {}) as { branch?: unknown; sha?: unknown };
    if (typeof branch !== 'string' || typeof sha !== 'string' || !/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(sha)) return `a branch entry ${JSON.stringify(entry)} is not a branch and its commit`;
    const match = implBranch.exec(branch);
    if (!(match !== null && Number(match[1]) !== tier) && !agentBranch.test(branch)) return `branch ${branch} is not an IMPL branch of ${implSlug} of another tier nor one of its agent branches`;
    names.add(branch);
  }
  const root = path.join(await canonicalPath(repoDir), '.claude', 'worktrees', 'polywave');
  for (const entry of intent.worktrees as unknown[]) {
    const { path: where, branch, head } = (entry ?? {}) as { path?: unknown; branch?: unknown; head?: unknown };
    if (typeof where !== 'string' || typeof branch !== 'string' || typeof head !== 'string' || !path.isAbsolute(where)) return `a worktree entry ${JSON.stringify(entry)} is not a worktree`;
    if (!names.has(branch)) return `worktree ${where} is on ${branch}, not on a branch of this retirement`;
    const resolved = existsSync(where) ? await canonicalPath(where) : path.resolve(where);
    const relative = path.relative(root, resolved);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return `worktree ${where} is not under ${path.relative(repoDir, root) || root}`;
  }
  return undefined;
}

/** Uncommitted work in a worktree, by `git status` rows (polywave's support files aside); undefined when git cannot read it. */
async function worktreeChanges(git: Git, worktreePath: string): Promise<string[] | undefined> {
  const status = await git.run(['-C', worktreePath, '--no-optional-locks', 'status', '--porcelain', '--untracked-files=all']).then(
    (out) => out.stdout,
    () => undefined,
  );
  if (status === undefined) return undefined;
  return status.split('\n').filter((line) => line.trim() !== '' && !supportFile.test(line.slice(3)));
}

/**
 * Removes one worktree of the intent, whatever a killed run left of it: still whole (removed when its only changes are
 * deletions — git's `worktree remove` deletes the files one by one, and the worktree was clean when the retirement began:
 * each deleted file is in the commit it had checked out, kept); registered without its `.git` file or no longer
 * registered (its directory removed only when every file left is byte-identical to that commit's, ignored, or polywave's);
 * gone (nothing to do). Anything else — a change made since, another branch checked out there — is refused.
 */
async function removeRetiredWorktree(git: Git, repoDir: string, worktree: RetirementIntent['worktrees'][number], step: (step: RetirementStep) => Promise<void>): Promise<{ removed: boolean; refused?: string }> {
  const relative = path.relative(repoDir, worktree.path);
  if (!existsSync(worktree.path)) return { removed: false };
  const canonical = await canonicalPath(worktree.path);
  let entry;
  for (const candidate of await git.worktreeList()) if ((await canonicalPath(candidate.path)) === canonical) entry = candidate;
  if (entry !== undefined && !entry.prunable) {
    if (entry.branch !== worktree.branch || entry.head !== worktree.head) {
      return { removed: false, refused: `the earlier attempt's worktree ${relative} is on ${entry.branch ?? 'a detached HEAD'} at ${entry.head.slice(0, 12)} now, not on ${worktree.branch} at ${worktree.head.slice(0, 12)} as when its retirement began: look at it, remove it yourself, then re-run` };
    }
    const changes = await worktreeChanges(git, worktree.path);
    const made = changes === undefined ? ['(unreadable)'] : changes.filter((line) => !line.startsWith(' D '));
    if (made.length > 0) {
      return { removed: false, refused: `the earlier attempt's worktree ${relative} (branch ${worktree.branch}) holds uncommitted changes made since its retirement began (${made.slice(0, 3).map((line) => line.slice(3)).join(', ')}${made.length > 3 ? ', …' : ''}): commit or remove them there, then re-run` };
    }
    await step({ kind: 'worktree-removing', path: worktree.path });
    await git.worktreeRemove(worktree.path, { force: true });
    return { removed: true };
  }
  // Its `.git` file gone (a removal killed after git deleted it), or no longer registered: what is left is judged file by file.
  const check = await disposableLeftovers(git, worktree.path, worktree.head);
  const foreign = check.foreign.filter((file) => !supportFile.test(file));
  if (foreign.length > 0) {
    return { removed: false, refused: `${relative} is what an interrupted removal of the earlier attempt's worktree (branch ${worktree.branch}) left, and it holds files that are not in ${worktree.head.slice(0, 12)} (${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}): look inside, remove it yourself, then re-run` };
  }
  await rm(worktree.path, { recursive: true, force: true });
  return { removed: true };
}

/** One step of a retirement, reported right after it changed something (`worktree-removing`: right before git removes a worktree). */
export type RetirementStep = { kind: 'intent' | 'worktree-removing' | 'worktree-removed' | 'kept-ref' | 'branch-deleted' | 'record-moved' | 'journal-moved' | 'doc-cleared' | 'done'; path?: string };

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
 *
 * P16-06: crash-resumable. An intent record (see {@link RetirementIntent}) is written before the first change; every step
 * after it can be done again (a branch kept, then removed only while it still is the recorded commit; a record moved only
 * while it is still there; a worktree finished whatever a killed `git worktree remove` left of it). A re-run finds the
 * record and finishes that retirement — before, a run killed after the IMPL branch was moved aside left the rest (agent
 * branches, records, journals, the doc's wave record) to the new tier's run, which stopped TAMPER_DETECTED, and one killed
 * inside a worktree's removal refused it as holding uncommitted work.
 */
export async function retireEarlierAttempt(options: { git: Git; repoDir: string; programSlug: string; tier: number; implSlug: string; implPath: string; now?: () => Date; onStep?: (step: RetirementStep) => Promise<void> }): Promise<RetiredAttempt> {
  const { git, programSlug, tier, implSlug } = options;
  const step = options.onStep ?? (async () => undefined);
  const escaped = implSlug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const { commonDir } = await locateRepository(git);
  const directory = tamperDirectory(commonDir);
  const intentPath = intentPathOf(commonDir, implSlug);
  let intent = await readIntent(intentPath);
  const resumed = intent !== undefined;
  if (intent !== undefined) {
    // P18-05: the record is read back as a list of branches to delete and directories to remove — only what this
    // retirement itself would retire is accepted (else nothing is done and the record is named).
    const foreign = await foreignToRetirement(intent, options.repoDir, programSlug, tier, implSlug);
    if (foreign !== undefined) {
      return { retired: [], worktrees: [], refused: `the record of an interrupted retirement ${path.relative(options.repoDir, intentPath)} is not one polywave wrote for this retirement (${foreign}): look at it (its branches are listed there), remove it, then re-run`, resumed };
    }
  }
  if (intent === undefined) {
    const listed = (await git.run(['for-each-ref', '--format=%(refname) %(objectname)', `refs/heads/polywave/program/${programSlug}/`, `refs/heads/polywave/${implSlug}/`])).stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [ref = '', sha = ''] = line.split(' ');
        return { ref, sha };
      });
    const implBranch = new RegExp(`^refs/heads/polywave/program/[^/]+/tier(\\d+)-impl-${escaped}$`);
    const earlier = listed.filter(({ ref }) => {
      const match = implBranch.exec(ref);
      return match !== null && Number(match[1]) !== tier;
    });
    if (earlier.length === 0) return { retired: [], worktrees: [] };
    const agentBranches = listed.filter(({ ref }) => ref.startsWith(`refs/heads/polywave/${implSlug}/`));
    const branches = [...earlier, ...agentBranches].map(({ ref, sha }) => ({ branch: ref.slice('refs/heads/'.length), sha }));

    // Their worktrees: removed only when clean (polywave's own support files aside).
    const worktrees = (await git.worktreeList()).filter((entry) => entry.branch !== undefined && branches.some((branch) => branch.branch === entry.branch));
    for (const entry of worktrees) {
      if (!existsSync(entry.path)) continue;
      const work = (await worktreeChanges(git, entry.path)) ?? ['?? (unreadable)'];
      if (work.length > 0) {
        return {
          retired: [],
          worktrees: [],
          refused: `the earlier attempt's worktree ${path.relative(options.repoDir, entry.path)} (branch ${entry.branch}) holds uncommitted changes (${work.slice(0, 3).map((line) => line.slice(3)).join(', ')}${work.length > 3 ? ', …' : ''}): commit or remove them there, then re-run (its branches are then kept under refs/polywave/retired/)`,
        };
      }
    }
    const now = (options.now ?? (() => new Date()))();
    intent = {
      version: 1,
      program: programSlug,
      tier,
      impl: implSlug,
      stamp: now.toISOString().replace(/[:.]/g, '-'),
      started_at: now.toISOString(),
      pid: process.pid,
      branches,
      worktrees: worktrees.filter((entry) => existsSync(entry.path)).map((entry) => ({ path: entry.path, branch: entry.branch!, head: entry.head })),
    };
    await writeTextAtomic(intentPath, `${JSON.stringify(intent, null, 2)}\n`);
    await step({ kind: 'intent', path: intentPath });
  }
  const { stamp } = intent;

  const removed: string[] = [];
  for (const worktree of intent.worktrees) {
    const outcome = await removeRetiredWorktree(git, options.repoDir, worktree, step);
    if (outcome.refused !== undefined) return { retired: [], worktrees: removed, refused: outcome.refused, resumed };
    if (outcome.removed) {
      removed.push(worktree.path);
      await step({ kind: 'worktree-removed', path: worktree.path });
    }
  }
  await git.worktreePrune().catch(() => undefined);

  const retired: string[] = [];
  for (const { branch, sha } of intent.branches) {
    const keep = `refs/polywave/retired/${stamp}/${branch}`;
    const tipOf = async (ref: string) => (await git.run(['rev-parse', '--verify', '--quiet', ref], { allowExitCodes: [1] })).stdout.trim();
    // Kept first, then removed only if it still is that commit (nothing lost if either step fails or the run is killed).
    const kept = await tipOf(keep);
    if (kept === '') {
      await git.run(['update-ref', keep, sha, '']);
      await step({ kind: 'kept-ref', path: keep });
    } else if (kept !== sha) {
      return { retired, worktrees: removed, refused: `${keep} is at ${kept.slice(0, 12)}, not at ${sha.slice(0, 12)} as the record of this retirement (${path.relative(options.repoDir, intentPath)}) says: look at both, then remove that record and re-run`, resumed };
    }
    const current = await tipOf(`refs/heads/${branch}`);
    if (current === sha) {
      await git.run(['update-ref', '-d', `refs/heads/${branch}`, sha]);
      await step({ kind: 'branch-deleted', path: branch });
    } else if (current !== '') {
      return {
        retired,
        worktrees: removed,
        refused: `the earlier attempt's branch ${branch} moved to ${current.slice(0, 12)} since its retirement began (it was ${sha.slice(0, 12)}, kept as ${keep}): move it aside (\`git branch -m ${branch} ${branch}-kept\`), then re-run`,
        resumed,
      };
    }
    retired.push(`${branch} → ${keep}`);
  }

  // prepare-wave's records and hooks snapshots of the IMPL's waves, and its journals: moved aside, not deleted.
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
  const cleared = await editImpl(options.implPath, (parsed) => {
    const manifest = parsed.manifest;
    if (!manifest) return { edits: [], outcome: false };
    const edits: YamlEdit[] = [];
    for (const field of attemptFields) if ((manifest as Record<string, unknown>)[field] !== undefined) edits.push({ path: [field], delete: true });
    (manifest.waves ?? []).forEach((wave, index) => {
      if (wave.base_commit !== undefined) edits.push({ path: ['waves', index, 'base_commit'], delete: true });
    });
    return { edits, outcome: edits.length > 0 };
  });
  if (cleared) await step({ kind: 'doc-cleared' });
  await unlink(intentPath).catch(() => undefined);
  await step({ kind: 'done' });
  return { retired, worktrees: removed, kept: path.relative(options.repoDir, keptDir), ...(resumed ? { resumed } : {}) };
}
