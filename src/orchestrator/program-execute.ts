/**
 * The PROGRAM tier loop (E28–E34, P1–P5): `polywave program-execute <program>` and `polywave run`
 * given a PROGRAM manifest.
 *
 * For each tier, in order, resumable from the manifest and git at any point:
 * 1. P1 across the tier's IMPLs; E28A partition (needs a Scout / pre-existing / held) and import
 *    validation of the pre-existing ones (file on disk, state consistent, P1, P2) — BLOCKED with
 *    the exact reason otherwise.
 * 2. E31: Scouts for every pending IMPL of the tier at once, each given the PROGRAM (frozen
 *    contracts are immutable inputs); then one review of the whole tier (skipped by `--auto`).
 * 3. E28B/P5: one long-lived IMPL branch + worktree per IMPL; every IMPL of the tier runs its
 *    waves **concurrently**, merging into its own IMPL branch, under one global agent budget.
 * 4. finalize-tier: IMPL branches merged into the main line in order, the tier gate (E29), the
 *    IMPLs closed; E30 contracts frozen; E33 advance (`--auto`) or pause for confirmation.
 *    A failed gate → BLOCKED; with `--auto` (or `replan`) the Planner revises the PROGRAM (E34),
 *    which then waits for approval.
 * PROGRAM_REVIEWED — the human approval of the plan — is never skipped, not even by `--auto`.
 * The PROGRAM manifest is updated (locked, format-preserving) on every IMPL change (E32/P4).
 */
import { prewarmSandboxStatus } from '../sandbox/sandbox-status.js';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { addUsage, emptyUsage, type AgentBackend, type AgentUsage } from '../agents/contract.js';
import type { Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { labelEvents, type EventBus } from '../engine/events.js';
import type { BudgetTracker } from '../agents/budget.js';
import type { Dispatcher } from '../dispatch/dispatcher.js';
import { activityEvent } from '../protocol/e40.js';
import { freezeContracts, setProgramImplStatus, setProgramImplStatuses, setProgramState } from '../engine/program/program-edits.js';
import { createProgramWorktrees } from '../engine/program/tier-worktrees.js';
import { canonicalPath, removeKilledWorktreeAdds } from '../engine/worktrees.js';
import { finalizeTier, type FinalizeTierResult } from '../engine/program/finalize-tier.js';
import { freezesAtTier } from '../engine/program/freeze-contracts.js';
import { frozenContractChanges } from '../engine/program/tier-gate.js';
import { isBlocking } from '../errors/finding.js';
import { checkImplConflicts } from '../protocol/impl-conflicts.js';
import { branchName, programBranchName, programWorktreePath } from '../protocol/names.js';
import { isWaveComplete, isWaveFinished } from '../protocol/waves.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { normalizeRelativePath } from '../protocol/program/program-rules.js';
import { validateImpl } from '../protocol/validate-impl.js';
import { writeFileAtomic } from '../store/atomic-file.js';
import { readTextFile } from '../store/read-text.js';
import { parseProgram } from '../protocol/parse-program.js';
import { formatProgramStatus, isHeldForHuman, partitionImplsByStatus, programStatus, reviewedOrLaterStates, validateProgram, validateProgramImport } from '../protocol/program/index.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import type { ProgramImpl, ProgramManifest, ProgramState } from '../protocol/schema/program-schema.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { offloadGitSpawns } from '../git/spawn-server.js';
import { removeStaleIndexLock } from '../git/stale-index-lock.js';
import { editImpl, loadManifest } from '../store/manifest-file.js';
import { readProgramImplDocs, waveProgressOf } from '../store/program-impl-docs.js';
import { runAutopilot, type AutopilotResult } from './autopilot.js';
import { createAgentSlots } from './run-wave.js';

/** POLYWAVE_PORTs reserved per IMPL of a tier (agent i of IMPL k: base_port + k × stride + i). */
export const tierPortStride = 100;

/** What the loop asks a human (unless `--auto`). */
export type ProgramQuestion =
  | { kind: 'tier-review'; tier: number; impls: Array<{ slug: string; impl_path: string; title: string }>; stale_briefs: StaleBrief[] }
  | { kind: 'tier-advance'; tier: number; next_tier: number; frozen: string[] };

/** Options of {@link executeProgram}. */
export interface ProgramExecuteOptions {
  /** Absolute path of the PROGRAM manifest. */
  programPath: string;
  /** The repository root. */
  repoDir: string;
  env: Readonly<Record<string, string | undefined>>;
  /** E33: no human gate between tiers and before a tier's waves (never before PROGRAM_REVIEWED). */
  auto?: boolean;
  /**
   * Asked at the tier review and before advancing (unless `auto`); false pauses the loop. At the tier review the answer
   * may reject IMPLs instead (E28A: "the reviewer … can reject any IMPL"): `{ reject: [slugs] }`.
   */
  approve?: (question: ProgramQuestion) => Promise<boolean | { reject: string[] }>;
  /** Default model for every role; `models.<role>` overrides it. */
  model?: string;
  models?: Partial<Record<'scout' | 'critic' | 'scaffold' | 'wave' | 'integration' | 'planner', string>>;
  /** Test injection per role. */
  backends?: Partial<Record<'scout' | 'critic' | 'scaffold' | 'integration' | 'planner', AgentBackend>>;
  /** Agents running at once across all IMPLs of a tier (default 8). */
  concurrency?: number;
  agentTimeoutMs?: number;
  maxTurns?: number;
  noCritic?: boolean;
  /** After a failed tier gate, re-engage the Planner (E34) even without `auto`. */
  replan?: boolean;
  unsafeNoSandbox?: boolean;
  /** Takes the run lock of each IMPL while the tier runs it (the CLI's one-run-per-plan lock); returns its release. */
  lockPlan?: (implPath: string) => () => void;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  /** Progress lines for the terminal (tier progress as E32 shows it). */
  onProgress?: (line: string) => void;
  retryBackoffMs?: number;
  /** Cost budgets (issue 14), shared by every IMPL and wave of the run. */
  budget?: BudgetTracker;
  /**
   * Issue 17: where the wave agents of every IMPL of a tier run (`polywave worker`s through BullMQ on
   * Redis); one dispatcher for the whole run, its jobs named by IMPL slug. Scouts, the Planner, merges
   * and tier gates stay here. Absent: in this process.
   */
  dispatcher?: Dispatcher;
  /** `--accept-changes`: the changes the tamper check of a tier's prepared waves reports are the caller's own (a fix committed on main while the tier was BLOCKED). */
  acceptChanges?: boolean;
}

/**
 * E28A stale-brief check: a pre-existing (imported, `reviewed`) IMPL of tier N ≥ 2 whose agent
 * tasks name a file, or a symbol exported from a file, that tier N−1 changed.
 */
export interface StaleBrief {
  impl: string;
  agent: string;
  /** The files or symbols of tier N−1's changes that the task names. */
  references: string[];
}

/** One IMPL's run inside a tier. */
export interface ProgramImplRun {
  slug: string;
  impl_path: string;
  branch: string;
  status: 'complete' | 'skipped' | 'failed' | 'paused';
  detail: string;
  waves: number;
  duration_ms: number;
}

/** One tier of the run. */
export interface ProgramTierRun {
  tier: number;
  status: 'complete' | 'skipped' | 'blocked' | 'paused' | 'failed';
  detail: string;
  scouted: string[];
  impls: ProgramImplRun[];
  /** finalize-tier's result as it printed it. */
  finalize?: unknown;
  frozen?: string[];
  duration_ms: number;
}

/** The result of {@link executeProgram} (printed as JSON by the CLI). */
export interface ProgramExecuteResult {
  program_path: string;
  program_slug: string;
  state: string;
  success: boolean;
  /** Why the loop stopped before COMPLETE (a human must act), when it did. */
  stopped?: string;
  /** What to do next after a stop: the command(s) that move the PROGRAM on from where it is. */
  next?: string;
  /** True when the stop was a refusal found before anything ran: the PROGRAM manifest was not changed. */
  refused?: boolean;
  /**
   * True when the run was interrupted (SIGINT/SIGTERM): nothing was judged failed — no BLOCKED, no
   * Planner — and the PROGRAM stays as a kill there leaves it: re-running the command resumes it.
   */
  interrupted?: boolean;
  tiers: ProgramTierRun[];
  usage: AgentUsage;
  duration_ms: number;
}

/** States in which the plan has been approved (PROGRAM_REVIEWED or later). */
const approvedStates = new Set<string>(['REVIEWED', 'SCAFFOLD', 'TIER_EXECUTING', 'TIER_VERIFIED']);

async function readProgram(programPath: string): Promise<ProgramManifest> {
  const { parsed } = await loadManifest(programPath, parseProgram);
  if (!parsed.manifest) {
    const first = parsed.findings[0];
    throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: `${programPath}: ${first?.message ?? 'not a usable PROGRAM manifest'}` });
  }
  return parsed.manifest as ProgramManifest;
}

/** The tier's IMPL entries in the order the tier lists them. */
function tierImpls(manifest: ProgramManifest, tier: number): ProgramImpl[] {
  const listed = manifest.tiers.find((candidate) => candidate.number === tier)?.impls ?? [];
  return [...new Set(listed)].flatMap((slug) => manifest.impls.find((impl) => impl.slug === slug) ?? []);
}

/** A failure caused by the interruption itself: a git process killed by the same Ctrl-C (the terminal signals the whole process group). */
function killedByInterrupt(error: unknown): boolean {
  return /killed by SIGINT\b|interrupted \(SIG/.test(error instanceof Error ? error.message : String(error));
}

/**
 * The PROGRAM's plan (outside round X61-05): the manifest without what the loop itself writes while it runs — its
 * state, `updated`, the completion block and date, the IMPLs' statuses and the contracts' freeze records. A change
 * of anything else during a run (the tier gates, the tiers, a contract's definition) is not the loop's.
 */
export function programPlanFingerprint(manifest: ProgramManifest): string {
  const { state: _state, updated: _updated, completion: _completion, completion_date: _date, ...plan } = manifest;
  return JSON.stringify({
    ...plan,
    impls: manifest.impls.map(({ status: _status, ...impl }) => impl),
    program_contracts: manifest.program_contracts.map(({ frozen_at_tier: _tier, frozen_commit: _commit, frozen_blob: _blob, ...contract }) => contract),
  });
}

/** Runs (or resumes) a PROGRAM to COMPLETE, or until a human must act. */
export async function executeProgram(options: ProgramExecuteOptions): Promise<ProgramExecuteResult> {
  // The sandbox probe runs while the first steps do (issue 12's bench:program: ~0.3 s off the tier's start).
  if (!options.unsafeNoSandbox) prewarmSandboxStatus(options.env);
  const started = performance.now();
  const state: { result?: ProgramExecuteResult } = {};
  try {
    return await executeProgramSteps(options, state);
  } catch (error) {
    // A process of the run killed by the Ctrl-C (a git command, the gate) fails the step it was in: an
    // interruption, not an error — the PROGRAM is left as a kill there leaves it, and a re-run resumes.
    // The process's own signal handler may run just after the killed child's exit was seen: a moment for it.
    if (options.signal !== undefined && !options.signal.aborted && /killed by SIG|aborted/i.test(error instanceof Error ? error.message : String(error))) await new Promise((resolve) => setTimeout(resolve, 100));
    if (options.signal?.aborted !== true && !killedByInterrupt(error)) throw error;
    const programPath = path.resolve(options.repoDir, options.programPath);
    const result = state.result ?? { program_path: programPath, program_slug: '', state: '', success: false, tiers: [], usage: emptyUsage(), duration_ms: 0 };
    result.success = false;
    result.interrupted = true;
    result.stopped = `interrupted — re-run to resume (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
    result.next = `re-run \`polywave program-execute ${path.relative(path.resolve(options.repoDir), programPath)}\` to resume`;
    options.onProgress?.(`stopped: ${result.stopped}`);
    const latest = await readProgram(programPath).catch(() => undefined);
    if (latest) result.state = latest.state ?? result.state;
    result.duration_ms = Math.round(performance.now() - started);
    return result;
  }
}

async function executeProgramSteps(options: ProgramExecuteOptions, holder: { result?: ProgramExecuteResult }): Promise<ProgramExecuteResult> {
  const started = performance.now();
  // The tier's IMPLs run at once in this process: their git commands are started by a small
  // helper process, not by this (large) one's main thread, on which they would queue.
  offloadGitSpawns();
  const programPath = path.resolve(options.repoDir, options.programPath);
  const repoDir = path.resolve(options.repoDir);
  const progress = (line: string) => options.onProgress?.(line);
  const usage = emptyUsage();
  const result: ProgramExecuteResult = { program_path: programPath, program_slug: '', state: '', success: false, tiers: [], usage, duration_ms: 0 };
  holder.result = result;
  /** SIGINT/SIGTERM: what fails from here on failed because of the stop, and is not judged. */
  const interrupted = () => options.signal?.aborted === true;
  const finish = async (): Promise<ProgramExecuteResult> => {
    const latest = await readProgram(programPath).catch(() => undefined);
    if (latest) result.state = latest.state ?? result.state;
    result.duration_ms = Math.round(performance.now() - started);
    return result;
  };
  const relativeProgram = path.relative(repoDir, programPath);
  /**
   * P15-06: the loop's own status writes (`reviewed`, `scouting`, `executing`) never overwrite a human's hold — an IMPL
   * set `blocked` after the loop read the PROGRAM (update-program-impl accepts it while every IMPL of a starting tier is
   * still `pending`): the write throws PROGRAM_IMPL_HELD instead, and the tier stops held for a human.
   */
  const setLoopStatuses = (slugs: readonly string[], status: 'reviewed' | 'scouting' | 'executing') =>
    setProgramImplStatuses(programPath, slugs, status, (current) => {
      // (P16-24: every status the start check holds for a human — `not-suitable` too, which was overwritten)
      const held = current.impls.filter((impl) => slugs.includes(impl.slug ?? '') && isHeldForHuman(impl.status)).map((impl) => `${impl.slug ?? ''} (${impl.status})`);
      if (held.length > 0) throw new PolywaveError({ code: 'PROGRAM_IMPL_HELD', exitCode: 1, message: `IMPL(s) held for a human: ${held.join(', ')} (set while this run started the tier; not overwritten)` });
    });
  const heldError = (error: unknown): string | undefined => (error instanceof PolywaveError && error.code === 'PROGRAM_IMPL_HELD' ? error.message : undefined);
  /** The next step from the PROGRAM's state after a stop (a re-run alone only repeats a BLOCKED or REPLANNING stop). */
  const nextStep = async (): Promise<string> => {
    const latest = await readProgram(programPath).catch(() => undefined);
    const current = (latest?.state ?? '').trim();
    const rerun = `polywave program-execute ${relativeProgram}`;
    if (current === 'BLOCKED') {
      const blocked = (latest?.impls ?? []).filter((impl) => impl.status === 'blocked').map((impl) => impl.slug ?? '');
      // A prepared wave refused for changes made since (a fix committed on main meanwhile): the re-run can take them as the caller's.
      const resume = `\`polywave update-program-state ${relativeProgram} --state TIER_EXECUTING\`${blocked.length > 0 ? `, ${blocked.map((slug) => `\`polywave update-program-impl ${relativeProgram} --impl ${slug} --status reviewed\``).join(', ')}` : ''}`;
      // finalize-wave's check of the main checkout: such changes are never accepted, only committed or removed.
      if (/uncommitted changes that are not the orchestrator's/.test(result.stopped ?? '')) return `commit or remove the uncommitted changes named above (they are not the orchestrator's), then ${resume} and re-run \`${rerun}\``;
      if (/TAMPER_DETECTED/.test(result.stopped ?? '')) return `look at the changes named above: if they are yours and intended (a fix you committed), ${resume} and re-run \`${rerun} --accept-changes\`; if not, undo them first and re-run without it`;
      return `fix the cause above, then ${resume} and re-run \`${rerun}\`; or re-plan: \`polywave program-replan ${relativeProgram} --reason "…"\``;
    }
    if (current === 'REPLANNING') return `review the revised ${relativeProgram}, approve it with \`polywave update-program-state ${relativeProgram} --state REVIEWED\`, then re-run \`${rerun}\``;
    return `re-run \`${rerun}\` to resume`;
  };
  const mainGit = createGit(repoDir, { env: options.env as NodeJS.ProcessEnv });
  /** The plan as this run started it (see {@link programPlanFingerprint}); set once the PROGRAM is known to run. */
  const planAt: { start?: string } = {};
  /**
   * Why the plan is no longer the one this run started with (`changed`), and the manifest as read. The plan is the
   * one a human approved (PROGRAM_REVIEWED, E28): the tier loop advances (E33) only on it.
   */
  const planCheck = async (): Promise<{ changed?: string; now?: ProgramManifest }> => {
    const now = await readProgram(programPath).catch(() => undefined);
    if (planAt.start === undefined || now === undefined || programPlanFingerprint(now) === planAt.start) return { now };
    return { now, changed: `PROGRAM_PLAN_CHANGED: the plan in ${relativeProgram} (its tiers, tier gates, contracts or IMPLs) was changed during this run, not by polywave` };
  };
  const stop = async (reason: string, state?: ProgramState, force = false): Promise<ProgramExecuteResult> => {
    if (interrupted()) {
      // A user's stop: no BLOCKED, no commit — the PROGRAM as a kill at this point leaves it (resumable).
      result.interrupted = true;
      result.stopped = `interrupted — re-run to resume (${reason})`;
      result.next = `re-run \`polywave program-execute ${relativeProgram}\` to resume`;
      progress(`stopped: ${result.stopped}`);
      return finish();
    }
    // X61-05: a plan edited during the run is never committed under the loop's state commit (then vouched for in
    // the tier's tamper records): the stop commits nothing, and the human reviews the edit first.
    const check = state ? await planCheck() : {};
    const edited = check.changed;
    if (edited) {
      result.stopped = reason.includes('PROGRAM_PLAN_CHANGED') ? reason : `${reason}; ${edited}`;
      result.next = `review the change (\`git diff -- ${relativeProgram}\`) and undo what is not yours — nothing was committed; re-running takes the plan in the file as the one to run`;
      progress(`stopped: ${result.stopped}`);
      return finish();
    }
    if (state) {
      // Only through a legal transition (a failure while the tier executes: TIER_EXECUTING → BLOCKED),
      // and committed: the stop must not leave the main checkout dirty with the PROGRAM's state.
      const moved = await setProgramState(programPath, state, { force }).then(() => true, (error: unknown) => {
        progress(`the PROGRAM state stays as it is: ${error instanceof Error ? error.message : String(error)}`);
        return false;
      });
      if (moved) {
        const { commitManifest } = await import('./run-critic.js');
        const head = async () => ({ ref: await mainGit.run(['symbolic-ref', '-q', 'HEAD'], { allowExitCodes: [1] }).then((out) => out.stdout.trim(), () => ''), commit: await mainGit.tryRevParse('HEAD') });
        const before = await head().catch(() => undefined);
        const commit = await commitManifest(repoDir, programPath, `chore: program ${result.program_slug || path.basename(programPath)} ${state}: ${reason.slice(0, 120)}`, options.env).catch((error: unknown) => {
          progress(`warning: the PROGRAM manifest was not committed: ${error instanceof Error ? error.message : String(error)}`);
          return undefined;
        });
        // That commit moved main under the tier's prepared IMPL waves: it is the loop's own, not a tamper —
        // their records follow it, so the resumed waves are not refused for it (X60-01).
        if (commit && before?.ref && before.commit) {
          const slugs = (check.now?.impls ?? []).map((impl) => impl.slug ?? '').filter(Boolean);
          const { vouchForRefMove } = await import('../engine/tamper-record.js');
          await vouchForRefMove({ git: mainGit, slugs, ref: before.ref, commit, parent: before.commit }).catch((error: unknown) => progress(`warning: ${error instanceof Error ? error.message : String(error)}`));
        }
      }
    }
    result.stopped = reason;
    result.next = await nextStep();
    progress(`stopped: ${reason}`);
    return finish();
  };
  /** A refusal found before anything of the tier ran: the manifest is left as it is (no BLOCKED: nothing was started). */
  const refuse = async (reason: string, fix: string): Promise<ProgramExecuteResult> => {
    result.stopped = reason;
    result.refused = true;
    result.next = `${fix}, then re-run \`polywave program-execute ${relativeProgram}\` (nothing was changed)`;
    progress(`refused: ${reason}`);
    return finish();
  };
  const showStatus = async () => {
    const manifest = await readProgram(programPath);
    const docs = await readProgramImplDocs(repoDir, manifest);
    const states = new Map<string, string | undefined>();
    for (const [slug, doc] of docs) states.set(slug, doc.manifest?.state);
    for (const line of formatProgramStatus(programStatus(manifest, states, waveProgressOf(docs))).replace(/\n*$/, '').split('\n')) progress(line);
  };

  /** E30 for `tier`, the freeze committed on the main line (P4); the stop reason when it fails. */
  const freezeTier = async (tier: number, run: ProgramTierRun): Promise<string | undefined> => {
    const frozen = await freezeContracts({ programPath, repoRoot: repoDir, tier, env: options.env as NodeJS.ProcessEnv });
    run.frozen = (frozen.contracts_frozen ?? []).map((contract) => contract.name ?? '');
    if (frozen.success === false) {
      run.status = 'failed';
      run.detail = `freeze-contracts: ${(frozen.errors ?? []).join('; ')}`;
      return `tier ${tier}: ${run.detail}`;
    }
    if (frozen.manifest_updated) {
      const { commitManifest } = await import('./run-critic.js');
      await commitManifest(repoDir, programPath, `chore: freeze program contracts of tier ${tier} (${run.frozen.join(', ')})`, options.env);
    }
    return undefined;
  };

  // A git process of a killed run (a Scout's `git add`, a state commit) may have left index.lock in
  // the main checkout: every later index write there would fail. Removed only when no process has it open.
  // A commit killed between its ref updates leaves HEAD.lock or the branch's ref lock the same way
  // ("HEAD.lock: File exists" on every resume): the same rule removes them — and (outside attack P12-16) the locks of
  // the PROGRAM's IMPL branches (`update-ref` of a tier's branches, a merge into an IMPL branch), packed-refs.lock and
  // those of the IMPL worktrees (`worktrees/<name>/HEAD.lock`, index.lock…), on which every re-run stopped BLOCKED.
  const removeStaleGitLocks = async (): Promise<void> => {
    const mainGitDir = path.resolve(repoDir, await mainGit.gitDir());
    const branch = await mainGit.currentBranch().catch(() => undefined);
    const names = ['index.lock', 'HEAD.lock', 'ORIG_HEAD.lock', 'packed-refs.lock', ...(branch ? [`refs/heads/${branch}.lock`] : [])];
    const locksUnder = async (relative: string, depth: number): Promise<string[]> => {
      const entries = await readdir(path.join(mainGitDir, relative), { withFileTypes: true }).catch(() => []);
      const found: string[] = [];
      for (const entry of entries) {
        const child = path.posix.join(relative, entry.name);
        if (entry.isDirectory() && depth > 0) found.push(...(await locksUnder(child, depth - 1)));
        else if (entry.isFile() && entry.name.endsWith('.lock')) found.push(child);
      }
      return found;
    };
    names.push(...(await locksUnder('refs/heads/polywave', 6)), ...(await locksUnder('worktrees', 1)));
    for (const name of [...new Set(names)]) {
      const staleLock = await removeStaleIndexLock(mainGitDir, { name });
      if (staleLock) progress(`removed ${path.relative(repoDir, staleLock)}, left by a git process of a killed run (no process had it open)`);
    }
  };

  if (!existsSync(programPath)) {
    // A finished PROGRAM is archived by mark-program-complete: re-running the command says so.
    const archived = path.join(path.dirname(programPath), 'complete', path.basename(programPath));
    if (existsSync(archived) && ((await readProgram(archived).catch(() => undefined))?.state ?? '') === 'COMPLETE') {
      // A run killed inside mark-program-complete (archived, not yet committed): finish it (idempotent).
      const mainGitDirty = (await mainGit.run(['status', '--porcelain', '--', path.dirname(programPath)]).catch(() => ({ stdout: '' }))).stdout.trim() !== '';
      if (mainGitDirty) {
        await removeStaleGitLocks();
        const { markProgramComplete } = await import('../engine/program/program-edits.js');
        const date = (options.now ?? (() => new Date()))().toISOString().slice(0, 10);
        // (outside attack P12-18: a commit that failed was said "finished", exit 0, the archive left staged)
        const notCommitted = await markProgramComplete({ programPath: archived, repoRoot: repoDir, date, env: options.env as NodeJS.ProcessEnv }).then(
          (marked) => (marked.commit_sha === undefined ? (marked.warnings ?? []).find((warning) => warning.startsWith('commit failed')) : undefined),
          (error: unknown) => (error instanceof Error ? error.message : String(error)),
        );
        if (notCommitted !== undefined) {
          result.program_path = archived;
          result.state = 'COMPLETE';
          result.stopped = `the archived PROGRAM is not committed: ${notCommitted}`;
          result.next = `commit it (\`git status\` shows it), or re-run \`polywave program-execute ${path.relative(repoDir, programPath)}\``;
          progress(`stopped: ${result.stopped}`);
          result.duration_ms = Math.round(performance.now() - started);
          return result;
        }
        progress(`finished archiving ${path.relative(repoDir, archived)} (a killed run had left it uncommitted)`);
      }
      result.program_path = archived;
      result.state = 'COMPLETE';
      result.success = true;
      progress(`the PROGRAM is already COMPLETE (${path.relative(repoDir, archived)})`);
      result.duration_ms = Math.round(performance.now() - started);
      return result;
    }
    throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `PROGRAM manifest not found: ${programPath}` });
  }
  let manifest = await readProgram(programPath);
  result.program_slug = manifest.program_slug ?? '';
  result.state = manifest.state ?? '';
  const invalid = validateProgram(manifest).filter((finding) => finding.severity !== 'warning');
  if (invalid.length > 0) {
    throw new PolywaveError({ code: invalid[0]!.code, message: `${path.relative(repoDir, programPath)} is not valid: ${invalid.map((finding) => `${finding.code} ${finding.message}`).slice(0, 5).join('; ')}` });
  }
  const state = (manifest.state ?? '').trim();
  if (state === 'COMPLETE') {
    result.success = true;
    progress('the PROGRAM is already COMPLETE');
    return finish();
  }
  if (!approvedStates.has(state)) {
    const why =
      state === 'PLANNING' || state === 'VALIDATING'
        ? `the plan is not approved (state ${state}): review ${path.relative(repoDir, programPath)} and approve it with ${state === 'PLANNING' ? `\`polywave update-program-state ${path.relative(repoDir, programPath)} --state VALIDATING\`, then ` : ''}\`polywave update-program-state ${path.relative(repoDir, programPath)} --state REVIEWED\` (PROGRAM_REVIEWED is never skipped, not even by --auto)`
        : `the PROGRAM is ${state || 'without a state'}: a human must decide (program-status, program-replan, update-program-state)`;
    result.stopped = why;
    // X60-01: "re-run the same command" only repeats this stop — the way out of BLOCKED/REPLANNING is said.
    if (state === 'BLOCKED' || state === 'REPLANNING') result.next = await nextStep();
    else if (state === 'PLANNING' || state === 'VALIDATING') result.next = `approve the plan with \`polywave update-program-state ${relativeProgram} --state REVIEWED\`, then re-run \`polywave program-execute ${relativeProgram}\``;
    else result.next = `decide with \`polywave program-status ${relativeProgram}\` (then \`polywave update-program-state\` or \`polywave program-replan\`)`;
    progress(`stopped: ${why}`);
    return finish();
  }

  planAt.start = programPlanFingerprint(manifest);

  // Outside round P14 (P14-20): an IMPL of a tier the loop has not started, whose work was done outside the loop (its doc
  // run to a wave state or COMPLETE on main by hand, or by any path E28B's guard does not see), was adopted as done —
  // P3/P5 bypassed. Refused up front, before any tier runs (tier 1 must not run on top of tier-2 code either).
  const outside = await implsRunOutsideLoop(mainGit, manifest, repoDir);
  if (outside.length > 0) {
    const named = outside.map((item) => `${item.slug} (tier ${item.tier}, status ${item.status} in the PROGRAM, IMPL doc ${item.doc} ${item.state}, ${item.empty ? `IMPL branch ${item.branch} holds no work of its own — the loop's work for what the doc says ran is missing (${item.missing}): not the loop's` : item.branchExists ? `IMPL branch ${item.branch} present though the loop cannot have started tier ${item.tier} (tier ${item.lowestOpen} is not complete): not the loop's` : `no IMPL branch ${item.branch}`})`).join('; ');
    return refuse(
      `E28A_IMPL_RUN_OUTSIDE_LOOP: IMPL(s) of a tier the loop has not started were run outside it — their work did not go through their IMPL branch and tier gate (P3, P5): ${named}`,
      outside.map((item) => `for ${item.slug} either adopt its work as done explicitly (\`polywave update-program-impl ${relativeProgram} --impl ${item.slug} --status complete --force\`, its doc COMPLETE in docs/IMPL/complete/ — E28A's imported "complete" IMPL, checked at its tier) or undo it on main and put the doc back (\`polywave set-impl-state ${item.doc} --state REVIEWED\`) so the loop runs it on its IMPL branch${item.branchExists ? ` — and move the IMPL branch made outside the loop aside (\`git branch -m ${item.branch} ${item.branch}-outside\`: kept, not the loop's)` : ''}`).join('; '),
    );
  }

  await removeStaleGitLocks();

  const slots = createAgentSlots(Math.max(1, options.concurrency ?? 8));
  const modelFor = (role: 'scout' | 'critic' | 'scaffold' | 'wave' | 'integration' | 'planner') => options.models?.[role] ?? options.model;
  // Every event below carries the PROGRAM slug (E40 labels).
  const events = labelEvents(options.events, { program: manifest.program_slug ?? '' });
  const base = { env: options.env, ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}), ...(options.now ? { now: options.now } : {}), ...(events ? { events } : {}), ...(options.signal ? { signal: options.signal } : {}), ...(options.budget ? { budget: options.budget } : {}) };
  const tiers = [...manifest.tiers].map((tier) => tier.number ?? 0).filter((number) => number > 0).sort((left, right) => left - right);

  for (const [index, tier] of tiers.entries()) {
    if (interrupted()) return stop(`before tier ${tier}`);
    const tierStarted = performance.now();
    manifest = await readProgram(programPath);
    const impls = tierImpls(manifest, tier);
    const run: ProgramTierRun = { tier, status: 'complete', detail: '', scouted: [], impls: [], duration_ms: 0 };
    result.tiers.push(run);
    const done = () => {
      run.duration_ms = Math.round(performance.now() - tierStarted);
    };
    if (impls.length > 0 && impls.every((impl) => impl.status === 'complete')) {
      // P3: a tier is passed over only when its IMPLs really are complete (docs on disk, state
      // COMPLETE) — a manifest that merely says so must not let the next tier start.
      const claimed = scopedImportFindings(manifest, await readProgramImplDocs(repoDir, manifest), impls);
      if (claimed.length === 0) {
        const slugs = impls.map((impl) => impl.slug ?? '');
        // A run killed after finalize-tier marked the tier complete but before it removed the
        // merged IMPL worktrees/branches: finish finalize-tier (idempotent: nothing is merged twice).
        const leftovers = (await Promise.all(slugs.map(async (slug) => existsSync(programWorktreePath(repoDir, manifest.program_slug ?? '', tier, slug)) || (await mainGit.tryRevParse(`refs/heads/${programBranchName(manifest.program_slug ?? '', tier, slug)}`)) !== undefined))).some(Boolean);
        if (leftovers) {
          const finalized = await finalizeTier({ programPath, repoRoot: repoDir, tier, env: options.env as NodeJS.ProcessEnv, ...(options.now ? { now: options.now } : {}), ...(options.signal ? { signal: options.signal } : {}) });
          run.finalize = finalized;
          if (!finalized.success) {
            run.status = 'failed';
            run.detail = `finalize-tier (resumed): ${describeFinalizeFailure(finalized)}`;
            done();
            return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
          }
        }
        // E30 after a resume: a run killed between finalize-tier and the freeze left the tier
        // complete but its contracts unrecorded — freeze them now, before any later tier starts.
        if ((manifest.program_contracts ?? []).some((contract) => freezesAtTier(manifest, contract, tier, slugs) && (contract.frozen_at_tier === undefined || (contract.frozen_blob ?? '').trim() === ''))) {
          const failed = await freezeTier(tier, run);
          if (failed !== undefined) {
            done();
            // (P12-38: a freeze that fails after the tier verified — TIER_VERIFIED, from which no legal transition leads to
            // BLOCKED — was a dead end of "re-run to resume": BLOCKED by the loop itself, so a fix or program-replan can follow)
            return stop(failed, 'BLOCKED', true);
          }
          progress(`tier ${tier}: complete; frozen now: ${(run.frozen ?? []).join(', ')}`);
        } else {
          // P12-17: a run killed inside the freeze commit left the freeze record written (and staged) but not committed:
          // the next tier's merges then refused to run over the manifest. Committed now, as the killed run meant to.
          const relative = path.relative(repoDir, programPath).split(path.sep).join('/');
          const committed = parseProgram(await mainGit.run(['show', `HEAD:${relative}`]).then((out) => out.stdout, () => '')).manifest as ProgramManifest | null;
          const unrecorded = (manifest.program_contracts ?? []).filter((contract) => freezesAtTier(manifest, contract, tier, slugs) && (contract.frozen_blob ?? '').trim() !== '' && !(committed?.program_contracts ?? []).some((other) => other.name === contract.name && (other.frozen_blob ?? '').trim() !== ''));
          if (unrecorded.length > 0) {
            const { commitManifest } = await import('./run-critic.js');
            await commitManifest(repoDir, programPath, `chore: freeze program contracts of tier ${tier} (${unrecorded.map((contract) => contract.name ?? '').join(', ')})`, options.env);
            progress(`tier ${tier}: committed the freeze record a killed run had left uncommitted (${unrecorded.map((contract) => contract.name ?? '').join(', ')})`);
          }
        }
        run.status = 'skipped';
        run.detail = 'already complete';
        done();
        continue;
      }
      run.status = 'blocked';
      run.detail = `the PROGRAM says tier ${tier} is complete, but: ${claimed.map((finding) => `${finding.code}: ${finding.message}`).join('; ')}`;
      done();
      return refuse(`tier ${tier}: ${run.detail}`, `make tier ${tier}'s IMPL docs and statuses agree (P3: \`polywave program-status ${relativeProgram}\`)`);
    }
    progress(`tier ${tier}: ${impls.map((impl) => impl.slug).join(', ')}`);

    // P18-06: P2 at the tier's start too — a frozen contract changed on main since its freeze (a human's commit between
    // tiers) was caught only by finalize-tier's gate, after the tier's Scouts and agents ran and its IMPL branches merged.
    const changed = await frozenContractChanges(manifest, tier, mainGit);
    if (changed.length > 0) {
      run.status = 'blocked';
      run.detail = `P2_FROZEN_CONTRACT_CHANGED: ${changed.map((item) => `frozen contract ${item.contract} (${item.location}, frozen at tier ${item.frozen_at_tier}) ${item.current_blob === null ? 'is gone from HEAD' : `changed on the main line since its freeze: blob ${item.frozen_blob.slice(0, 12)} → ${item.current_blob.slice(0, 12)}`}`).join('; ')} — before tier ${tier} starts`;
      done();
      return refuse(`tier ${tier}: ${run.detail}`, `revert the change on the main line (\`git log -p -- ${[...new Set(changed.map((item) => item.location))].join(' ')}\`) or re-plan with \`polywave program-replan ${relativeProgram} --reason "…" --tier ${tier}\``);
    }

    // 1. E28A: partition, validate what exists, P1 across the tier — refusals before anything of
    // the tier runs leave the manifest as it is (TIER_EXECUTING is written only when work starts).
    const partition = partitionImplsByStatus(manifest, tier);
    if (partition.held.length > 0) {
      run.status = 'blocked';
      run.detail = `IMPL(s) held for a human: ${partition.held.map((impl) => `${impl.slug} (${impl.status})`).join(', ')}`;
      done();
      if ((manifest.state ?? '') === 'TIER_EXECUTING') return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
      return refuse(`tier ${tier}: ${run.detail}`, `decide on ${partition.held.map((impl) => impl.slug).join(', ')} (\`polywave update-program-impl ${relativeProgram} --impl <slug> --status reviewed\` once its IMPL doc is ready)`);
    }
    let preDocs = await readProgramImplDocs(repoDir, manifest);
    // The tier's IMPL branches (E28B) that exist: a tier whose waves have begun.
    const tierBranchTips = new Map(await Promise.all(tierImpls(manifest, tier).map(async (impl) => [impl.slug ?? '', await mainGit.tryRevParse(`refs/heads/${programBranchName(manifest.program_slug ?? '', tier, impl.slug ?? '')}`)] as const)));
    // X60-01 (program-manifest's BLOCKED → TIER_EXECUTING recovery, "issue resolved"): an IMPL whose wave BLOCKED in this tier (its doc left BLOCKED, its IMPL branch of this tier kept)
    // that a human put back to `reviewed` after fixing the cause is resumed: its doc goes back to the
    // state the wave was in (BLOCKED → WAVE_EXECUTING), and the waves already merged on its branch are kept.
    const unblocked: string[] = [];
    for (const impl of partition.preExisting.filter((candidate) => candidate.status === 'reviewed')) {
      const doc = preDocs.get(impl.slug ?? '');
      if (!doc?.manifest || (doc.manifest.state ?? '').trim() !== 'BLOCKED') continue;
      if (tierBranchTips.get(impl.slug ?? '') === undefined) continue;
      const moved = await editImpl(doc.path, (parsed) => ((parsed.manifest?.state ?? '').trim() === 'BLOCKED' ? { edits: [{ path: ['state'], value: 'WAVE_EXECUTING' }], outcome: true } : { edits: [], outcome: false }));
      if (moved) unblocked.push(impl.slug ?? '');
    }
    if (unblocked.length > 0) {
      progress(`tier ${tier}: resuming ${unblocked.join(', ')} (IMPL doc BLOCKED → WAVE_EXECUTING; its merged waves are kept)`);
      preDocs = await readProgramImplDocs(repoDir, manifest);
    }
    const preFindings = scopedImportFindings(manifest, preDocs, partition.preExisting);
    if (preFindings.length > 0) {
      run.status = 'blocked';
      run.detail = preFindings.map((finding) => `${finding.code}: ${finding.message}`).join('; ');
      done();
      return refuse(`tier ${tier}: ${run.detail}`, `fix the pre-existing IMPL doc(s) named above (E28A: the file, its state, P1 file ownership, P2 frozen contracts) or their status in the PROGRAM${await blockedDocAdvice(mainGit, manifest, tier, preDocs, partition.preExisting, repoDir)}`);
    }
    // X60-02: the tier's waves need a clean main checkout (prepare-wave's working_dir_check); found only there, a
    // dirty tree stopped the tier BLOCKED after its Scouts had run and committed. Checked before anything of the
    // tier runs — only while none of its IMPL branches exists yet (a resumed tier's finalize-tier may be mid-merge).
    const wavesBegun = [...tierBranchTips.values()].some((sha) => sha !== undefined);
    // P13-18: an IMPL moved here by a re-plan after an earlier tier's attempt left it BLOCKED, set REVIEWED again by a
    // human: that attempt's IMPL branch, agent branches, worktrees, prepare records and the doc's wave record are retired
    // (branches kept under refs/polywave/retired/) so its waves start afresh on this tier's IMPL branch.
    if (!wavesBegun) {
      const { retireEarlierAttempt, retirementCrashHookFromEnv } = await import('../engine/program/retire-attempt.js');
      const onStep = retirementCrashHookFromEnv(options.env);
      for (const impl of partition.preExisting.filter((candidate) => candidate.status === 'reviewed')) {
        const doc = preDocs.get(impl.slug ?? '');
        if (!doc?.manifest || !['REVIEWED', 'SCOUT_COMPLETE'].includes((doc.manifest.state ?? '').trim())) continue;
        const retired = await retireEarlierAttempt({ git: mainGit, repoDir, programSlug: manifest.program_slug ?? '', tier, implSlug: impl.slug ?? '', implPath: doc.path, ...(options.now ? { now: options.now } : {}), ...(onStep ? { onStep } : {}) });
        if (retired.refused !== undefined) {
          run.status = 'blocked';
          run.detail = `E34_EARLIER_ATTEMPT_KEPT: ${impl.slug} was run before in another tier and ${retired.refused}`;
          done();
          return refuse(`tier ${tier}: ${run.detail}`, `keep or commit that work`);
        }
        if (retired.retired.length > 0) progress(`tier ${tier}: ${impl.slug}: its earlier attempt in another tier is retired${retired.resumed ? ' (an interrupted retirement finished)' : ''} — branches kept as ${retired.retired.join(', ')}${retired.worktrees.length > 0 ? `; worktrees removed (clean): ${retired.worktrees.map((worktree) => path.relative(repoDir, worktree)).join(', ')}` : ''}${retired.kept ? `; its prepare records and journals moved to ${retired.kept}` : ''}; its waves start again from this tier's base`);
      }
      if (partition.preExisting.length > 0) preDocs = await readProgramImplDocs(repoDir, manifest);
    }
    if (!wavesBegun) {
      const { classifyDirtyTree } = await import('../engine/prepare/tree-steps.js');
      const dirty = await classifyDirtyTree({ git: mainGit, root: await canonicalPath(repoDir) }, programPath);
      // Of polywave's folders only the loop's own files: this PROGRAM's manifest and the IMPL docs of its IMPLs
      // whose Scout has started (or that were imported) — what finalize-wave's check counts as the orchestrator's.
      // A user's file there (docs/IMPL/notes.md) stopped the tier later (X61-02), and a doc at a pending IMPL's
      // path was written over by its Scout, lost (X61-04).
      const programFile = relativeProgram.split(path.sep).join('/');
      const statusOf = new Map(manifest.impls.map((impl) => [impl.slug ?? '', (impl.status ?? '').trim()]));
      const theLoops = (file: string): boolean => {
        if (file === programFile || file === 'docs/CONTEXT.md') return true;
        const doc = /^docs\/IMPL\/(?:complete\/)?IMPL-(.+)\.ya?ml$/.exec(file);
        const status = doc ? statusOf.get(doc[1]!) : undefined;
        return status !== undefined && status !== 'pending';
      };
      dirty.blocking.push(...dirty.owned.filter((file) => !theLoops(file)));
      if (dirty.blocking.length > 0) {
        run.status = 'blocked';
        run.detail = `G005_DIRTY_WORKTREE: the main checkout has uncommitted changes: ${dirty.blocking.slice(0, 10).join(', ')}${dirty.blocking.length > 10 ? ` (+${dirty.blocking.length - 10} more)` : ''} — the tier's waves start from a clean checkout`;
        done();
        return refuse(`tier ${tier}: ${run.detail}`, 'commit or stash them');
      }
    }
    if ((manifest.state ?? '') !== 'TIER_EXECUTING') await setProgramState(programPath, 'TIER_EXECUTING');

    // 2. E31: Scouts for every pending IMPL of the tier, at once. A Scout that finished before an
    // interruption (its IMPL doc reviewed on disk) is not run again. Killed after it wrote the doc
    // but before (or inside) its commit, the doc is untracked or only staged: it is committed now as
    // the Scout would have — a staged doc made finalize-tier's merge into main fail ("Your local
    // changes … would be overwritten by merge"), the tier BLOCKED.
    for (const impl of [...partition.needsScout]) {
      const doc = preDocs.get(impl.slug ?? '');
      const state = (doc?.manifest?.state ?? '').trim();
      if (reviewedOrLaterStates.includes(state)) {
        const relative = doc ? path.relative(repoDir, doc.path) : '';
        if (doc && !relative.startsWith('..') && (await mainGit.run(['ls-tree', '--name-only', 'HEAD', '--', relative])).stdout.trim() === '') {
          const { commitManifest } = await import('./run-critic.js');
          const sha = await commitManifest(repoDir, doc.path, `chore: scout IMPL for ${impl.slug ?? ''} (${state}) [Polywave:scout:${impl.slug ?? ''}]`, options.env);
          if (sha) progress(`tier ${tier}: committed ${relative}, which its Scout wrote but did not commit (interrupted)`);
        }
        const hold = await setLoopStatuses([impl.slug ?? ''], 'reviewed').then(() => undefined, (error: unknown) => {
          if (heldError(error) === undefined) throw error;
          return heldError(error);
        });
        if (hold !== undefined) {
          run.status = 'blocked';
          run.detail = hold;
          done();
          return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
        }
        partition.needsScout.splice(partition.needsScout.indexOf(impl), 1);
      }
    }
    if (partition.needsScout.length > 0) {
      const { runScout } = await import('./run-scout.js');
      const scouted = await Promise.all(
        partition.needsScout.map(async (impl) => {
          const slug = impl.slug ?? '';
          // The tier's Scouts share the one agent budget (--concurrency) with every agent of the run (outside attack
          // P12-25: a tier of 12 IMPLs started 12 Scouts at once with --concurrency 2).
          const releaseSlot = await slots.acquire();
          const hold = await setLoopStatuses([slug], 'scouting').then(() => undefined, (error: unknown) => {
            releaseSlot();
            if (heldError(error) === undefined) throw error;
            return heldError(error);
          });
          if (hold !== undefined) return { slug, scout: { success: false as const, state: 'HELD', impl_path: '', error: hold, usage: emptyUsage() } };
          progress(`tier ${tier}: scouting ${slug}`);
          const scout = await runScout({
            feature: [impl.title ?? slug, impl.key_outputs.length > 0 ? `Key outputs: ${impl.key_outputs.join(', ')}` : '', impl.depends_on.length > 0 ? `Builds on: ${impl.depends_on.join(', ')}` : ''].filter(Boolean).join('\n\n'),
            repoDir,
            slug,
            program: programPath,
            // The tier's Scouts run at once in the main checkout, and this process updates the PROGRAM meanwhile.
            concurrentPaths: [path.relative(repoDir, programPath).split(path.sep).join('/'), ...partition.needsScout.filter((other) => other !== impl).map((other) => `docs/IMPL/IMPL-${other.slug ?? ''}.yaml`)],
            ...base,
            ...(modelFor('scout') ? { model: modelFor('scout')! } : {}),
            ...(options.backends?.scout ? { backend: options.backends.scout } : {}),
            ...(options.backends?.critic ? { criticBackend: options.backends.critic } : {}),
            ...(modelFor('critic') ? { criticModel: modelFor('critic')! } : {}),
            ...(options.noCritic ? { critic: false } : {}),
            ...(options.auto ? { auto: true } : {}),
          })
            .catch((error: unknown) => ({ success: false as const, state: 'FAILED', impl_path: '', error: error instanceof Error ? error.message : String(error), usage: emptyUsage() }))
            .finally(releaseSlot);
          addUsage(usage, scout.usage);
          if (scout.success) {
            const held = await setLoopStatuses([slug], 'reviewed').then(() => undefined, (error: unknown) => {
              if (heldError(error) === undefined) throw error;
              return heldError(error);
            });
            if (held !== undefined) return { slug, scout: { success: false as const, state: 'HELD', impl_path: scout.impl_path, error: held, usage: emptyUsage() } };
          }
          return { slug, scout };
        }),
      );
      run.scouted = scouted.map((item) => item.slug);
      // Outside attack X28-12: each Scout committed the plan it validated; a sibling Scout (its bash, after that
      // doc existed) could still rewrite it in the working tree afterwards. Every doc of the tier goes back to
      // its commit (the changed copy to the quarantine) before anything reads it.
      for (const item of scouted.filter((entry) => entry.scout.success)) {
        const relative = `docs/IMPL/IMPL-${item.slug}.yaml`;
        const changed = (await mainGit.run(['diff', '--quiet', 'HEAD', '--', relative], { allowExitCodes: [1] })).exitCode === 1;
        if (!changed) continue;
        const { moveToQuarantine } = await import('../git/quarantine-move.js');
        const stamp = new Date().toISOString().replace(/[:.]/g, '-');
        const kept = await moveToQuarantine(path.join(repoDir, relative), path.join(repoDir, '.git', 'polywave', 'quarantine', `tier${tier}-scouts-${stamp}`, relative)).catch(() => undefined);
        const committed = (await mainGit.run(['show', `HEAD:${relative}`])).stdout;
        await writeFileAtomic(path.join(repoDir, relative), committed);
        progress(`tier ${tier}: ${relative} was changed after its Scout committed it (another Scout of the tier?): put back as committed${kept ? `, the changed copy kept in ${kept}` : ''}`);
      }
      const failed = scouted.filter((item) => !item.scout.success);
      if (failed.length > 0) {
        run.status = 'blocked';
        run.detail = `Scout failed for ${failed.map((item) => `${item.slug} (state ${item.scout.state}${'error' in item.scout && item.scout.error ? `: ${typeof item.scout.error === 'string' ? item.scout.error : `${item.scout.error.code}: ${item.scout.error.message}`}` : ''})`).join(', ')}`;
        done();
        return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
      }
    }
    manifest = await readProgram(programPath);
    const current = tierImpls(manifest, tier);

    // P1 across every IMPL of the tier (new and pre-existing), on the docs as they are now.
    const docs = await readProgramImplDocs(repoDir, manifest);
    const missing = current.filter((impl) => impl.status !== 'complete' && !docs.get(impl.slug ?? '')?.manifest);
    if (missing.length > 0) {
      run.status = 'blocked';
      run.detail = `IMPL doc missing or unreadable: ${missing.map((impl) => impl.slug).join(', ')}`;
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }
    // P2 on every IMPL doc of the tier, the ones the Scouts just wrote included: a Scout that
    // redefines a frozen contract instead of consuming it stops the tier before any wave.
    const tierFindings = scopedImportFindings(manifest, docs, current.filter((impl) => impl.status !== 'complete'));
    if (tierFindings.length > 0) {
      run.status = 'blocked';
      run.detail = tierFindings.map((finding) => `${finding.code}: ${finding.message}`).join('; ');
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }
    const conflicts = checkImplConflicts(current.flatMap((impl) => (docs.get(impl.slug ?? '')?.manifest ? [{ slug: impl.slug ?? '', manifest: docs.get(impl.slug ?? '')!.manifest as ImplManifest }] : [])));
    if (conflicts.conflicts.length > 0) {
      run.status = 'blocked';
      run.detail = `P1: IMPLs of tier ${tier} claim the same files: ${conflicts.conflicts.map((conflict) => `${conflict.file} (${conflict.impls.join(', ')})`).join('; ')}`;
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }

    // E16 on every IMPL doc that still has to run, before any of them starts.
    const invalidDocs: string[] = [];
    for (const impl of current.filter((candidate) => candidate.status !== 'complete')) {
      const doc = docs.get(impl.slug ?? '')!;
      const parsed = parseImpl(await readTextFile(doc.path));
      const blocking = parsed.manifest ? validateImpl({ manifest: parsed.manifest, locate: parsed.locate }).filter(isBlocking) : parsed.findings.filter(isBlocking);
      if (blocking.length > 0) invalidDocs.push(`${impl.slug}: ${blocking.slice(0, 3).map((finding) => `${finding.code} ${finding.message}`).join('; ')}${blocking.length > 3 ? ` (+${blocking.length - 3} more)` : ''}`);
    }
    if (invalidDocs.length > 0) {
      run.status = 'blocked';
      run.detail = `IMPL doc(s) not valid (polywave validate): ${invalidDocs.join(' | ')}`;
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }

    // E28A (tier ≥ 2): briefs of imported IMPLs that name what the previous tier changed.
    const toRun = current.filter((impl) => impl.status !== 'complete');
    const imported = partition.preExisting.filter((impl) => impl.status === 'reviewed').map((impl) => impl.slug ?? '');
    const stale = index > 0 && imported.length > 0 ? await staleBriefs(repoDir, tiers[index - 1]!, imported.flatMap((slug) => (docs.get(slug)?.manifest ? [{ slug, manifest: docs.get(slug)!.manifest as ImplManifest }] : [])), options.env) : [];
    for (const item of stale) progress(`tier ${tier}: stale brief? ${item.impl} agent ${item.agent} names ${item.references.join(', ')}, changed by tier ${tiers[index - 1]} (E28A: re-run its Scout to refresh the briefs if they no longer hold)`);

    // The tier's review: every IMPL (new and imported) at once, before any wave (skipped by --auto).
    const unstarted = toRun.some((impl) => impl.status === 'reviewed');
    if (unstarted && !options.auto) {
      const approved = options.approve
        ? await options.approve({ kind: 'tier-review', tier, impls: toRun.map((impl) => ({ slug: impl.slug ?? '', impl_path: docs.get(impl.slug ?? '')?.path ?? '', title: impl.title ?? '' })), stale_briefs: stale })
        : false;
      // P12-29 (E28A): IMPLs the reviewer rejected are held for a human (`blocked` in the PROGRAM, one locked write); the
      // tier runs none of its IMPLs until each is decided (revised and set `reviewed` again, or re-planned).
      const rejected = typeof approved === 'object' ? [...new Set(approved.reject)].filter((slug) => toRun.some((impl) => impl.slug === slug)) : [];
      if (rejected.length > 0) {
        await setProgramImplStatuses(programPath, rejected, 'blocked');
        run.status = 'paused';
        run.detail = `the review rejected ${rejected.join(', ')} (now \`blocked\` in the PROGRAM; nothing ran): revise ${rejected.map((slug) => path.relative(repoDir, docs.get(slug)?.path ?? `docs/IMPL/IMPL-${slug}.yaml`)).join(', ')} and set ${rejected.length > 1 ? 'each' : 'it'} \`reviewed\` again (\`polywave update-program-impl ${relativeProgram} --impl <slug> --status reviewed\`), or re-plan (\`polywave program-replan ${relativeProgram} --reason …\`)`;
        done();
        return stop(`tier ${tier}: ${run.detail}`);
      }
      if (approved !== true) {
        run.status = 'paused';
        run.detail = 'waiting for the review of the tier\'s IMPLs (re-run with --yes or --auto, or answer yes at a terminal)';
        done();
        const paused = await stop(`tier ${tier}: ${run.detail}`);
        // P15-17: a plain re-run stops here again (no terminal to answer at): the way on is named.
        if (!paused.interrupted) paused.next = `review the tier's IMPLs (${toRun.map((impl) => path.relative(repoDir, docs.get(impl.slug ?? "")?.path ?? `docs/IMPL/IMPL-${impl.slug ?? ""}.yaml`)).join(', ')}), then re-run \`polywave program-execute ${relativeProgram} --yes\` to approve them (or with --auto, which approves every tier)`;
        return paused;
      }
    }

    // 3. E28B: IMPL branches + worktrees; every IMPL's waves at once under one agent budget.
    // First what a run killed inside a `git worktree add` of this tier left (an IMPL worktree or an
    // agent worktree of one of its IMPLs): no worktree at all, and one that breaks every `git worktree
    // list`. Nothing of this tier runs yet, so no add of these paths can be in flight.
    const root = await canonicalPath(repoDir);
    const tierWorktrees = current.flatMap((impl) => [programWorktreePath(root, manifest.program_slug ?? '', tier, impl.slug ?? ''), path.join(root, '.claude', 'worktrees', 'polywave', impl.slug ?? '')]);
    const killedAdds = await removeKilledWorktreeAdds(mainGit, (worktreePath) => tierWorktrees.some((owned) => worktreePath === owned || worktreePath.startsWith(`${owned}/`)));
    for (const removed of killedAdds) progress(`tier ${tier}: removed ${path.relative(repoDir, removed)}, left by a killed \`git worktree add\` (it is added again)`);
    const worktrees = await createProgramWorktrees({ programPath, repoRoot: repoDir, tier, env: options.env as NodeJS.ProcessEnv });
    if (!worktrees.success) {
      run.status = 'blocked';
      run.detail = `IMPL branches/worktrees: ${(worktrees.failures ?? []).map((failure) => `${failure.impl_slug}: ${failure.error}`).join('; ') || 'not created'}`;
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }
    const branchOf = new Map(worktrees.worktrees.map((entry) => [entry.impl_slug, entry.branch]));
    const manifestPaths = current.flatMap((impl) => docs.get(impl.slug ?? '')?.path ?? []);
    // E32: every IMPL about to run is `executing`, in one locked write of the PROGRAM manifest.
    const held = await setLoopStatuses(toRun.filter((impl) => impl.status !== 'executing').map((impl) => impl.slug ?? ''), 'executing').then(() => undefined, (error: unknown) => {
      if (heldError(error) === undefined) throw error;
      return heldError(error);
    });
    if (held !== undefined) {
      run.status = 'blocked';
      run.detail = held;
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }
    const runs = await Promise.all(
      toRun.map(async (impl): Promise<ProgramImplRun & { autopilot?: AutopilotResult }> => {
        const slug = impl.slug ?? '';
        const implPath = docs.get(slug)!.path;
        const branch = branchOf.get(slug) ?? '';
        const implStarted = performance.now();
        progress(`tier ${tier}: ${slug} running on ${branch}`);
        // What the other IMPLs of the tier move meanwhile: their agent branches and IMPL branches.
        const others = current.filter((other) => other.slug !== slug).map((other) => other.slug ?? '');
        // Exact IMPL branch names (not the program's prefix, which holds this IMPL's own target too).
        const concurrentRefs = [...others.map((other) => `refs/heads/polywave/${other}/`), ...others.flatMap((other) => (branchOf.get(other) ? [`refs/heads/${branchOf.get(other)!}`] : []))];
        try {
          const autopilot = await runAutopilot({
            implPath,
            repoDir,
            auto: true,
            mergeTarget: branch,
            // Worktree setups of the tier's IMPLs run at once: each IMPL gets its own block of
            // POLYWAVE_PORTs, by its place in the tier (stable across resumes).
            portOffset: Math.max(0, current.findIndex((other) => other.slug === slug)) * tierPortStride,
            close: false,
            agentSlots: slots,
            orchestratorFiles: [programPath, ...manifestPaths.filter((other) => other !== implPath)],
            concurrentRefs,
            ...(options.lockPlan ? { lockPlan: options.lockPlan } : {}),
            ...base,
            ...(modelFor('wave') ? { model: modelFor('wave')! } : {}),
            ...(options.models ? { models: options.models } : {}),
            ...(options.backends ? { backends: options.backends } : {}),
            ...(options.agentTimeoutMs ? { agentTimeoutMs: options.agentTimeoutMs } : {}),
            ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
            ...(options.noCritic ? { noCritic: true } : {}),
            ...(options.retryBackoffMs !== undefined ? { retryBackoffMs: options.retryBackoffMs } : {}),
            ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
            ...(options.acceptChanges ? { acceptChanges: true } : {}),
            onPhase: (phase) => progress(`tier ${tier}: ${slug} ${phase.phase}${phase.wave ? ` ${phase.wave}` : ''}: ${phase.status} — ${phase.detail}`),
          });
          addUsage(usage, autopilot.usage);
          return {
            slug,
            impl_path: implPath,
            branch,
            status: autopilot.success ? 'complete' : 'failed',
            detail: autopilot.success ? `${autopilot.waves.length} wave(s) merged into ${branch}` : (autopilot.stopped ?? `stopped in state ${autopilot.state}`),
            waves: autopilot.waves.length,
            duration_ms: Math.round(performance.now() - implStarted),
            autopilot,
          };
        } catch (error) {
          return { slug, impl_path: implPath, branch, status: 'failed', detail: error instanceof Error ? error.message : String(error), waves: 0, duration_ms: Math.round(performance.now() - implStarted) };
        }
      }),
    );
    run.impls = runs.map(({ autopilot: _autopilot, ...rest }) => rest);
    const failedImpls = runs.filter((item) => item.status !== 'complete');
    if (failedImpls.length > 0) {
      if (interrupted()) return stop(`tier ${tier}: ${failedImpls.map((item) => item.slug).join(', ')} stopped`);
      for (const item of failedImpls) await setProgramImplStatus(programPath, item.slug, 'blocked').catch(() => undefined);
      run.status = 'blocked';
      run.detail = failedImpls.map((item) => `${item.slug}: ${item.detail}`).join('; ');
      done();
      return stop(`tier ${tier}: ${run.detail}`, 'BLOCKED');
    }
    await showStatus();

    // 4. finalize-tier: IMPL branches into main in order, the tier gate (E29), the IMPLs closed — with the plan this
    // run started with: an edit of its tier gates meanwhile is not run, nor swept into finalize-tier's commit (X61-05).
    const edited = (await planCheck()).changed;
    if (edited) {
      run.status = 'blocked';
      run.detail = edited;
      done();
      return stop(`tier ${tier}: ${edited}`, 'BLOCKED');
    }
    progress(`tier ${tier}: merging ${runs.length} IMPL branch(es) into the main line, then the tier gate`);
    const finalized = await finalizeTier({ programPath, repoRoot: repoDir, tier, env: options.env as NodeJS.ProcessEnv, ...(options.now ? { now: options.now } : {}), ...(options.signal ? { signal: options.signal } : {}), ...(events ? { events } : {}) });
    run.finalize = finalized;
    if (!finalized.success) {
      run.status = 'failed';
      run.detail = `finalize-tier: ${describeFinalizeFailure(finalized)}`;
      done();
      // A gate (or merge) stopped by Ctrl-C did not fail: no BLOCKED and no Planner (E34) on a user's stop.
      if (interrupted()) return stop(`tier ${tier}: the tier gate was stopped`);
      const p2 = (finalized.errors ?? []).some((error) => error.code === 'P2_FROZEN_CONTRACT_CHANGED');
      if (!p2 && (options.auto || options.replan)) {
        const replanned = await replanAfterFailure(options, programPath, repoDir, tier, run.detail, usage);
        return stop(`tier ${tier}: ${run.detail}; ${replanned.message}`, replanned.revised ? undefined : 'BLOCKED');
      }
      return stop(`tier ${tier}: ${run.detail} — fix it and re-run, or re-plan with \`polywave program-replan ${path.relative(repoDir, programPath)} --reason "…" --tier ${tier}\``, 'BLOCKED');
    }

    // E30: freeze the contracts of this tier.
    const failed = await freezeTier(tier, run);
    if (failed !== undefined) {
      done();
      return stop(failed, 'BLOCKED', true);
    }
    const frozenNow = run.frozen ?? [];
    run.detail = `${runs.length} IMPL(s) merged; tier gate passed${frozenNow.length > 0 ? `; frozen: ${frozenNow.join(', ')}` : ''}`;
    done();
    await showStatus();

    const next = tiers[index + 1];
    if (next === undefined) break;
    await setProgramState(programPath, 'TIER_VERIFIED');
    // E33: --auto advances; otherwise a human confirms (E30's pause).
    if (!options.auto) {
      const approved = options.approve ? await options.approve({ kind: 'tier-advance', tier, next_tier: next, frozen: run.frozen ?? [] }) : false;
      if (!approved) return stop(`tier ${tier} verified; re-run (or --auto) to start tier ${next}`);
    }
    // E40 (E33): the program advances to the next tier.
    events?.emit(activityEvent('tier_advanced', { tier, to_tier: next, ...(manifest.program_slug ? { program: manifest.program_slug } : {}), details: `tier ${tier} → ${next}${(run.frozen ?? []).length > 0 ? `; frozen: ${run.frozen!.join(', ')}` : ''}` }));
  }

  // Every tier done: archive the PROGRAM.
  const { markProgramComplete } = await import('../engine/program/program-edits.js');
  const date = (options.now ?? (() => new Date()))().toISOString().slice(0, 10);
  const completed = await markProgramComplete({ programPath, repoRoot: repoDir, date, env: options.env as NodeJS.ProcessEnv });
  // (P12-18: an archive whose commit failed is not a finished PROGRAM — re-running commits it)
  const commitFailed = completed.commit_sha === undefined ? (completed.warnings ?? []).find((warning) => warning.startsWith('commit failed')) : undefined;
  result.success = completed.completed && commitFailed === undefined;
  if (commitFailed !== undefined) result.stopped = `the archived PROGRAM is not committed: ${commitFailed}`;
  result.state = 'COMPLETE';
  if (completed.archived_path) result.program_path = completed.archived_path;
  for (const warning of completed.warnings ?? []) progress(`warning: ${warning}`);
  progress(`PROGRAM COMPLETE${completed.archived_path ? ` (archived to ${path.relative(repoDir, completed.archived_path)})` : ''}`);
  result.duration_ms = Math.round(performance.now() - started);
  return result;
}

/** Files changed by the IMPL-branch merges of `tier` on the main line, and the symbols they export. */
export async function staleBriefs(repoDir: string, tier: number, impls: ReadonlyArray<{ slug: string; manifest: ImplManifest }>, env: Readonly<Record<string, string | undefined>>): Promise<StaleBrief[]> {
  const git = createGit(repoDir, { env });
  const log = await git.run(['log', '--first-parent', '--format=%H%x00%s', '-n', '500']).catch(() => ({ stdout: '' }));
  const prefix = `Merge program tier ${tier} impl `;
  const merges = log.stdout.split('\n').flatMap((line) => {
    const [commit = '', subject = ''] = line.split('\0');
    return subject.startsWith(prefix) ? [commit] : [];
  });
  const files = new Set<string>();
  for (const merge of merges) {
    const diff = await git.run(['diff', '--name-only', `${merge}^1`, merge]).catch(() => ({ stdout: '' }));
    for (const file of diff.stdout.split('\n')) if (file.trim() !== '' && !file.startsWith('docs/')) files.add(file.trim());
  }
  if (files.size === 0) return [];
  const symbols = new Map<string, string>();
  for (const file of files) {
    const text = await readTextFile(path.join(repoDir, file)).catch(() => '');
    for (const match of text.matchAll(/\bexport\s+(?:default\s+)?(?:async\s+)?(?:function\*?|const|let|var|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/g)) symbols.set(match[1]!, file);
    for (const match of text.matchAll(/^func\s+(?:\([^)]*\)\s*)?([A-Z]\w*)|^type\s+([A-Z]\w*)|^def\s+([a-zA-Z_]\w*)|^pub\s+(?:fn|struct|enum|trait)\s+(\w+)/gm)) symbols.set((match[1] ?? match[2] ?? match[3] ?? match[4])!, file);
  }
  const found: StaleBrief[] = [];
  for (const { slug, manifest } of impls) {
    for (const wave of manifest.waves ?? []) {
      for (const agent of wave.agents ?? []) {
        const task = agent.task ?? '';
        const references = [...[...files].filter((file) => task.includes(file)), ...[...symbols.keys()].filter((symbol) => symbol.length > 2 && new RegExp(`\\b${symbol.replace(/\$/g, '\\$')}\\b`).test(task))];
        if (references.length > 0) found.push({ impl: slug, agent: agent.id ?? '', references: [...new Set(references)].sort() });
      }
    }
  }
  return found;
}

/**
 * E28A import validation (V030–V032) of `impls` only: a finding belongs to the IMPL its field
 * (`impls[i]…`) or its file (the IMPL doc) names — not to any IMPL whose slug its message contains.
 */
export function scopedImportFindings(manifest: ProgramManifest, docs: Awaited<ReturnType<typeof readProgramImplDocs>>, impls: ProgramImpl[]): Finding[] {
  const slugs = new Set(impls.map((impl) => impl.slug ?? ''));
  const slugOfDoc = new Map([...docs].map(([slug, doc]) => [doc.path, slug]));
  return validateProgramImport(manifest, docs).filter((finding) => {
    if (finding.severity === 'warning') return false;
    const index = /^impls\[(\d+)\]/.exec(finding.field ?? '')?.[1];
    const slug = index !== undefined ? manifest.impls[Number(index)]?.slug : finding.file !== undefined ? slugOfDoc.get(finding.file) : undefined;
    return slug !== undefined && slugs.has(slug);
  });
}

/** Why finalize-tier did not verify the tier: its errors and the failing gates with their output's tail. */
function describeFinalizeFailure(finalized: FinalizeTierResult): string {
  const errors = (finalized.errors ?? []).map((error) => `${error.code}: ${error.message}`);
  const gate = finalized.tier_gate_result;
  const failedGates = (gate?.gate_results ?? [])
    .filter((item) => item.passed === false && item.required !== false)
    .map((item) => {
      const output = `${item.stdout ?? ''}${item.stderr ?? ''}`.trim().split('\n').slice(-3).join(' | ');
      return `tier gate \`${item.command}\` failed${output ? `: ${output}` : ''}`;
    });
  return [...errors, ...failedGates, ...(gate && !gate.passed && gate.reason && failedGates.length === 0 ? [gate.reason] : [])].join('; ') || 'the tier was not verified';
}

/** E34 after a failed tier: the Planner revises the PROGRAM, which then waits for approval. */
async function replanAfterFailure(options: ProgramExecuteOptions, programPath: string, repoDir: string, tier: number, reason: string, usage: AgentUsage): Promise<{ message: string; revised: boolean }> {
  try {
    const { replanProgram, warningLine } = await import('./run-planner.js');
    // (from TIER_EXECUTING: a valid revision moves the PROGRAM to REPLANNING; an invalid one leaves it as it was, and the
    // loop then stops BLOCKED — outside attack P12-28: a failed Planner left REPLANNING and "approve the revised plan"
    // with nothing revised)
    const replan = await replanProgram({
      programPath,
      repoDir,
      reason,
      tier,
      env: options.env,
      ...((options.models?.planner ?? options.model) ? { model: options.models?.planner ?? options.model! } : {}),
      ...(options.backends?.planner ? { backend: options.backends.planner } : {}),
      ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    });
    addUsage(usage, replan.usage);
    return replan.validation_passed
      ? { message: `the Planner revised the PROGRAM (${path.relative(repoDir, replan.revised_manifest_path)})${(replan.warnings ?? []).map((warning) => ` — ${warningLine(warning)}`).join('')}: review it and approve with \`polywave update-program-state … --state REVIEWED\``, revised: true }
      : { message: `the Planner's revision is not valid: ${(replan.errors ?? []).join('; ')}`, revised: false };
  } catch (error) {
    return { message: `re-planning failed: ${error instanceof Error ? error.message : String(error)}`, revised: false };
  }
}

/**
 * Outside attack P13-18: an IMPL left BLOCKED by an attempt in another tier (a re-plan moved it) was refused V032 with
 * "fix the pre-existing IMPL doc(s)" and no command named. Names the command that makes its doc REVIEWED again and the
 * IMPL branches its earlier attempt left (kept: they may hold work).
 */
async function blockedDocAdvice(git: Git, manifest: ProgramManifest, tier: number, docs: Awaited<ReturnType<typeof readProgramImplDocs>>, impls: ReadonlyArray<{ slug?: string }>, repoDir: string): Promise<string> {
  const blocked = impls.flatMap((impl) => {
    const doc = docs.get(impl.slug ?? '');
    return doc?.manifest && (doc.manifest.state ?? '').trim() === 'BLOCKED' ? [{ slug: impl.slug ?? '', path: path.relative(repoDir, doc.path) }] : [];
  });
  if (blocked.length === 0) return '';
  const listed: string[] = (await git.run(['for-each-ref', '--format=%(refname:lstrip=2)', `refs/heads/polywave/program/${manifest.program_slug ?? ''}/`]).catch(() => ({ stdout: '' }))).stdout.split('\n');
  const parts = blocked.map(({ slug, path: doc }) => {
    const earlier = listed.filter((branch) => new RegExp(`/tier(\\d+)-impl-${slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`).test(branch) && !branch.endsWith(`/tier${tier}-impl-${slug}`));
    return `${slug}'s IMPL doc is BLOCKED by an earlier attempt: once its cause is fixed, \`polywave set-impl-state ${doc} --state REVIEWED\`${earlier.length > 0 ? ` (its earlier attempt's IMPL branch ${earlier.join(', ')} is kept: the re-run retires it with its agent branches, worktrees and prepare records — the branches kept as refs/polywave/retired/<time>/…, a worktree holding uncommitted work refused — and runs the IMPL afresh on this tier's IMPL branch)` : ''}`;
  });
  return `; ${parts.join('; ')}`;
}

/** Doc states that say an IMPL's waves ran (E28A: program status `reviewed` needs SCOUT_COMPLETE or REVIEWED). */
const ranStates = new Set(['WAVE_EXECUTING', 'WAVE_MERGING', 'WAVE_VERIFIED', 'COMPLETE']);

/** An IMPL whose waves ran outside the tier loop (see {@link implsRunOutsideLoop}); `empty`: its IMPL branch holds no work of its own. */
interface RunOutsideLoop {
  slug: string;
  tier: number;
  status: string;
  doc: string;
  state: string;
  branch: string;
  branchExists: boolean;
  empty: boolean;
  /** (P18-01) what of the loop's work the IMPL branch lacks */
  missing: string;
  lowestOpen: number;
}

/**
 * Outside round P18 (P18-01, P18-07): what of the loop's own work on an IMPL branch is missing, for the waves its doc says
 * ran and were merged — undefined when nothing is. The loop's work is what finalize-wave leaves on the IMPL branch: for
 * each agent of such a wave a merge commit `Merge polywave/<impl>/wave<N>-agent-<ID>` (`--no-ff`, E11) off main's
 * first-parent line (the tier's base and everything before it on that line are main's; a finalize-tier merge of the
 * IMPL branch into main keeps the branch's own commits off that line), and the agent's complete report whose `commit`
 * is one of those commits, reachable from the merge's second parent. "Ran and merged": every wave of a closed doc
 * (COMPLETE, archived); of a doc in a wave state, the waves the loop would skip as "already complete and merged"
 * (autopilot's waveMerged: complete reports, and WAVE_VERIFIED/COMPLETE, a finished merge or a later wave begun). Any
 * commit off the line (an empty commit, a hand merge, a side commit merged into main) no longer stands for that work.
 */
async function missingLoopWork(git: Git, doc: ImplManifest, impl: string, tip: string, closed: boolean): Promise<string | undefined> {
  const state = (doc.state ?? '').trim();
  const waves = [...(doc.waves ?? [])].filter((wave) => (wave.agents ?? []).length > 0).sort((left, right) => (left.number ?? 0) - (right.number ?? 0));
  const later = (number: number) => waves.some((item) => (item.number ?? 0) > number && (item.agents ?? []).some((agent) => doc.completion_reports?.[agent.id ?? ''] !== undefined));
  const claimed = waves.filter((wave) => {
    const number = wave.number ?? 0;
    if (closed) return true;
    return isWaveComplete(doc, number) && (later(number) || state === 'WAVE_VERIFIED' || state === 'COMPLETE' || isWaveFinished(doc, number));
  });
  // P19-03: a complete report of a wave not (yet) claimed merged — a doc left in WAVE_MERGING — whose commit main already
  // holds (work committed on main by hand, or on a side branch merged into it, the report written for it) was "merged"
  // as a no-op by the resumed finalize-wave and the wave adopted, its agent never run. Until finalize-tier merges the
  // IMPL branch, main holds no commit of the IMPL's agents: they commit on their own branches.
  const onMainLine = await commitsMainHolds(git, doc, waves.filter((wave) => !claimed.includes(wave)));
  if (claimed.length === 0) return onMainLine.length > 0 ? onMainLine.join(', ') : undefined;
  // The branch's commits off main's first-parent line (git ≥ 2.38: the exclusion follows first parents only).
  const listed = await git.run(['log', '--format=%H %P%x09%s', '--exclude-first-parent-only', tip, '^HEAD', '--']).then((run) => run.stdout, () => undefined);
  if (listed === undefined) return `its commits could not be listed`;
  const commits = listed.split('\n').filter(Boolean).map((line) => {
    const tab = line.indexOf('\t');
    const [sha = '', ...parents] = line.slice(0, tab).split(' ');
    return { sha, parents, subject: line.slice(tab + 1) };
  });
  const missing: string[] = [];
  for (const wave of claimed) {
    const number = wave.number ?? 0;
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      const report = doc.completion_reports?.[id] as { status?: string; commit?: string } | undefined;
      const commit = (report?.commit ?? '').trim().toLowerCase();
      const reported = report?.status === 'complete' && /^[0-9a-f]{7,64}$/.test(commit) ? commits.find((candidate) => candidate.sha.startsWith(commit)) : undefined;
      if (reported === undefined) {
        missing.push(`agent ${id}'s complete report with a commit of the branch's own (wave ${number})`);
        continue;
      }
      if (wave.type === 'integration') continue; // (an integration wave's agent commits on the IMPL branch itself)
      let agentBranch: string;
      try {
        agentBranch = branchName(impl, number, id);
      } catch {
        missing.push(`agent ${id}'s merge (wave ${number})`);
        continue;
      }
      const merges = commits.filter((candidate) => candidate.parents.length >= 2 && (candidate.subject === `Merge ${agentBranch}` || candidate.subject.startsWith(`Merge ${agentBranch}: `)));
      let found: { sha: string; parents: string[] } | undefined;
      for (const merge of merges) {
        if (await git.run(['merge-base', '--is-ancestor', reported.sha, merge.parents[1]!], { allowExitCodes: [1] }).then((run) => run.exitCode === 0, () => false)) {
          found = merge;
          break;
        }
      }
      if (found === undefined) {
        missing.push(`the merge of ${agentBranch} holding agent ${id}'s commit ${reported.sha.slice(0, 12)}`);
        continue;
      }
      // P19-01: a merge named like the agent's of an empty commit (`git commit-tree HEAD^{tree}`) — or of a change to
      // files that are not the agent's — is no agent's work: the loop merges an agent's branch that changed its own
      // files (I5, and I1 keeps it to them), so the merge changes at least one file the doc gives the agent.
      const changed = await git.run(['diff', '--name-only', '--no-renames', found.parents[0]!, found.sha, '--']).then((run) => run.stdout.split('\n').filter(Boolean), () => undefined);
      const owned = new Set((doc.file_ownership ?? []).filter((row) => (row.agent ?? '') === id).map((row) => normalizeRelativePath(row.file ?? '')));
      if (changed !== undefined && (changed.length === 0 || (owned.size > 0 && !changed.some((file) => owned.has(file))))) {
        missing.push(`agent ${id}'s changes in the merge of ${agentBranch} (${found.sha.slice(0, 12)} changes ${changed.length === 0 ? 'nothing' : `none of the agent's files, only ${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ', …' : ''}`})`);
      }
    }
  }
  missing.push(...onMainLine);
  return missing.length > 0 ? missing.join(', ') : undefined;
}

/** (P19-03) the complete reports of `waves` whose commit main (HEAD) already holds: not an agent's commit of the loop. */
async function commitsMainHolds(git: Git, doc: ImplManifest, waves: ReadonlyArray<{ number?: number; agents?: Array<{ id?: string }> }>): Promise<string[]> {
  const found: string[] = [];
  for (const wave of waves) {
    for (const agent of wave.agents ?? []) {
      const report = doc.completion_reports?.[agent.id ?? ''] as { status?: string; commit?: string } | undefined;
      const commit = (report?.commit ?? '').trim().toLowerCase();
      if (report?.status !== 'complete' || !/^[0-9a-f]{7,64}$/.test(commit)) continue;
      const held = await git.run(['merge-base', '--is-ancestor', commit, 'HEAD'], { allowExitCodes: [1, 128] }).then((run) => run.exitCode === 0, () => false);
      if (held) found.push(`agent ${agent.id ?? ''}'s complete report (wave ${wave.number ?? 0}) names ${commit.slice(0, 12)}, a commit main already holds — not a commit of the loop's agent on its own branch`);
    }
  }
  return found;
}

/**
 * Outside round P14 (P14-20): the IMPLs of tiers the loop has not started (no IMPL branch of theirs exists) that the
 * PROGRAM lists as `pending`, `scouting` or `reviewed` but whose IMPL doc says their waves ran — a wave state, COMPLETE,
 * archived in docs/IMPL/complete/, or WAVE_PENDING with a complete completion report. Only the loop runs them (on their
 * IMPL branch, E28B); such work bypassed P3/P5. An IMPL the loop started (its branch exists: a resume, X60-01) is not one.
 */
async function implsRunOutsideLoop(git: Git, manifest: ProgramManifest, repoDir: string): Promise<RunOutsideLoop[]> {
  const docs = await readProgramImplDocs(repoDir, manifest);
  const found: RunOutsideLoop[] = [];
  // P16-04: the loop starts a tier only once every lower one is complete (P3) — an IMPL branch of a tier above the lowest
  // open one was not made by it (a hand-made branch with the loop's name let a tier-2 IMPL done by hand be adopted).
  const statusOf = (slug: string) => (manifest.impls.find((impl) => impl.slug === slug)?.status ?? '').trim();
  const openTiers = manifest.tiers.filter((tier) => tier.number !== undefined && tier.impls.some((slug) => statusOf(slug) !== 'complete' && statusOf(slug) !== 'not-suitable')).map((tier) => tier.number!);
  const lowestOpen = openTiers.length > 0 ? Math.min(...openTiers) : Number.POSITIVE_INFINITY;
  for (const tier of manifest.tiers) {
    if (tier.number === undefined) continue;
    for (const slug of new Set(tier.impls)) {
      const status = (manifest.impls.find((impl) => impl.slug === slug)?.status ?? '').trim();
      // (P17-03: `executing` too — two plain update-program-impl calls reach it)
      if (status !== 'pending' && status !== 'scouting' && status !== 'reviewed' && status !== 'executing') continue;
      const doc = docs.get(slug);
      if (!doc?.manifest) continue;
      const state = (doc.manifest.state ?? '').trim();
      const archived = path.basename(path.dirname(doc.path)) === 'complete';
      const reported = Object.values(doc.manifest.completion_reports ?? {}).some((report) => (report as { status?: string } | undefined)?.status === 'complete');
      if (!ranStates.has(state) && !archived && !(state === 'WAVE_PENDING' && reported)) continue;
      // The loop closes an IMPL (COMPLETE, archived) only in finalize-tier, after it merged the IMPL branch (--no-ff) —
      // before it sets the status `complete`.
      const closed = state === 'COMPLETE' || archived;
      let branch: string;
      try {
        branch = programBranchName(manifest.program_slug ?? '', tier.number, slug);
      } catch {
        continue;
      }
      const tip = await git.tryRevParse(`refs/heads/${branch}`);
      const branchExists = tip !== undefined;
      // (an `executing` IMPL with a doc in a wave state is a run the loop started: judged only by its branch, when there is one)
      if (status === 'executing' && !closed && (!branchExists || tier.number > lowestOpen)) continue;
      // P17-03, P18-01, P18-07: a branch with the loop's name is the loop's only when it holds the loop's work for what the
      // doc says ran and was merged (see missingLoopWork) — any commit off main's first-parent line (an empty one, a hand
      // merge) is not that work, nor is a branch made at main's tip under a doc that says its waves were merged. A doc in a
      // wave state whose waves the loop has not merged yet (a run it was killed in or stopped BLOCKED) claims nothing: the
      // loop resumes it (its branch may hold nothing yet).
      const missing = branchExists && tier.number <= lowestOpen ? await missingLoopWork(git, doc.manifest, slug, tip, closed) : 'n/a';
      if (missing === undefined) continue;
      found.push({ slug, tier: tier.number, status, doc: path.relative(repoDir, doc.path), state: state || '(none)', branch, branchExists, empty: branchExists && tier.number <= lowestOpen, missing, lowestOpen });
    }
  }
  return found;
}
