import { appendFile, mkdir } from 'node:fs/promises';
import { readJournal, type JournalPaths, type ToolEntry } from '../engine/journal.js';
import { fromPortableJournal, journalOfProgress } from '../worker/journal-relay.js';
import type { AgentJobResult } from './dispatcher.js';

/** How long the orchestrator waits for the job's progress (Redis away: the attempt's outcome is not held up). */
const readTimeoutMs = 1500;

const entryKey = (entry: ToolEntry) => `${entry.ts ?? ''}|${entry.kind ?? ''}|${entry.tool_use_id ?? ''}|${entry.tool_name ?? ''}`;

/**
 * Appends to the agent's journal (`index.jsonl`) the entries of `incoming` it does not hold yet
 * (same time, kind, call id and tool: the same entry — a job whose result is read again, E9, or
 * whose progress repeats an earlier run's entries, adds nothing twice). Returns how many it added.
 */
export async function appendNewJournalEntries(paths: Pick<JournalPaths, 'dir' | 'index'>, incoming: readonly ToolEntry[]): Promise<number> {
  if (incoming.length === 0) return 0;
  const known = new Set((await readJournal(paths.index)).map(entryKey));
  const fresh: ToolEntry[] = [];
  for (const entry of incoming) {
    const key = entryKey(entry);
    if (known.has(key)) continue;
    known.add(key);
    fresh.push(entry);
  }
  if (fresh.length === 0) return 0;
  await mkdir(paths.dir, { recursive: true });
  await appendFile(paths.index, fresh.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
  return fresh.length;
}

/**
 * Issue 17 item 4 (E23A): when a dispatched attempt ends — a result or a failure — the tool journal
 * its worker(s) relayed in the job's progress is kept in the orchestrator's own journal of the
 * agent, so a later relaunch (E19 retry, `polywave retry`) recovers its context from it exactly as
 * for an agent that ran in this process — except when the orchestrator was interrupted (`aborted`:
 * the job goes on). Best effort: the attempt's result is returned unchanged.
 */
export async function keepJobJournal<T extends AgentJobResult>(result: T, journal: JournalPaths | undefined, readJob: (jobId: string) => Promise<{ progress?: unknown } | undefined>): Promise<T> {
  const jobId = result.dispatch?.job_id;
  // Interrupted here while the job runs on: the next run of this attempt must enqueue the very same
  // content to reuse it (E9), so its prompt must not gain a recovered context now; the entries are
  // kept when that run reads the job's result.
  if (!journal || !jobId || result.outcome.status === 'aborted') return result;
  try {
    let timer: NodeJS.Timeout | undefined;
    const job = await Promise.race([readJob(jobId), new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), readTimeoutMs)))]).finally(() => clearTimeout(timer));
    // The worker's worktree paths (relayed as {{POLYWAVE_WORKTREE}}) read as this agent's local worktree.
    if (job) await appendNewJournalEntries(journal, fromPortableJournal(journalOfProgress(job.progress), result.jail.policy.root));
  } catch {
    // the journal is informational here
  }
  return result;
}
