import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEventStore } from '../src/observability/event-store.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { repoRoot } from './support/cli.js';
import { createObservedWave, storeWarnings } from './support/observability-wave.js';

// Issue 14, "What it must show" 3: a store that cannot be used costs exactly one warning line and
// nothing else — a real script wave through `polywave run-wave` still ends WAVE_VERIFIED with
// both agents merged. Cases: missing directory (created, no warning), read-only directory,
// corrupt file (random bytes), locked by another process for 30 s, full disk, future schema.

const dir = mkdtempSync(path.join(os.tmpdir(), 'pw-obs-faults-'));
const mounts: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  for (const mount of mounts) spawnSync('umount', ['-l', mount]);
  rmSync(dir, { recursive: true, force: true });
});

const isRoot = process.getuid?.() === 0;
/** A small tmpfs (root only; mount(8) is what a full disk or a read-only file system needs). */
function mountTmpfs(name: string, options: string): string | undefined {
  if (!isRoot) return undefined;
  const target = path.join(dir, name);
  mkdirSync(target, { recursive: true });
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', target]);
  if (result.status !== 0) return undefined;
  mounts.push(target);
  return target;
}

function createStore(file: string): void {
  openEventStore(file)!.close();
}

/** A store directory that cannot be written: a file system remounted read-only (root), else mode 0555. */
function readOnlyStore(): string {
  const mounted = mountTmpfs('ro', 'size=1m');
  if (mounted) {
    createStore(path.join(mounted, 'events.db'));
    expect(spawnSync('mount', ['-o', 'remount,ro', mounted]).status).toBe(0);
    return path.join(mounted, 'events.db');
  }
  const target = path.join(dir, 'ro');
  mkdirSync(target, { recursive: true });
  spawnSync('chmod', ['0555', target]);
  return path.join(target, 'events.db');
}

/** A store on a full file system: created, then the rest of the space filled. */
function fullDiskStore(): string | undefined {
  const mounted = mountTmpfs('full', 'size=512k');
  if (!mounted) return undefined;
  const file = path.join(mounted, 'events.db');
  createStore(file);
  spawnSync('sh', ['-c', `dd if=/dev/zero of=${path.join(mounted, 'filler')} bs=4k 2>/dev/null; true`]);
  return file;
}

function corruptStore(): string {
  const file = path.join(dir, 'corrupt', 'events.db');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, randomBytes(64 * 1024));
  return file;
}

function futureStore(): string {
  const file = path.join(dir, 'future', 'events.db');
  const db = openEventStore(file)!;
  db.pragma('user_version = 99');
  db.close();
  return file;
}

/** Another process holds the store's write lock for 30 s. */
async function lockedStore(): Promise<string> {
  const file = path.join(dir, 'locked', 'events.db');
  createStore(file);
  const child = spawn(process.execPath, [path.join(repoRoot, 'test', 'support', 'observability-locker.mjs'), file, '30000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('locked')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`locker exited early (${code})`)));
  });
  return file;
}

async function waveWithStore(store: string) {
  const wave = await createObservedWave();
  const started = performance.now();
  const result = await wave.run([], { POLYWAVE_EVENTS_DB: store });
  const seconds = (performance.now() - started) / 1000;
  const output = JSON.parse(result.stdout) as { success: boolean; state: string };
  return { result, output, seconds, wave };
}

describe('a store that cannot be used never changes the wave', () => {
  it('each fault: the wave is WAVE_VERIFIED, both agents merged, exactly one warning line', async () => {
    const full = fullDiskStore();
    const cases: Array<{ name: string; store: string; warnings: number; reason: RegExp }> = [
      { name: 'missing directory (created)', store: path.join(dir, 'missing', 'deeper', 'events.db'), warnings: 0, reason: /^$/ },
      { name: 'read-only directory', store: readOnlyStore(), warnings: 1, reason: /cannot write there|readonly|read-only|unable to open/i },
      { name: 'corrupt file (random bytes)', store: corruptStore(), warnings: 1, reason: /not a usable SQLite database/ },
      { name: 'locked by another process for 30 s', store: await lockedStore(), warnings: 1, reason: /locked by another process/ },
      { name: 'future schema', store: futureStore(), warnings: 1, reason: /schema version 99/ },
      ...(full ? [{ name: 'disk full', store: full, warnings: 1, reason: /disk is full/ }] : []),
    ];
    const runs = await Promise.all(cases.map(async (fault) => ({ fault, ...(await waveWithStore(fault.store)) })));
    for (const { fault, result, output, seconds, wave } of runs) {
      const context = `${fault.name}\n${result.stderr.slice(-3000)}`;
      expect(result.code, context).toBe(0);
      expect(output, context).toMatchObject({ success: true, state: 'WAVE_VERIFIED' });
      expect(parseImpl(readFileSync(wave.implPath, 'utf8')).manifest!.state).toBe('WAVE_VERIFIED');
      for (const file of ['src/a.ts', 'src/b.ts']) expect(existsSync(wave.repo.path(file)), `${fault.name}: ${file}`).toBe(true);
      const warnings = storeWarnings(result.stderr);
      expect(warnings, context).toHaveLength(fault.warnings);
      if (fault.warnings > 0) expect(warnings[0], context).toMatch(fault.reason);
      // Never a stack trace, never SQLITE_BUSY shown as an error.
      expect(result.stderr).not.toMatch(/\n\s+at .+\(.*:\d+:\d+\)/);
      expect(result.stderr).not.toMatch(/error\[.*SQLITE/);
      console.log(`${fault.name}: WAVE_VERIFIED in ${seconds.toFixed(1)} s, warnings: ${warnings.length}`);
    }
    // The locked run took no longer than the others (it never waits on the lock beyond 3 s at its end).
    const locked = runs.find((run) => run.fault.name.startsWith('locked'))!;
    expect(locked.seconds).toBeLessThan(Math.max(...runs.filter((run) => run !== locked).map((run) => run.seconds)) + 15);
    // The missing directory was created and the run is in it.
    const db = openEventStore(cases[0]!.store, { readonly: true })!;
    expect((db.prepare("SELECT COUNT(*) AS n FROM events WHERE type = 'wave-run-end'").get() as { n: number }).n).toBe(1);
    db.close();
    // The future-schema store was not touched.
    const future = openEventStoreVersion(cases.find((fault) => fault.name === 'future schema')!.store);
    expect(future).toBe(99);
    if (!full) console.log('disk full: skipped (needs root to mount a small tmpfs)');
  }, 300_000);
});

function openEventStoreVersion(file: string): number {
  const result = spawnSync(process.execPath, ['-e', `const D=require('better-sqlite3');const d=new D(${JSON.stringify(file)},{readonly:true});console.log(d.pragma('user_version',{simple:true}))`], { cwd: repoRoot, encoding: 'utf8' });
  return Number(result.stdout.trim());
}
