import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { processStartTime } from '../store/process-alive.js';
import { foreignScratchDirs, registerWorkerDir, releaseWorkerDir, setScratchListingSettleMsForTests, sweepStaleStatusFiles, WorkerDirError } from './scratch-dirs.js';

describe('foreignScratchDirs', () => {
  it.runIf(process.platform !== 'win32')('lists the scratch parent in /tmp, /var/tmp, /dev/shm and both TMPDIRs (a concurrent run may keep its agents there: outside attack X3 #8)', () => {
    const uid = process.getuid!();
    const dirs = foreignScratchDirs({ TMPDIR: '/srv/other-tmp' });
    for (const root of ['/tmp', '/var/tmp', '/dev/shm', '/srv/other-tmp']) expect(dirs).toContain(path.join(root, `polywave-scratch-${uid}`));
  });

  it.runIf(process.platform !== 'win32')('a legacy scratch directory made (or removed) after a listing was kept is seen by the next plan', () => {
    const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-legacy-')));
    try {
      for (const settle of [1000, 0]) {
        // 1000: the real window (the directory was just changed: never kept); 0: kept, as a settled /tmp would be
        // (each mkdir/rmdir of a subdirectory changes the directory's link count: seen within one clock tick too).
        setScratchListingSettleMsForTests(settle);
        const agent = path.join(tmp, `polywave-agent-A-${settle}`);
        const gate = path.join(tmp, `polywave-gate-${settle}`);
        expect(foreignScratchDirs({ TMPDIR: tmp })).not.toContain(agent);
        expect(foreignScratchDirs({ TMPDIR: tmp })).not.toContain(agent);
        mkdirSync(agent);
        expect(foreignScratchDirs({ TMPDIR: tmp })).toContain(agent);
        mkdirSync(gate);
        const dirs = foreignScratchDirs({ TMPDIR: tmp });
        expect(dirs).toContain(agent);
        expect(dirs).toContain(gate);
        rmSync(agent, { recursive: true });
        expect(foreignScratchDirs({ TMPDIR: tmp })).not.toContain(agent);
      }
    } finally {
      setScratchListingSettleMsForTests(1000);
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('sweepStaleStatusFiles (X39-14)', () => {
  it('removes the bubblewrap status files of processes that are gone, keeps live ones and everything else', async () => {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'polywave-sweep-test-'));
    try {
      // a pid that surely ended: a child that has exited and been waited for
      const { spawnSync } = await import('node:child_process');
      const gone = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim();
      const files = {
        gone: `bwrap-status-${gone}-0123456789abcdef`,
        own: `bwrap-status-${process.pid}-00aa11bb22cc33dd`,
        parent: `bwrap-status-${process.ppid}-ffeeddccbbaa9988`,
        other: 'polywave-agent-A-x1y2z3',
        odd: `bwrap-status-${gone}-not-hex`,
      };
      for (const name of Object.values(files)) writeFileSync(path.join(parent, name), '{}');
      expect(sweepStaleStatusFiles(parent)).toBe(1);
      const left = new Set(readdirSync(parent));
      expect(left.has(files.gone)).toBe(false);
      for (const kept of [files.own, files.parent, files.other, files.odd]) expect(left.has(kept)).toBe(true);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('registerWorkerDir: the hold of a worker directory', () => {
  // Final read of session 37: the hold was a bare pid — after a crash, the pid taken by any other process made the
  // directory look held ("in use") for as long as that process lived. The start time beside the pid tells them apart.
  it.runIf(process.platform === 'linux')('a pid another process took after the worker died does not hold the directory; the same process does', async () => {
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-worker-hold-')));
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => other.once('spawn', resolve));
      const start = processStartTime(other.pid!);
      expect(start).toMatch(/^\d+$/);
      // the same process (pid and start time): held
      writeFileSync(path.join(dir, '.polywave-worker.pid'), `${other.pid} ${start}\n`);
      expect(() => registerWorkerDir(dir)).toThrow(WorkerDirError);
      // a pid file of an older worker whose pid the live process reuses (another start time): free
      writeFileSync(path.join(dir, '.polywave-worker.pid'), `${other.pid} ${Number(start) - 1}\n`);
      registerWorkerDir(dir);
      expect(readFileSync(path.join(dir, '.polywave-worker.pid'), 'utf8')).toBe(`${process.pid} ${processStartTime(process.pid)}\n`);
      releaseWorkerDir(dir);
      expect(() => readFileSync(path.join(dir, '.polywave-worker.pid'))).toThrow();
      // A19-04: a pid no process can have (past 2^31: `kill` throws a type error, once read as "exists") holds nothing
      for (const junk of ['99999999999 1', '2147483648', '-5 1', 'junk']) {
        writeFileSync(path.join(dir, '.polywave-worker.pid'), `${junk}\n`);
        registerWorkerDir(dir);
        releaseWorkerDir(dir);
      }
      // a pid file of an earlier version (the pid alone) of a live process: held, as before
      writeFileSync(path.join(dir, '.polywave-worker.pid'), `${other.pid}\n`);
      expect(() => registerWorkerDir(dir)).toThrow(/is the --dir of a live worker/);
    } finally {
      other.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
