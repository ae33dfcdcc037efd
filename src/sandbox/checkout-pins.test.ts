import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCheckoutPins } from './checkout-pins.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-pins-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('checkout pins', () => {
  it('keeps every pin of a checkout until each is released, by its real path; a second release does nothing', () => {
    const checkout = path.join(scratch, 'repo');
    mkdirSync(checkout);
    const link = path.join(scratch, 'link');
    symlinkSync(checkout, link);
    const pins = createCheckoutPins();
    const first = pins.pin(checkout, 'a');
    const second = pins.pin(`${link}/`, 'b');
    const third = pins.pin(checkout, 'a');
    expect(pins.of(link)).toEqual(['a', 'b', 'a']);
    first();
    first();
    expect(pins.of(checkout)).toEqual(['b', 'a']);
    second();
    third();
    expect(pins.of(checkout)).toEqual([]);
    expect(pins.size).toBe(0);
    // a checkout that does not exist is pinned as given
    const release = pins.pin(path.join(scratch, 'gone', '..', 'missing'), 'c');
    expect([...pins.entries()]).toEqual([[path.join(scratch, 'missing'), ['c']]]);
    release();
  });
});
