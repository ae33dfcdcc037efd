import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl, type ImplParseResult } from '../protocol/parse-impl.js';
import { writeViaTemp } from './atomic-file.js';
import { clearCommitRecord, hashText, serializeError, writeCommitRecord, type EntryOutcome, type InboxEntry } from './group-commit.js';
import { applyGroupedEdits, type GroupedEdit } from './grouped-edits.js';
import type { LockLocation } from './lock-location.js';
import { readCurrent } from './locked-write.js';
import { unreadableManifestError } from './manifest-file.js';
import type { CommitPhase } from './manifest-inbox.js';
import { implRequestKinds, type ImplRequestKindName } from './manifest-requests.js';

/**
 * The writing half of a group commit (manifest-inbox.ts), loaded only by the process that holds
 * the lock and has requests to apply.
 */

/** Plans and writes every claimed request; returns each one's outcome (a failed write fails them all). */
export async function applyEntries(implPath: string, location: LockLocation, entries: InboxEntry[], onPhase?: (phase: CommitPhase) => void | Promise<void>): Promise<Array<{ id: string; outcome: EntryOutcome }>> {
  const failAll = (error: unknown) => entries.map((entry) => ({ id: entry.id, outcome: { ok: false, error: serializeError(error) } as EntryOutcome }));
  let text: string;
  let mode: number | undefined;
  let parsed: ImplParseResult;
  try {
    ({ text, mode } = await readCurrent(implPath));
    parsed = parseImpl(text, { document: true });
    if (parsed.fatal) throw unreadableManifestError(implPath, parsed.findings);
  } catch (error) {
    return failAll(error);
  }
  const items = entries.map((entry): GroupedEdit<ImplParseResult> => {
    const kind = implRequestKinds[entry.kind as ImplRequestKindName];
    if (kind === undefined) {
      return {
        keys: [],
        plan: () => {
          throw new PolywaveError({ code: codes.saveFailed, message: `unknown edit request kind "${entry.kind}" in ${location.inboxPath} (written by another polywave version?)` });
        },
      };
    }
    const request = entry.request as never;
    return { keys: kind.keys(request), plan: (current) => kind.plan(current, request, implPath) };
  });
  const result = applyGroupedEdits(text, parsed, (next) => parseImpl(next, { document: true }), items);
  const outcomes = entries.map((entry, index) => {
    const item = result.results[index]!;
    return { id: entry.id, outcome: (item.ok ? { ok: true, value: item.value ?? null } : { ok: false, error: serializeError(item.error) }) as EntryOutcome };
  });
  if (result.text === text) return outcomes;
  try {
    await writeViaTemp(implPath, result.text, mode, {
      beforeRename: async () => {
        await onPhase?.('temp-written');
        await writeCommitRecord(location, { v: 1, target: location.target, before: hashText(text), after: hashText(result.text), entries: outcomes });
        await onPhase?.('record-written');
      },
    });
  } catch (error) {
    // Nothing was renamed: the manifest is as it was. Every request of the group fails with the reason.
    await clearCommitRecord(location);
    return failAll(error);
  }
  await onPhase?.('renamed');
  return outcomes;
}
