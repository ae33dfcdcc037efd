/**
 * What the engine may remember, and for how long — so that a long-lived process (the resident
 * server, `polywave serve`, the daemon) answers exactly as a fresh process would after files are
 * edited, committed, added, deleted, or the repository is moved.
 *
 * - Per call ({@link analysisCall}): repository contexts and the counters behind
 *   POLYWAVE_ANALYSIS_STATS=1. A command's run opens one call; an API call made outside any call is
 *   its own call.
 * - Between calls, checked on every call (repo-files.ts, memory scope only): the repository git
 *   found for a directory, used again only while every directory from it up to the top level is the
 *   same one (device, inode), none holds a `.git`, and the top level's `.git`, its config and the
 *   git environment are unchanged — a moved or re-created repository or a new `.git` above the
 *   directory asks git again; and the last `git ls-files -s` of a repository, used again only while
 *   `.git/index` is the same file (git replaces it on every write).
 * - Per process, content-addressed only ({@link memory}): facts, text lines and word sets of a
 *   git blob id (+ language + engine version). A blob id names exact bytes, so these can never be
 *   stale; which blob a path holds now is asked of git on every call (`diff-files`, working-tree
 *   files hashed; the index's entries as above). Bounded (POLYWAVE_ANALYSIS_MEMORY_CHARS,
 *   default 64 Mi characters, a word charged 32; the oldest-stored blobs are dropped first). Used inside {@link analysisCall}s only (the commands; API calls outside one read
 *   the disk cache as before), and not with POLYWAVE_ANALYSIS_STATS=1, whose counts describe the disk cache.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FileFacts } from './extract.js';
import type { RepoContext, RepoListing } from './repo-files.js';
import type { AnalysisStats } from './types.js';

export interface AnalysisScope {
  /** Repository context per resolved directory, for this call only. */
  contexts: Map<string, Promise<RepoContext>>;
  /** Files parsed / served from a cache in this call. */
  counters: AnalysisStats;
  /** Whether the process-wide content-addressed memory may answer (off with POLYWAVE_ANALYSIS_STATS=1). */
  memory: boolean;
  /** The whole-repository listing per top level, listed once per call (memory scope only). */
  listings: Map<string, Promise<RepoListing>>;
}

const storage = new AsyncLocalStorage<AnalysisScope>();

function freshScope(memory: boolean): AnalysisScope {
  return { contexts: new Map(), counters: { parsed: 0, cached: 0 }, memory, listings: new Map() };
}

/**
 * Runs `fn` as one analysis call: repository roots found during it are shared by its engine calls
 * and forgotten afterwards; its counters start at zero. Nested calls join the outer one.
 */
export function analysisCall<T>(env: Readonly<Record<string, string | undefined>>, fn: () => Promise<T>): Promise<T> {
  if (storage.getStore()) return fn();
  for (const hook of beforeCallHooks) hook();
  return storage.run(freshScope(env.POLYWAVE_ANALYSIS_STATS !== '1'), async () => {
    try {
      return await fn();
    } finally {
      // Work that must not delay the answer (the cache's writes): after it, once the caller has it.
      for (const hook of afterCallHooks) hook();
    }
  });
}

/** Run when an outermost {@link analysisCall} ends (the engine registers its cache flush here). */
export const afterCallHooks = new Set<() => void>();
/** Run when an outermost {@link analysisCall} starts (the engine writes what an earlier call left queued). */
export const beforeCallHooks = new Set<() => void>();

/**
 * Work a long-lived process (the resident server) runs while no request is: `task` gets `between`,
 * to await before each slice of work, which resolves true when it may go on (false: the process is
 * stopping). Undefined elsewhere: such work is then done within the call that needs it, or not at all.
 */
export type IdleRunner = (task: (between: () => Promise<boolean>) => Promise<void>) => void;
let idleRunner: IdleRunner | undefined;
export function setIdleRunner(runner: IdleRunner | undefined): void {
  idleRunner = runner;
}
export function currentIdleRunner(): IdleRunner | undefined {
  return idleRunner;
}

/** Whether an {@link analysisCall} is running (its end runs {@link afterCallHooks}). */
export function insideCall(): boolean {
  return storage.getStore() !== undefined;
}

/**
 * The current call's scope; outside any call, a new one that shares nothing with any other call and
 * does not use the process memory (API callers keep the disk cache's behaviour and counts).
 */
export function currentScope(): AnalysisScope {
  return storage.getStore() ?? freshScope(false);
}

/** Per-blob facts of a process: what content-addressing makes safe to keep between calls. */
interface BlobMemory {
  facts?: FileFacts;
  lines?: string[];
  /** Whole words (runs of [A-Za-z0-9_]) of the content, or null for content git grep -I treats as binary. */
  words?: ReadonlySet<string> | null;
  /** Bit i: the content contains {@link fixedProbes}[i]. */
  fixed?: number;
  /** Approximate size (characters) charged to the budget. */
  cost: number;
}

/**
 * Fixed strings the engine searches for besides words (star re-exports; a CommonJS `module.exports = require('./m')`,
 * which re-exports every name of ./m — X67-02): remembered per blob as bits.
 */
export const fixedProbes = ['export *', '::*', 'import *', 'module.exports = require', 'module.exports=require'] as const;

const maxCost = Number(process.env.POLYWAVE_ANALYSIS_MEMORY_CHARS ?? 64 * 1024 * 1024);

class Memory {
  private readonly blobs = new Map<string, BlobMemory>();
  private cost = 0;
  /** Repositories (git common dir) this process has searched before: a word index is worth building for them. */
  readonly searched = new Set<string>();

  /** The entry of `key` (eviction is oldest-stored first: no reordering on reads, which happen thousands of times per call). */
  get(key: string): BlobMemory | undefined {
    return this.blobs.get(key);
  }

  update(key: string, change: Omit<Partial<BlobMemory>, 'cost'>, cost: number): void {
    const entry = this.blobs.get(key) ?? { cost: 0 };
    this.blobs.delete(key);
    Object.assign(entry, change);
    entry.cost += cost;
    this.cost += cost;
    this.blobs.set(key, entry);
    for (const [oldKey, old] of this.blobs) {
      if (this.cost <= maxCost || oldKey === key) break;
      this.blobs.delete(oldKey);
      this.cost -= old.cost;
    }
  }

  clear(): void {
    this.blobs.clear();
    this.searched.clear();
    this.cost = 0;
  }

  get size(): number {
    return this.blobs.size;
  }
}

/** The process's content-addressed memory (key: `<blob>.<lang>`; the engine version is the process's). */
export const memory = new Memory();

export function memoryKey(blob: string, lang: string): string {
  return `${blob}.${lang}`;
}

/** Rough cost of facts in characters (refs dominate). */
export function factsCost(facts: FileFacts): number {
  return facts.refs.length + 64 * (facts.symbols.length + facts.imports.length) + 64;
}
