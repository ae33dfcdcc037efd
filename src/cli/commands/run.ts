import { existsSync, readdirSync, rmdirSync, readFileSync } from 'node:fs';
import { PolywaveError } from '../../errors/polywave-error.js';
import { startRecording } from '../event-recording.js';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { EventBus } from '../../engine/events.js';
import { runAutopilot, type PlanSummary } from '../../orchestrator/autopilot.js';
import type { CommandIo, CommandResult } from '../io.js';
import { createWaveProgress } from '../wave-progress.js';
import { interruptSignal, repoDirOption } from './prepare-wave.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { budgetFrom } from '../budget-option.js';
import { dispatchFlagsFrom, dispatcherFromConfig } from '../../dispatch/from-config.js';
import { requireModelCredentials } from '../../agents/credentials.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { acquireRunLock } from '../run-lock.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';

function formatPlan(plan: PlanSummary): string {
  const lines = [`Plan: ${plan.title || plan.slug} — verdict ${plan.verdict || '?'}, ${plan.waves.length} wave(s), ${plan.estimated_agents} agent(s)`];
  for (const wave of plan.waves) {
    lines.push(`  wave ${wave.number}${wave.type ? ` (${wave.type})` : ''}:`);
    for (const agent of wave.agents) lines.push(`    ${agent.id.padEnd(3)} ${agent.files.join(', ')}${agent.task ? `\n        ${agent.task}` : ''}`);
  }
  if (plan.contracts.length > 0) lines.push(`  interface contracts: ${plan.contracts.join('; ')}`);
  if (plan.scaffolds.length > 0) lines.push(`  scaffolds: ${plan.scaffolds.join(', ')}`);
  lines.push(`  manifest: ${plan.impl_path}`);
  return `${lines.join('\n')}\n`;
}

/** What to do after a stop, or undefined when re-running the same command cannot help (issue 13). */
export function resumeAdvice(state: string, stopped: string | undefined): string | undefined {
  if (state === 'NOT_SUITABLE' || state === 'COMPLETE') return undefined;
  if (stopped === undefined) return 'Re-run the same command to resume.';
  if (stopped.startsWith('waiting for approval')) return 'Re-run with --yes (or --auto) to approve the plan.';
  if (/a human must decide/.test(stopped)) return undefined;
  return 'Fix what is named above, then re-run the same command to resume (finished work is kept).';
}

/** Removes each directory that is empty, in order (a parent after its child); anything else is kept. */
function removeIfEmpty(directories: readonly string[]): void {
  for (const directory of directories) {
    try {
      if (readdirSync(directory).length === 0) rmdirSync(directory);
    } catch {
      // gone already, or not removable: kept
    }
  }
}

/**
 * Does `run`'s argument name a manifest file rather than describe a feature? One word (no
 * whitespace) that ends in `.yaml`/`.yml` or holds a path separator: "docs/IMPL/IMPL-x.yaml",
 * "IMPL-x.yml", "docs/IMPL/IMPL-x". A feature description has words ("add read/write locks").
 */
export function looksLikeManifestPath(target: string): boolean {
  if (target === '' || /\s/.test(target)) return false;
  return /\.ya?ml$/i.test(target) || target.includes('/') || target.includes(path.sep);
}

/** N005 (exit 2) for a manifest path that does not exist; names the archived copy when close-impl moved it. */
function missingManifest(target: string, asPath: string, repoDir: string): PolywaveError {
  const directory = path.dirname(asPath);
  const base = path.basename(asPath);
  const candidates = path.basename(directory) === 'complete' ? [] : [path.join(directory, 'complete', base), ...(/\.ya?ml$/i.test(base) ? [] : [path.join(directory, 'complete', `${base}.yaml`)])];
  const archived = candidates.find((candidate) => existsSync(candidate));
  const shown = (file: string): string => {
    const relative = path.relative(repoDir, file);
    return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
  };
  const message = archived !== undefined
    ? `manifest not found: ${target} — it was archived to ${shown(archived)} (the ${/^PROGRAM-/.test(base) || path.basename(directory) === 'PROGRAM' ? 'PROGRAM' : 'IMPL'} is closed; nothing to run); nothing changed`
    : `manifest not found: ${target} (${asPath} does not exist); nothing changed — to plan a new feature, pass its description in words`;
  return new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message });
}

function model(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * `polywave run "<feature>" | <impl> [--auto|--yes] [--model M] [--<role>-model M] …` — the
 * autopilot: scout → plan (approval) → scaffold → waves → integration → close-impl. Re-running
 * the same command resumes from the manifest and git state.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const target = args[0]?.trim() ?? '';
  const repoDir = repoDirOption(options, io) ?? io.cwd;
  const asPath = path.resolve(io.cwd, target);
  const isImpl = /\.ya?ml$/i.test(target) && existsSync(asPath);
  // A PROGRAM manifest (docs/PROGRAM/PROGRAM-x.yaml, or --program) runs the tier loop.
  if (options.program === true || (isImpl && (/(^|[/\\])PROGRAM-[^/\\]+\.ya?ml$/i.test(asPath) || looksLikeProgram(asPath, target)))) {
    const { run: runProgram } = await import('./program-execute.js');
    return runProgram(args, { ...options, auto: options.auto === true }, io);
  }
  // Issue 13 (N2): a single word that looks like a manifest path but names no file is a missing manifest, never feature text.
  if (!isImpl && looksLikeManifestPath(target)) throw missingManifest(target, asPath, repoDir);
  // attack-serve-15 N1: one run per plan at a time, across processes (terminals, `polywave serve`s) — taken
  // before anything is checked or written, held for the run's life; a second run is RUN_IN_PROGRESS (exit 2).
  if (isImpl) await refuseImplOfRunningProgram(asPath, { command: 'run', cwd: io.cwd, mergeTarget: options.mergeTarget, env: io.env });
  const releaseLock = isImpl ? acquireRunLock(repoDir, asPath) : undefined;
  try {
    return await runPlan(target, asPath, isImpl, repoDir, options, io);
  } finally {
    releaseLock?.();
  }
}

async function runPlan(target: string, asPath: string, isImpl: boolean, repoDir: string, options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // Issue 13: no model credentials → say which backend each role would use and what to set, before anything starts (exit 2).
  const roles = [...(isImpl ? [] : [{ role: 'the Scout', model: model(options, 'scoutModel') ?? model(options, 'model') }]), { role: 'the wave agents', model: model(options, 'waveModel') ?? model(options, 'model') }];
  requireModelCredentials(roles, io.env);
  // E39 `run --interview`: the interview comes first; its REQUIREMENTS.md is what the Scout plans from.
  let feature = target;
  let slug: string | undefined;
  if (options.interview === true) {
    if (isImpl) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'run --interview takes a feature description, not an IMPL path' });
    const { conductInterview } = await import('./interview.js');
    // Its report goes to stderr: stdout is the run's (NDJSON with --json). Re-running resumes the same interview.
    const interview = await conductInterview(
      [target],
      { resumeExisting: true, ...(typeof options.answers === 'string' ? { answers: options.answers } : {}), ...(options.repoDir !== undefined ? { projectPath: repoDir } : {}) },
      { ...io, stdout: io.stderr },
    );
    if (interview.code !== 0 || interview.requirements === undefined) return interview.code;
    // This interview's own answers: docs/REQUIREMENTS.md is shared by every interview of the directory.
    feature = interview.requirements;
    slug = interview.slug;
  }
  const budget = await budgetFrom(options, repoDir);
  // Issue 17: --dispatch redis://… (or polywave.config.json `dispatch`): wave agents run on `polywave worker`s.
  const dispatcher = await dispatcherFromConfig(dispatchFlagsFrom(options), { startDir: repoDir, env: io.env });
  // F10, N3, N4: the one launch pre-check — the backend's package and the model servers (local ones, a custom
  // base URL) — before the run writes anything (dispatched wave agents use the workers': only their credentials count).
  try {
    await requireAgentsReady(
      roles.map((role) => ({ ...role, ...(dispatcher && role.role === 'the wave agents' ? { remote: true } : {}) })),
      io.env,
    );
  } catch (error) {
    await dispatcher?.close();
    throw error;
  }
  const docsImpl = path.join(repoDir, 'docs', 'IMPL');
  const hadDocsImpl = existsSync(docsImpl);
  const json = options.json === true;
  const auto = options.auto === true || options.yes === true;
  const events = new EventBus();
  const progress = json ? undefined : createWaveProgress(io, { tty: io.stderrIsTty === true, command: 'run' });
  if (json) events.subscribe((event) => io.stdout(`${JSON.stringify(event)}\n`));
  else events.subscribe(progress!.onEvent);
  const recorder = startRecording(events, { command: 'run', options, io, quiet: json });
  const interrupt = interruptSignal();
  const timeout = Number(options.timeout);
  const concurrency = Number(options.concurrency);
  const maxTurns = Number(options.maxTurns);
  try {
    const result = await runAutopilot({
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      ...(isImpl ? { implPath: asPath } : { feature, ...(slug ? { slug } : {}) }),
      repoDir,
      auto,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      ...(model(options, 'model') ? { model: model(options, 'model')! } : {}),
      models: {
        ...(model(options, 'scoutModel') ? { scout: model(options, 'scoutModel')! } : {}),
        ...(model(options, 'criticModel') ? { critic: model(options, 'criticModel')! } : {}),
        ...(model(options, 'scaffoldModel') ? { scaffold: model(options, 'scaffoldModel')! } : {}),
        ...(model(options, 'waveModel') ? { wave: model(options, 'waveModel')! } : {}),
        ...(model(options, 'integrationModel') ? { integration: model(options, 'integrationModel')! } : {}),
      },
      ...(Number.isFinite(concurrency) && concurrency > 0 ? { concurrency: Math.floor(concurrency) } : {}),
      ...(Number.isFinite(timeout) && timeout > 0 ? { agentTimeoutMs: Math.round(timeout * 1000) } : {}),
      ...(Number.isFinite(maxTurns) && maxTurns > 0 ? { maxTurns: Math.floor(maxTurns) } : {}),
      ...(options.critic === false ? { noCritic: true } : {}),
      ...(options.acceptChanges === true ? { acceptChanges: true } : {}),
      ...(budget ? { budget } : {}),
      ...(dispatcher ? { dispatcher } : {}),
      // A feature's plan is locked from before its Scout (an IMPL's already is, above; the take nests).
      lockPlan: (implPath) => acquireRunLock(repoDir, implPath),
      approve: async (plan) => {
        if (json) return false;
        io.stderr(formatPlan(plan));
        if (!io.ask) {
          io.stderr('Not a terminal: re-run with --yes (or --auto) to approve this plan.\n');
          return false;
        }
        const answer = (await io.ask('Proceed with this plan? [y/N] ')).trim().toLowerCase();
        return answer === 'y' || answer === 'yes';
      },
      onPhase: (phase) => {
        if (!json) io.stderr(`run: ${phase.phase}${phase.wave ? ` ${phase.wave}` : ''} ${phase.status} — ${phase.detail}\n`);
      },
    });
    if (json) io.stdout(`${JSON.stringify({ v: 1, type: 'run-result', result, ...(recorder ? { run_id: recorder.runId } : {}) })}\n`);
    else {
      // Issue 13: a human gets a short summary (the result JSON only with --json), and the resume advice only where re-running helps.
      const cost = result.usage.costUsd === undefined ? 'cost unknown' : `$${result.usage.costUsd.toFixed(2)}`;
      // F10: an IMPL the Scout never wrote is not named, and there is nothing to resume.
      const written = result.impl_path !== undefined && result.impl_path !== '' && existsSync(result.impl_path);
      const where = written ? ` — ${path.relative(repoDir, result.impl_path!) || result.impl_path}` : '';
      const advice = result.success ? undefined : written ? resumeAdvice(result.state, result.stopped) : 'Nothing was written: fix what is named above, then run the command again.';
      io.stdout(
        `run: ${result.success ? 'COMPLETE' : `stopped (${written ? result.state || 'no IMPL' : 'no IMPL written'})`}${where} in ${(result.duration_ms / 1000).toFixed(1)} s, ${result.merged_agents.length} agent(s) merged, ${result.usage.inputTokens + result.usage.outputTokens} tokens, ${cost}\n` +
          `${result.stopped ? `  ${result.stopped}\n` : ''}${advice ? `  ${advice}\n` : ''}`,
      );
    }
    // F10: a failed Scout leaves no empty docs/IMPL/ (or docs/) behind that this run created.
    if (!result.success && !hadDocsImpl) removeIfEmpty([docsImpl, path.dirname(docsImpl)]);
    return result.success ? 0 : 1;
  } finally {
    await dispatcher?.close();
    recorder?.close();
    progress?.stop();
    interrupt.dispose();
  }
}

/**
 * P13-30: a PROGRAM manifest under another name (`docs/PROGRAM/shop.yaml`, `plans/shop.yaml`) was run as an IMPL and
 * failed at close-impl ("the manifest has no agents: use --force"), issue 12's first symptom. Known by its top-level
 * keys (`program_slug`, `tiers`), it goes to the tier loop, which says where a PROGRAM must be.
 */
function looksLikeProgram(file: string, shown: string): boolean {
  let document: unknown;
  try {
    // P14-04, P15-04: by the parsed document's top-level keys — a quoted key (`"program_slug": x`), flow style, JSON or an
    // escaped key (`"program\x5fslug"`) slipped past text patterns; every document is parsed (a few ms).
    document = parseYaml(readFileSync(file, 'utf8').replace(/^\uFEFF/, ''), { uniqueKeys: false }) as unknown;
  } catch {
    return false;
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) return false;
  const keys = new Set(Object.keys(document));
  if (!keys.has('program_slug')) return false;
  // P15-04: a document with both readings (program-status shows it as a PROGRAM) is neither run.
  const implKeys = ['feature_slug', 'waves', 'file_ownership', 'verdict'].filter((key) => keys.has(key));
  if (implKeys.length > 0) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${shown} has both a PROGRAM's keys (program_slug${keys.has('tiers') ? ', tiers' : ''}) and an IMPL's (${implKeys.join(', ')}): it is neither run — keep one document's keys` });
  }
  return keys.has('tiers');
}
