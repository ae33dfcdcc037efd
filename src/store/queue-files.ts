import { existsSync } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { PolywaveError } from '../errors/polywave-error.js';
import { implSlugFromPath } from '../protocol/names.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { autonomyLevels, parseQueueItem, queueStatuses, sortQueue, type QueueItem } from '../protocol/queue.js';
import { writeFileAtomic } from './atomic-file.js';

/** What the daemon adds to an item (Go ignores these keys). */
export interface QueueRunState {
  /** The IMPL the item runs (relative to the repository). */
  impl_path?: string;
  /** The plan is written and waits for a human's approval. */
  awaiting_review?: boolean;
  /** gate_failure auto-retries used. */
  auto_retries?: number;
  /** Why the item is blocked. */
  blocked_reason?: string;
  /** A key the daemon must obey has a value it does not understand: the item is not run (fail closed). */
  invalid?: string;
}

/** Queue items are small YAML files; anything larger is not one. */
const maxQueueItemBytes = 1024 * 1024;

/** A queue item with the file it was read from and the daemon's keys. */
export type QueueFileItem = QueueItem & QueueRunState & { file_path: string };

function runState(text: string): QueueRunState {
  const data = parseDocument(text).toJS() as Record<string, unknown> | null;
  if (!data || typeof data !== 'object') return {};
  const problems: string[] = [];
  if ('autonomy_override' in data && !(autonomyLevels as readonly unknown[]).includes(data.autonomy_override)) problems.push(`autonomy_override must be ${autonomyLevels.join(', ')} (got ${JSON.stringify(data.autonomy_override)})`);
  if ('require_review' in data && typeof data.require_review !== 'boolean') problems.push(`require_review must be true or false (got ${JSON.stringify(data.require_review)})`);
  if ('status' in data && !(queueStatuses as readonly unknown[]).includes(data.status)) problems.push(`status must be ${queueStatuses.join(', ')} (got ${JSON.stringify(data.status)})`);
  if ('depends_on' in data && (!Array.isArray(data.depends_on) || data.depends_on.some((slug) => typeof slug !== 'string'))) problems.push('depends_on must be a list of slugs');
  return {
    ...(problems.length > 0 ? { invalid: problems.join('; ') } : {}),
    ...(typeof data.impl_path === 'string' ? { impl_path: data.impl_path } : {}),
    ...(data.awaiting_review === true ? { awaiting_review: true } : {}),
    ...(typeof data.auto_retries === 'number' && data.auto_retries >= 0 ? { auto_retries: Math.floor(data.auto_retries) } : {}),
    ...(typeof data.blocked_reason === 'string' ? { blocked_reason: data.blocked_reason } : {}),
  };
}

/** `<root>/docs/IMPL/queue`. */
export function queueDirectory(root: string): string {
  return path.join(root, 'docs', 'IMPL', 'queue');
}

/**
 * Every item of the queue, by priority. A file that is not an item (not YAML, not a mapping, not
 * a regular file — a directory, FIFO or symlink named `*.yaml` — or too large) is a coded error
 * (Q006), or, with `onBadFile` (the watching daemon), reported and skipped.
 */
export async function readQueue(root: string, options: { onBadFile?: (file: string, message: string) => void } = {}): Promise<QueueFileItem[]> {
  const directory = queueDirectory(root);
  if (!existsSync(directory)) return [];
  const items: QueueFileItem[] = [];
  for (const name of (await readdir(directory)).filter((entry) => /\.ya?ml$/.test(entry)).sort()) {
    const file = path.join(directory, name);
    let problem: string | undefined;
    let text = '';
    const info = await lstat(file).catch(() => undefined);
    if (!info) continue; // removed meanwhile
    if (!info.isFile()) problem = `${file}: not a regular file (a directory, FIFO or symbolic link)`;
    else if (info.size > maxQueueItemBytes) problem = `${file}: larger than ${maxQueueItemBytes} bytes`;
    else text = await readFile(file, 'utf8');
    const parsed = problem === undefined ? parseQueueItem(text, file) : undefined;
    if (parsed && !parsed.item) problem = parsed.error ?? `${file}: unreadable queue item`;
    if (problem !== undefined || !parsed?.item) {
      const message = problem ?? `${file}: unreadable queue item`;
      if (options.onBadFile) {
        options.onBadFile(file, message);
        continue;
      }
      throw new PolywaveError({ code: 'Q006_QUEUE_CORRUPTED_FILE', message });
    }
    items.push({ ...parsed.item, ...runState(text), file_path: file });
  }
  return sortQueue(items) as QueueFileItem[];
}

/** Slugs that count as done: complete queue items and IMPLs archived in docs/IMPL/complete/. */
export async function completedSlugs(root: string, items: readonly QueueItem[]): Promise<Set<string>> {
  const done = new Set(items.filter((item) => item.status === 'complete').map((item) => item.slug));
  const archive = path.join(root, 'docs', 'IMPL', 'complete');
  if (!existsSync(archive)) return done;
  for (const name of (await readdir(archive)).filter((entry) => /\.ya?ml$/.test(entry))) {
    const file = path.join(archive, name);
    let manifest;
    try {
      manifest = parseImpl(await readFile(file, 'utf8')).manifest ?? undefined;
    } catch {
      manifest = undefined;
    }
    done.add(implSlugFromPath(file, manifest));
  }
  return done;
}

/**
 * Sets keys of one item file in place (atomic write; comments and the keys it does not name are
 * kept; `undefined` deletes a key). Returns the item as written.
 */
export async function updateQueueItem(file: string, changes: Readonly<Record<string, unknown>>): Promise<QueueItem & QueueRunState> {
  const document = parseDocument(await readFile(file, 'utf8'));
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) document.delete(key);
    else document.set(key, value);
  }
  const text = document.toString({ lineWidth: 0 });
  const { item, error } = parseQueueItem(text, file);
  if (!item) throw new PolywaveError({ code: 'Q006_QUEUE_CORRUPTED_FILE', message: error ?? `${file}: unreadable queue item` });
  await writeFileAtomic(file, text);
  return { ...item, ...runState(text) };
}
