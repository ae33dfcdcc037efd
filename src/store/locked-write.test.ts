import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { makeTempDir } from '../../test/support/temp.js';
import { guardFile, isManifestScratchPath } from './atomic-file.js';
import { resolveLockLocation } from './lock-location.js';
import { updateFileLocked, withFileLock, writeFileAtomic } from './locked-write.js';

const nativeLocksPath = createRequire(import.meta.url).resolve('fs-native-extensions');
const holders = new Set<ChildProcess>();
afterAll(() => {
  for (const child of holders) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/**
 * Another process holding the kernel lock file (the same flock/OFD lock our writers take), with
 * a holder record like ours. It sits idle: no heartbeat, no CPU — a stuck holder.
 */
async function holdLockInChild(lockPath: string): Promise<ChildProcess> {
  const program = `
    const fsx = require(${JSON.stringify(nativeLocksPath)});
    const fs = require('node:fs');
    const fd = fs.openSync(${JSON.stringify(lockPath)}, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
    if (!fsx.tryLock(fd)) { process.stdout.write('busy\\n'); process.exit(3); }
    fs.writeSync(fd, JSON.stringify({ pid: process.pid, hostname: require('node:os').hostname(), acquired_at: new Date().toISOString(), token: 'child' }) + '\\n', 0);
    process.stdout.write('locked\\n');
    setInterval(() => {}, 60000);`;
  const child = spawn(process.execPath, ['-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
  holders.add(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (chunk.includes('locked') ? resolve() : reject(new Error(chunk))));
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

async function killAndWait(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
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

  it('X44-01: a guarded file changed by someone else is put back before a read-modify-write, and an unread write is refused', async () => {
    const file = freshFile('test_command: "false"\n');
    const guard = guardFile(file, 'test_command: "false"\n');
    try {
      writeFileSync(file, 'test_command: "true"\n');
      const result = await updateFileLocked(file, (current) => `${current}report: one\n`);
      expect(result.text).toBe('test_command: "false"\nreport: one\n');
      expect(guard.tampered()).toBe(true);
      expect(guard.expected()).toBe(result.text);
      writeFileSync(file, 'test_command: "true"\nreport: one\n');
      await expect(writeFileAtomic(file, 'test_command: "true"\nreport: two\n')).rejects.toMatchObject({ code: 'SANDBOX_ORCHESTRATOR_FILE_RESTORED' });
      expect(readFileSync(file, 'utf8')).toBe('test_command: "false"\nreport: one\n');
    } finally {
      guard.release();
    }
    // released: writes are plain again
    writeFileSync(file, 'x: 1\n');
    await writeFileAtomic(file, 'y: 2\n');
    expect(readFileSync(file, 'utf8')).toBe('y: 2\n');
  });

  it('writes the updated text atomically, releases the lock and leaves nothing beside the file', async () => {
    const file = freshFile();
    const result = await updateFileLocked(file, (current) => `${current}b: 2\n`);
    expect(result).toEqual({ changed: true, text: 'a: 1\nb: 2\n' });
    expect(readFileSync(file, 'utf8')).toBe('a: 1\nb: 2\n');
    expect(leftovers()).toEqual([]);
    // Released: taken again at once.
    const start = performance.now();
    await updateFileLocked(file, (current) => `${current}c: 3\n`, { lockTimeoutMs: 500 });
    expect(performance.now() - start).toBeLessThan(400);
  });

  it('keeps the lock file outside the working tree: in the git common dir, else in a per-user temp directory', async () => {
    const repo = path.join(directory, 'repo');
    mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
    spawnSync('git', ['init', '-q', repo]);
    const manifest = path.join(repo, 'docs', 'IMPL', 'IMPL-x.yaml');
    writeFileSync(manifest, 'state: SCOUT_PENDING\n');
    const inRepo = await resolveLockLocation(manifest);
    expect(inRepo.lockPath.startsWith(path.join(realpathSync(repo), '.git', 'polywave', 'locks') + path.sep)).toBe(true);
    expect(inRepo.target).toBe(realpathSync(manifest));
    // A linked worktree shares the main repository's lock directory.
    spawnSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'x']);
    spawnSync('git', ['-C', repo, 'worktree', 'add', '-q', path.join(directory, 'linked')]);
    const linked = await resolveLockLocation(path.join(directory, 'linked', 'IMPL-y.yaml'));
    expect(linked.gitCommonDir).toBe(realpathSync(path.join(repo, '.git')));
    const outside = await resolveLockLocation(freshFile());
    expect(outside.gitCommonDir).toBeUndefined();
    expect(path.dirname(outside.lockPath)).toBe(path.join(os.tmpdir(), `polywave-locks-${process.getuid?.() ?? 'user'}`));
    await updateFileLocked(manifest, (current) => current.replace('SCOUT_PENDING', 'REVIEWED'));
    expect(readdirSync(path.dirname(manifest))).toEqual(['IMPL-x.yaml']);
    expect(existsSync(inRepo.lockPath)).toBe(true);
  });

  it('a symlink and its target share one lock; followSymlink replaces the target and keeps the link, the default replaces the link', async () => {
    const real = freshFile('a: 1\n');
    const link = path.join(directory, `link-${counter}.yaml`);
    symlinkSync(path.basename(real), link);
    expect((await resolveLockLocation(link)).lockPath).toBe((await resolveLockLocation(real)).lockPath);
    const result = await updateFileLocked(link, (current) => `${current}b: 2\n`, { followSymlink: true });
    expect(result).toEqual({ changed: true, text: 'a: 1\nb: 2\n' });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toBe('a: 1\nb: 2\n');
    expect(leftovers()).toEqual([]);
    await updateFileLocked(link, (current) => `${current}c: 3\n`);
    expect(lstatSync(link).isSymbolicLink()).toBe(false);
    expect([readFileSync(link, 'utf8'), readFileSync(real, 'utf8')]).toEqual(['a: 1\nb: 2\nc: 3\n', 'a: 1\nb: 2\n']);
    expect(leftovers()).toEqual([]);
  });

  it('drops a UTF-8 BOM on write unless keepBom (update always sees the text without it)', async () => {
    const kept = freshFile('\uFEFFa: 1\n');
    let seen = '';
    await updateFileLocked(kept, (current) => ((seen = current), `${current}b: 2\n`), { keepBom: true });
    expect(seen).toBe('a: 1\n');
    expect(readFileSync(kept).equals(Buffer.from('\uFEFFa: 1\nb: 2\n', 'utf8'))).toBe(true);
    const dropped = freshFile('\uFEFFa: 1\n');
    await updateFileLocked(dropped, (current) => `${current}b: 2\n`);
    expect(readFileSync(dropped, 'utf8')).toBe('a: 1\nb: 2\n');
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
    expect(leftovers()).toEqual([]);
    await updateFileLocked(file, (current) => `${current}after: refusal\n`, { lockTimeoutMs: 500 });
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

  it('removes orphaned temp files and old-style lock files of the file (only those) at the next write', async () => {
    const file = freshFile();
    const name = path.basename(file);
    const orphans = [`.${name}.4242.0123456789ab.tmp`, `${name}.lock`, `${name}.lock.4242.0123456789ab.tmp`, `${name}.lock.break`];
    const others = [`.other.yaml.4242.0123456789ab.tmp`, 'notes.lock', `${name}.bak`];
    for (const entry of [...orphans, ...others]) writeFileSync(path.join(directory, entry), 'x');
    await updateFileLocked(file, (current) => `${current}z: 26\n`);
    for (const entry of orphans) expect(existsSync(path.join(directory, entry)), entry).toBe(false);
    for (const entry of others) expect(existsSync(path.join(directory, entry)), entry).toBe(true);
  });

  it('a holder that stops making progress: waiters give up with N094 naming its pid; nothing written', async () => {
    const file = freshFile();
    const holder = await holdLockInChild((await resolveLockLocation(file)).lockPath);
    const start = performance.now();
    let error: unknown;
    try {
      await updateFileLocked(file, (current) => `${current}never\n`, { lockTimeoutMs: 300 });
    } catch (caught) {
      error = caught;
    }
    const elapsed = performance.now() - start;
    expect(PolywaveError.isInstance(error), String(error)).toBe(true);
    const polywaveError = error as PolywaveError;
    expect(polywaveError.code).toBe('N094_MANIFEST_SAVE_FAILED');
    expect(polywaveError.exitCode).toBe(2);
    expect(polywaveError.message).toContain(file);
    expect(polywaveError.message).toContain(`held by pid ${holder.pid}`);
    expect(polywaveError.details).toMatchObject({ holder_pid: holder.pid });
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(3000);
    expect(readFileSync(file, 'utf8')).toBe('a: 1\n');
    await killAndWait(holder);
  });

  it('a holder killed with SIGKILL releases the lock at once (the kernel drops it): the next writer does not wait for a timeout', async () => {
    const file = freshFile();
    const holder = await holdLockInChild((await resolveLockLocation(file)).lockPath);
    const waiting = updateFileLocked(file, (current) => `${current}after: kill\n`, { lockTimeoutMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const killedAt = performance.now();
    await killAndWait(holder);
    await waiting;
    expect(performance.now() - killedAt).toBeLessThan(2000);
    expect(readFileSync(file, 'utf8')).toBe('a: 1\nafter: kill\n');
  });

  it('waiters on several lock files never starve this process of I/O threads (one blocking wait at most)', async () => {
    const files = Array.from({ length: 6 }, () => freshFile());
    const locks = await Promise.all(files.map(async (file) => (await resolveLockLocation(file)).lockPath));
    const holder = await holdLockInChild(locks[0]!);
    const others = await Promise.all(locks.slice(1).map((lockPath) => holdLockInChild(lockPath)));
    const waits = files.map((file, index) => updateFileLocked(file, (current) => `${current}w: ${index}\n`, { lockTimeoutMs: 20_000 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The threadpool has 4 threads: if every waiter blocked one, this read would hang.
    const start = performance.now();
    await readFile(files[0]!, 'utf8');
    expect(performance.now() - start).toBeLessThan(1000);
    for (const child of [holder, ...others]) await killAndWait(child);
    await Promise.all(waits);
    files.forEach((file, index) => expect(readFileSync(file, 'utf8')).toBe(`a: 1\nw: ${index}\n`));
  });

  it('withFileLock runs an action exclusively, and a waiter in this process times out naming this process', async () => {
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
    let release: () => void = () => undefined;
    const holding = withFileLock(file, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(withFileLock(file, () => undefined, { lockTimeoutMs: 200 })).rejects.toThrow(`held by this process (pid ${process.pid})`);
    release();
    await holding;
    await withFileLock(file, () => undefined, { lockTimeoutMs: 500 });
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

describe('isManifestScratchPath', () => {
  it('names our temp files and old lock files under docs/, and nothing else', () => {
    for (const scratch of ['docs/IMPL/.IMPL-demo.yaml.1234.0123456789ab.tmp', 'docs/IMPL/IMPL-demo.yaml.lock', 'docs/IMPL/IMPL-demo.yaml.lock.1234.0123456789ab.tmp', 'docs/IMPL/IMPL-demo.yaml.lock.break', 'docs/.CONTEXT.md.77.0123456789ab.tmp', 'docs/PROGRAM/PROGRAM-x.yaml.lock']) {
      expect(isManifestScratchPath(scratch), scratch).toBe(true);
    }
    for (const other of ['docs/IMPL/IMPL-demo.yaml', 'yarn.lock', 'docs/yarn.lock', 'src/.x.ts.1234.0123456789ab.tmp', 'docs/IMPL/notes.lock', 'docs/IMPL/IMPL-demo.yaml.tmp']) {
      expect(isManifestScratchPath(other), other).toBe(false);
    }
  });
});
