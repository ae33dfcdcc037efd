import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { makeTempDir } from '../../test/support/temp.js';
import { updateFileLocked, withFileLock, writeFileAtomic } from './locked-write.js';

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function writeLock(lockPath: string, owner: { pid: number; hostname?: string; createdAt?: string }): void {
  writeFileSync(
    lockPath,
    JSON.stringify({ pid: owner.pid, hostname: owner.hostname ?? os.hostname(), createdAt: owner.createdAt ?? new Date().toISOString(), token: 'someone-else' }),
  );
}

describe('updateFileLocked', () => {
  const directory = makeTempDir('polywave-locked-write-');
  let counter = 0;
  const freshFile = (content = 'a: 1\n'): string => {
    counter += 1;
    const file = path.join(directory, `file-${counter}.yaml`);
    writeFileSync(file, content);
    return file;
  };
  const leftovers = (): string[] => readdirSync(directory).filter((name) => name.endsWith('.tmp') || name.includes('.lock'));

  it('writes the updated text atomically and releases the lock', async () => {
    const file = freshFile();
    const result = await updateFileLocked(file, (current) => `${current}b: 2\n`);
    expect(result).toEqual({ changed: true, text: 'a: 1\nb: 2\n' });
    expect(readFileSync(file, 'utf8')).toBe('a: 1\nb: 2\n');
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('does not rewrite an unchanged file', async () => {
    const file = freshFile();
    const before = statSync(file);
    const result = await updateFileLocked(file, (current) => current);
    expect(result).toEqual({ changed: false, text: 'a: 1\n' });
    expect(statSync(file).ino).toBe(before.ino);
  });

  it('writes nothing when the update throws, and releases the lock', async () => {
    const file = freshFile();
    await expect(
      updateFileLocked(file, () => {
        throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'refused' });
      }),
    ).rejects.toThrow('refused');
    expect(readFileSync(file, 'utf8')).toBe('a: 1\n');
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('keeps the file mode', async () => {
    const file = freshFile();
    chmodSync(file, 0o640);
    await updateFileLocked(file, (current) => `${current}c: 3\n`);
    expect(statSync(file).mode & 0o777).toBe(0o640);
  });

  it('reports a missing file unless allowMissing', async () => {
    const file = path.join(directory, 'not-there.yaml');
    await expect(updateFileLocked(file, (current) => current)).rejects.toMatchObject({ code: 'N005_IMPL_NOT_FOUND' });
    expect(existsSync(`${file}.lock`)).toBe(false);
    const result = await updateFileLocked(file, (current) => `${current}new: true\n`, { allowMissing: true });
    expect(result.changed).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('new: true\n');
  });

  it('serialises concurrent updates in one process', async () => {
    const file = freshFile('');
    await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        updateFileLocked(file, async (current) => {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
          return `${current}line ${index}\n`;
        }),
      ),
    );
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(20);
    expect(new Set(lines).size).toBe(20);
  });

  it('keeps waiting while the lock changes hands (a queue is progress), timing out only on a stuck holder', async () => {
    const file = freshFile('');
    const start = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        updateFileLocked(
          file,
          async (current) => {
            await new Promise((resolve) => setTimeout(resolve, 80));
            return `${current}entry ${index}\n`;
          },
          { lockTimeoutMs: 300 },
        ),
      ),
    );
    expect(performance.now() - start).toBeGreaterThan(600);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(8);
  });

  it('breaks a lock whose owner process is dead', async () => {
    const file = freshFile();
    writeLock(`${file}.lock`, { pid: deadPid() });
    const start = performance.now();
    await updateFileLocked(file, (current) => `${current}after: stale\n`, { lockTimeoutMs: 2000 });
    expect(performance.now() - start).toBeLessThan(1000);
    expect(readFileSync(file, 'utf8')).toContain('after: stale');
    expect(leftovers()).toEqual([]);
  });

  it('breaks a lock older than staleLockMs (other host) and an empty lock left by a crash', async () => {
    const file = freshFile();
    writeLock(`${file}.lock`, { pid: 1, hostname: 'another-host', createdAt: new Date(Date.now() - 60_000).toISOString() });
    await updateFileLocked(file, (current) => `${current}x: 1\n`, { lockTimeoutMs: 2000, staleLockMs: 30_000 });
    expect(readFileSync(file, 'utf8')).toContain('x: 1');

    // A lock without an owner record (not written by us) is broken once a waiter has seen it
    // unchanged for the grace period (min(5 s, staleLockMs)).
    writeFileSync(`${file}.lock`, '');
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    const start = performance.now();
    await updateFileLocked(file, (current) => `${current}y: 2\n`, { lockTimeoutMs: 2000, staleLockMs: 300 });
    expect(performance.now() - start).toBeGreaterThanOrEqual(250);
    expect(readFileSync(file, 'utf8')).toContain('y: 2');
    expect(leftovers()).toEqual([]);
  });

  it('waits for a live lock and times out with N094 naming the lock file', async () => {
    const file = freshFile();
    writeLock(`${file}.lock`, { pid: process.pid });
    const start = performance.now();
    let error: unknown;
    try {
      await updateFileLocked(file, (current) => `${current}never\n`, { lockTimeoutMs: 300 });
    } catch (caught) {
      error = caught;
    }
    const elapsed = performance.now() - start;
    expect(PolywaveError.isInstance(error)).toBe(true);
    const polywaveError = error as PolywaveError;
    expect(polywaveError.code).toBe('N094_MANIFEST_SAVE_FAILED');
    expect(polywaveError.exitCode).toBe(2);
    expect(polywaveError.message).toContain(`${file}.lock`);
    expect(polywaveError.message).toContain(`held by pid ${process.pid}`);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2000);
    expect(readFileSync(file, 'utf8')).toBe('a: 1\n');
    // The foreign lock is left alone.
    expect(existsSync(`${file}.lock`)).toBe(true);
  });

  it('withFileLock runs an action exclusively', async () => {
    const file = freshFile();
    let inside = 0;
    let maximum = 0;
    await Promise.all(
      Array.from({ length: 10 }, () =>
        withFileLock(file, async () => {
          inside += 1;
          maximum = Math.max(maximum, inside);
          await new Promise((resolve) => setTimeout(resolve, 2));
          inside -= 1;
        }),
      ),
    );
    expect(maximum).toBe(1);
  });
});

describe('writeFileAtomic', () => {
  const directory = makeTempDir('polywave-atomic-');

  it('creates new files and replaces existing ones, keeping the mode', async () => {
    const file = path.join(directory, 'new.yaml');
    await writeFileAtomic(file, 'a: 1\n');
    expect(readFileSync(file, 'utf8')).toBe('a: 1\n');
    chmodSync(file, 0o600);
    await writeFileAtomic(file, 'a: 2\n');
    expect(readFileSync(file, 'utf8')).toBe('a: 2\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await writeFileAtomic(path.join(directory, 'moded.yaml'), 'x\n', { mode: 0o640 });
    expect(statSync(path.join(directory, 'moded.yaml')).mode & 0o777).toBe(0o640);
    expect(readdirSync(directory).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('fails with N094 when the directory does not exist', async () => {
    await expect(writeFileAtomic(path.join(directory, 'no', 'such', 'dir.yaml'), 'x')).rejects.toMatchObject({ code: 'N094_MANIFEST_SAVE_FAILED' });
  });
});
