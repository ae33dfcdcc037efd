import type { AgentEvent } from '../agents/contract.js';
import { runAgent, type RunAgentOptions, type RunAgentResult } from '../agents/run-agent.js';
import type { GateRunResult, GateSpec } from '../gates/types.js';

/**
 * Issue 17: what the orchestrator knows about one agent launch beyond the runtime options — enough
 * for another machine to redo it from a shared remote (no path on the orchestrator's disk needed).
 */
export interface AgentJobContext {
  slug: string;
  wave: number;
  agentId: string;
  attempt: number;
  /** The commit the agent's branch starts from (the wave's base). */
  baseCommit: string;
  /** The agent branch (`polywave/<slug>/wave<N>-agent-<id>`); absent for solo/integration agents. */
  branch?: string;
  /** The repository root the agent's worktree belongs to (orchestrator side). */
  repoRoot: string;
  /** The run's primary repository (whose committed polywave.config.json holds every repository's worktree setup); default `repoRoot`. */
  primaryRoot?: string;
  /** Solo and integration agents work in the main checkout: never distributed. */
  solo: boolean;
}

/** One agent launch handed to a {@link Dispatcher}. */
export interface AgentJob {
  /** Exactly what the in-process runtime gets (the Redis dispatcher serializes what a worker needs). */
  options: RunAgentOptions;
  context: AgentJobContext;
  /**
   * A dispatched agent's events as they arrive from its worker (while it runs, or with the result
   * for those the progress did not bring), each once: `at` is when it happened on the worker (its
   * clock, ms since the epoch), `worker` the worker's id. Absent: they go to `options.onEvent`.
   */
  onWorkerEvent?: (event: AgentEvent, meta: { at?: number; worker?: string }) => void;
  /** A worker took the job (its id and host, known before the result): the dashboard's "runs on" while it runs. Again when another worker takes it over (a stall). */
  onPlaced?: (placed: { job_id: string; worker: string; host?: string; at: number }) => void;
}

/** Where an agent ran, when it was not in this process. */
export interface DispatchRecord {
  dispatcher: 'redis';
  job_id: string;
  /**
   * A20-33/A20-28/A20-17: true only when the job's result reached this orchestrator and its commits and report were
   * taken (the job ended with a result, its push done). Without it, a report the job's progress wrote early is not final.
   */
  job_result?: boolean;
  worker?: string;
  /** The worker's host (as its result names it; the dashboard's "runs on"). */
  host?: string;
  /** Times the job stalled (its worker died) and BullMQ handed it to another worker: E19 transient failures. */
  stalls: number;
  /**
   * The job of this agent that was in flight when this attempt began, left by an orchestrator that was killed (its
   * attempt number, and its id in `job_id`): awaited as this attempt's run instead of starting another beside it (E9).
   */
  adopted_attempt?: number;
  /**
   * A19-09: jobs of this agent a killed orchestrator left in flight (or finished, their result uncollected) that this
   * attempt did NOT adopt — another request (`differs`: e.g. `script`, `model` after `retry --model`); each ran (or runs)
   * beside this attempt with its own `model`, and nothing of it is this attempt's.
   */
  not_adopted?: Array<{ job_id: string; model: string; differs: string[] }>;
  /** A21-43: progress records of the job that carried no valid signature of the dispatch key (forged in Redis), ignored. */
  forged_progress?: number;
  /** Progress records of this job signed by a worker but for another enqueue of the job id (a replay, issue 17): ignored. */
  replayed_progress?: number;
  /** Enqueue → a worker started the job (ms): its processor took the job, before the worktree is made (the in-process path has no queue: its clock starts at the launch, also before the worktree's agent run). */
  enqueue_to_start_ms?: number;
  /** Its parts: enqueue → BullMQ moved the job to active for the worker; then → the worker's processor ran it (its event loop's wait). */
  enqueue_to_fetch_ms?: number;
  fetch_to_start_ms?: number;
  /** The worker's set-up after the start, not in enqueue_to_start_ms: clone turn, base fetch, `worktree add` (ms). */
  worker_setup_ms?: number;
  /** The worker finished → the result was written here (report saved, branch fetched) (ms). */
  finish_to_result_ms?: number;
  /** Its parts: the worker finished → the result arrived here; then, at the same time, fetching and fast-forwarding the branch and writing the report (each from the arrival). */
  finish_to_received_ms?: number;
  fetch_ms?: number;
  report_ms?: number;
  /** The report was written when the agent reported (from the job's progress), before the result arrived. */
  report_early?: boolean;
  /**
   * The early path, in ms relative to the worker's finish (negative: before it): the agent's run ended; the agent reported;
   * its worker's push of the commits was done; the progress carrying them (a pack) and the one naming
   * them pushed arrived here; they were
   * fetched and fast-forwarded here; the report was written here.
   */
  agent_end_rel_ms?: number;
  reported_rel_ms?: number;
  pushed_rel_ms?: number;
  report_seen_rel_ms?: number;
  pack_seen_rel_ms?: number;
  pushed_seen_rel_ms?: number;
  early_fetched_rel_ms?: number;
  early_applied_rel_ms?: number;
  report_written_rel_ms?: number;
  /**
   * The job's start step by step (ms each, from the previous step; the worker's clock): `active` BullMQ's
   * moveToActive answered (from its processedOn), `processor` the processor took it, `checked` its data
   * checked, `admitted` a slot taken (the start), `clone_turn`, `base` (present or fetched), `cleaned`
   * (earlier worktrees gone), `worktree` (`worktree add`), `seeded` (script, journal), `lease` (the agent branch's lease read), `first_event` (the agent's first event).
   */
  worker_steps_ms?: Record<string, number>;
  /** The worker finished → the completion was in Redis's events stream (its entry's time): the rest of the arrival is this process reading it. */
  finish_to_stream_ms?: number;
  /** This process's event-loop delay (ms, p90 over the last few seconds) when the result arrived. */
  loop_delay_ms?: number;
  /** The worker process's event-loop delay (ms, p90 since it last went from idle to busy) when it returned the result. */
  worker_loop_delay_ms?: number;
  /** The commits were fetched and fast-forwarded when the agent reported (the worker pushed them then), before the result arrived. */
  commits_early?: boolean;
}

/** What a dispatcher returns: the runtime's result, plus where it ran. */
export interface AgentJobResult extends RunAgentResult {
  dispatch?: DispatchRecord;
}

/** One agent's E21 pre-merge gates to run on a worker (`dispatch.gates: "workers"`). */
export interface GateJob {
  slug: string;
  wave: number;
  agentId: string;
  /** The agent branch and the commit of it to gate (pushed to the shared remote first). */
  branch: string;
  head: string;
  /** The repository the branch is in (orchestrator side: where the push runs). */
  repoRoot: string;
  /** The wave's base in that repository (A20-44: the gates' sandbox settings are the project's committed ones there). */
  baseCommit?: string;
  /** The pre-merge gates of this repository, `repo:` removed. */
  gates: readonly GateSpec[];
  docsOnly: boolean;
  defaultTimeoutMs?: number;
  signal?: AbortSignal;
}

/** What a worker's gate run returned: the results exactly as a local runGates, and where they ran. */
export interface GateJobResult {
  run: GateRunResult;
  worker: string;
  host: string;
  /** The scratch worktree on the worker. */
  dir: string;
  job_id: string;
}

/**
 * The seam between run-wave and the machines agents run on (issue 17). run-wave stays the single
 * writer of the manifest and does E42, E19 and finalize itself; a dispatcher only runs the agent
 * and brings its commits into the local worktree and its report through `options.reportCompletion`.
 */
export interface Dispatcher {
  readonly name: 'in-process' | 'redis';
  /** The flags that reach this dispatcher's queue (`--dispatch <url> --dispatch-remote <remote> …`, credentials redacted): named by a re-run that cannot check a job of it (A20-49). */
  readonly flags?: string;
  runAgentJob(job: AgentJob): Promise<AgentJobResult>;
  /**
   * The attempt number of a job of this agent (same slug, wave and base) that is still queued or running on a worker,
   * or finished a moment ago with a result nobody may have collected, if any (A17-34: a re-run after the orchestrator
   * was killed awaits it instead of taking the report it sent early as final). Undefined when none is; rejects when the
   * queue cannot be read in time (A19-21: the caller then fails closed).
   */
  inFlight?(context: { slug: string; wave: number; agentId: string; baseCommit: string; /** The agent's local worktree: a finished job whose commits it holds was collected. */ worktree?: string }): Promise<number | undefined>;
  /**
   * Why the report of this agent may be a lost run's: its latest job (same slug, wave, base; none in flight) failed or
   * ended without a complete result — while no orchestrator listened (A19-11/A19-19) — or no job of it is on record at
   * all (A20-22/A20-39: fail closed). Undefined only when its latest job ended with a complete result.
   */
  lostRun?(context: { slug: string; wave: number; agentId: string; baseCommit: string }): Promise<string | undefined>;
  /** Present when pre-merge gates run on workers (`dispatch.gates: "workers"`); finalize-wave runs them locally otherwise. Rejects when the gates could not run there. */
  runGateJob?(job: GateJob): Promise<GateJobResult>;
  close(): Promise<void>;
}

/** Today's behaviour: the agent runs in this process, in the local worktree. */
export const inProcessDispatcher: Dispatcher = {
  name: 'in-process',
  runAgentJob: (job) => runAgent(job.options),
  close: async () => undefined,
};
