import path from 'node:path';
import { isDocsOnlyWave } from '../../gates/docs-only.js';
import { toGoGateResult, type GoGateResult } from '../../gates/go-compat.js';
import { emitGateActivities, filterGatesByTiming, runGates } from '../../gates/run-gates.js';
import type { GateRunResult, GateSpec } from '../../gates/types.js';
import { repoKey } from '../../protocol/waves.js';
import { mapBounded, retryOnLockContention } from '../prepare/parallel.js';
import { setupDeferredWorktree, worktreeSetupCodes } from '../prepare/worktree-setup.js';
import type { StepDefinition } from '../step.js';
import { errorText, listForDetail, manifestOf, type FinalizeAgent, type FinalizeContext, type FinalizeRepo } from './context.js';

/** The gates that apply to a repository, with `repo:` removed (they run in the directory given). */
export function gatesForRepo(gates: readonly GateSpec[], repo: FinalizeRepo, repoCount: number): GateSpec[] {
  const names = new Set([repo.key, path.basename(repo.root)].map((name) => name.toLowerCase()));
  return gates
    .filter((gate) => {
      const key = repoKey(gate.repo).toLowerCase();
      // Unscoped gates belong to the primary repository (MR02 requires `repo:` when there are several).
      if (key === '') return repo.primary || repoCount === 1;
      return names.has(key);
    })
    .map(({ repo: _repo, ...gate }) => gate);
}

/** One agent's pre-merge gate run. */
interface AgentGateRun {
  agent: FinalizeAgent;
  dir: string;
  scratch: boolean;
  run?: GateRunResult;
  error?: string;
  /** The gates ran on a worker (issue 17, `dispatch.gates: "workers"`). */
  worker?: { id: string; host: string };
}

/**
 * E21 pre-merge gates, run where the agent's work is — in each agent's worktree (E21B groups and
 * the E38 cache apply, per worktree), agents in parallel (bounded). A worktree with uncommitted
 * changes (or none at all) would not test what is merged: the gates then run in a scratch
 * checkout of the branch tip. A failing required gate blocks the merge and names the agent and
 * the command.
 */
export const preMergeGatesStep: StepDefinition<FinalizeContext> = {
  name: 'run-gates',
  async run(context) {
    const manifest = manifestOf(context);
    const all = filterGatesByTiming(manifest.quality_gates?.gates ?? [], 'pre-merge');
    const agents = context.agents.filter((agent) => agent.tip !== undefined && !agent.merged);
    if (all.length === 0) return { status: 'skipped', detail: 'no pre-merge quality gates (E21)' };
    if (agents.length === 0) return { status: 'skipped', detail: 'every agent branch is already in the target (E9): nothing left to gate' };
    const docsOnly = isDocsOnlyWave(manifest, context.wave);

    const runs: AgentGateRun[] = [];
    const remote = context.options.remoteGates;
    for (const agent of agents) {
      // Issue 17: on a worker, in a scratch checkout of the branch tip there (pushed to the shared remote).
      if (remote) {
        runs.push({ agent, dir: `a checkout of ${agent.branch}`, scratch: true });
        continue;
      }
      let dir = agent.worktreePath;
      let scratch = !agent.worktree;
      if (agent.worktree) {
        // A22-23: a dispatched agent's worktree was not set up by prepare-wave (its worker set up its job's): set up here,
        // now that the job's commits are in it, as prepare-wave would have before the agent ran.
        const setup = await setupDeferredWorktree({ primaryRoot: context.primary.root, repoRoot: agent.repo.root, worktree: agent.worktreePath, rootGit: context.rawGitAt(agent.repo.root), git: context.rawGitAt(agent.worktreePath), env: context.env ?? process.env, now: context.now, ...(context.options.signal ? { signal: context.options.signal } : {}) });
        if (setup && !setup.ok) {
          runs.push({ agent, dir, scratch, error: `${setup.code ?? worktreeSetupCodes.failed}: the worktree setup deferred from prepare-wave (the agent ran on a worker) failed here: ${(setup.error ?? 'failed').slice(0, 500)}${setup.output_tail ? `\n${setup.output_tail.slice(-1000)}` : ''}` });
          continue;
        }
        const dirty = (await context.gitAt(agent.worktreePath).status()).filter((entry) => !entry.path.startsWith('.polywave'));
        if (dirty.length > 0) scratch = true;
      }
      if (scratch) dir = path.join(agent.repo.root, '.claude', 'worktrees', 'polywave', context.slug, `gates-wave${context.wave}-agent-${agent.id}`);
      runs.push({ agent, dir, scratch });
    }
    const outcomes = await mapBounded(
      runs,
      context.options.gateConcurrency ?? 2,
      async (item) => {
        const gates = gatesForRepo(all, item.agent.repo, context.repos.length);
        if (gates.length === 0 || item.error) return item;
        if (remote) {
          const ran = await remote({ slug: context.slug, wave: context.wave, agentId: item.agent.id, branch: item.agent.branch, head: item.agent.tip!, repoRoot: item.agent.repo.root, ...(item.agent.repo.base ? { baseCommit: item.agent.repo.base } : {}), gates, docsOnly, ...(context.options.gateTimeoutMs ? { defaultTimeoutMs: context.options.gateTimeoutMs } : {}), ...(context.options.signal ? { signal: context.options.signal } : {}) });
          item.run = ran.run;
          item.worker = { id: ran.worker, host: ran.host };
          // E40 as for a local run (the worker's gates emit nothing here), naming the worker.
          if (context.options.events) emitGateActivities(context.options.events, { slug: context.slug, wave: context.wave, agent: item.agent.id, scope: 'pre-merge', worker: ran.worker }, ran.run.results);
          item.dir = `a checkout of ${item.agent.branch} on worker ${ran.worker} (${ran.host})`;
          return item;
        }
        if (item.scratch) {
          await retryOnLockContention(() => item.agent.repo.git.run(['worktree', 'add', '--quiet', '--detach', '--', item.dir, item.agent.tip!]));
        }
        try {
          item.run = await runGates({
            repoDir: item.dir,
            gates,
            timing: 'pre-merge',
            ...(context.options.noCache ? { noCache: true } : {}),
            ...(context.options.signal ? { signal: context.options.signal } : {}),
            ...(context.options.events ? { events: context.options.events, labels: { slug: context.slug, wave: context.wave, agent: item.agent.id, scope: 'pre-merge' } } : {}),
            ...(context.env ? { env: context.env } : {}),
            ...(context.options.gateTimeoutMs ? { defaultTimeoutMs: context.options.gateTimeoutMs } : {}),
            now: context.now,
            configSearchDirs: [item.agent.repo.root],
            docsOnly,
          });
        } finally {
          // Our own scratch checkout of a committed tip: only gate outputs live there.
          if (item.scratch) await item.agent.repo.git.worktreeRemove(item.dir, { force: true }).catch(() => undefined);
        }
        return item;
      },
      context.options.signal,
    );
    outcomes.forEach((outcome, index) => {
      if (outcome.status === 'rejected') runs[index]!.error = errorText(outcome.reason);
    });

    const failures: string[] = [];
    const warnings: string[] = [];
    let count = 0;
    for (const item of runs) {
      const results: Array<GoGateResult & { agent?: string; worker?: string }> = (item.run?.results ?? []).map((result) => ({ ...toGoGateResult(result), agent: item.agent.id, ...(item.worker ? { worker: item.worker.id } : {}) }));
      const key = item.agent.repo.key;
      context.result.gate_results[key] = [...(context.result.gate_results[key] ?? []), ...results];
      count += results.length;
      if (item.error) failures.push(`agent ${item.agent.id}: gates could not run in ${item.dir}: ${item.error}`);
      for (const result of item.run?.results ?? []) {
        if (result.passed) continue;
        const what = `agent ${item.agent.id}: ${result.type} gate \`${result.command}\` ${result.timed_out ? 'timed out' : result.exit_code === -1 ? `did not run (${result.error ?? 'skipped'})` : `exited ${result.exit_code}`} in ${item.worker ? item.dir : item.scratch ? `a checkout of ${item.agent.branch}` : item.dir}`;
        if (result.required) failures.push(what);
        else warnings.push(`${what} (optional)`);
      }
      if (item.scratch && item.agent.worktree && !item.worker) warnings.push(`agent ${item.agent.id}'s worktree has uncommitted changes: gates ran on its committed tip`);
    }
    if (failures.length > 0) {
      context.block = { reason: 'E21: required pre-merge gate failed', mergeState: 'idle' };
      return {
        status: 'failed',
        detail: `E21: required pre-merge gate(s) failed — ${listForDetail(failures, 10)}. Nothing was merged; fix the agent's branch and re-run finalize-wave`,
        data: { failures, warnings, gate_results: context.result.gate_results },
      };
    }
    return {
      status: warnings.length > 0 ? 'warning' : 'success',
      detail: `E21: ${count} pre-merge gate run(s) passed in ${runs.length} agent ${remote ? `checkout(s) on workers (${[...new Set(runs.flatMap((item) => (item.worker ? [item.worker.id] : [])))].join(', ')})` : 'worktree(s)'}${warnings.length > 0 ? `; ${listForDetail(warnings, 5)}` : ''}`,
      data: { gate_results: context.result.gate_results },
    };
  },
};
