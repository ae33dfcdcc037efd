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

describe.runIf(process.platform === 'linux')('processExists: a zombie is gone (P13-25)', () => {
  it('a child that ended but was never reaped (its parent exec-ed into something that does not wait) does not exist', async () => {
    const { spawn } = await import('node:child_process');
    // A short `sleep` runs in the background and ends once its parent has become `sleep 30`, which never reaps it: a
    // zombie. (With `true &` the child could end before the exec and the shell reap it: /proc/<pid> gone, CI flake.)
    const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))));
      const { readFileSync } = await import('node:fs');
      let state = '';
      for (let tries = 0; tries < 500 && state !== 'Z'; tries += 1) {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        if (state !== 'Z') await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(state).toBe('Z');
      expect(processExists(pid)).toBe(false);
      expect(processExists(parent.pid!)).toBe(true);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
