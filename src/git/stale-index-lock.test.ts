import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeStaleIndexLock } from './stale-index-lock.js';

describe('removeStaleIndexLock', () => {
  it('removes a lock no process has open, keeps one a live process holds, and does nothing without a lock', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pw-index-lock-'));
    expect(await removeStaleIndexLock(dir)).toBeUndefined();
    const lock = path.join(dir, 'index.lock');
    writeFileSync(lock, '');
    // A live holder (another process with the file open, as git has while it writes the index).
    const holder = spawn('sh', ['-c', `exec 3<"${lock}"; echo ready; exec sleep 30`], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    try {
      expect(await removeStaleIndexLock(dir, { recheckMs: 10 })).toBeUndefined();
      expect(existsSync(lock)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('close', resolve));
    }
    // The holder was killed: the lock is a dead one now.
    expect(await removeStaleIndexLock(dir, { recheckMs: 10 })).toBe(path.join(dir, 'index.lock'));
    expect(existsSync(lock)).toBe(false);
    // Other locks git takes the same way (a commit killed between its ref updates leaves HEAD.lock).
    writeFileSync(path.join(dir, 'HEAD.lock'), '');
    expect(await removeStaleIndexLock(dir, { recheckMs: 10 })).toBeUndefined();
    expect(await removeStaleIndexLock(dir, { recheckMs: 10, name: 'HEAD.lock' })).toBe(path.join(dir, 'HEAD.lock'));
    expect(existsSync(path.join(dir, 'HEAD.lock'))).toBe(false);
  });
});
