import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { newQueueItem, nextQueueItem, queueFileName, serializeQueueItem, type QueueItem } from '../../protocol/queue.js';
import { completedSlugs, queueDirectory, readQueue } from '../../store/queue-files.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

/**
 * `queue add --title T [--priority N] [--description D] [--depends-on a,b]` · `queue list` ·
 * `queue next` — the IMPL queue in `<repo>/docs/IMPL/queue/` (one YAML file per item, named
 * `NNN-<slug>.yaml`). add prints `{added, slug, path}`; list `[{slug, title, priority, status}]`
 * by priority; next the first queued item whose dependencies are complete `{slug, title,
 * priority}`, or `{next: null}`. Exit 0, 1 when add finds the item already queued, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const action = (args[0] ?? '').trim();
  const root = repoDirOption(options, io) ?? io.cwd;
  if (action === 'add') {
    if (typeof options.title !== 'string' || options.title.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'queue add: --title is required' });
    let item: QueueItem;
    try {
      item = newQueueItem({
        title: options.title,
        ...(typeof options.priority === 'number' ? { priority: options.priority } : {}),
        ...(typeof options.description === 'string' ? { description: options.description } : {}),
        ...(Array.isArray(options.dependsOn) ? { dependsOn: options.dependsOn as string[] } : {}),
      });
    } catch (error) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `queue add: ${error instanceof Error ? error.message : String(error)}` });
    }
    const existing = (await readQueue(root)).find((queued) => queued.slug === item.slug);
    if (existing) throw new PolywaveError({ code: 'Q001_QUEUE_ADD_FAILED', message: `queue item ${item.slug} already exists: ${existing.file_path}`, exitCode: 1 });
    await mkdir(queueDirectory(root), { recursive: true });
    const file = path.join(queueDirectory(root), queueFileName(item));
    try {
      await writeFile(file, serializeQueueItem(item), { flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new PolywaveError({ code: 'Q001_QUEUE_ADD_FAILED', message: `queue item already exists: ${file}`, exitCode: 1 });
      throw error;
    }
    printJson(io, { added: true, slug: item.slug, path: file });
    return 0;
  }
  if (action === 'list') {
    printJson(io, (await readQueue(root)).map((item) => ({ slug: item.slug, title: item.title, priority: item.priority, status: item.status })));
    return 0;
  }
  if (action === 'next') {
    const items = await readQueue(root);
    const next = nextQueueItem(items, await completedSlugs(root, items));
    printJson(io, next ? { slug: next.slug, title: next.title, priority: next.priority } : { next: null });
    return 0;
  }
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `queue: unknown action "${action}" (add, list or next)` });
}
