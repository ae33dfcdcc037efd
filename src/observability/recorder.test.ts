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
