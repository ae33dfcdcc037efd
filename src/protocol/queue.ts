import { stringify } from 'yaml';
import { parseYamlSafe, toPlain } from './yaml/index.js';

/**
 * The IMPL queue (`docs/IMPL/queue/NNN-<slug>.yaml`, one item per file; the daemon takes items
 * in priority order once their dependencies are complete). Pure: text in, values out.
 */

export const queueStatuses = ['queued', 'in_progress', 'complete', 'blocked'] as const;

/** The daemon's autonomy levels (a queue item's `autonomy_override`). */
export const autonomyLevels = ['gated', 'supervised', 'autonomous'] as const;
export type QueueStatus = (typeof queueStatuses)[number];

/** One queue item (Go's `queue.Item` YAML keys). */
export interface QueueItem {
  title: string;
  /** Lower runs first. */
  priority: number;
  depends_on?: string[];
  feature_description: string;
  status: string;
  autonomy_override?: string;
  require_review?: boolean;
  slug: string;
}

/** The slug of a title: lower-case, runs of other characters → `-`, trimmed, at most 64 characters; `item` when empty. */
export function queueSlug(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64).replace(/-+$/g, '') || 'item';
}

/** File name of an item: zero-padded priority then slug (`050-add-login.yaml`), so a listing sorts by priority. */
export function queueFileName(item: Pick<QueueItem, 'priority' | 'slug'>): string {
  return `${String(item.priority).padStart(3, '0')}-${item.slug}.yaml`;
}

/** A new item; throws a message when the title is empty or the priority is negative. */
export function newQueueItem(input: { title: string; priority?: number; description?: string; dependsOn?: readonly string[] }): QueueItem {
  const title = input.title.trim();
  if (title === '') throw new Error('a queue item needs a title');
  const priority = input.priority ?? 50;
  if (!Number.isInteger(priority) || priority < 0) throw new Error(`priority must be a non-negative integer, got ${priority}`);
  const dependsOn = [...new Set((input.dependsOn ?? []).map((slug) => slug.trim()).filter((slug) => slug !== ''))];
  return { title, priority, ...(dependsOn.length > 0 ? { depends_on: dependsOn } : {}), feature_description: input.description?.trim() ?? '', status: 'queued', slug: queueSlug(title) };
}

/** YAML text of an item (keys in Go's order). */
export function serializeQueueItem(item: QueueItem): string {
  return stringify(item, { lineWidth: 0 });
}

/** Parses an item file; `error` when it is not a mapping with a title or slug. */
export function parseQueueItem(text: string, fileName: string): { item?: QueueItem; error?: string } {
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) return { error: `${fileName}: ${parsed.findings[0]?.message ?? 'not YAML'}` };
  const data = toPlain(parsed.document) as Record<string, unknown> | null;
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { error: `${fileName}: not a queue item (a YAML mapping)` };
  const title = typeof data.title === 'string' ? data.title : '';
  const slug = typeof data.slug === 'string' && data.slug.trim() !== '' ? data.slug.trim() : title !== '' ? queueSlug(title) : '';
  if (slug === '') return { error: `${fileName}: a queue item needs a title or slug` };
  const priority = typeof data.priority === 'number' ? data.priority : Number(data.priority ?? 0);
  return {
    item: {
      title,
      priority: Number.isFinite(priority) ? priority : 0,
      ...(Array.isArray(data.depends_on) ? { depends_on: data.depends_on.map(String) } : {}),
      feature_description: typeof data.feature_description === 'string' ? data.feature_description : '',
      status: typeof data.status === 'string' && data.status !== '' ? data.status : 'queued',
      ...(typeof data.autonomy_override === 'string' ? { autonomy_override: data.autonomy_override } : {}),
      ...(typeof data.require_review === 'boolean' ? { require_review: data.require_review } : {}),
      slug,
    },
  };
}

/** Items by priority, then slug (stable, unlike a plain priority sort). */
export function sortQueue(items: readonly QueueItem[]): QueueItem[] {
  return [...items].sort((a, b) => a.priority - b.priority || a.slug.localeCompare(b.slug));
}

/**
 * The next item to run: the first `queued` item (by priority) whose `depends_on` slugs are all
 * complete (`completed` holds completed queue items and archived IMPLs' slugs).
 */
export function nextQueueItem(items: readonly QueueItem[], completed: ReadonlySet<string>): QueueItem | undefined {
  return sortQueue(items).find((item) => item.status === 'queued' && (item.depends_on ?? []).every((slug) => completed.has(slug)));
}
