import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Where the number of an agent's latest launched attempt is kept (its journal directory). */
export function attemptRecordPath(journalDir: string): string {
  return path.join(journalDir, 'attempt.json');
}

/**
 * Outside round A20-49: an attempt launched through a dispatcher other than this process (a job on a
 * `polywave worker`), recorded before it runs and until it ended here. A record still open when a run
 * starts is a killed orchestrator's: its job may still run, and a report its progress wrote early is
 * not final — whatever dispatcher the re-run uses.
 */
export interface DispatchedAttempt {
  dispatcher: 'redis';
  /** The flags that reach its queue again (`--dispatch <url> …`, credentials redacted), for messages. */
  flags: string;
}

interface AttemptRecord {
  attempt: number;
  dispatched?: DispatchedAttempt;
}

/**
 * Records that attempt `attempt` of an agent was launched (before it runs, so an interrupted run
 * counts too): `polywave retry` continues the numbering from here (attack F20 — a relaunch numbered
 * 1 again was the original run's job id on a dispatcher). `dispatched`: it runs as a job elsewhere
 * (open until {@link settleAttempt}).
 */
export async function recordAttempt(journalDir: string, attempt: number, dispatched?: DispatchedAttempt): Promise<void> {
  await mkdir(journalDir, { recursive: true });
  const record: AttemptRecord = { attempt, ...(dispatched ? { dispatched } : {}) };
  await writeFile(attemptRecordPath(journalDir), `${JSON.stringify(record)}\n`);
}

async function readRecord(journalDir: string): Promise<AttemptRecord | undefined> {
  try {
    const value = JSON.parse(await readFile(attemptRecordPath(journalDir), 'utf8')) as { attempt?: unknown; dispatched?: unknown };
    if (typeof value.attempt !== 'number' || !Number.isInteger(value.attempt) || value.attempt < 1) return undefined;
    const dispatched = value.dispatched as { dispatcher?: unknown; flags?: unknown } | undefined;
    return {
      attempt: value.attempt,
      ...(dispatched && typeof dispatched === 'object' ? { dispatched: { dispatcher: 'redis' as const, flags: typeof dispatched.flags === 'string' ? dispatched.flags : '--dispatch redis://…' } } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The latest launched attempt of an agent (0 when none is recorded or the record is unreadable). */
export async function lastAttempt(journalDir: string): Promise<number> {
  return (await readRecord(journalDir))?.attempt ?? 0;
}

/** The agent's latest attempt when it was dispatched and never ended here (its orchestrator was killed or interrupted). */
export async function openDispatchedAttempt(journalDir: string): Promise<{ attempt: number; dispatched: DispatchedAttempt } | undefined> {
  const record = await readRecord(journalDir);
  return record?.dispatched ? { attempt: record.attempt, dispatched: record.dispatched } : undefined;
}

/** The latest attempt ended here (its job's outcome was taken, or its report judged final): no longer open. */
export async function settleAttempt(journalDir: string): Promise<void> {
  const record = await readRecord(journalDir);
  if (record?.dispatched) await recordAttempt(journalDir, record.attempt);
}
