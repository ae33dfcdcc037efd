import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { AgentOutcome, AgentRole } from '../agents/contract.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { branchName } from '../protocol/names.js';
import { dispatchCodes } from './codes.js';
import { jobFormat } from './job-claim.js';

/** Placeholders in a job's prompt text for paths that only exist on the machine that runs it. */
export const worktreeToken = '{{POLYWAVE_WORKTREE}}';

/** Prefix of the BullMQ queues: `polywave-agents.<remote key>`, labelled jobs in `…@<label+label…>`. */
export const baseQueueName = 'polywave-agents';

/**
 * Attack F6: the key of a shared remote in queue names and worker records — the first 12 hex of the
 * SHA-256 of its URL normalized: no userinfo, a plain absolute path as `file://<path>`,
 * `file://localhost/` as `file:///`, scheme and host lower-case, no trailing `/` or `.git`. The
 * orchestrator and its workers must spell the remote the same way otherwise (docs/scale-out.md).
 */
export function remoteKey(remote: string): string {
  return createHash('sha256').update(normalizeRemote(remote)).digest('hex').slice(0, 12);
}

/** The text {@link remoteKey} hashes. */
export function normalizeRemote(remote: string): string {
  let text = remote.trim().replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s@/?#]*@/, '$1');
  if (text.startsWith('/')) text = `file://${text}`;
  text = text.replace(/^file:\/\/localhost\//i, 'file:///');
  text = text.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*)/, (prefix) => prefix.toLowerCase());
  return text.replace(/\/+$/, '').replace(/\.git$/, '').replace(/\/+$/, '');
}

/** Key prefix of everything polywave keeps in Redis besides BullMQ's queues. */
export const registryPrefix = 'polywave:workers:';

/** Labels: lower-case words, so a queue name is stable however they were typed. */
const labelPattern = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** Normalized label set (sorted, unique), checked (`code`: whose label it is — a worker's flag by default, DISPATCH_INVALID_LABEL). */
export function normalizeLabels(labels: readonly string[], code: string = dispatchCodes.invalidLabel): string[] {
  const result = [...new Set(labels.map((label) => label.trim().toLowerCase()).filter((label) => label !== ''))].sort();
  for (const label of result) if (!labelPattern.test(label)) throw new PolywaveError({ code, message: `label ${JSON.stringify(label.slice(0, 64))} must match ${labelPattern.source}` });
  return result;
}

/** A named queue (`polywave worker --queue`, `--dispatch-queue`, `dispatch.queue`): lower-case word, no `.`, `@`, `+` or `:` (queue-name separators). */
export const queuePattern = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** `name` when it is a valid queue name ({@link queuePattern}), else DISPATCH_INVALID_QUEUE (`flag`: how the caller gave it). */
export function checkQueueName(name: string, flag = '--queue'): string {
  if (!queuePattern.test(name)) throw new PolywaveError({ code: dispatchCodes.invalidQueue, message: `${flag} ${JSON.stringify(name.slice(0, 64))} must match ${queuePattern.source} (lower-case letters, digits, - and _)` });
  return name;
}

/**
 * The queue a job with `labels` for the remote of key `remote` ({@link remoteKey}) goes to: one queue
 * per remote, named queue and label set (sorted, joined with `+`). A worker serves the queue of every
 * subset of its labels for its own remote and queue only, so a job only ever reaches a worker of its
 * remote (attack F6) and queue (`--queue`: teams sharing one Redis and remote) that has all of the
 * job's labels (see docs/scale-out.md). No queue name: `polywave-agents.<remote>[@labels]`; with one:
 * `polywave-agents.<remote>.<queue>[@labels]`.
 */
export function queueNameFor(labels: readonly string[], remote: string, queue?: string): string {
  const set = normalizeLabels(labels);
  const base = `${baseQueueName}.${remote}${queue !== undefined && queue !== '' ? `.${checkQueueName(queue)}` : ''}`;
  return set.length === 0 ? base : `${base}@${set.join('+')}`;
}

/**
 * A19-05/A19-03: the counter of a job's runs (`polywave:run:<queue>:<job id>`): a worker INCRs it when it starts a run
 * and puts the number in the run's progress (`run_no`); the orchestrator orders the job's runs by it — never by a
 * worker's clock — and ignores a run whose number Redis never handed out. Outside round A24-15/A24-04: a plain Redis key
 * of ONE queue (a writer sets it; a Redis restarted empty starts it at 1 again): it orders runs of the job on the queue
 * it was enqueued on only (results and progress name their queue, signed), and the orchestrator's own add of the job
 * again restarts the order.
 */
export function runCounterKey(queueName: string, jobId: string): string {
  return `polywave:run:${queueName}:${jobId}`;
}

/**
 * Outside round A22-24: the mark an orchestrator leaves on a job its watch gave up on (`polywave:given-up:<queue>:<job
 * id>`, kept {@link givenUpTtlSeconds}): the worker running it stops it within seconds and fails it
 * (`DISPATCH_GIVEN_UP`), never handing it back to the queue.
 */
export function givenUpKey(queueName: string, jobId: string): string {
  return `polywave:given-up:${queueName}:${jobId}`;
}

/** How long that mark is kept (s). */
export const givenUpTtlSeconds = 24 * 3600;

/** How long past the agent's own time limit a job may run on a worker (its setup, fetch and push) before both sides give up on it (ms). */
export const jobRunMarginMs = 120_000;

/** How long a job's run counter is kept after its last run started (s): longer than a finished job is kept (24 h). */
export const runCounterTtlSeconds = 7 * 24 * 3600;

/** Every subset of `labels` (a worker with at most 6 labels serves at most 64 queues). */
export function labelSubsets(labels: readonly string[]): string[][] {
  const set = normalizeLabels(labels);
  if (set.length > 6) throw new PolywaveError({ code: dispatchCodes.invalidLabel, message: `a worker takes at most 6 labels (got ${set.length})` });
  const subsets: string[][] = [];
  for (let mask = 0; mask < 1 << set.length; mask += 1) subsets.push(set.filter((_, index) => (mask & (1 << index)) !== 0));
  return subsets;
}

/**
 * E9 across machines: the same agent attempt on the same base with the same content always gets
 * the same job id, so BullMQ keeps one job however often the orchestrator (re)enqueues it; `digest`
 * ({@link jobContentDigest}) makes a job with other content (a new prompt, model, script, owned
 * files, remote) another job — an old result is never taken for new input (attack F5).
 * (`:` is BullMQ's key separator.)
 */
export function agentJobId(context: { slug: string; wave: number; agentId: string; baseCommit: string; attempt: number }, digest?: string): string {
  return `${context.slug}.w${context.wave}.${context.agentId}.${context.baseCommit.slice(0, 12)}.a${context.attempt}${digest !== undefined ? `.${digest}` : ''}`;
}

/** The grammar of a job id (slug, wave, agent, base, attempt, content digest): no `/`, no `..`, nothing a path could use. */
export const jobIdPattern = /^[a-z0-9][-a-z0-9]*\.w[1-9][0-9]*\.[A-Z][2-9]?\.[0-9a-f]{12}\.a[1-9][0-9]*\.[0-9a-f]{12}$/;

/** JSON with object keys sorted at every level (one text for one value, whatever the key order). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** First 12 hex of the SHA-256 of what a job asks for: every field but its id and enqueue time. */
export function jobContentDigest(data: Omit<AgentJobData, 'job_id' | 'enqueued_at' | 'sig' | 'polywave'> & Partial<Pick<AgentJobData, 'job_id' | 'enqueued_at' | 'sig' | 'polywave'>>): string {
  // (nor the polywave version that made it: a job of the same format is the same job whatever release enqueued it)
  const { job_id: _id, enqueued_at: _at, sig: _sig, polywave: _version, ...content } = data;
  return createHash('sha256').update(canonicalJson(content)).digest('hex').slice(0, 12);
}

/** The id a job's data implies ({@link agentJobId} with its content digest). */
export function expectedJobId(data: AgentJobData): string {
  return agentJobId({ slug: data.slug, wave: data.wave, agentId: data.agent, baseCommit: data.base_commit, attempt: data.attempt }, jobContentDigest(data));
}

/**
 * Attack F1: a worker derives directories and file names from a job's id, so the id must be the one
 * its data implies (grammar, content digest) and the one BullMQ stores it under. DISPATCH_INVALID_JOB otherwise.
 */
export function assertJobIdentity(data: AgentJobData, bullId: string | undefined): void {
  const shown = JSON.stringify(data.job_id.slice(0, 120));
  if (!jobIdPattern.test(data.job_id)) throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job_id ${shown} is not a job id (<slug>.w<N>.<agent>.<base12>.a<attempt>.<digest12>)` });
  if (bullId !== data.job_id) throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job_id ${shown} is not the id the job is stored under (${JSON.stringify(String(bullId).slice(0, 120))})` });
  const expected = expectedJobId(data);
  if (data.job_id !== expected) throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job_id ${shown} does not match the job's content (expected ${expected})` });
}

/**
 * Attack F2: the models a worker runs for a job. Its own credentials go to the endpoint a model
 * names, so a model that names an endpoint or a command — `openai-compatible:<url>#m`, `cli:<name>`
 * other than the built-in claude/codex — runs only when one of `allow` (`polywave worker
 * --model-allow <prefix>`) is a prefix of it. A `script:` job carries its script's text, never a
 * path on the worker (`script:<path>` is refused). DISPATCH_INVALID_JOB otherwise.
 */
export function assertJobModel(data: Pick<AgentJobData, 'model' | 'script_text'>, allow: readonly string[]): void {
  const model = data.model.trim();
  const refuse = (why: string): never => {
    throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `model ${JSON.stringify(model.slice(0, 200))}: ${why}` });
  };
  const colon = model.indexOf(':');
  const prefix = colon < 0 ? '' : model.slice(0, colon);
  const rest = colon < 0 ? model : model.slice(colon + 1);
  if (prefix === 'script') {
    if (rest !== '') refuse('a script job carries its script as text (script_text), never a path on the worker');
    if (data.script_text === undefined) refuse('a script job needs script_text');
    return;
  }
  if (data.script_text !== undefined) refuse('script_text is only for the script: model');
  const named = prefix === 'openai-compatible' || (prefix === 'cli' && !/^(claude|codex)(:|$)/.test(rest));
  if (!named) return;
  if (allow.some((entry) => allowedBy(entry, model))) return;
  refuse(
    prefix === 'cli'
      ? 'names an agent CLI this worker does not run for jobs (built-in: cli:claude, cli:codex); start the worker with --model-allow cli:<name> to allow it'
      : "names its own endpoint, which would receive this worker's credentials; start the worker with --model-allow <prefix> (e.g. --model-allow openai-compatible:http://gateway:4000/) to allow it",
  );
}

/** Whether one of the worker's `--model-allow` entries allows `model` (see {@link allowedBy}). */
export function workerAllows(allow: readonly string[], model: string): boolean {
  return allow.some((entry) => allowedBy(entry, model));
}

/**
 * Whether a `--model-allow` entry allows `model`: the model is the entry, or goes on past it at a boundary — the entry
 * ends in one of `/ # ? :` or a space, or the model's next character is one. Outside round A20: a plain prefix let
 * `…gateway:4000` allow `…gateway:40001` and `…gateway:4000.evil.example` (the worker's keys went there), and
 * `cli:my-agent` allow `cli:my-agent-evil`.
 */
function allowedBy(entry: string, model: string): boolean {
  if (entry === '' || !model.startsWith(entry)) return false;
  if (model.length === entry.length) return true;
  const boundary = '/#?: ';
  return boundary.includes(entry.at(-1)!) || boundary.includes(model[entry.length]!);
}

/**
 * Attack F15: the size limits of a job's fields (characters) — a job beyond them is refused
 * (DISPATCH_INVALID_JOB) before anything runs — and of a result's texts (cut to fit).
 */
export const jobLimits = {
  /** Each of the system prompt and the prompt (an IMPL doc and the agent's brief fit many times over). */
  prompt: 1_000_000,
  /** A script's text (the script backend refuses larger script files too). */
  script: 4_000_000,
  model: 1000,
  ref: 255,
  path: 4096,
  /** Owned / frozen files per job. */
  files: 10_000,
  /** The owned and frozen paths of a job together, in characters (A17-10: 10,000 × 4,096 each was 80 MB a job). */
  pathsTotal: 1_000_000,
  remote: 2048,
  /** A result's outcome text. */
  resultText: 20_000,
  /** A result's report (its JSON). */
  resultReport: 200_000,
  /** Events a result carries back. */
  resultEvents: 5000,
} as const;

/**
 * What a worker gets: everything it needs to redo the launch from the shared remote, and nothing
 * of the orchestrator's machine — no path on its disk (paths in the prompts are {@link worktreeToken}),
 * no environment, no model key (workers hold their own).
 */
export const agentJobDataSchema = z.strictObject({
  /** The job format (src/dispatch/job-claim.ts `jobFormat`; 2: claim-bound) — a worker refuses another (DISPATCH_VERSION_SKEW). */
  v: z.literal(jobFormat),
  /** The polywave version of the orchestrator that made the job (signed; named by a worker's DISPATCH_VERSION_SKEW). */
  polywave: z.string().max(40),
  job_id: z.string().min(1).max(200),
  slug: z.string().max(100).regex(/^[a-z0-9][-a-z0-9]*$/),
  wave: z.number().int().min(1),
  agent: z.string().regex(/^[A-Z][2-9]?$/),
  attempt: z.number().int().min(1),
  role: z.string().min(1).max(32),
  /** The model string (`anthropic:…`, `script:` — a script's text travels in `script_text`). */
  model: z.string().max(jobLimits.model),
  script_text: z.string().max(jobLimits.script).optional(),
  system_prompt: z.string().max(jobLimits.prompt),
  prompt: z.string().max(jobLimits.prompt),
  base_commit: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/),
  branch: z.string().min(1).max(jobLimits.ref),
  /** The ref on the remote that holds the base commit (pushed by the orchestrator). */
  base_ref: z.string().min(1).max(jobLimits.ref),
  owned_files: z.array(z.string().max(jobLimits.path)).max(jobLimits.files),
  frozen_paths: z.array(z.string().max(jobLimits.path)).max(jobLimits.files),
  /** The IMPL manifest, repository-relative (read-only for the agent; present at the base commit when committed). */
  impl_path: z.string().max(jobLimits.path).optional(),
  limits: z.strictObject({ timeoutMs: z.number().int().positive().optional(), maxTurns: z.number().int().positive().optional() }),
  labels: z.array(z.string().max(32)).max(6),
  remote: z.string().min(1).max(jobLimits.remote),
  /**
   * A20-26: the worktree setup the job's worktree gets on the worker, as prepare-wave gives the local one (the
   * repository's committed `setup`, or the defaults a worker can apply; `copy` names only — never the files).
   */
  worktree_setup: z
    .strictObject({
      setup: z.union([z.string().min(1).max(10_000), z.array(z.string().min(1).max(10_000)).min(1).max(200), z.literal(false)]).optional(),
      copy: z.array(z.string().max(jobLimits.path)).max(200),
      defaults: z.boolean(),
      go_work: z.boolean(),
      port: z.number().int().min(1).max(65_535),
      timeout_seconds: z.number().int().min(1).max(86_400),
    })
    .optional(),
  /** A21-43: the orchestrator's HMAC-SHA256 of the job with the dispatch key (src/dispatch/auth.ts); a worker refuses a job without a valid one. */
  sig: z.string().max(64).optional(),
  enqueued_at: z.number(),
});

/** A worker's job. */
export type AgentJobData = z.infer<typeof agentJobDataSchema>;

/** A worker's answer (the BullMQ return value). */
export interface AgentJobReturn {
  v: 1;
  job_id: string;
  worker: string;
  /** The worker's host name. */
  host?: string;
  outcome: AgentOutcome;
  /** The set_completion input the agent gave (the orchestrator writes it with its locked writer). */
  report?: Record<string, unknown>;
  /** The agent branch's commit as pushed (undefined: nothing pushed — no commit beyond the base). */
  head?: string;
  /** The agent's events of interest (turns, tool calls, denials), replayed by the orchestrator. */
  events: unknown[];
  /** When BullMQ moved the job to active for this worker (its `processedOn`, the worker's clock). */
  fetched_at?: number;
  started_at: number;
  /** The job's worktree was made at the base (clone turn, base fetch, `worktree add` done): the agent starts now. */
  ready_at?: number;
  /** When the agent reported (its report published in the progress) and when the commits pushed then were on the remote (the worker's clock). */
  reported_at?: number;
  pushed_at?: number;
  /** The agent's run ended (before the relay's last update and the push after the agent). */
  agent_end_at?: number;
  /** The worker process's event-loop delay since it last went from idle to busy (ms; percentiles): how long it waited for a CPU. */
  loop_delay_ms?: { p50: number; p90: number; max: number };
  /** When each step of the job's start was done (the worker's clock, ms since the epoch): active (BullMQ handed it over), processor, checked, clone_turn, base, cleaned, worktree, seeded, lease (the agent branch's lease read), first_event. */
  steps?: Record<string, number>;
  finished_at: number;
  /**
   * Replays (issue 17): the run that made the result (its id and the number Redis handed it, as in its progress) and the
   * signature of the job it ran (`sig` of the job data: one per enqueue). Signed with the rest, so a genuine result of
   * another run or another enqueue of the same job id is told from this one's (`DISPATCH_REPLAYED`).
   */
  run?: string;
  run_no?: number;
  job_sig?: string;
  /**
   * Outside round A24-15: the queue the worker took the job from (BullMQ's queue name), signed with the rest and in
   * every progress record too: a genuine run of a copy of the job on another queue (a Redis writer's, its run counter
   * raised at will) is not this job's (`DISPATCH_REPLAYED`); one naming no queue (a worker older than its orchestrator)
   * is refused the same way.
   */
  queue?: string;
  /** A21-43: the worker's HMAC-SHA256 of the result with the dispatch key (src/dispatch/auth.ts). */
  sig?: string;
}

/** The agent branch a job may push — and nothing else (E5 name of its slug, wave and agent). */
/**
 * The wave base a job may name (`refs/polywave/base/<slug>/wave<N>`, what the orchestrator pushes): the worker fetches
 * it as a refspec when the base commit is missing, so anything else — an option, another ref — is refused as a
 * malformed job, DISPATCH_INVALID_JOB (outside attack A17-07: it failed as DISPATCH_REMOTE_UNREACHABLE, a config error).
 */
export function assertJobBaseRef(data: Pick<AgentJobData, 'slug' | 'wave' | 'base_ref'>): void {
  const expected = `refs/polywave/base/${data.slug}/wave${data.wave}`;
  if (data.base_ref !== expected) throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job base_ref ${JSON.stringify(data.base_ref.slice(0, 120))} is not ${expected}` });
}

/**
 * A job's owned and frozen paths together within {@link jobLimits}.pathsTotal characters (outside attack A17-10: within
 * the per-field limits a job held 80 MB of paths and stalled the worker that took it): DISPATCH_INVALID_JOB otherwise.
 */
export function assertJobSize(data: Pick<AgentJobData, 'owned_files' | 'frozen_paths'>): void {
  let total = 0;
  for (const entry of [...data.owned_files, ...data.frozen_paths]) total += entry.length;
  if (total > jobLimits.pathsTotal) throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `job paths hold ${total} characters (owned and frozen together), more than ${jobLimits.pathsTotal}` });
}

export function assertJobBranch(data: Pick<AgentJobData, 'slug' | 'wave' | 'agent' | 'branch'>): string {
  let expected: string;
  try {
    expected = branchName(data.slug, data.wave, data.agent);
  } catch {
    expected = `polywave/${data.slug}/wave${data.wave}-agent-${data.agent}`;
  }
  if (data.branch !== expected) {
    throw new PolywaveError({ code: dispatchCodes.refRefused, message: `refusing to push ${JSON.stringify(data.branch)}: a job of agent ${data.agent} (wave ${data.wave} of ${data.slug}) may only push ${expected}` });
  }
  return expected;
}

/** Role names the worker accepts (wave agents; the others never leave the orchestrator). */
export function jobRole(role: string): AgentRole {
  return role as AgentRole;
}

/**
 * A gate job (`dispatch.gates: "workers"`): the E21 pre-merge gates of one agent, run by a worker in
 * a scratch worktree of its clone at the agent branch's tip. The gates are the commands of the
 * approved manifest (whoever can write to the Redis can run commands on workers — as with agent jobs).
 */
export const gateJobDataSchema = z.strictObject({
  v: z.literal(jobFormat),
  polywave: z.string().max(40),
  kind: z.literal('gate'),
  job_id: z.string().min(1).max(200),
  slug: z.string().max(100).regex(/^[a-z0-9][-a-z0-9]*$/),
  wave: z.number().int().min(1),
  agent: z.string().regex(/^[A-Z][2-9]?$/),
  /** The agent branch on the remote and the commit of it to gate. */
  branch: z.string().min(1).max(jobLimits.ref),
  head: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/),
  gates: z
    .array(
      z.strictObject({
        type: z.string().max(100).optional(),
        command: z.string().max(10_000).optional(),
        required: z.boolean().optional(),
        description: z.string().max(2000).optional(),
        fix: z.boolean().optional(),
        timing: z.string().max(32).optional(),
        phase: z.string().max(32).optional(),
        parallel_group: z.string().max(100).optional(),
        timeout_seconds: z.number().positive().optional(),
      }),
    )
    .min(1)
    .max(200),
  /** Per-gate timeout for gates without `timeout_seconds` (ms). */
  default_timeout_ms: z.number().int().positive().optional(),
  /**
   * A20-44: the wave's base commit — the gates' sandbox settings are the project's committed ones there (as finalize-wave
   * pins a local gate's), never the agent branch's; a worker uses it only when it is an ancestor of `head`.
   */
  base_commit: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/).optional(),
  docs_only: z.boolean(),
  labels: z.array(z.string().max(32)).max(6),
  remote: z.string().min(1).max(jobLimits.remote),
  /** A21-43: the orchestrator's HMAC-SHA256 of the job with the dispatch key (src/dispatch/auth.ts); a worker refuses a job without a valid one. */
  sig: z.string().max(64).optional(),
  enqueued_at: z.number(),
});

/** A worker's gate job. */
export type GateJobData = z.infer<typeof gateJobDataSchema>;

/** The grammar of a gate job id: slug, wave, agent, the gated commit, the content digest. */
export const gateJobIdPattern = /^[a-z0-9][-a-z0-9]*\.w[1-9][0-9]*\.[A-Z][2-9]?\.gate\.[0-9a-f]{12}\.[0-9a-f]{12}$/;

/** The id of a gate job: the same gates on the same commit are one job (E9), other content another. */
export function expectedGateJobId(data: GateJobData): string {
  const { job_id: _id, enqueued_at: _at, sig: _sig, polywave: _version, ...content } = data;
  const digest = createHash('sha256').update(canonicalJson(content)).digest('hex').slice(0, 12);
  return `${data.slug}.w${data.wave}.${data.agent}.gate.${data.head.slice(0, 12)}.${digest}`;
}

/** Attack F1 for gate jobs: the id is the one its content implies and the one BullMQ stores it under (the scratch worktree is named by it). */
export function assertGateJobIdentity(data: GateJobData, bullId: string | undefined): void {
  const shown = JSON.stringify(data.job_id.slice(0, 120));
  if (!gateJobIdPattern.test(data.job_id) || bullId !== data.job_id || data.job_id !== expectedGateJobId(data)) {
    throw new PolywaveError({ code: dispatchCodes.invalidJob, message: `gate job_id ${shown} is not the id its content implies (${expectedGateJobId(data)}) or not the one it is stored under` });
  }
}

/** A worker's answer to a gate job: the gates' results as runGates returns them (outputs bounded by it). */
export interface GateJobReturn {
  v: 1;
  kind: 'gate';
  job_id: string;
  worker: string;
  host: string;
  /** The directory the gates ran in on the worker (a scratch worktree of its clone). */
  dir: string;
  /** GateRunResult (src/gates/types.ts). */
  run: unknown;
  started_at: number;
  finished_at: number;
  /** Replays (issue 17): the signature of the gate job it answers (one per enqueue); an answer to another enqueue is refused. */
  job_sig?: string;
  /** A21-43: the worker's HMAC-SHA256 of the result with the dispatch key. */
  sig?: string;
}
