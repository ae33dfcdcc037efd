import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processExists } from './process-alive.js';

describe('processExists', () => {
  it('is true for this process and for pid 1 (another user\'s process exists too: EPERM)', () => {
    expect(processExists(process.pid)).toBe(true);
    expect(processExists(1)).toBe(true);
  });

  it('is false for a process that ended and was reaped, and for ids that name no single process', () => {
    const child = spawnSync(process.execPath, ['-e', '0']);
    expect(child.status).toBe(0);
    expect(processExists(child.pid!)).toBe(false);
    // kill(0, 0) and kill(-1, 0) would signal a process group / every process: never "the writer exists".
    for (const pid of [0, -1, Number.NaN, 1.5]) expect(processExists(pid)).toBe(false);
  });
});
