import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';
import {
  claimPendingEntries,
  clearCommitRecord,
  deserializeError,
  dropEntry,
  entryExists,
  newEntryId,
  settleEntries,
  takeSettledOutcome,
  withdrawEntry,
  type EntryOutcome,
} from './group-commit.js';
import { resolveLockLocation, type LockLocation } from './lock-location.js';
import { withFileLock } from './locked-write.js';
import type { ImplRequestKindName, OutcomeOf, RequestOf } from './manifest-requests.js';

/** The points of a group-committed write, in order (crash tests kill a process at one of them). */
export type CommitPhase = 'entry-dropped' | 'locked' | 'claimed' | 'temp-written' | 'record-written' | 'renamed' | 'settling';

/** Options of {@link submitImplRequest}. */
export interface SubmitOptions {
  /** How long to wait while the lock stays with one holder (default 30 s; see withFileLock). */
  lockTimeoutMs?: number;
  /** Called at each phase (tests: SIGKILL at a given point). */
  onPhase?: (phase: CommitPhase) => void | Promise<void>;
}

/**
 * Group-committed edit of an IMPL manifest, safe across processes and crashes. The request is
 * durably dropped into the manifest's inbox; then the writer takes the lock. If another holder
 * already applied it meanwhile, its outcome is returned without writing. Otherwise this writer
 * applies every pending request — its own and those of everyone waiting — in one write: one
 * read, one parse, one format-preserving edit, one fsync, one rename, each request planned on its
 * own (a refused one fails alone, with its own coded error), the commit record making the whole
 * group exactly-once across crashes (group-commit.ts). Resolves with this request's outcome or
 * throws its coded error.
 */
export async function submitImplRequest<Kind extends ImplRequestKindName>(implPath: string, kind: Kind, request: RequestOf<Kind>, options: SubmitOptions = {}): Promise<OutcomeOf<Kind>> {
  const location = await resolveLockLocation(implPath);
  const id = newEntryId();
  await dropEntry(location, { id, kind, request });
  await options.onPhase?.('entry-dropped');
  const lockOptions = options.lockTimeoutMs !== undefined ? { lockTimeoutMs: options.lockTimeoutMs } : {};
  for (let attempt = 1; ; attempt += 1) {
    let outcome: EntryOutcome;
    try {
      outcome = await withFileLock(implPath, (held) => holderTurn(implPath, held, id, options), lockOptions);
    } catch (error) {
      if (!isLockTimeout(error)) throw error;
      // Gave up waiting: withdraw the request so that it never lands after we said it failed.
      if (await withdrawEntry(location, id)) throw error;
      // A holder has taken it and is writing it now: its outcome comes with the next turn.
      if (attempt >= 2) {
        throw new PolywaveError({ code: codes.lockTimeout, message: `${error.message}; the edit was taken by another writer and its outcome is unknown`, exitCode: 2, details: error.details });
      }
      continue;
    }
    if (outcome.ok) return outcome.value as OutcomeOf<Kind>;
    throw deserializeError(outcome.error);
  }
}

function isLockTimeout(error: unknown): error is PolywaveError {
  return PolywaveError.isInstance(error) && error.code === codes.lockTimeout && typeof error.details.lockPath === 'string' && error.message.startsWith('timed out');
}

/** One turn under the lock: return a settled outcome, or apply every pending request. */
async function holderTurn(implPath: string, location: LockLocation, id: string, options: SubmitOptions): Promise<EntryOutcome> {
  await options.onPhase?.('locked');
  const settled = await takeSettledOutcome(location, id);
  if (settled) return settled;
  const entries = await claimPendingEntries(location);
  if (!entries.some((entry) => entry.id === id)) {
    if (await entryExists(location, id)) return { ok: false, error: { code: codes.saveFailed, message: `the edit of ${implPath} is in an unexpected state`, exitCode: 2 } };
    return { ok: false, error: { code: codes.saveFailed, message: `the edit of ${implPath} vanished from its queue (${location.inboxPath})`, exitCode: 2 } };
  }
  await options.onPhase?.('claimed');
  // The parser and the editor are loaded only by the process that writes (most writers find their outcome).
  const { applyEntries } = await import('./manifest-inbox-apply.js');
  const outcomes = await applyEntries(implPath, location, entries, options.onPhase);
  await settleEntries(location, outcomes, { skip: id, afterFirst: () => options.onPhase?.('settling') });
  await clearCommitRecord(location);
  return outcomes.find((item) => item.id === id)!.outcome;
}

