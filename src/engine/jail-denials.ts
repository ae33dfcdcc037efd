import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { appendConfinedSync } from '../store/confined-write.js';

/**
 * Issue 13: writes the jail refused must be visible where the merge is decided. Each agent's
 * refused tool calls are appended to `denials.jsonl` in its journal directory
 * (`.polywave-state/<slug>/wave<N>/agent-<ID>/`); the refused writes inside the repository also go
 * into the agent's completion report as `out_of_scope_deps`; finalize-wave and agent-status show
 * them, and `finalize-wave --strict-ownership` refuses to merge an agent that has any.
 */
export const denialsFileName = 'denials.jsonl';

/** Codes of refused writes to a file of the repository the agent does not own (work the merge may lack). */
export const ownershipDenialCodes: ReadonlySet<string> = new Set(['JAIL_NOT_OWNED', 'JAIL_FROZEN', 'JAIL_UNOWNED_CHANGE', 'JAIL_READ_ONLY']);

export interface DenialRecord {
  ts: string;
  attempt: number;
  tool: string;
  code: string;
  reason: string;
  target?: string;
}

export async function appendDenials(journalDir: string, records: readonly DenialRecord[]): Promise<void> {
  if (records.length === 0) return;
  // Never through a symlink or out of the repository: the journal may sit in an agent's tree (X3 #21).
  appendConfinedSync(path.join(journalDir, denialsFileName), records.map((record) => `${JSON.stringify(record)}\n`).join(''));
}

/** The agent's recorded denials (torn or foreign lines skipped); [] when none. */
export async function readDenials(journalDir: string): Promise<DenialRecord[]> {
  let text: string;
  try {
    text = await readFile(path.join(journalDir, denialsFileName), 'utf8');
  } catch {
    return [];
  }
  const records: DenialRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as Partial<DenialRecord>;
      if (typeof value.code === 'string' && typeof value.tool === 'string') records.push({ ts: String(value.ts ?? ''), attempt: Number(value.attempt ?? 1), tool: value.tool, code: value.code, reason: String(value.reason ?? ''), ...(typeof value.target === 'string' ? { target: value.target } : {}) });
    } catch {
      // A torn last line after a crash.
    }
  }
  return records;
}

/** Refused writes to repository files (the ones a merge may be missing), one per target. */
export function ownershipDenials(records: readonly DenialRecord[]): DenialRecord[] {
  const seen = new Set<string>();
  const out: DenialRecord[] = [];
  for (const record of records) {
    if (!ownershipDenialCodes.has(record.code)) continue;
    const key = record.target ?? `${record.tool}:${record.reason}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(record);
  }
  return out;
}

/** The `out_of_scope_deps` line for a refused write (the wave prompt's "file: …, change: …, reason: …" form). */
export function outOfScopeLine(denial: { target?: string; code: string; reason: string }): string {
  return `file: ${denial.target ?? '(unknown)'}, change: write refused by the jail (${denial.code}), reason: ${denial.reason}`;
}
