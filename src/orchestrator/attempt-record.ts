import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Where the number of an agent's latest launched attempt is kept (its journal directory). */
export function attemptRecordPath(journalDir: string): string {
  return path.join(journalDir, 'attempt.json');
}

/**
 * Records that attempt `attempt` of an agent was launched (before it runs, so an interrupted run
 * counts too): `polywave retry` continues the numbering from here (attack F20 — a relaunch numbered
 * 1 again was the original run's job id on a dispatcher).
 */
export async function recordAttempt(journalDir: string, attempt: number): Promise<void> {
  await mkdir(journalDir, { recursive: true });
  await writeFile(attemptRecordPath(journalDir), `${JSON.stringify({ attempt })}\n`);
}

/** The latest launched attempt of an agent (0 when none is recorded or the record is unreadable). */
export async function lastAttempt(journalDir: string): Promise<number> {
  try {
    const value = (JSON.parse(await readFile(attemptRecordPath(journalDir), 'utf8')) as { attempt?: unknown }).attempt;
    return typeof value === 'number' && Number.isInteger(value) && value >= 1 ? value : 0;
  } catch {
    return 0;
  }
}
