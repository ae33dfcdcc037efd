import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { insertEvents, openEventStore, type NewEventRow } from '../observability/event-store.js';
import { EventTail } from './event-tail.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-event-tail-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function rows(runId: string, from: number, count: number): NewEventRow[] {
  return Array.from({ length: count }, (_, index) => ({ run_id: runId, seq: from + index, ts: Date.now(), type: 'agent-progress', activity_type: null, slug: 'tail', wave: 1, agent: 'A', program: null, payload: JSON.stringify({ seq: from + index }) }));
}

/** How long until the tail sees a row past `after` (its timers set to a minute: only the file watch can wake it sooner). */
async function wokenWithin(tail: EventTail, after: number, write: () => void): Promise<number> {
  const started = Date.now();
  const waited = tail.waitBeyond(after, 20_000, new AbortController().signal);
  write();
  await waited;
  return Date.now() - started;
}

describe('EventTail', () => {
  it('wakes on the write notification of the store (no timer poll), and reads through its cached statements', async () => {
    const dir = path.join(base, 'watched');
    mkdirSync(dir);
    const store = path.join(dir, 'events.db');
    const writer = openEventStore(store)!;
    const tail = new EventTail(store, 60_000, 60_000);
    try {
      tail.start();
      expect(tail.watching).toBe(true);
      expect(tail.lastId).toBe(0);
      const ms = await wokenWithin(tail, 0, () => insertEvents(writer, rows('run-1', 1, 3), { run_id: 'run-1', started_at: Date.now(), command: 'run', cwd: '/repo', pid: 1 }));
      expect(ms).toBeLessThan(5000);
      expect(tail.lastId).toBe(3);
      expect(tail.read({}, 0, 10).map((row) => row.seq)).toEqual([1, 2, 3]);
      // The same statements again, after more rows (and one more wake).
      await wokenWithin(tail, 3, () => insertEvents(writer, rows('run-1', 4, 2)));
      expect(tail.lastId).toBe(5);
      expect(tail.read({}, 3, 10).map((row) => row.seq)).toEqual([4, 5]);
      expect(tail.read({ types: ['agent-progress'] }, 4, 10).map((row) => row.id)).toEqual([5]);
      expect(tail.runCwd('run-1')).toBe('/repo');
      expect(tail.runCwd('run-unknown')).toBeNull();
    } finally {
      tail.close();
      writer.close();
    }
  });

  it('wakes when the store is created after the start, and when it is replaced (resync generation)', async () => {
    const dir = path.join(base, 'late');
    mkdirSync(dir);
    const store = path.join(dir, 'events.db');
    const tail = new EventTail(store, 60_000, 60_000);
    try {
      tail.start();
      expect(tail.watching).toBe(true);
      let writer = openEventStore(store)!;
      await wokenWithin(tail, 0, () => insertEvents(writer, rows('run-2', 1, 1), { run_id: 'run-2', started_at: Date.now(), command: 'run', cwd: '/repo', pid: 1 }));
      expect(tail.lastId).toBe(1);
      writer.close();
      const generation = tail.generation;
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${store}${suffix}`, { force: true });
      writer = openEventStore(store)!;
      const started = Date.now();
      while (tail.generation === generation && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(tail.generation).toBe(generation + 1);
      await wokenWithin(tail, 0, () => insertEvents(writer, rows('run-3', 1, 2), { run_id: 'run-3', started_at: Date.now(), command: 'run', cwd: '/other', pid: 2 }));
      expect(tail.lastId).toBe(2);
      expect(tail.runCwd('run-3')).toBe('/other');
      writer.close();
    } finally {
      tail.close();
    }
  });

  it('watches the directory anew when it was deleted and recreated with the store', async () => {
    const dir = path.join(base, 'recreated');
    mkdirSync(dir);
    const store = path.join(dir, 'events.db');
    let writer = openEventStore(store)!;
    insertEvents(writer, rows('run-5', 1, 1), { run_id: 'run-5', started_at: Date.now(), command: 'run', cwd: '/repo', pid: 1 });
    writer.close();
    const tail = new EventTail(store, 20, 60_000);
    try {
      tail.start();
      expect([tail.watching, tail.lastId]).toEqual([true, 1]);
      const generation = tail.generation;
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir);
      writer = openEventStore(store)!;
      const started = Date.now();
      while ((tail.generation === generation || !tail.watching) && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20));
      expect([tail.generation, tail.watching]).toEqual([generation + 1, true]);
      // Woken by the new directory's watch (the timer poll is a minute now).
      const ms = await wokenWithin(tail, 0, () => insertEvents(writer, rows('run-6', 1, 2), { run_id: 'run-6', started_at: Date.now(), command: 'run', cwd: '/repo', pid: 1 }));
      expect(ms).toBeLessThan(5000);
      expect(tail.lastId).toBe(2);
      writer.close();
    } finally {
      tail.close();
    }
  });

  it('polls on its timer where the directory cannot be watched (yet)', async () => {
    const dir = path.join(base, 'absent');
    const store = path.join(dir, 'events.db');
    const tail = new EventTail(store, 20, 60_000);
    try {
      tail.start();
      expect(tail.watching).toBe(false);
      mkdirSync(dir);
      const writer = openEventStore(store)!;
      await wokenWithin(tail, 0, () => insertEvents(writer, rows('run-4', 1, 1), { run_id: 'run-4', started_at: Date.now(), command: 'run', cwd: '/repo', pid: 1 }));
      expect(tail.lastId).toBe(1);
      writer.close();
      // Within a second or so the watch is set up, and the fallback timer slows down.
      const started = Date.now();
      while (!tail.watching && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(tail.watching).toBe(true);
    } finally {
      tail.close();
    }
  });
});
