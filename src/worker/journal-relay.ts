import { mkdir, rm, writeFile } from 'node:fs/promises';
import { readJournal, recoverJournalContext, type JournalPaths, type ToolEntry } from '../engine/journal.js';
import { recoveredContextHeading } from '../agents/prompts/wave.js';
import { worktreeToken } from '../dispatch/job.js';

/**
 * Issue 17 item 4 (E23A across machines): the tool journal of a dispatched agent lives in its
 * worker's directory; a worker killed mid-job takes it along. So while the job runs, the journal's
 * last entries travel in the job's progress (`job.updateProgress({ journal })`, in Redis): the next
 * worker that runs the job seeds its own journal with them and the agent starts with the recovered
 * context, and the orchestrator keeps them in its journal when the attempt ends (result or failure).
 */

/** At most this many of the last entries travel (E23A summarises the last 50). */
export const relayMaxEntries = 200;
/** …and at most this many characters of JSON in all. */
export const relayMaxChars = 256 * 1024;
/** A string of a tool input longer than this is cut (a written file's content is not the journal's business). */
export const relayMaxInputChars = 800;
/** Publishes at most this often while the agent runs (and once at the end). */
export const relayIntervalMs = 500;

function cutInput(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (typeof value === 'string') out[key] = value.length > relayMaxInputChars ? `${value.slice(0, relayMaxInputChars)}…` : value;
    else {
      const text = JSON.stringify(value) ?? '';
      out[key] = text.length > relayMaxInputChars ? `${text.slice(0, relayMaxInputChars)}…` : value;
    }
  }
  return out;
}

/**
 * The entries that travel: previews only (never `content_file`: the full result stays on the
 * worker), long input strings cut, the last {@link relayMaxEntries} whose JSON fits in
 * {@link relayMaxChars} in all (the newest are kept).
 */
export function boundJournal(entries: readonly ToolEntry[], limits: { maxEntries?: number; maxChars?: number } = {}): ToolEntry[] {
  const maxEntries = limits.maxEntries ?? relayMaxEntries;
  const maxChars = limits.maxChars ?? relayMaxChars;
  const kept: ToolEntry[] = [];
  let chars = 0;
  for (let index = entries.length - 1; index >= 0 && kept.length < maxEntries; index -= 1) {
    const { content_file: _file, ...rest } = entries[index]!;
    const entry: ToolEntry = rest.input ? { ...rest, input: cutInput(rest.input) } : rest;
    const size = JSON.stringify(entry).length + 1;
    if (chars + size > maxChars) break;
    chars += size;
    kept.push(entry);
  }
  return kept.reverse();
}

/**
 * `entries` with every occurrence of the path `from` replaced by `to`: the worker's worktree travels
 * as `{{POLYWAVE_WORKTREE}}` (as in the job's prompts) and is read back as the reader's own worktree.
 */
export function mapJournalPath(entries: readonly ToolEntry[], from: string, to: string): ToolEntry[] {
  if (from === '' || from === to) return [...entries];
  const quoted = (text: string) => JSON.stringify(text).slice(1, -1);
  return JSON.parse(JSON.stringify(entries).split(quoted(from)).join(quoted(to))) as ToolEntry[];
}

export const toPortableJournal = (entries: readonly ToolEntry[], worktree: string): ToolEntry[] => mapJournalPath(entries, worktree, worktreeToken);
export const fromPortableJournal = (entries: readonly ToolEntry[], worktree: string): ToolEntry[] => mapJournalPath(entries, worktreeToken, worktree);

/** The entries of a job's progress (anything else in it — or a hostile value — yields none). */
export function journalOfProgress(progress: unknown): ToolEntry[] {
  const journal = progress && typeof progress === 'object' && !Array.isArray(progress) ? (progress as { journal?: unknown }).journal : undefined;
  if (!Array.isArray(journal)) return [];
  const entries = journal.filter((entry): entry is ToolEntry => entry !== null && typeof entry === 'object' && !Array.isArray(entry) && typeof (entry as ToolEntry).kind === 'string');
  return boundJournal(entries);
}

/** A running relay: `touch()` on every agent event, `close()` at the end (the last publish, awaited). */
export interface JournalRelay {
  touch(): void;
  close(): Promise<void>;
  /** No more publishes (the job ended some other way). */
  stop(): void;
}

/**
 * Publishes the bounded journal of `index` through `publish` at most every `intervalMs` (the
 * trailing change included) while the agent runs, and once more at `close()` — also when only
 * `pending()` says there is something else to send (the agent's live events ride the same update). A publish that fails
 * (Redis away for a moment) is not retried: the next one carries everything again.
 */
export function createJournalRelay(paths: Pick<JournalPaths, 'index'>, publish: (entries: ToolEntry[]) => Promise<unknown>, options: { intervalMs?: number; now?: () => number; pending?: () => boolean } = {}): JournalRelay {
  const intervalMs = options.intervalMs ?? relayIntervalMs;
  const now = options.now ?? Date.now;
  let last = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let sending: Promise<void> = Promise.resolve();
  let published = -1;
  const send = (): Promise<void> => {
    sending = sending.then(async () => {
      last = now();
      const entries = await readJournal(paths.index).catch(() => [] as ToolEntry[]);
      // Nothing new since the last publish (the index only grows), and nothing else to send (the agent's live events).
      if (entries.length === published && !options.pending?.()) return;
      published = entries.length;
      await publish(boundJournal(entries)).catch(() => undefined);
    });
    return sending;
  };
  return {
    touch: () => {
      if (closed || timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        void send();
      }, Math.max(0, last + intervalMs - now()));
      timer.unref();
    },
    stop: () => {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
    close: async () => {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await send();
    },
  };
}

/**
 * A job's journal on its worker: a fresh directory per job (never another job's entries), seeded
 * with the entries of the job's progress — a previous run of THIS job on a worker that died. Returns
 * the recovered context (E23A summary) when there were any.
 */
export async function seedJobJournal(paths: JournalPaths, progress: unknown, worktree?: string): Promise<{ entries: number; markdown?: string }> {
  await rm(paths.dir, { recursive: true, force: true });
  await mkdir(paths.results_dir, { recursive: true });
  const relayed = journalOfProgress(progress);
  const entries = worktree === undefined ? relayed : fromPortableJournal(relayed, worktree);
  await writeFile(paths.index, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
  if (entries.length === 0) return { entries: 0 };
  const recovered = await recoverJournalContext(paths);
  return { entries: entries.length, ...(recovered.markdown ? { markdown: recovered.markdown } : {}) };
}

/**
 * The prompt with the recovered context as the brief's `## Session Context (Recovered from Tool
 * Journal)` section, first (where run-wave puts it). A prompt that already opens with one (the
 * orchestrator recovered earlier attempts) keeps it, after this job's own earlier run.
 */
export function withRecoveredContext(prompt: string, markdown: string): string {
  const body = markdown.trim();
  if (prompt.startsWith(recoveredContextHeading)) {
    return `${recoveredContextHeading}\n\n${body}\n\nAn earlier run of this job on another worker, above; earlier attempts of the agent:\n\n${prompt.slice(recoveredContextHeading.length).replace(/^\n+/, '')}`;
  }
  return `${recoveredContextHeading}\n\n${body}\n\n${prompt}`;
}
