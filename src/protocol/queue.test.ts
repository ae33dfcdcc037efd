import { describe, expect, it } from 'vitest';
import { newQueueItem, nextQueueItem, parseQueueItem, queueFileName, queueSlug, serializeQueueItem } from './queue.js';

describe('the IMPL queue', () => {
  it('slugs, file names and a YAML round trip', () => {
    expect(queueSlug('  Add OAuth (v2)!  ')).toBe('add-oauth-v2');
    expect(queueSlug('!!!')).toBe('item');
    const item = newQueueItem({ title: 'Add OAuth', priority: 7, description: 'd', dependsOn: ['base', 'base', ' '] });
    expect(queueFileName(item)).toBe('007-add-oauth.yaml');
    expect(parseQueueItem(serializeQueueItem(item), 'x.yaml').item).toEqual(item);
    expect(() => newQueueItem({ title: ' ' })).toThrow('title');
    expect(parseQueueItem('- a list', 'bad.yaml').error).toContain('not a queue item');
  });

  it('next: lowest priority among queued items whose dependencies are complete', () => {
    const a = { ...newQueueItem({ title: 'a', priority: 1, dependsOn: ['x'] }) };
    const b = newQueueItem({ title: 'b', priority: 5 });
    const c = { ...newQueueItem({ title: 'c', priority: 0 }), status: 'in_progress' };
    expect(nextQueueItem([a, b, c], new Set())?.slug).toBe('b');
    expect(nextQueueItem([a, b, c], new Set(['x']))?.slug).toBe('a');
    expect(nextQueueItem([c], new Set())).toBeUndefined();
  });
});
