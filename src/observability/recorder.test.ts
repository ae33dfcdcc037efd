import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EventBus, labelEvents, type PolywaveEvent } from '../engine/events.js';
import { iterateEvents, openEventStore } from './event-store.js';
import { attachRecorder } from './recorder.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-recorder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('run id and sequence on the bus (E40)', () => {
  it('every subscriber sees the run id and seq the store keeps; labelled child buses are stamped once, at the root', () => {
    const bus = new EventBus();
    const printed: PolywaveEvent[] = [];
    bus.subscribe((event) => printed.push(event));
    const store = path.join(dir, 'events.db');
    const recorder = attachRecorder(bus, { storePath: store, command: 'test', warn: () => undefined });
    const child = labelEvents(bus, { program: 'shop' })!;
    bus.emit({ v: 1, type: 'wave-prepare-start', slug: 'demo', wave: 1 });
    child.emit({ v: 1, type: 'wave-prepare-end', slug: 'demo', wave: 1, success: true });
    bus.emit({ v: 1, type: 'gate-start', gate: 'test', command: 'true', cwd: dir });
    recorder.close();

    expect(printed.map((event) => [event.type, event.run_id, event.seq])).toEqual([
      ['wave-prepare-start', recorder.runId, 1],
      ['wave-prepare-end', recorder.runId, 2],
      ['gate-start', recorder.runId, 3],
    ]);
    expect(printed[1]!.program).toBe('shop');
    const db = openEventStore(store, { readonly: true })!;
    const rows = [...iterateEvents(db, { run: recorder.runId })];
    db.close();
    expect(rows.map((row) => [row.type, row.run_id, row.seq])).toEqual(printed.map((event) => [event.type, event.run_id, event.seq]));
    // The stored payload is the event as emitted (the stamp lives in the run_id/seq columns).
    expect(JSON.parse(rows[0]!.payload)).toEqual({ v: 1, type: 'wave-prepare-start', slug: 'demo', wave: 1 });
  });

  it('a bus without a recorder (--no-events) emits events unchanged', () => {
    const bus = new EventBus();
    const seen: PolywaveEvent[] = [];
    bus.subscribe((event) => seen.push(event));
    const event: PolywaveEvent = { v: 1, type: 'wave-prepare-start', slug: 'demo', wave: 1 };
    bus.emit(event);
    expect(seen).toEqual([event]);
    expect(seen[0]).toBe(event);
  });
});

describe('the repositories a run worked on (schema 2, attack-serve-12 F1)', () => {
  it('stores the roots named through the bus (or a labelled child bus) on the run row, realpath, deduplicated; a version-1 store is migrated and its runs keep repos NULL', async () => {
    const { default: Driver } = await import('better-sqlite3');
    const { realpathSync, mkdirSync, symlinkSync } = await import('node:fs');
    const { recordRunRepositories } = await import('./recorder.js');
    // A store written by schema 1 (no repos column), with one run.
    const store = path.join(dir, 'v1.db');
    const old = new Driver(store);
    old.exec("CREATE TABLE events (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL, type TEXT NOT NULL, activity_type TEXT, slug TEXT, wave INTEGER, agent TEXT, program TEXT, payload TEXT NOT NULL); CREATE UNIQUE INDEX events_run_seq ON events(run_id, seq); CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at INTEGER NOT NULL, command TEXT NOT NULL, cwd TEXT, pid INTEGER); INSERT INTO runs VALUES ('old-run', 1, 'run', '/old/cwd', 1);");
    old.pragma('user_version = 1');
    old.close();

    const repoA = path.join(dir, 'repo-a');
    mkdirSync(repoA);
    symlinkSync(repoA, path.join(dir, 'link-a'));
    const bus = new EventBus();
    const recorder = attachRecorder(bus, { storePath: store, command: 'run', warn: () => undefined, cwd: '/started/elsewhere' });
    bus.emit({ v: 1, type: 'wave-prepare-start', slug: 'demo', wave: 1 });
    recorder.flush();
    // Named after the first batch was stored: the run row is updated with the next one.
    recordRunRepositories(labelEvents(bus, { program: 'shop' }), [path.join(dir, 'link-a')]);
    recordRunRepositories(bus, [repoA, '/other/repo', '']);
    bus.emit({ v: 1, type: 'wave-prepare-end', slug: 'demo', wave: 1, success: true });
    recorder.close();
    // After close, naming a repository reaches no recorder (and never throws).
    recordRunRepositories(bus, ['/late']);

    const db = openEventStore(store, { readonly: true })!;
    expect(db.pragma('user_version', { simple: true })).toBe(2);
    const runs = db.prepare('SELECT run_id, cwd, repos FROM runs ORDER BY started_at').all() as Array<{ run_id: string; cwd: string; repos: string | null }>;
    db.close();
    expect(runs).toEqual([
      { run_id: 'old-run', cwd: '/old/cwd', repos: null },
      { run_id: recorder.runId, cwd: '/started/elsewhere', repos: JSON.stringify([realpathSync(repoA), '/other/repo']) },
    ]);
  });
});
