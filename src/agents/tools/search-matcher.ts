/**
 * Where grep's and glob's compiled patterns run: on the main thread only when the work is provably small,
 * else in a worker thread that is terminated at the call's deadline.
 *
 * Why (outside attack X21-02): V8's linear-time engine (the `l` flag) cannot backtrack, but it costs
 * O(pattern size × text): a 1,000-alternative pattern (~7 KB) on one 200 KB line ran 54 s on the
 * orchestrator's main thread, and run-wave froze — no other agent progressed, no timeout fired. A
 * synchronous regex cannot be interrupted, so anything that could take long runs where it can be killed.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';

/**
 * Main-thread work allowed per event-loop turn, in "units" = pattern weight × characters. Measured on the
 * linear engine (2-core box): the worst patterns cost ~0.5 µs per unit (a chain of `.?`, or `{16}` over a
 * group), so 40,000 units hold the loop ≤ ~20 ms; ordinary patterns cost ~100× less.
 */
const mainThreadBudget = 40_000;
/** The engine accepts counted repetitions up to {16} (their product, too): each pattern character may become 16 states. */
const maxReplication = 16;
/** Idle workers kept warm (a worker's start costs ~30–100 ms); more are started when calls overlap. */
const maxIdleWorkers = 2;
/** An idle worker unused this long is ended. */
const idleWorkerMs = 30_000;

export interface MatchRequest {
  /** The compiled pattern's source, run with the `l` flag. */
  source: string;
  texts: string[];
  /** true: each text is a file's content matched line by line; false: each text is matched whole (a path). */
  lines: boolean;
  /** Hits to return; one more found sets `more`. */
  limit: number;
  /** With `lines`: a longer line is matched on its first `maxLineChars` characters only. */
  maxLineChars: number;
}

export interface MatchResult {
  /** [text index, line index (0 when `lines` is false)], in order. */
  hits: Array<[number, number]>;
  more: boolean;
  /** Lines longer than `maxLineChars` that were matched on their start only. */
  longLines: number;
}

/**
 * The matching loop. It also runs inside the worker (its source is sent there), so it uses nothing
 * but its parameters: no imports, no helpers, no closure.
 */
export function matchTexts(regex: RegExp, request: MatchRequest): MatchResult {
  const hits: Array<[number, number]> = [];
  let longLines = 0;
  for (let textIndex = 0; textIndex < request.texts.length; textIndex += 1) {
    const text = request.texts[textIndex]!;
    if (!request.lines) {
      if (regex.test(text)) {
        if (hits.length >= request.limit) return { hits, more: true, longLines };
        hits.push([textIndex, 0]);
      }
      continue;
    }
    let start = 0;
    for (let line = 0; start <= text.length; line += 1) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      let stop = end;
      if (end - start > request.maxLineChars) {
        stop = start + request.maxLineChars;
        longLines += 1;
      }
      if (regex.test(text.slice(start, stop))) {
        if (hits.length >= request.limit) return { hits, more: true, longLines };
        hits.push([textIndex, line]);
      }
      start = end + 1;
    }
  }
  return { hits, more: false, longLines };
}

const workerSource = `'use strict';
const { parentPort } = require('node:worker_threads');
require('node:v8').setFlagsFromString('--enable-experimental-regexp-engine');
const matchTexts = ${matchTexts.toString()};
parentPort.on('message', (request) => {
  try {
    parentPort.postMessage({ result: matchTexts(new RegExp(request.source, 'l'), request) });
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
});
`;

let linearEngine = false;

/** `source` compiled for V8's linear-time engine (flag enabled once per process; the workers share it). */
export function compileLinear(source: string): RegExp {
  if (!linearEngine) {
    v8.setFlagsFromString('--enable-experimental-regexp-engine');
    linearEngine = true;
  }
  const linear = 'l'; // V8's linear-time engine flag (eslint's RegExp flag list does not know it)
  return new RegExp(source, linear);
}

/** Why a match was stopped: the call's deadline passed, or the agent's call was aborted. */
export class SearchStoppedError extends Error {
  override readonly name = 'SearchStoppedError';
  constructor(readonly reason: 'time' | 'aborted') {
    super(reason === 'time' ? 'the search ran out of time' : 'the search was aborted');
  }
}

const idleWorkers: Worker[] = [];
let idleTimer: NodeJS.Timeout | undefined;
let workersStarted = 0;

function startWorker(): Worker {
  const worker = new Worker(workerSource, { eval: true });
  workersStarted += 1;
  // an idle worker never keeps the process alive, and its failure is never an unhandled 'error' event
  worker.unref();
  worker.on('error', () => undefined);
  worker.on('exit', () => {
    const index = idleWorkers.indexOf(worker);
    if (index >= 0) idleWorkers.splice(index, 1);
  });
  return worker;
}

function releaseWorker(worker: Worker): void {
  if (idleWorkers.length >= maxIdleWorkers) {
    void worker.terminate();
    return;
  }
  idleWorkers.push(worker);
  clearTimeout(idleTimer);
  idleTimer = setTimeout(() => void closeSearchWorkers(), idleWorkerMs);
  idleTimer.unref();
}

/** Ends the idle workers (tests, shutdown). A call in progress keeps its own worker until it ends. */
export async function closeSearchWorkers(): Promise<void> {
  clearTimeout(idleTimer);
  await Promise.all(idleWorkers.splice(0).map((worker) => worker.terminate()));
}

/** How many workers were started in this process (tests check the small calls start none). */
export function searchWorkersStarted(): number {
  return workersStarted;
}

/** Runs `request` in a worker; at `deadline` or on abort the worker is terminated and the promise rejects with {@link SearchStoppedError}. */
function matchInWorker(request: MatchRequest, deadline: number, signal: AbortSignal | undefined): Promise<MatchResult> {
  if (signal?.aborted) return Promise.reject(new SearchStoppedError('aborted'));
  const worker = idleWorkers.pop() ?? startWorker();
  return new Promise<MatchResult>((resolve, reject) => {
    let settled = false;
    const finish = (keep: boolean, settle: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      if (keep) releaseWorker(worker);
      else void worker.terminate();
      settle();
    };
    const onMessage = (message: { result?: MatchResult; error?: string }): void => {
      finish(true, () => (message.result ? resolve(message.result) : reject(new Error(message.error ?? 'the search worker failed'))));
    };
    const onExit = (): void => finish(false, () => reject(new Error('the search worker stopped unexpectedly')));
    const onAbort = (): void => finish(false, () => reject(new SearchStoppedError('aborted')));
    // a referenced timer: the call keeps the process alive while the (unreferenced) worker runs
    const timer = setTimeout(() => finish(false, () => reject(new SearchStoppedError('time'))), Math.max(0, deadline - Date.now()));
    worker.on('message', onMessage);
    worker.on('exit', onExit);
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.postMessage(request);
  });
}

/** The pattern's worst cost per text character, in budget units (a counted repetition `{n` may multiply its states). */
function patternWeight(source: string): number {
  return source.length * (/\{\d/.test(source) ? maxReplication : 1);
}

/**
 * One tool call's matcher: small work runs on the main thread (at most {@link mainThreadBudget} units per
 * event-loop turn), the rest in a worker bounded by `deadline`.
 */
export class SearchMatcher {
  private readonly regex: RegExp;
  private readonly weight: number;
  private spentThisTurn = 0;

  /** Throws the engine's SyntaxError for a pattern it refuses. */
  constructor(
    readonly source: string,
    private readonly options: { deadline: number; signal?: AbortSignal },
  ) {
    this.regex = compileLinear(source);
    this.weight = patternWeight(source);
  }

  /** Matches `texts` (see {@link MatchRequest}); rejects with {@link SearchStoppedError} at the deadline or on abort. */
  async match(texts: string[], mode: { lines: boolean; limit: number; maxLineChars: number }): Promise<MatchResult> {
    if (this.options.signal?.aborted) throw new SearchStoppedError('aborted');
    if (Date.now() > this.options.deadline) throw new SearchStoppedError('time');
    const request: MatchRequest = { source: this.source, texts, ...mode };
    let characters = 0;
    for (const text of texts) characters += text.length;
    const cost = this.weight * characters;
    if (cost > mainThreadBudget) return matchInWorker(request, this.options.deadline, this.options.signal);
    if (this.spentThisTurn + cost > mainThreadBudget) {
      await yieldToEventLoop();
      this.spentThisTurn = 0;
    }
    this.spentThisTurn += cost;
    return matchTexts(this.regex, request);
  }

  /** Whether `text` matches whole (a path against a glob). */
  async test(text: string): Promise<boolean> {
    return (await this.match([text], { lines: false, limit: 1, maxLineChars: Number.MAX_SAFE_INTEGER })).hits.length > 0;
  }
}
