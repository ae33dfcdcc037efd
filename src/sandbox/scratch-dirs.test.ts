import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { foreignScratchDirs, setScratchListingSettleMsForTests, sweepStaleStatusFiles } from './scratch-dirs.js';

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
