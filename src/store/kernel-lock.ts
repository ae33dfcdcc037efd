import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readFile, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';

/**
 * A cross-process exclusive lock held by the kernel: `fs-native-extensions` locks the lock file
 * with flock(2) (BSD/macOS) or an open-file-description lock (Linux, F_OFD_SETLKW) — waiters sleep
 * in the kernel's queue instead of polling, and the kernel drops the lock when its holder exits or
 * is killed, so there is no stale lock to detect or break and nothing to clean up after a crash.
 * The lock file persists (it lives outside the working tree, see lock-location.ts) and carries the
 * current holder's record for messages.
 *
 * The kernel wait runs in a libuv threadpool thread (4 by default) and cannot be cancelled. So:
 * waiters of one process queue here, per lock file, and at most one thread per lock file blocks
 * in the kernel; at most {@link maxBlockingWaits} block at all (other lock files poll with
 * `tryLock` and back-off) so that a holder in this process always has threads left for its I/O.
 * A holder rewrites its record once a second (heartbeat); a waiter gives up (N094) after
 * `timeoutMs` without progress — the lock changing hands, the holder beating or (Linux) the
 * holder using CPU time, since a long synchronous edit on a starved CPU cannot beat. A kernel
 * wait whose waiters all gave up stays blocked until the holder lets go (it then unlocks at
 * once): a CLI process exits without waiting for it ({@link abandonedLockWaits}).
 */

interface NativeLocks {
  tryLock(fd: number): boolean;
  waitForLock(fd: number): Promise<void>;
  unlock(fd: number): void;
}

/** Options of {@link acquireKernelLock}. */
export interface KernelLockOptions {
  /** How long a waiter waits without a sign of progress (the lock changing hands, the holder's heartbeat). Default 30 s; up to 10× this in total. */
  timeoutMs?: number;
  /** The file the lock protects (for messages). */
  target?: string;
}

/** A lock held by this process; release it exactly once. */
export interface HeldKernelLock {
  readonly lockPath: string;
  release(): Promise<void>;
}

/** The record a holder writes into the lock file while it holds the lock. */
export interface LockHolderRecord {
  pid: number;
  hostname: string;
  acquired_at: string;
  token: string;
  /** Heartbeats written so far (once a second while held). */
  beat?: number;
}

/** Default time to wait for a lock that stays with one holder. */
export const defaultLockTimeoutMs = 30_000;
/** However much progress others make, a waiter gives up after this many timeouts. */
const hardCapFactor = 10;
/** Kernel waits (blocked threadpool threads) this process allows at once, over all lock files. */
const maxBlockingWaits = 1;
/** Waiters look at the holder record (changed hands? heartbeat?) at most this often. */
const recordReadIntervalMs = 1000;
/** A holder rewrites its record this often while it holds the lock: it is alive and working. */
const heartbeatIntervalMs = 1000;

interface Waiter {
  start: number;
  timeoutMs: number;
  target: string;
  resolve: (lock: HeldKernelLock) => void;
  reject: (error: unknown) => void;
}

interface LockFileState {
  lockPath: string;
  handle: FileHandle | undefined;
  waiters: Waiter[];
  /** Granted to a holder in this process. */
  held: boolean;
  /** A kernel acquisition (tryLock / blocking wait / polling) is in flight. */
  acquiring: boolean;
  /** The blocking kernel wait of `acquiring` occupies a threadpool thread. */
  blocking: boolean;
  /** This process holds the kernel lock. */
  kernelHeld: boolean;
  lastProgressAt: number;
  lastRecord: string;
  lastRecordReadAt: number;
  /** CPU time (clock ticks) of the holder at the last look, where the OS tells (Linux /proc). */
  lastHolderCpu: number | undefined;
  readingRecord: boolean;
  watcher: NodeJS.Timeout | undefined;
  heartbeat: NodeJS.Timeout | undefined;
}

const states = new Map<string, LockFileState>();
let blockingWaits = 0;
let native: NativeLocks | undefined;

function nativeLocks(): NativeLocks {
  if (native === undefined) {
    try {
      native = createRequire(import.meta.url)('fs-native-extensions') as NativeLocks;
    } catch (error) {
      throw new PolywaveError({
        code: codes.saveFailed,
        message: `the kernel file lock is not available on ${process.platform}-${process.arch} (fs-native-extensions: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
        exitCode: 2,
        cause: error,
      });
    }
  }
  return native;
}

/**
 * Kernel lock waits of this process that no waiter wants any more (every waiter timed out): the
 * threads stay blocked until the holder lets go. A CLI process that is done calls `process.exit`
 * when this is not 0, instead of waiting for them.
 */
export function abandonedLockWaits(): number {
  let count = 0;
  for (const state of states.values()) if (state.blocking && state.waiters.length === 0 && !state.held) count += 1;
  return count;
}

/**
 * Takes the exclusive lock on `lockPath` (created if missing). Resolves with the held lock, or
 * rejects with N094 (exit 2) naming the holder (pid, host, since when) when it shows no progress
 * for `timeoutMs` — no change of hands, no heartbeat, no CPU time used — or the total wait exceeds
 * 10× that. Waiters of this process are served in arrival order.
 */
export function acquireKernelLock(lockPath: string, options: KernelLockOptions = {}): Promise<HeldKernelLock> {
  let state = states.get(lockPath);
  if (state === undefined) {
    state = {
      lockPath,
      handle: undefined,
      waiters: [],
      held: false,
      acquiring: false,
      blocking: false,
      kernelHeld: false,
      lastProgressAt: Date.now(),
      lastRecord: '',
      lastRecordReadAt: 0,
      lastHolderCpu: undefined,
      readingRecord: false,
      watcher: undefined,
      heartbeat: undefined,
    };
    states.set(lockPath, state);
  }
  const current = state;
  return new Promise<HeldKernelLock>((resolve, reject) => {
    current.waiters.push({ start: Date.now(), timeoutMs: options.timeoutMs ?? defaultLockTimeoutMs, target: options.target ?? lockPath, resolve, reject });
    startWatcher(current);
    pump(current);
  });
}

function pump(state: LockFileState): void {
  if (state.held) return;
  if (state.waiters.length === 0) {
    if (state.kernelHeld) void unlockKernel(state);
    else finishIfIdle(state);
    return;
  }
  if (state.kernelHeld) void grant(state);
  else if (!state.acquiring) void acquireKernel(state);
}

async function acquireKernel(state: LockFileState): Promise<void> {
  state.acquiring = true;
  try {
    const locks = nativeLocks();
    const handle = await openHandle(state);
    let delayMs = 2;
    for (;;) {
      if (locks.tryLock(handle.fd)) break;
      if (state.waiters.length === 0) {
        state.acquiring = false;
        finishIfIdle(state);
        return;
      }
      if (blockingWaits < maxBlockingWaits) {
        blockingWaits += 1;
        state.blocking = true;
        try {
          await locks.waitForLock(handle.fd);
        } catch (error) {
          // A signal interrupted the wait: wait again.
          if ((error as NodeJS.ErrnoException).code === 'EINTR') continue;
          throw error;
        } finally {
          blockingWaits -= 1;
          state.blocking = false;
        }
        break;
      }
      // Another lock file of this process has the blocking thread: poll, sleeping in between.
      await sleep(delayMs * (0.5 + Math.random()));
      delayMs = Math.min(delayMs * 2, 50);
    }
    state.kernelHeld = true;
  } catch (error) {
    state.acquiring = false;
    const failure = PolywaveError.isInstance(error)
      ? error
      : new PolywaveError({ code: codes.saveFailed, message: `cannot lock ${state.lockPath}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, exitCode: 2, cause: error });
    for (const waiter of state.waiters.splice(0)) waiter.reject(failure);
    finishIfIdle(state);
    return;
  }
  state.acquiring = false;
  pump(state);
}

async function openHandle(state: LockFileState): Promise<FileHandle> {
  if (state.handle) return state.handle;
  const flags = constants.O_RDWR | constants.O_CREAT;
  try {
    state.handle = await open(state.lockPath, flags, 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    // The lock directory was removed under us: make it again.
    await mkdir(path.dirname(state.lockPath), { recursive: true, mode: 0o700 });
    state.handle = await open(state.lockPath, flags, 0o644);
  }
  return state.handle;
}

async function grant(state: LockFileState): Promise<void> {
  const waiter = state.waiters.shift();
  if (waiter === undefined) return;
  state.held = true;
  const record: LockHolderRecord = { pid: process.pid, hostname: os.hostname(), acquired_at: new Date().toISOString(), token: randomBytes(8).toString('hex') };
  const text = `${JSON.stringify(record)}\n`;
  try {
    // Informational (who holds it, has it changed hands): a failure here does not matter.
    await state.handle!.truncate(0);
    await state.handle!.write(text, 0, 'utf8');
  } catch {
    // ignore
  }
  state.lastRecord = text;
  state.lastProgressAt = Date.now();
  // Heartbeat: waiters (here and in other processes) see a live holder at work and keep waiting;
  // one that stops beating (stopped, spinning) makes them give up after their timeout.
  let beat = 0;
  state.heartbeat = setInterval(() => {
    beat += 1;
    const next = `${JSON.stringify({ ...record, beat })}\n`;
    state.lastRecord = next;
    state.lastProgressAt = Date.now();
    void state.handle?.write(next, 0, 'utf8').catch(() => undefined);
  }, heartbeatIntervalMs);
  state.heartbeat.unref();
  let released = false;
  waiter.resolve({
    lockPath: state.lockPath,
    release: async () => {
      if (released) return;
      released = true;
      await unlockKernel(state);
    },
  });
}

async function unlockKernel(state: LockFileState): Promise<void> {
  if (state.heartbeat) clearInterval(state.heartbeat);
  state.heartbeat = undefined;
  const handle = state.handle;
  if (handle) {
    await handle.truncate(0).catch(() => undefined);
    try {
      nativeLocks().unlock(handle.fd);
    } catch {
      // Closing the descriptor (finishIfIdle) releases it in any case.
    }
  }
  state.kernelHeld = false;
  state.held = false;
  state.lastProgressAt = Date.now();
  pump(state);
}

function finishIfIdle(state: LockFileState): void {
  if (state.held || state.acquiring || state.kernelHeld || state.waiters.length > 0) return;
  if (state.watcher) clearInterval(state.watcher);
  state.watcher = undefined;
  const handle = state.handle;
  state.handle = undefined;
  if (states.get(state.lockPath) === state) states.delete(state.lockPath);
  void handle?.close().catch(() => undefined);
}

function startWatcher(state: LockFileState): void {
  if (state.watcher) return;
  const shortest = Math.min(...state.waiters.map((waiter) => waiter.timeoutMs));
  const intervalMs = Math.max(10, Math.min(250, Math.floor(shortest / 10)));
  state.watcher = setInterval(() => watch(state), intervalMs);
  state.watcher.unref();
}

function watch(state: LockFileState): void {
  const now = Date.now();
  if (!state.held && state.handle && !state.readingRecord && now - state.lastRecordReadAt >= recordReadIntervalMs) {
    state.readingRecord = true;
    state.lastRecordReadAt = now;
    void observeHolder(state).finally(() => (state.readingRecord = false));
  }
  for (const waiter of [...state.waiters]) {
    const idle = now - Math.max(waiter.start, state.lastProgressAt);
    const total = now - waiter.start;
    if (idle < waiter.timeoutMs && total < waiter.timeoutMs * hardCapFactor) continue;
    state.waiters.splice(state.waiters.indexOf(waiter), 1);
    waiter.reject(timeoutError(state, waiter, total));
  }
  if (state.waiters.length === 0) {
    if (state.watcher) clearInterval(state.watcher);
    state.watcher = undefined;
    finishIfIdle(state);
  }
}

/**
 * Progress as a waiter can see it: a new holder record (the lock changed hands), a heartbeat, or
 * — for a holder on this host whose event loop is busy (a long edit on a starved CPU cannot beat)
 * — the holder process using CPU time (Linux `/proc/<pid>/stat`; a stopped holder never counts).
 */
async function observeHolder(state: LockFileState): Promise<void> {
  const text = state.handle ? await readRecord(state.handle) : '';
  if (text !== '' && text !== state.lastRecord) {
    state.lastRecord = text;
    state.lastProgressAt = Date.now();
    state.lastHolderCpu = undefined;
    return;
  }
  const record = parseHolderRecord(state.lastRecord);
  if (record === undefined || record.hostname !== os.hostname() || record.pid === process.pid) return;
  const cpu = await processCpuTicks(record.pid);
  if (cpu !== undefined && state.lastHolderCpu !== undefined && cpu > state.lastHolderCpu) state.lastProgressAt = Date.now();
  state.lastHolderCpu = cpu;
}

/** utime + stime of a running process (Linux); undefined elsewhere, when it is gone or stopped. */
async function processCpuTicks(pid: number): Promise<number | undefined> {
  if (process.platform !== 'linux') return undefined;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'T' || fields[0] === 't' || fields[0] === 'Z') return undefined;
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

async function readRecord(handle: FileHandle): Promise<string> {
  try {
    const buffer = Buffer.alloc(512);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } catch {
    return '';
  }
}

/** The holder record in `text`, if it is one. */
export function parseHolderRecord(text: string): LockHolderRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolderRecord>;
    if (typeof value.pid === 'number' && typeof value.hostname === 'string' && typeof value.acquired_at === 'string') return value as LockHolderRecord;
  } catch {
    // not a record
  }
  return undefined;
}

function timeoutError(state: LockFileState, waiter: Waiter, waitedMs: number): PolywaveError {
  const record = parseHolderRecord(state.lastRecord);
  let holder = '';
  if (state.held) holder = ` — held by this process (pid ${process.pid})`;
  else if (record) holder = ` — held by pid ${record.pid} on ${record.hostname} since ${record.acquired_at}, no sign of progress for ${Math.round((Date.now() - state.lastProgressAt) / 1000)}s`;
  return new PolywaveError({
    code: codes.lockTimeout,
    message: `timed out after ${Math.round(waitedMs / 1000)}s waiting for the lock of ${waiter.target} (lock file ${state.lockPath})${holder}`,
    exitCode: 2,
    details: { lockPath: state.lockPath, ...(record ? { holder_pid: record.pid, holder_host: record.hostname } : {}) },
  });
}
