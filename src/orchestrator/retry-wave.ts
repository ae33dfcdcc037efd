import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WaveRetryContext } from '../agents/prompts/wave.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { failureTypes, type FailureType } from '../protocol/schema/impl-schema.js';
import { checkTransition } from '../protocol/state-machine.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';
import { projectRootOf } from '../store/program-impl-docs.js';
import { waveStateDir } from '../engine/state-paths.js';
import { journalPaths } from '../engine/journal.js';
import { lastAttempt, openDispatchedAttempt } from './attempt-record.js';
import { implSlugFromPath } from '../protocol/names.js';
import { buildRetryContext, type ErrorClass } from './retry-context.js';
import { notAdoptedWarning, runWave, type RunWaveOptions, type RunWaveResult } from './run-wave.js';

/** Options of {@link retryWave}: run-wave's, plus which agents and how many retries. */
export interface RetryWaveOptions extends Omit<RunWaveOptions, 'onlyAgents' | 'initialRetry'> {
  /** Retry only this agent (default: every agent of the wave without a complete report). */
  agent?: string;
  /** Go `--gate-type`: the quality gate that failed (build, test, lint), passed on to the agents. */
  gateType?: string;
  /** Retries per agent before it is left BLOCKED (Go `--max-retries`, default 2). */
  maxRetries?: number;
}

/** One agent the retry relaunched (or refused to). */
export interface RetriedAgent {
  agent: string;
  /** The retry number (1 = the first retry). */
  attempt: number;
  previous_status: string;
  error_class: ErrorClass;
  failure_type?: string;
  /** False when its retries were used up (not relaunched). */
  relaunched: boolean;
}

/** The retry JSON (Go's `final_state` vocabulary). */
export interface RetryWaveResult {
  wave: number;
  max_retries: number;
  gate_type?: string;
  agents: RetriedAgent[];
  /** passed: the wave completed; retrying: still failing, retries left; blocked: retries used up. */
  final_state: 'passed' | 'retrying' | 'blocked';
  warnings: string[];
  run?: RunWaveResult;
  success: boolean;
}

function countsPath(root: string, slug: string, wave: number, agent: string): string {
  return path.join(waveStateDir(root, slug, wave), `agent-${agent}`, 'retries.json');
}

async function readCount(file: string): Promise<number> {
  try {
    const value = (JSON.parse(await readFile(file, 'utf8')) as { retries?: unknown }).retries;
    return typeof value === 'number' && value >= 0 ? value : 0;
  } catch {
    return 0;
  }
}

/**
 * E7/E19/E7a `retry`: relaunch the failed agents of a wave (a partial or blocked report, or none)
 * with the E19 retry context of their last report (build-retry-context's prompt text, plus the
 * failed gate), through run-wave (E9: complete agents are not relaunched, their work is kept), then
 * finalize when everyone completed. Retries are counted per agent in
 * `.polywave-state/<slug>/wave<N>/agent-<ID>/retries.json`; an agent past `maxRetries` is not relaunched.
 * Refuses (nothing launched, nothing written): a missing wave or an agent not in it (exit 2), a
 * wave with nothing to retry (`R001_NOTHING_TO_RETRY`, exit 1).
 */
export async function retryWave(options: RetryWaveOptions): Promise<RetryWaveResult> {
  const maxRetries = options.maxRetries ?? 2;
  const { parsed } = await loadImpl(options.implPath);
  const manifest = parsed.manifest;
  if (!manifest) throw new PolywaveError({ code: 'V001_MANIFEST_INVALID', message: `${options.implPath}: manifest is not usable (run: polywave validate)` });
  const wave = (manifest.waves ?? []).find((candidate) => candidate.number === options.wave);
  if (!wave) throw new PolywaveError({ code: 'P011_WAVE_NOT_FOUND', message: `wave ${options.wave} not found in ${path.basename(options.implPath)}` });
  const ids = (wave.agents ?? []).map((agent) => agent.id ?? '').filter(Boolean);
  if (options.agent !== undefined && !ids.includes(options.agent)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `agent ${options.agent} is not in wave ${options.wave} (agents: ${ids.join(', ') || 'none'})` });
  }
  const failed = ids.filter((id) => manifest.completion_reports?.[id]?.status !== 'complete' && (options.agent === undefined || id === options.agent));
  const root = options.repoDir ?? projectRootOf(options.implPath, path.dirname(options.implPath));
  const slug = implSlugFromPath(options.implPath, manifest);
  if (failed.length === 0) {
    // A22-07: complete reports brought early by dispatched jobs whose orchestrator was killed are not final either.
    const open = (await Promise.all(ids.filter((id) => options.agent === undefined || id === options.agent).map(async (id) => ({ id, open: await openDispatchedAttempt(journalPaths(root, slug, options.wave, id).dir) })))).filter((item) => item.open !== undefined);
    if (open.length > 0 && manifest.state === 'BLOCKED') {
      // A23-41: the run BLOCKED on an error of its own (an orchestrator error while collecting — e.g. the agent's local
      // worktree removed mid-run) with a job still out: run-wave's prepare-wave refuses a BLOCKED IMPL, so naming it was a
      // dead end (only set-impl-state got out). retry resumes the wave and makes that re-run itself: it awaits or adopts
      // each job (in-process: withdraws the early report and runs the agent again), then finalizes.
      const resumed = await editImpl(options.implPath, (current) => {
        const state = current.manifest?.state;
        if (state !== 'BLOCKED' || !checkTransition(state, 'WAVE_EXECUTING', current.manifest ?? undefined).ok) return { edits: [], outcome: false };
        return { edits: [{ path: ['state'], value: 'WAVE_EXECUTING' }], outcome: true };
      });
      const warnings = [`the job(s) of agent(s) ${open.map((item) => item.id).join(', ')} ran on a worker and were never collected: re-running the wave to collect them`];
      if (resumed) warnings.push('state BLOCKED → WAVE_EXECUTING (E7: the wave is re-run)');
      const { agent: _agent, gateType: _gateType, maxRetries: _maxRetries, ...runOptions } = options;
      const run = await runWave({ ...runOptions, ...(options.agent !== undefined ? { onlyAgents: [options.agent] } : {}) });
      for (const agent of run.agents) for (const attempt of agent.attempts) for (const left of attempt.dispatch?.not_adopted ?? []) warnings.push(notAdoptedWarning(agent.agent, agent.model, left));
      const base = { wave: options.wave, max_retries: maxRetries, ...(options.gateType ? { gate_type: options.gateType } : {}), agents: [], warnings };
      return run.success ? { ...base, final_state: 'passed', run, success: true } : { ...base, final_state: 'blocked', run, success: false };
    }
    if (open.length > 0) {
      throw new PolywaveError({
        code: 'R001_NOTHING_TO_RETRY',
        message: `wave ${options.wave}: nothing failed, but the job(s) of agent(s) ${open.map((item) => item.id).join(', ')} ran on a worker and were never collected (the orchestrator stopped): re-run \`polywave run-wave ${options.implPath} --wave ${options.wave} ${open[0]!.open!.dispatched.flags}\` (it awaits or adopts each job, then finalizes)`,
        exitCode: 1,
      });
    }
    throw new PolywaveError({
      code: 'R001_NOTHING_TO_RETRY',
      message: options.agent ? `agent ${options.agent} of wave ${options.wave} has a complete report: nothing to retry` : `every agent of wave ${options.wave} has a complete report: nothing to retry (finalize-wave merges it)`,
      exitCode: 1,
    });
  }
  const warnings: string[] = [];
  const agents: RetriedAgent[] = [];
  const initialRetry: Record<string, WaveRetryContext> = {};
  for (const id of failed) {
    const report = manifest.completion_reports?.[id];
    const used = await readCount(countsPath(root, slug, options.wave, id));
    const context = buildRetryContext(manifest, id, { attempt: used + 1, failureType: report ? undefined : 'transient' });
    const relaunch = used < maxRetries;
    agents.push({ agent: id, attempt: used + 1, previous_status: report?.status ?? 'none', error_class: context.error_class, ...(context.failure_type ? { failure_type: context.failure_type } : {}), relaunched: relaunch });
    if (!relaunch) {
      warnings.push(`agent ${id}: ${used} retr${used === 1 ? 'y' : 'ies'} used (--max-retries ${maxRetries}): not relaunched — fix it by hand or descope it (E7)`);
      continue;
    }
    if (context.failure_type === 'needs_replan' || context.failure_type === 'escalate') {
      warnings.push(`agent ${id} reported ${context.failure_type}: E8/E19 expect a human decision first (polywave update-agent-prompt, amend-impl); relaunching as asked`);
    }
    const failureType = (failureTypes as readonly string[]).includes(context.failure_type ?? '') ? (context.failure_type as FailureType) : undefined;
    initialRetry[id] = {
      // Attack F20: the relaunch continues the agent's attempt numbers (the run's own E19 relaunches
      // included), so on a dispatcher it is a new job, never the first run's.
      attempt: Math.max(used + 2, (await lastAttempt(journalPaths(root, slug, options.wave, id).dir)) + 1),
      ...(failureType ? { failureType } : {}),
      ...(report?.notes ? { previousNotes: report.notes } : {}),
      details: [options.gateType ? `The ${options.gateType} quality gate failed.` : undefined, context.prompt_text.trim()].filter(Boolean).join('\n\n'),
    };
  }
  const relaunched = agents.filter((agent) => agent.relaunched).map((agent) => agent.agent);
  const base = { wave: options.wave, max_retries: maxRetries, ...(options.gateType ? { gate_type: options.gateType } : {}), agents, warnings };
  if (relaunched.length === 0) return { ...base, final_state: 'blocked', success: false };
  for (const id of relaunched) {
    const file = countsPath(root, slug, options.wave, id);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify({ retries: (await readCount(file)) + 1 })}\n`);
  }
  // E7: the wave went BLOCKED; re-running its failing agents resumes it.
  const resumed = await editImpl(options.implPath, (current) => {
    const state = current.manifest?.state;
    if (state !== 'BLOCKED' || !checkTransition(state, 'WAVE_EXECUTING', current.manifest ?? undefined).ok) return { edits: [], outcome: false };
    return { edits: [{ path: ['state'], value: 'WAVE_EXECUTING' }], outcome: true };
  });
  if (resumed) warnings.push('state BLOCKED → WAVE_EXECUTING (E7: the failing agents are re-run)');
  const { agent: _agent, gateType: _gateType, maxRetries: _maxRetries, ...runOptions } = options;
  const run = await runWave({ ...runOptions, onlyAgents: relaunched, initialRetry });
  // A19-09: `retry --model` another model while a killed run's job of the agent was in flight: that job is not adopted.
  for (const agent of run.agents) for (const attempt of agent.attempts) for (const left of attempt.dispatch?.not_adopted ?? []) warnings.push(notAdoptedWarning(agent.agent, agent.model, left));
  if (run.success) return { ...base, final_state: 'passed', run, success: true };
  const exhausted = agents.every((agent) => !agent.relaunched || agent.attempt >= maxRetries);
  return { ...base, final_state: exhausted ? 'blocked' : 'retrying', run, success: false };
}
